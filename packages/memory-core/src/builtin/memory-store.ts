/**
 * The built-in MEMORY.md / USER.md store. Files are plain text, entries separated by a line holding
 * only `§`; the format, limits and messages must stay byte-compatible with the Python agent, which
 * reads and writes the same files (under the same lock).
 */
import fsp from "node:fs/promises";
import path from "node:path";
import { HermesMemoryError, describeError } from "../errors.js";
import { atomicWriteFile, normalizeNewlines, withFileLock } from "../fs.js";
import { notUtf8Message, readTextLenient, readUtf8File } from "../config/text-file.js";
import { describeBlockedContent, sanitizeSnapshotEntry } from "./threat-scan.js";

/** Separator between entries in MEMORY.md / USER.md: newline, section sign, newline. */
export const MEMORY_ENTRY_DELIMITER = "\n§\n";
/** Default character limit of MEMORY.md (config `memory.memory_char_limit`). */
export const DEFAULT_MEMORY_CHAR_LIMIT = 2200;
/** Default character limit of USER.md (config `memory.user_char_limit`). */
export const DEFAULT_USER_CHAR_LIMIT = 1375;

/** `memory` = the agent's notes (MEMORY.md), `user` = the user profile (USER.md). */
export type BuiltinMemoryTarget = "memory" | "user";

/** The file of each target. */
export const BUILTIN_MEMORY_FILES: Readonly<Record<BuiltinMemoryTarget, string>> = Object.freeze({
  memory: "MEMORY.md",
  user: "USER.md",
});

/** Final line of every successful write result. */
export const MEMORY_WRITE_NOTE = "Write saved. This update is complete — do not repeat it.";

/**
 * The JSON object a store operation returns (serialised by the `memory` tool). Always has
 * `success`; failures have `error`, successes `done`, `target`, `usage`, `entry_count`, `message`,
 * `note` and, for mirroring, `replaced_entry`/`removed_entry` (single op) or
 * `replaced_entries`/`removed_entries` keyed by 1-based op index (batch).
 */
export interface MemoryToolResult {
  success: boolean;
  [key: string]: unknown;
}

/** One operation of a batched `memory` call. */
export interface MemoryOperation {
  action: "add" | "replace" | "remove";
  content?: string;
  old_text?: string;
}

const CONSOLIDATION_FAILURE = Symbol.for("@hermes/memory.consolidation-failure");

/**
 * True for over-budget and no-match failures: the ones a model tends to retry in a loop, which
 * the `memory` tool caps per turn. The flag is a symbol, so it never appears in the JSON.
 */
export function isConsolidationFailure(result: MemoryToolResult): boolean {
  return (result as unknown as Record<symbol, unknown>)[CONSOLIDATION_FAILURE] === true;
}

function consolidationFailure(result: MemoryToolResult): MemoryToolResult {
  Object.defineProperty(result, CONSOLIDATION_FAILURE, { value: true, enumerable: false });
  return result;
}

/**
 * Most operations one `memory` batch may carry. A store holds a few hundred entries at most (its
 * character limit), so a longer batch is a runaway call; refusing it keeps a call from holding
 * the lock and the event loop for seconds.
 */
export const MAX_BATCH_OPERATIONS = 1000;

/**
 * Largest MEMORY.md / USER.md read (64 MiB, tens of thousands of times the default limits). A
 * larger file is never loaded into memory: its snapshot is empty (`loadProblems` says why) and
 * writes refuse it, leaving it unchanged, until it is trimmed by hand.
 */
export const MAX_MEMORY_FILE_BYTES = 64 * 1024 * 1024;

/** Most previews a "Multiple entries matched" result lists; a line counts the rest. */
const MAX_MATCH_PREVIEWS = 20;

/**
 * Split file content into entries: line endings normalised (CRLF and lone CR, as Python's
 * universal-newline reader does), split on the full delimiter, each trimmed, empties dropped.
 */
export function parseMemoryEntries(raw: string): string[] {
  const text = normalizeNewlines(raw);
  const entries: string[] = [];
  // One pass with indexOf: no intermediate arrays of pieces, trimmed pieces and kept pieces.
  for (let start = 0; start <= text.length;) {
    const found = text.indexOf(MEMORY_ENTRY_DELIMITER, start);
    const end = found === -1 ? text.length : found;
    const entry = text.slice(start, end).trim();
    if (entry.length > 0) entries.push(entry);
    start = end + MEMORY_ENTRY_DELIMITER.length;
  }
  return entries;
}

