import type BetterSqlite3 from "better-sqlite3";
import type { Db } from "./database.js";

/**
 * Values of an items row that this package cannot read as written, and how they are made readable.
 *
 * Every text column (`session_id`, `user_id`, `speaker`, `content`) must hold text (or NULL where
 * allowed); `metadata` must hold a JSON object and `tags` a JSON array, as text. Older versions of
 * this package, or another program writing the file, can leave a BLOB (or a number) there, or text
 * that is not such JSON. SQLite's JSON functions refuse those ("JSON cannot hold BLOB values",
 * "malformed JSON"), so a search returning such a row, or any metadata or tags filter, would fail.
 *
 * The rule, applied by `repairUnreadableValues` (migrations, `vacuum`) and by every read of a row
 * (get, list, export) so that reads show what a repair will store:
 * - a BLOB in a text column becomes its UTF-8 text; a BLOB that is not valid UTF-8 becomes its text
 *   with U+FFFD for the bad bytes, and its original bytes are kept (base64);
 * - a number in a text column becomes its decimal text;
 * - metadata or tags that are valid JSON of the right shape (as text or as a UTF-8 BLOB) are kept
 *   (a BLOB's JSON is written back as text); anything else becomes `{}` / `[]`, and the original
 *   value is kept;
 * - kept originals go into the item's metadata under `UNREADABLE_KEY`, by column:
 *   `{ "<column>": { "text": "..." } }` for text, `{ "<column>": { "base64": "..." } }` for bytes.
 * No row is deleted and no value is lost.
 */
export const UNREADABLE_KEY = "hermesUnreadable";

/** The columns the rule covers, as read from an items row. */
export interface RawValues {
  session_id: unknown;
  user_id: unknown;
  speaker: unknown;
  content: unknown;
  tags: unknown;
  metadata: unknown;
}

/** The same columns, readable. */
export interface ReadableValues {
  session_id: string | null;
  user_id: string | null;
  speaker: string;
  content: string;
  tags: string;
  metadata: string;
}

type Kept = { text: string } | { base64: string };

const utf8 = new TextDecoder("utf-8", { fatal: true });
const lossyUtf8 = new TextDecoder("utf-8");

function isBytes(value: unknown): value is Uint8Array {
  return value instanceof Uint8Array;
}

/** `bytes` as UTF-8 text, or `undefined` when they are not valid UTF-8. */
function decode(bytes: Uint8Array): string | undefined {
  try {
    return utf8.decode(bytes);
  } catch {
    return undefined;
  }
}

/** How an unreadable value is kept: its text when it has one, else its bytes in base64. */
function keep(value: unknown): Kept {
  if (isBytes(value)) {
    const text = decode(value);
    return text !== undefined ? { text } : { base64: Buffer.from(value).toString("base64") };
  }
  return { text: String(value) };
}

/** A text column's value as text (NULL stays NULL where `nullable`), and what was kept of it. */
function textValue(value: unknown, nullable: boolean): { value: string | null; kept?: Kept } {
  if (typeof value === "string") return { value };
  if (value === null || value === undefined) return { value: nullable ? null : "" };
  if (isBytes(value)) {
    const text = decode(value);
    if (text !== undefined) return { value: text };
    return { value: lossyUtf8.decode(value), kept: keep(value) };
  }
  return { value: String(value) };
}

