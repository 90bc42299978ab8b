/**
 * Stored values a provider cannot read as written, and how they are made readable.
 *
 * A text column must hold text, and a JSON column must hold JSON text of its shape (an object or
 * an array). Older versions of a provider, or another program writing its file, can leave a BLOB
 * (or a number) there, or text that is not such JSON. SQLite's JSON functions refuse those ("JSON
 * cannot hold BLOB values", "malformed JSON"), and `JSON.parse` throws on them.
 *
 * The rule, which a provider applies to every read of a row (so reads show what a repair will
 * store) and to the repair that rewrites such values:
 * - a BLOB in a text column becomes its UTF-8 text; a BLOB that is not valid UTF-8 becomes its text
 *   with U+FFFD for the bad bytes, and its original bytes are kept (base64);
 * - a number in a text column becomes its decimal text;
 * - a JSON column's value that is valid JSON of its shape (as text or as a UTF-8 BLOB) is kept (a
 *   BLOB's JSON is written back as text); anything else becomes `{}` / `[]`, and the original value
 *   is kept;
 * - kept originals go into the item's metadata under `UNREADABLE_KEY`, by column:
 *   `{ "<column>": { "text": "..." } }` for text, `{ "<column>": { "base64": "..." } }` for bytes.
 * No row is deleted and no value is lost.
 */

/** The metadata key holding the originals of values that were not readable, by column. */
export const UNREADABLE_KEY = "hermesUnreadable";

/** How an unreadable original is kept: its text when it has one, else its bytes in base64. */
export type KeptValue = { text: string } | { base64: string };

/** A text column's readable value, and its original when that had to be kept. */
export interface ReadableText<T extends string | null = string> {
  value: T;
  kept?: KeptValue;
}

/** A JSON column's readable value: JSON text of its shape, that text parsed, and the original when kept. */
export interface ReadableJson<T> {
  text: string;
  parsed: T;
  kept?: KeptValue;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });
const lossyUtf8 = new TextDecoder("utf-8");