/**
 * Entry text as it is stored and matched: line endings normalised, outer whitespace trimmed, so
 * what is written reads back identically. Non-strings give "".
 */
function normalizeEntryText(value: unknown): string {
  return typeof value === "string" ? normalizeNewlines(value).trim() : "";
}

/**
 * Why `text` (normalised) cannot be stored as one entry, or `null`. A line holding only `§` is
 * the separator between entries, so such an entry would be written as two and could no longer
 * be found or removed by its own text.
 */
export function entryDelimiterError(text: string): string | null {
  if (!/(^|\n)§(\n|$)/.test(text)) return null;
  return 'Entry contains a line holding only "§", which separates entries in MEMORY.md and USER.md, so it would be stored as several entries. Put other text on that line (for example "§ 3") or drop it, then retry.';
}

/** Join entries for writing (an empty list gives an empty file). */
export function serializeMemoryEntries(entries: readonly string[]): string {
  return entries.join(MEMORY_ENTRY_DELIMITER);
}

/** Drop exact duplicates, keeping the first occurrence. */
function dedupe(entries: readonly string[]): string[] {
  return [...new Set(entries)];
}

/** Characters as Python counts them (code points), so limits match files the Python agent wrote. */
export function countChars(text: string): number {
  if (!/[\uD800-\uDFFF]/.test(text)) return text.length;
  let n = 0;
  for (const _ of text) n++;
  return n;
}

/**
 * `countChars(serializeMemoryEntries(entries.slice(from)))` without building the joined text: the
 * delimiter holds no surrogate, so no character spans two entries.
 */
function joinedChars(entries: readonly string[], from = 0): number {
  let n = 0;
  for (let i = from; i < entries.length; i++) n += countChars(entries[i] as string);
  return entries.length > from ? n + MEMORY_ENTRY_DELIMITER.length * (entries.length - from - 1) : 0;
}

function sliceChars(text: string, start: number, end?: number): string {
  if (!/[\uD800-\uDFFF]/.test(text)) return text.slice(start, end);
  return Array.from(text).slice(start, end).join("");
}

