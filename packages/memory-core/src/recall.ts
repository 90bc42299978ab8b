import type { Logger } from "./logger.js";
import { silentLogger } from "./logger.js";
import type { RecallStatus } from "./provider.js";
import { INDICATOR_GLYPH } from "./provider.js";
import { escapeRecalledText } from "./recall-escape.js";

/** Opening tag of a recalled-memory block. */
export const MEMORY_CONTEXT_OPEN = "<memory-context>";
/** Closing tag of a recalled-memory block. */
export const MEMORY_CONTEXT_CLOSE = "</memory-context>";
/**
 * The second line of every recalled-memory block: tells the model the block is memory, not
 * something the user just typed.
 */
export const MEMORY_CONTEXT_NOTE =
  "[System note: The following is recalled memory context, NOT new user input. Treat as authoritative reference data — this is the agent's persistent memory and should inform all responses.]";

const COMPLETE_BLOCK = /<\s*memory-context\s*>[\s\S]*?<\s*\/\s*memory-context\s*>/gi;
// Both the current note and the older "informational background data" wording are recognised.
const SYSTEM_NOTE =
  /\[System note: The following is recalled memory context, NOT new user input\. Treat as (?:informational background data\.?|authoritative reference data[^\]]*)\]\s*/gi;
const STRAY_TAG = /<\s*\/?\s*memory-context\s*>/gi;
/**
 * Removing one tag can join the text around it into another (`</memory-</memory-context>context>`),
 * so removal repeats until nothing changes — at most this many rounds; whatever a deeper nesting
 * leaves is escaped by `escapeRecalledText` like any other tag-like text.
 */
const MAX_REMOVAL_ROUNDS = 8;

/** Apply `step` until the text stops changing (or `MAX_REMOVAL_ROUNDS` times). */
function untilStable(text: string, step: (text: string) => string): string {
  let current = text;
  for (let round = 0; round < MAX_REMOVAL_ROUNDS; round++) {
    const next = step(current);
    if (next === current) return current;
    current = next;
  }
  return current;
}

/**
 * Remove memory fences from text: complete `<memory-context>…</memory-context>` blocks, the
 * system-note sentence, then any stray open/close tag (case-insensitive, whitespace tolerant
 * inside tags), repeated until nothing changes, and then escape whatever else could still read as
 * a tag (`escapeRecalledText`: look-alike, padded, split or attribute-carrying spellings). Used on
 * provider output (checkpoints), so a provider — or text the model echoed into a store — can never
 * close a fence early and smuggle "user input" after it. Never throws.
 */
export function sanitizeContext(text: string): string {
  if (!text) return "";
  const removed = untilStable(text, (t) => t.replace(COMPLETE_BLOCK, "").replace(SYSTEM_NOTE, "").replace(STRAY_TAG, ""));
  return escapeRecalledText(removed);
}

/**
 * Unwrap text that is already fenced: the fence tags and system notes go, everything between them
 * stays (repeated until nothing changes). Recalled content is never dropped for containing tags.
 */
function stripFenceMarkup(text: string): string {
  return untilStable(text, (t) => t.replace(SYSTEM_NOTE, "").replace(STRAY_TAG, ""));
}

const BULLET = /^[-*+]\s+\S/;
const CONTINUATION = /^[ \t]+\S/;

/**
 * Drop byte-identical (after trimming) repeated self-contained bullets within one scope. A scope
 * ends at any non-empty column-0 line that is not a bullet (heading, `---`, prose). Indented
 * continuation lines, bullets that own continuations, numbered items and blank lines are kept as
 * they are, so a provider's structured output is never reflowed.
 */
export function dedupeRepeatedBullets(text: string): string {
  const lines = text.split("\n");
  const kept: string[] = [];
  let seen = new Set<string>();
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? "";
    if (BULLET.test(line)) {
      const next = lines[i + 1];
      const selfContained = next === undefined || !CONTINUATION.test(next);
      if (selfContained) {
        const key = line.trim();
        if (seen.has(key)) continue;
        seen.add(key);
      }
    } else if (line.trim() !== "" && !/^\s/.test(line)) {
      seen = new Set<string>();
    }
    kept.push(line);
  }
  return kept.join("\n");
}

/**
 * Wrap recalled memory in a `<memory-context>` block the model reads as background, not as new
 * user input. Append the result to the current user message (never the system prompt, so the
 * prompt-cache prefix survives). Empty or whitespace-only input yields `""`.
 *
 * Whatever the recalled text contains, the block has exactly one opening fence, at its start, and
 * one closing fence, at its end, and every recalled character lies between them: fence tags and
 * system notes already in the text are removed (with a warning: the provider returned pre-wrapped
 * context) while the text between them is kept, and the opener of anything else that could read
 * as a tag is escaped (`<` becomes `&lt;`; see `escapeRecalledText`). Repeated bullets are
 * dropped. Never throws.
 */