function isBytes(value: unknown): value is Uint8Array {
  return value instanceof Uint8Array;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** `bytes` as UTF-8 text, or `undefined` when they are not valid UTF-8. */
export function decodeUtf8(bytes: Uint8Array): string | undefined {
  try {
    return utf8.decode(bytes);
  } catch {
    return undefined;
  }
}

/** How an unreadable stored value is kept: `{text}` when it has text (UTF-8 bytes included), else `{base64}` of its bytes. */
export function unreadableOriginal(value: unknown): KeptValue {
  if (isBytes(value)) {
    const text = decodeUtf8(value);
    return text !== undefined ? { text } : { base64: Buffer.from(value).toString("base64") };
  }
  return { text: String(value) };
}

/**
 * A text column's stored value as text: text as it is; a BLOB as its UTF-8 text (not valid UTF-8:
 * U+FFFD for the bad bytes, the bytes kept); a number as its decimal text; NULL (or undefined) as
 * `null` when `nullable`, else `""`.
 */
export function readableText(value: unknown): ReadableText<string>;
export function readableText(value: unknown, nullable: boolean): ReadableText<string | null>;
export function readableText(value: unknown, nullable = false): ReadableText<string | null> {
  if (typeof value === "string") return { value };
  if (value === null || value === undefined) return { value: nullable ? null : "" };
  if (isBytes(value)) {
    const text = decodeUtf8(value);
    if (text !== undefined) return { value: text };
    return { value: lossyUtf8.decode(value), kept: unreadableOriginal(value) };
  }
  return { value: String(value) };
}

/**
 * A JSON column's stored value as JSON text of `shape`: text that is such JSON stays as written; a
 * UTF-8 BLOB holding such JSON becomes that JSON as text; anything else becomes `{}` / `[]` and the
 * original is kept.
 */
export function readableJson(value: unknown, shape: "object"): ReadableJson<Record<string, unknown>>;
export function readableJson(value: unknown, shape: "array"): ReadableJson<unknown[]>;
export function readableJson(value: unknown, shape: "object" | "array"): ReadableJson<Record<string, unknown> | unknown[]>;
export function readableJson(value: unknown, shape: "object" | "array"): ReadableJson<Record<string, unknown> | unknown[]> {
  const isShape = shape === "object" ? isPlainObject : Array.isArray;
  const text = typeof value === "string" ? value : isBytes(value) ? decodeUtf8(value) : undefined;
  if (text !== undefined && !tooDeepForSqlite(text)) {
    try {
      const parsed = JSON.parse(text) as unknown;
      if (isShape(parsed))
        return { text: typeof value === "string" ? text : JSON.stringify(parsed), parsed: parsed as Record<string, unknown> | unknown[] };
    } catch {
      // Not JSON: kept below.
    }
  }
  return shape === "object"
    ? { text: "{}", parsed: {}, kept: unreadableOriginal(value) }
    : { text: "[]", parsed: [], kept: unreadableOriginal(value) };
}

/**
 * `metadata` with the originals in `kept` (by column) added under `UNREADABLE_KEY`, next to the
 * originals an earlier repair kept there (a column kept again replaces its earlier entry). The same
 * object when `kept` is empty.
 */
export function keepUnreadable(metadata: Record<string, unknown>, kept: Readonly<Record<string, KeptValue>>): Record<string, unknown> {
  if (Object.keys(kept).length === 0) return metadata;
  const earlier = isPlainObject(metadata[UNREADABLE_KEY]) ? metadata[UNREADABLE_KEY] : {};
  return { ...metadata, [UNREADABLE_KEY]: { ...earlier, ...kept } };
}

/** SQLite's JSON functions refuse JSON nested deeper than this (`JSON_MAX_DEPTH`). */
export const SQLITE_JSON_MAX_DEPTH = 1000;

/**
 * Whether JSON `text` nests arrays and objects deeper than SQLite's JSON functions accept
 * (`SQLITE_JSON_MAX_DEPTH`): `JSON.parse` reads it, but every filter over it fails, so it is
 * unreadable too. Text too short to nest that deep is not scanned.
 */
export function tooDeepForSqlite(text: string): boolean {
  return text.length > 2 * SQLITE_JSON_MAX_DEPTH && jsonNestsDeeperThan(text, SQLITE_JSON_MAX_DEPTH);
}

/**
 * Whether JSON `text` nests arrays and objects more than `max` deep (brackets inside strings do not
 * count), found without parsing it: `JSON.parse` of a text nesting deep builds one value per level.
 */
export function jsonNestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** A stored row's columns by the rule above: each text and JSON column readable, the metadata holding the kept originals. */
export interface ReadableRow {
  /** Each text column's readable value (`null` only for a nullable column holding NULL). */
  text: Record<string, string | null>;
  /** Each other JSON column's readable JSON text and its parsed value. */
  json: Record<string, { text: string; parsed: Record<string, unknown> | unknown[] }>;
  /** The metadata column parsed, with the originals of every unreadable column under `UNREADABLE_KEY`. */
  metadata: Record<string, unknown>;
  /** `metadata` as JSON text: the stored text when nothing had to be kept. */
  metadataText: string;
}

/**
 * Read every column of a stored row by the one rule both providers apply: `textColumns` (name →
 * nullable) through `readableText`, `jsonColumns` (name → shape) through `readableJson`, and the
 * object column `metadataColumn`, into which the originals of the columns that were not readable
 * are kept (`keepUnreadable`, in the order the columns are named).
 */
export function readableRow(
  row: Readonly<Record<string, unknown>>,
  columns: {
    textColumns: Readonly<Record<string, boolean>>;
    jsonColumns?: Readonly<Record<string, "object" | "array">>;
    metadataColumn: string;
  },
): ReadableRow {
  const kept: Record<string, KeptValue> = {};
  const text: Record<string, string | null> = {};
  for (const [column, nullable] of Object.entries(columns.textColumns)) {
    const out = readableText(row[column], nullable);
    if (out.kept) kept[column] = out.kept;
    text[column] = out.value;
  }
  const json: ReadableRow["json"] = {};
  for (const [column, shape] of Object.entries(columns.jsonColumns ?? {})) {
    const out = readableJson(row[column], shape);
    if (out.kept) kept[column] = out.kept;
    json[column] = { text: out.text, parsed: out.parsed };
  }
  const metadata = readableJson(row[columns.metadataColumn], "object");
  if (metadata.kept) kept[columns.metadataColumn] = metadata.kept;
  const withKept = keepUnreadable(metadata.parsed, kept);
  return { text, json, metadata: withKept, metadataText: withKept === metadata.parsed ? metadata.text : JSON.stringify(withKept) };
}