function withThousands(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

function percent(current: number, limit: number): number {
  return limit > 0 ? Math.min(100, Math.floor((current / limit) * 100)) : 0;
}

function isTarget(value: unknown): value is BuiltinMemoryTarget {
  return value === "memory" || value === "user";
}

/** Usage of one target: characters of the joined content against its limit. */
export interface MemoryUsage {
  current: number;
  limit: number;
  percent: number;
  entryCount: number;
}

interface DriftReport {
  reason: string;
}

/** Options of `BuiltinMemoryStore`. */
export interface BuiltinMemoryStoreOptions {
  /** Directory holding MEMORY.md and USER.md, normally `<hermesHome>/memories`. */
  dir: string;
  memoryCharLimit?: number;
  userCharLimit?: number;
  /** Clock for drift backups (`<file>.bak.<unix-seconds>`); tests inject it. */
  now?: () => number;
}

/**
 * MEMORY.md / USER.md with a frozen snapshot for the system prompt.
 *
 * Every write is a read-modify-write under a lock file beside the target (`withFileLock`) and an
 * atomic replace (`atomicWriteFile`), so two stores or two processes never lose each other's
 * entries. The directory is fixed at construction: the store never re-resolves the profile home.
 */
export class BuiltinMemoryStore {
  readonly dir: string;
  readonly memoryCharLimit: number;
  readonly userCharLimit: number;
  private readonly now: () => number;
  private snapshot: Record<BuiltinMemoryTarget, string[]> = { memory: [], user: [] };
  private problems: string[] = [];

  constructor(options: BuiltinMemoryStoreOptions) {
    if (!options || typeof options.dir !== "string" || options.dir === "") {
      throw new HermesMemoryError({
        code: "INVALID_ARGUMENT",
        message: 'BuiltinMemoryStore needs a directory: pass { dir: path.join(hermesHome, "memories") }.',
      });
    }
    this.dir = path.resolve(options.dir);
    this.memoryCharLimit = positiveLimit(options.memoryCharLimit, DEFAULT_MEMORY_CHAR_LIMIT, "memoryCharLimit");
    this.userCharLimit = positiveLimit(options.userCharLimit, DEFAULT_USER_CHAR_LIMIT, "userCharLimit");
    this.now = options.now ?? Date.now;
  }

  /** Absolute path of a target's file. */
  filePath(target: BuiltinMemoryTarget): string {
    return path.join(this.dir, BUILTIN_MEMORY_FILES[target]);
  }

  /** The character limit of a target. */
  limit(target: BuiltinMemoryTarget): number {
    return target === "user" ? this.userCharLimit : this.memoryCharLimit;
  }

  /**
   * Read both files and capture the frozen snapshot rendered by `renderSnapshot`. Call at session
   * start; writes made afterwards reach disk at once but not the snapshot (keeps the system
   * prompt prefix cacheable) until the next `loadFromDisk`.
   */
  async loadFromDisk(): Promise<void> {
    const problems: string[] = [];
    const [memory, user] = await Promise.all([this.readEntries("memory", problems), this.readEntries("user", problems)]);
    this.snapshot = { memory, user };
    this.problems = problems;
  }

  /**
   * Why the last `loadFromDisk` left a file out of the snapshot (it exists but could not be read:
   * not a regular file, over `MAX_MEMORY_FILE_BYTES`, unreadable), one message per file, saying
   * how to fix it; `[]` when both were read or are simply absent.
   */
  loadProblems(): string[] {
    return [...this.problems];
  }

  /** Current entries on disk (deduplicated; `[]` when the file is missing, unreadable or blank). */
  async entries(target: BuiltinMemoryTarget): Promise<string[]> {
    return this.readEntries(target);
  }

  /** Entries captured by the last `loadFromDisk` (raw, not sanitised). */
  snapshotEntries(target: BuiltinMemoryTarget): string[] {
    return [...this.snapshot[target]];
  }

  /** Usage of the entries currently on disk. */
  async usage(target: BuiltinMemoryTarget): Promise<MemoryUsage> {
    const entries = await this.entries(target);
    const current = joinedChars(entries);
    const limit = this.limit(target);
    return { current, limit, percent: percent(current, limit), entryCount: entries.length };
  }

  /**
   * The frozen snapshot as a system-prompt block ("" when empty): a line of 46 `═`, the header
   * with usage, another line, then the entries. Entries that fail the threat scan are replaced by
   * `[BLOCKED: …]` placeholders; content over `max(2*limit, 4000)` chars is cut in the middle.
   */
  renderSnapshot(target: BuiltinMemoryTarget): string {
    const entries = this.snapshot[target];
    if (entries.length === 0) return "";
    const limit = this.limit(target);
    const fileName = BUILTIN_MEMORY_FILES[target];
    const cap = Math.max(2 * limit, 4000);
    // Character counts of the raw and the sanitised joined content, entry by entry: only the
    // entries the cut keeps are ever joined, so a huge file costs one scan, not copies of itself.
    let current = 0;
    let shown = 0;
    for (const entry of entries) {
      const chars = countChars(entry);
      const sanitized = sanitizeSnapshotEntry(entry, fileName);
      current += chars;
      shown += sanitized === entry ? chars : countChars(sanitized);
    }
    const delimiters = MEMORY_ENTRY_DELIMITER.length * (entries.length - 1);
    current += delimiters;
    shown += delimiters;
    let content: string;
    if (shown <= cap) {
      content = serializeMemoryEntries(entries.map((e) => sanitizeSnapshotEntry(e, fileName)));
    } else {
      const head = Math.floor(cap * 0.7);
      const tail = Math.floor(cap * 0.2);
      const omitted = shown - head - tail;
      const headText = joinSanitizedUntil(entries, fileName, head, "head");
      const tailText = joinSanitizedUntil(entries, fileName, tail, "tail");
      content = [
        sliceChars(headText, 0, head),
        `[... ${withThousands(omitted)} chars truncated — memory over budget (${withThousands(current)}/${withThousands(limit)}); consolidate via memory(action=remove/replace) ...]`,
        sliceChars(tailText, countChars(tailText) - tail),
      ].join("\n");
    }
    const over = current > limit ? " ⚠ OVER BUDGET" : "";
    const title = target === "user" ? "USER PROFILE (who the user is)" : "MEMORY (your personal notes)";
    const header = `${title} [${percent(current, limit)}% — ${withThousands(current)}/${withThousands(limit)} chars${over}]`;
    const rule = "═".repeat(46);
    return `${rule}\n${header}\n${rule}\n${content}`;
  }

  /** Add an entry. Exact duplicates succeed without a second copy. */
  async add(target: BuiltinMemoryTarget, content: string): Promise<MemoryToolResult> {
    const text = normalizeEntryText(content);
    if (!text) return fail("Content cannot be empty.");
    const delimiter = entryDelimiterError(text);
    if (delimiter) return fail(delimiter);
    const blocked = describeBlockedContent(text);
    if (blocked) return fail(blocked);
    return this.mutate(target, { driftCheck: false }, async (entries) => {
      if (entries.includes(text))
        return { entries: null, result: await this.success(target, entries, "Entry already exists (no duplicate added).") };
      const next = [...entries, text];
      const limit = this.limit(target);
      const projected = joinedChars(next);
      if (projected > limit) {
        const current = joinedChars(entries);
        return {
          entries: null,
          result: consolidationFailure({
            success: false,
            error: `Memory at ${withThousands(current)}/${withThousands(limit)} chars. Adding this entry (${countChars(text)} chars) would exceed the limit. Consolidate now: merge related entries with memory(action="replace") or drop stale ones with memory(action="remove") — ideally in one batched call with operations — then add the new fact.`,
            current_entries: this.echo(target, entries),
            usage: `${withThousands(current)}/${withThousands(limit)}`,
          }),
        };
      }
      return { entries: next, result: await this.success(target, next, "Entry added.") };
    });
  }

  /** Replace the single entry containing `oldText` with `newContent`. */
  async replace(target: BuiltinMemoryTarget, oldText: string, newContent: string): Promise<MemoryToolResult> {
    const old = normalizeEntryText(oldText);
    const text = normalizeEntryText(newContent);
    if (!old) return fail("old_text cannot be empty.");
    if (!text) return fail("new_content cannot be empty. Use 'remove' to delete entries.");
    const delimiter = entryDelimiterError(text);
    if (delimiter) return fail(delimiter);
    const blocked = describeBlockedContent(text);
    if (blocked) return fail(blocked);
    return this.mutate(target, { driftCheck: true }, async (entries) => {
      const match = this.findOne(target, entries, old, "replace");
      if ("failure" in match) return { entries: null, result: match.failure };
      const next = [...entries];
      next[match.index] = text;
      const over = this.overBudget(target, entries, next, `Replacing this entry would put ${BUILTIN_MEMORY_FILES[target]}`);
      if (over) return { entries: null, result: over };
      const result = await this.success(target, next, "Entry replaced.");
      result.replaced_entry = match.entry;
      return { entries: next, result };
    });
  }

  /** Remove the single entry containing `oldText`. */
  async remove(target: BuiltinMemoryTarget, oldText: string): Promise<MemoryToolResult> {
    const old = normalizeEntryText(oldText);
    if (!old) return fail("old_text cannot be empty.");
    return this.mutate(target, { driftCheck: true }, async (entries) => {
      const match = this.findOne(target, entries, old, "remove");
      if ("failure" in match) return { entries: null, result: match.failure };
      const next = entries.filter((_, i) => i !== match.index);
      const result = await this.success(target, next, "Entry removed.");
      result.removed_entry = match.entry;
      return { entries: next, result };
    });
  }

  /**
   * Apply several operations all-or-nothing: contents are scanned first, then the operations run
   * in order on a working copy under the lock; the budget is checked only on the final state;
   * any failure writes nothing.
   */
  async applyBatch(target: BuiltinMemoryTarget, operations: readonly unknown[]): Promise<MemoryToolResult> {
    const suffix = " No operations were applied (batch is all-or-nothing).";
    const batchFail = (error: string, extra: Record<string, unknown> = {}): MemoryToolResult => ({
      success: false,
      error: error + suffix,
      ...extra,
    });
    if (!Array.isArray(operations) || operations.length === 0) return fail("operations list is empty.");
    if (operations.length > MAX_BATCH_OPERATIONS) {
      return batchFail(
        `Too many operations (${withThousands(operations.length)}); one batch may carry at most ${withThousands(MAX_BATCH_OPERATIONS)}. Split the changes into smaller batches.`,
      );
    }

    const ops: MemoryOperation[] = [];
    for (const [i, raw] of operations.entries()) {
      const n = i + 1;
      if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
        return batchFail(`Operation ${n}: must be an object {action, content?, old_text?}.`);
      }
      const op = raw as Record<string, unknown>;
      const action = op.action;
      if (action !== "add" && action !== "replace" && action !== "remove") {
        return batchFail(`Operation ${n}: Unknown action '${String(action ?? "")}'. Use: add, replace, remove`);
      }
      const content = typeof op.content === "string" ? normalizeEntryText(op.content) : undefined;
      const oldText = typeof op.old_text === "string" ? normalizeEntryText(op.old_text) : undefined;
      if ((action === "add" || action === "replace") && content) {
        const delimiter = entryDelimiterError(content);
        if (delimiter) return batchFail(`Operation ${n}: ${delimiter}`);
        const blocked = describeBlockedContent(content);
        if (blocked) return batchFail(`Operation ${n}: ${blocked}`);
      }
      ops.push({ action, ...(content !== undefined ? { content } : {}), ...(oldText !== undefined ? { old_text: oldText } : {}) });
    }

    return this.mutate(target, { driftCheck: true }, async (entries) => {
      const work = [...entries];
      // Membership of `work`, kept in step with it so duplicate adds are O(1), not a scan.
      let present = new Set(work);
      const replaced: Record<string, string> = {};
      const removed: Record<string, string> = {};
      for (const [i, op] of ops.entries()) {
        const n = i + 1;
        const label = `Operation ${n} (${op.action})`;
        if (op.action === "add") {
          if (!op.content) return { entries: null, result: batchFail(`${label}: Content is required for 'add' action.`) };
          if (!present.has(op.content)) {
            work.push(op.content);
            present.add(op.content);
          }
          continue;
        }
        if (!op.old_text) {
          return {
            entries: null,
            result: batchFail(`${label}: old_text is required for '${op.action}' action.`, { current_entries: this.echo(target, work) }),
          };
        }
        if (op.action === "replace" && !op.content) {
          return { entries: null, result: batchFail(`${label}: content is required for 'replace' action.`) };
        }
        const match = this.findOne(target, work, op.old_text, op.action);
        if ("failure" in match) {
          const { error, ...rest } = match.failure;
          return { entries: null, result: consolidationFailure(batchFail(`${label}: ${String(error)}`, rest)) };
        }
        if (op.action === "replace") {
          replaced[String(n)] = match.entry;
          work[match.index] = op.content as string;
        } else {
          removed[String(n)] = match.entry;
          work.splice(match.index, 1);
        }
        present = new Set(work);
      }
      const limit = this.limit(target);
      const projected = joinedChars(work);
      if (projected > limit) {
        const current = joinedChars(entries);
        return {
          entries: null,
          result: consolidationFailure(
            batchFail(
              `After these operations ${BUILTIN_MEMORY_FILES[target]} would be at ${withThousands(projected)}/${withThousands(limit)} chars, over the limit. Consolidate: replace long entries with shorter ones or remove stale ones in the same batch.`,
              { current_entries: this.echo(target, entries), usage: `${withThousands(current)}/${withThousands(limit)}` },
            ),
          ),
        };
      }
      const result = await this.success(target, work, `Applied ${ops.length} operation(s).`);
      if (Object.keys(replaced).length > 0) result.replaced_entries = replaced;
      if (Object.keys(removed).length > 0) result.removed_entries = removed;
      return { entries: work, result };
    });
  }

  // -------------------------------------------------------------------------------------------

  /**
   * The entries on disk; a file that is missing or cannot be read has none (then, for an existing
   * file, why it was not read is added to `problems`).
   */
  private async readEntries(target: BuiltinMemoryTarget, problems?: string[]): Promise<string[]> {
    const file = this.filePath(target);
    let raw: string;
    try {
      // Never blocks: a FIFO or device in place of the file reads as nothing (writes refuse it),
      // and a file over the cap is not read at all.
      raw = await readTextLenient(file, MAX_MEMORY_FILE_BYTES);
    } catch (error) {
      const size = await this.oversize(target);
      const remedy =
        size !== null
          ? `It is ${withThousands(size)} bytes, far over its ${withThousands(this.limit(target))}-char limit: trim it by hand to the entries worth keeping (or move it away to start fresh), then start a new session.`
          : (error as NodeJS.ErrnoException).code === "EINVAL"
            ? "Replace it with a regular text file (or remove it), then start a new session."
            : "Check that it is a readable regular file, then start a new session.";
      problems?.push(
        `${file} was not loaded, so this session has no ${BUILTIN_MEMORY_FILES[target]} snapshot: ${describeError(error)}. ${remedy} The file was left unchanged.`,
      );
      return [];
    }
    return dedupe(parseMemoryEntries(raw));
  }

  /** The size of the target's file when it is a regular file over `MAX_MEMORY_FILE_BYTES`, else `null`. */
  private async oversize(target: BuiltinMemoryTarget): Promise<number | null> {
    const stat = await fsp.stat(this.filePath(target)).catch(() => null);
    return stat?.isFile() && stat.size > MAX_MEMORY_FILE_BYTES ? stat.size : null;
  }

  /**
   * The file for a read-modify-write: "" only when it does not exist. Any other read error, or
   * bytes that are not UTF-8 (which a rewrite would turn into U+FFFD), is a failed result, so
   * a file that could not be read exactly is never replaced.
   */
  private async readForWrite(target: BuiltinMemoryTarget): Promise<string | MemoryToolResult> {
    const file = this.filePath(target);
    let content: Awaited<ReturnType<typeof readUtf8File>>;
    try {
      content = await readUtf8File(file, MAX_MEMORY_FILE_BYTES);
    } catch (error) {
      const size = await this.oversize(target);
      if (size !== null) {
        return fail(
          `Refusing to write ${BUILTIN_MEMORY_FILES[target]}: ${file} is ${withThousands(size)} bytes, larger than the ${MAX_MEMORY_FILE_BYTES / (1024 * 1024)} MiB a memory file may be (its limit is ${withThousands(this.limit(target))} chars), so it was not read. Nothing was written and the file was left unchanged; the user must trim it by hand (keep the entries worth keeping, or move it away to start fresh).`,
        );
      }
      return fail(
        `Cannot read memory file ${file}: ${describeError(error)}. Nothing was written; check that it is a readable regular file, then retry.`,
      );
    }
    if (content.kind === "missing") return "";
    if (content.kind === "not-utf8") {
      return fail(
        `Refusing to write ${BUILTIN_MEMORY_FILES[target]}: ${notUtf8Message(file, content.offset)}. The file was left unchanged.`,
      );
    }
    return content.text;
  }

  /**
   * Entries as error results echo them (`current_entries`): blocked entries are replaced by their
   * `[BLOCKED: …]` placeholder so a poisoned entry never re-enters the model's context. Bounded
   * like the snapshot: once the shown entries pass `max(2*limit, 4000)` chars (only a file far
   * over its limit gets there), the rest is summarised by one `[... N more entries …]` line, so
   * a huge file on disk never becomes a huge tool result.
   */
  sanitizedEntries(target: BuiltinMemoryTarget, entries: readonly string[]): string[] {
    const fileName = BUILTIN_MEMORY_FILES[target];
    const limit = this.limit(target);
    const cap = Math.max(2 * limit, 4000);
    const out: string[] = [];
    let used = 0;
    for (const [i, entry] of entries.entries()) {
      const shown = sanitizeSnapshotEntry(entry, fileName);
      used += countChars(shown);
      if (out.length > 0 && used > cap) {
        out.push(
          `[... ${withThousands(entries.length - i)} more entries (${withThousands(joinedChars(entries, i))} chars) not shown — ${fileName} is far over its ${withThousands(limit)}-char limit; remove stale entries (old_text may name any of them) or move the file away.]`,
        );
        break;
      }
      out.push(shown);
    }
    return out;
  }

  /** `"<cur>/<limit>"` as error results report usage. */
  usageText(target: BuiltinMemoryTarget, entries: readonly string[]): string {
    return `${withThousands(joinedChars(entries))}/${withThousands(this.limit(target))}`;
  }

  private echo(target: BuiltinMemoryTarget, entries: readonly string[]): string[] {
    return this.sanitizedEntries(target, entries);
  }

  private async success(target: BuiltinMemoryTarget, entries: readonly string[], message: string): Promise<MemoryToolResult> {
    const limit = this.limit(target);
    const current = joinedChars(entries);
    return {
      success: true,
      done: true,
      target,
      usage: `${percent(current, limit)}% — ${withThousands(current)}/${withThousands(limit)} chars`,
      entry_count: entries.length,
      message,
      note: MEMORY_WRITE_NOTE,
    };
  }

  private overBudget(
    target: BuiltinMemoryTarget,
    before: readonly string[],
    after: readonly string[],
    what: string,
  ): MemoryToolResult | null {
    const limit = this.limit(target);
    const projected = joinedChars(after);
    if (projected <= limit) return null;
    const current = joinedChars(before);
    return consolidationFailure({
      success: false,
      error: `${what} at ${withThousands(projected)}/${withThousands(limit)} chars, over the limit. Consolidate: use shorter content, or remove stale entries first.`,
      current_entries: this.echo(target, before),
      usage: `${withThousands(current)}/${withThousands(limit)}`,
    });
  }

  private findOne(
    target: BuiltinMemoryTarget,
    entries: readonly string[],
    oldText: string,
    action: "replace" | "remove",
  ): { index: number; entry: string } | { failure: MemoryToolResult } {
    const indices: number[] = [];
    entries.forEach((e, i) => {
      if (e.includes(oldText)) indices.push(i);
    });
    if (indices.length === 0) {
      const limit = this.limit(target);
      const current = joinedChars(entries);
      return {
        failure: consolidationFailure({
          success: false,
          error: `No entry matched ${quoteOldText(oldText)}. Check current_entries below and retry with the exact text of the entry you want to ${action}.`,
          current_entries: this.echo(target, entries),
          usage: `${withThousands(current)}/${withThousands(limit)}`,
        }),
      };
    }
    const distinct = [...new Set(indices.map((i) => entries[i] as string))];
    if (distinct.length > 1) {
      const matches = distinct
        .slice(0, MAX_MATCH_PREVIEWS)
        .map((e) => sanitizeSnapshotEntry(e, BUILTIN_MEMORY_FILES[target]))
        .map((e) => (e.length > 80 ? `${e.slice(0, 80)}...` : e));
      if (distinct.length > MAX_MATCH_PREVIEWS)
        matches.push(`[... ${withThousands(distinct.length - MAX_MATCH_PREVIEWS)} more matching entries not shown]`);
      return {
        failure: consolidationFailure({
          success: false,
          error: `Multiple entries matched ${quoteOldText(oldText)}. Be more specific.`,
          matches,
        }),
      };
    }
    const index = indices[0] as number;
    return { index, entry: entries[index] as string };
  }

  /** Why the on-disk file would not survive a rewrite, or `null` when it round-trips. */
  private checkDrift(target: BuiltinMemoryTarget, raw: string): DriftReport | null {
    if (raw.trim() === "") return null;
    const parsed = parseMemoryEntries(raw);
    // Compared with line endings normalised: a CRLF file parses into the same entries and is
    // rewritten with LF, losing nothing.
    if (serializeMemoryEntries(parsed) !== normalizeNewlines(raw).trim()) {
      return { reason: "entry separators, line endings or whitespace differ from the entry format" };
    }
    const limit = this.limit(target);
    const tooLong = parsed.find((e) => countChars(e) > limit);
    if (tooLong !== undefined) {
      return {
        reason: `an entry is ${withThousands(countChars(tooLong))} chars, longer than the whole ${withThousands(limit)}-char limit`,
      };
    }
    return null;
  }

  private async refuseDrift(target: BuiltinMemoryTarget, drift: DriftReport): Promise<MemoryToolResult> {
    const file = this.filePath(target);
    const fileName = BUILTIN_MEMORY_FILES[target];
    let backup = `${file}.bak.${Math.floor(this.now() / 1000)}`;
    try {
      await fsp.copyFile(file, backup);
    } catch {
      backup = `${backup} (BACKUP FAILED — file unchanged on disk)`;
    }
    const remediation = `Open ${file} and make every entry plain text separated by a line containing only "§" (no other text on that line), each entry at most ${withThousands(this.limit(target))} chars; or move the file away to start fresh. Then retry the memory call.`;
    return {
      success: false,
      error: `Refusing to write ${fileName}: file on disk has content that wouldn't round-trip through the memory tool (${drift.reason}). A snapshot was saved to ${backup}. Writing now could silently drop or merge entries, so the file was left unchanged.`,
      drift_backup: backup,
      remediation,
    };
  }

  /**
   * Lock, re-read, optionally refuse on drift, run `change`, and write when it returns entries.
   * Storage errors become a failed result (`Failed to write memory file …`).
   */
  private async mutate(
    target: BuiltinMemoryTarget,
    options: { driftCheck: boolean },
    change: (entries: string[]) => Promise<{ entries: string[] | null; result: MemoryToolResult }>,
  ): Promise<MemoryToolResult> {
    if (!isTarget(target)) return fail(`Invalid target '${String(target)}'. Use 'memory' or 'user'.`);
    const file = this.filePath(target);
    try {
      await fsp.mkdir(this.dir, { recursive: true });
      return await withFileLock(file, async () => {
        const raw = await this.readForWrite(target);
        if (typeof raw !== "string") return raw;
        if (options.driftCheck) {
          const drift = this.checkDrift(target, raw);
          if (drift) return this.refuseDrift(target, drift);
        }
        const { entries, result } = await change(dedupe(parseMemoryEntries(raw)));
        if (entries) {
          try {
            await atomicWriteFile(file, serializeMemoryEntries(entries));
          } catch (error) {
            throw new HermesMemoryError({
              code: "STORAGE_FAILED",
              message: `Failed to write memory file ${file}: ${describeError(error)}`,
              cause: error,
            });
          }
        }
        return result;
      });
    } catch (error) {
      const message = HermesMemoryError.isInstance(error)
        ? error.message.replace(/\.$/, "")
        : `Failed to write memory file ${file}: ${describeError(error)}`;
      // Lock errors already say what to do.
      const lockError = HermesMemoryError.hasCode(error, "LOCK_TIMEOUT") || HermesMemoryError.hasCode(error, "LOCK_FAILED");
      return fail(lockError ? `${message}.` : `${message}. Check that ${this.dir} is writable, then retry.`);
    }
  }
}