/** A JSON column's value as JSON text of the right shape, the parsed value, and what was kept of it. */
function jsonValue(value: unknown, isShape: (parsed: unknown) => boolean, empty: "{}" | "[]"): { text: string; parsed: unknown; kept?: Kept } {
  const text = typeof value === "string" ? value : isBytes(value) ? decode(value) : undefined;
  if (text !== undefined) {
    try {
      const parsed = JSON.parse(text) as unknown;
      // Text stays as written; a BLOB's JSON is written back as text.
      if (isShape(parsed)) return { text: typeof value === "string" ? text : JSON.stringify(parsed), parsed };
    } catch {
      // Not JSON: kept below.
    }
  }
  return { text: empty, parsed: JSON.parse(empty), kept: keep(value) };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * The readable values of a row (the rule above), whether they differ from what is stored, and the
 * tags and metadata parsed.
 */
export function readableValues(row: RawValues): ReadableValues & { changed: boolean; parsedTags: unknown[]; parsedMetadata: Record<string, unknown> } {
  const kept: Record<string, Kept> = {};
  const text = (column: "session_id" | "user_id" | "speaker" | "content", nullable: boolean) => {
    const out = textValue(row[column], nullable);
    if (out.kept) kept[column] = out.kept;
    return out.value;
  };
  const sessionId = text("session_id", true);
  const userId = text("user_id", true);
  const speaker = text("speaker", false)!;
  const content = text("content", false)!;
  const tags = jsonValue(row.tags, Array.isArray, "[]");
  if (tags.kept) kept.tags = tags.kept;
  const metadata = jsonValue(row.metadata, isPlainObject, "{}");
  if (metadata.kept) kept.metadata = metadata.kept;
  let metadataText = metadata.text;
  let metadataObject = metadata.parsed as Record<string, unknown>;
  if (Object.keys(kept).length > 0) {
    const earlier = isPlainObject(metadataObject[UNREADABLE_KEY]) ? metadataObject[UNREADABLE_KEY] : {};
    metadataObject = { ...metadataObject, [UNREADABLE_KEY]: { ...earlier, ...kept } };
    metadataText = JSON.stringify(metadataObject);
  }
  const out: ReadableValues = { session_id: sessionId, user_id: userId, speaker, content, tags: tags.text, metadata: metadataText };
  const changed = (Object.keys(out) as Array<keyof ReadableValues>).some((column) => out[column] !== row[column]);
  return { ...out, changed, parsedTags: tags.parsed as unknown[], parsedMetadata: metadataObject };
}

/**
 * The rows possibly holding an unreadable value (a full scan; rows it returns are checked again by
 * `readableValues`). `json_valid` is false for any BLOB, and the CASE keeps `json_type` away from
 * text that is not JSON.
 */
const SUSPECT_ROWS = `SELECT id, session_id, user_id, speaker, content, tags, metadata FROM items
  WHERE typeof(session_id) NOT IN ('text', 'null') OR typeof(user_id) NOT IN ('text', 'null')
     OR typeof(speaker) <> 'text' OR typeof(content) <> 'text'
     OR CASE WHEN typeof(tags) = 'text' AND json_valid(tags) THEN json_type(tags) <> 'array' ELSE 1 END
     OR CASE WHEN typeof(metadata) = 'text' AND json_valid(metadata) THEN json_type(metadata) <> 'object' ELSE 1 END`;

type SuspectRow = RawValues & { id: number };

/** Ids of up to `limit` items holding an unreadable value (ascending). A full scan. */
export function unreadableItemIds(db: Db, limit: number): number[] {
  const ids: number[] = [];
  for (const row of db.prepare(`${SUSPECT_ROWS} ORDER BY id`).iterate() as Iterable<SuspectRow>) {
    if (!readableValues(row).changed) continue;
    ids.push(row.id);
    if (ids.length >= limit) break;
  }
  return ids;
}

/**
 * Rewrite every unreadable value of the items table as the rule says, in the caller's transaction.
 * Only the columns that change are written, so the FTS and context triggers run only for rows
 * whose content or speaker changes (and index them as text). Returns how many rows were rewritten.
 */
export function repairUnreadableValues(db: Db): number {
  const rows = (db.prepare(SUSPECT_ROWS).all() as SuspectRow[]).map((row) => ({ id: row.id, before: row, after: readableValues(row) })).filter((r) => r.after.changed);
  const statements = new Map<string, BetterSqlite3.Statement>();
  for (const { id, before, after } of rows) {
    const columns = (["session_id", "user_id", "speaker", "content", "tags", "metadata"] as const).filter((c) => after[c] !== before[c]);
    const key = columns.join(",");
    let statement = statements.get(key);
    if (!statement) statements.set(key, (statement = db.prepare(`UPDATE items SET ${columns.map((c) => `${c} = ?`).join(", ")} WHERE id = ?`)));
    statement.run(...columns.map((c) => after[c]), id);
  }
  return rows.length;
}
