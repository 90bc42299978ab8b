/**
 * Rendering search hits as the recall block a provider's `prefetch` returns: a header line, then
 * one `- [label] text` line per hit, whitespace collapsed, within a character budget.
 */
import type { MemoryHit } from "@hermes/memory-core";

/** Options for `formatRecall`. */
export interface RecallFormatOptions {
  /** First line of the block (e.g. `## Recalled from SQLite memory`). */
  header: string;
  /** Longest block returned, header included. */
  maxChars: number;
  /** Text inside the brackets of one entry (default: `kind YYYY-MM-DD`). */
  label?: (hit: MemoryHit) => string;
}

/** An entry is dropped rather than shortened below this many characters of text. */
export const MIN_ENTRY_CHARS = 20;

/** The default entry label: the hit's kind and the date it was stored. */
export function defaultRecallLabel(hit: MemoryHit): string {
  const date = typeof hit.createdAt === "string" ? hit.createdAt.slice(0, 10) : "";
  return date ? `${hit.kind} ${date}` : hit.kind;
}

/**
 * Render `hits` (best first) as a recall block of at most `maxChars` characters. Entries that do
 * not fit are shortened with `…`; once fewer than `MIN_ENTRY_CHARS` characters of room are left,
 * the rest are dropped. Returns `""` when no entry fits or there are no hits.
 */
export function formatRecall(hits: readonly MemoryHit[], options: RecallFormatOptions): string {
  if (hits.length === 0) return "";
  const label = options.label ?? defaultRecallLabel;
  const header = options.header;
  let out = header;
  let entries = 0;
  for (const hit of hits) {
    const prefix = `\n- [${label(hit)}] `;
    const room = options.maxChars - out.length - prefix.length;
    if (room < MIN_ENTRY_CHARS) break;
    const text = hit.content.replace(/\s+/g, " ").trim();
    out += prefix + (text.length > room ? `${text.slice(0, room - 1)}…` : text);
    entries += 1;
  }
  return entries === 0 ? "" : out;
}

/** Number of entries in a block `formatRecall` returned (0 for `""`). */
export function recallEntryCount(block: string): number {
  if (!block) return 0;
  let n = 0;
  for (const line of block.split("\n")) if (line.startsWith("- [")) n += 1;
  return n;
}