/**
 * The start (`head`) or end (`tail`) of the sanitised entries joined by the delimiter, just long
 * enough to hold `chars` characters: the part of the joined content a cut keeps, built without
 * joining the rest.
 */
function joinSanitizedUntil(entries: readonly string[], fileName: string, chars: number, end: "head" | "tail"): string {
  const parts: string[] = [];
  let count = 0;
  for (let k = 0; k < entries.length && count < chars; k++) {
    const sanitized = sanitizeSnapshotEntry(entries[end === "head" ? k : entries.length - 1 - k] as string, fileName);
    if (k > 0) {
      parts.push(MEMORY_ENTRY_DELIMITER);
      count += MEMORY_ENTRY_DELIMITER.length;
    }
    parts.push(sanitized);
    count += countChars(sanitized);
  }
  if (end === "tail") parts.reverse();
  return parts.join("");
}

/** Longest `old_text` quoted whole in an error; a longer one is cut, with its length. */
const MAX_QUOTED_OLD_TEXT = 200;

/** `'old_text'` for an error message, cut after `MAX_QUOTED_OLD_TEXT` chars so a huge argument is not echoed back. */
function quoteOldText(oldText: string): string {
  const n = countChars(oldText);
  return n > MAX_QUOTED_OLD_TEXT ? `'${sliceChars(oldText, 0, MAX_QUOTED_OLD_TEXT)}...' (${withThousands(n)} chars)` : `'${oldText}'`;
}

function fail(error: string): MemoryToolResult {
  return { success: false, error };
}

/**
 * Validate a character limit option: `undefined`/`null` → `fallback`; anything but a positive
 * integer throws `HermesMemoryError` (`INVALID_CONFIG`) naming the config key to fix.
 */
export function positiveLimit(value: unknown, fallback: number, name: "memoryCharLimit" | "userCharLimit"): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || value <= 0) {
    throw new HermesMemoryError({
      code: "INVALID_CONFIG",
      message: `${name} must be a positive integer (got ${String(value)}); fix memory.${name === "userCharLimit" ? "user_char_limit" : "memory_char_limit"} in config.yaml.`,
    });
  }
  return value;
}