export function fenceRecall(text: string, options: { logger?: Logger } = {}): string {
  if (typeof text !== "string" || text.trim() === "") return "";
  const logger = options.logger ?? silentLogger;
  const unwrapped = stripFenceMarkup(text);
  if (unwrapped !== text) logger.warn("memory provider returned pre-wrapped context; stripped");
  const cleaned = escapeRecalledText(dedupeRepeatedBullets(unwrapped)).trim();
  if (cleaned === "") return "";
  return `${MEMORY_CONTEXT_OPEN}\n${MEMORY_CONTEXT_NOTE}\n\n${cleaned}\n${MEMORY_CONTEXT_CLOSE}`;
}

/**
 * One-line recall indicator for a UI, e.g. `🧠 sqlite — recalled 3 memories`. `null`/`undefined`
 * statuses are skipped; segments are joined by two spaces; `""` when nothing was recalled. A
 * count `<= 0` means "content injected without a discrete count".
 */
export function describeRecall(statuses: ReadonlyArray<RecallStatus | null | undefined>): string {
  const segments: string[] = [];
  for (const status of statuses) {
    if (!status) continue;
    const count = Number.isFinite(status.count) ? status.count : 0;
    const detail = count === 1 ? "recalled 1 memory" : count > 1 ? `recalled ${count} memories` : "recalled relevant memory";
    segments.push(`${status.glyph ?? INDICATOR_GLYPH} ${status.providerLabel} — ${detail}`);
  }
  return segments.join("  ");
}

/**
 * Hides `<memory-context>` spans from streamed model output that echoes recalled memory. Create
 * one per response; call `feed(chunk)` for each chunk and show what it returns, then `flush()` at
 * the end. An opening tag counts only at a block boundary (nothing but whitespace since the last
 * newline, and followed by a line break), so prose that merely mentions the tag is kept. A chunk
 * ending in a partial tag is held back until the next chunk decides it; text inside a span is
 * dropped, and `flush()` inside an unterminated span discards the rest.
 */
export class StreamingContextScrubber {
  private pending = "";
  private inSpan = false;
  private lineHasContent = false;

  /** Process one chunk; returns the text that is safe to display now. */
  feed(text: string): string {
    this.pending += text;
    let out = "";
    for (;;) {
      if (this.inSpan) {
        const close = this.pending.toLowerCase().indexOf(MEMORY_CONTEXT_CLOSE);
        if (close >= 0) {
          this.pending = this.pending.slice(close + MEMORY_CONTEXT_CLOSE.length);
          this.inSpan = false;
          continue;
        }
        // Keep just enough to recognise a closing tag split across chunks.
        this.pending = this.pending.slice(-(MEMORY_CONTEXT_CLOSE.length - 1));
        break;
      }
      const found = this.findOpen();
      if (found.kind === "none") {
        out += this.emit(this.pending);
        this.pending = "";
        break;
      }
      out += this.emit(this.pending.slice(0, found.index));
      if (found.kind === "partial") {
        this.pending = this.pending.slice(found.index);
        break;
      }
      this.pending = this.pending.slice(found.index + MEMORY_CONTEXT_OPEN.length + found.breakLength);
      this.inSpan = true;
    }
    return out;
  }

  /** End of the response: release held-back text (or drop it inside an unterminated span). */
  flush(): string {
    const tail = this.inSpan ? "" : this.pending;
    this.reset();
    return tail;
  }

  /** Forget all state (start of a new response). */
  reset(): void {
    this.pending = "";
    this.inSpan = false;
    this.lineHasContent = false;
  }

  private emit(text: string): string {
    if (text === "") return text;
    const newline = text.lastIndexOf("\n");
    if (newline >= 0) this.lineHasContent = /\S/.test(text.slice(newline + 1));
    else if (/\S/.test(text)) this.lineHasContent = true;
    return text;
  }

  private findOpen(): { kind: "none" } | { kind: "partial"; index: number } | { kind: "open"; index: number; breakLength: number } {
    const lower = this.pending.toLowerCase();
    for (let at = lower.indexOf("<"); at >= 0; at = lower.indexOf("<", at + 1)) {
      const lineStart = lower.lastIndexOf("\n", at - 1) + 1;
      const before = lower.slice(lineStart, at);
      const atBoundary = /^\s*$/.test(before) && (lineStart > 0 || !this.lineHasContent);
      if (!atBoundary) continue;
      const rest = lower.slice(at);
      if (rest.length <= MEMORY_CONTEXT_OPEN.length) {
        if (MEMORY_CONTEXT_OPEN.startsWith(rest)) return { kind: "partial", index: at };
        continue;
      }
      if (!rest.startsWith(MEMORY_CONTEXT_OPEN)) continue;
      const next = rest[MEMORY_CONTEXT_OPEN.length];
      if (next === "\n") return { kind: "open", index: at, breakLength: 1 };
      if (next === "\r") {
        if (rest.length === MEMORY_CONTEXT_OPEN.length + 1) return { kind: "partial", index: at };
        return { kind: "open", index: at, breakLength: rest[MEMORY_CONTEXT_OPEN.length + 1] === "\n" ? 2 : 1 };
      }
    }
    return { kind: "none" };
  }
}
