/**
 * Values of a sidecar row that cannot be read as written, and how they are made readable (the
 * kit's rule, `readableRow`: originals kept under `UNREADABLE_KEY`).
 *
 * `namespace`, `id` and `text` must hold text, `metadata` a JSON object, and the filter columns
 * `tags` / `user_meta` a JSON array / object, as text. Older versions of this package, or another
 * program writing the file, can leave a BLOB (or a number) there, or text that is not such JSON;
 * SQLite's JSON functions and `JSON.parse` refuse those. Every read of a row shows what a repair
 * will store, and the repair (`Sidecar.repairUnreadableValues`) stores it:
 * - `namespace`, `id`, `text`, `metadata`: the kit's rule, originals kept in the metadata under
 *   `UNREADABLE_KEY` by column;
 * - `tags`, `user_meta` (and the other derived columns): they only mirror the metadata, so a row
 *   with any unreadable value gets them computed again from its readable metadata.
 */
import type { Database as SqliteDatabase } from "better-sqlite3";
import { readableJson, readableRow, readableText, tooDeepForSqlite } from "@hermes/memory-provider-kit/sqlite";
import type { VectorMetadata } from "../metadata-filter.js";

/** The source columns of a sidecar row, as stored. */
export interface RawRecord {
  namespace: unknown;
  id: unknown;
  text: unknown;
  metadata: unknown;
}

/** The same columns, readable: `metadata` parsed (originals kept in it) and as JSON text. */
export interface ReadableRecord {
  namespace: string;
  id: string;
  text: string;
  metadata: VectorMetadata;
  metadataText: string;
  /** Whether any of the four differs from what is stored. */
  changed: boolean;
}

/** The readable values of a row's source columns (the rule above). */
export function readableRecord(raw: RawRecord): ReadableRecord {
  // Every row this package writes: text columns hold text, metadata a JSON object. Checked first,
  // as every row read goes through here.
  const { namespace, id, text, metadata } = raw;
  if (
    typeof namespace === "string" &&
    typeof id === "string" &&
    typeof text === "string" &&
    typeof metadata === "string" &&
    !tooDeepForSqlite(metadata)
  ) {
    try {
      const parsed = JSON.parse(metadata) as unknown;
      if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) {
        return { namespace, id, text, metadata: parsed as VectorMetadata, metadataText: metadata, changed: false };
      }
    } catch {
      // Not JSON: the rule below keeps the original.
    }
  }
  return readableRecordSlow(raw);
}

/** `readableRecord` for a row holding at least one value that is not as this package writes it. */
function readableRecordSlow(raw: RawRecord): ReadableRecord {
  const readable = readableRow(raw as unknown as Record<string, unknown>, {
    textColumns: { namespace: false, id: false, text: false },
    metadataColumn: "metadata",
  });
  const { namespace, id, text: body } = readable.text as { namespace: string; id: string; text: string };
  const metadata = readable.metadata as VectorMetadata;
  const metadataText = readable.metadataText;
  const changed = namespace !== raw.namespace || id !== raw.id || body !== raw.text || metadataText !== raw.metadata;
  return { namespace, id, text: body, metadata, metadataText, changed };
}

/** A text column's stored value as text (the kit's `readableText`): ids, namespaces and texts read from rows. */
export function textOf(value: unknown): string {
  return typeof value === "string" ? value : readableText(value).value;
}

/** Whether a filter column's stored value is JSON text of its shape (`tags`: array, `user_meta`: object). */
function readableFilterValue(value: unknown, shape: "array" | "object"): boolean {
  return typeof value === "string" && readableJson(value, shape).kept === undefined;
}

/** A stored row that may hold an unreadable value. */
export interface SuspectRecord extends RawRecord {
  key: number;
  tags?: unknown;
  user_meta?: unknown;
}

/**
 * The rows possibly holding an unreadable value (a full scan; `isUnreadable` checks them again).
 * `typeof` catches every BLOB (SQLite may read a BLOB holding JSON text as JSON), and each CASE
 * keeps `json_type` away from text that is not JSON. `filterColumns`: the file has `tags` and
 * `user_meta` (version 6).
 */
export function suspectRecordsSql(filterColumns: boolean): string {
  const json = (column: string, type: "object" | "array") =>
    `CASE WHEN typeof(${column}) = 'text' AND json_valid(${column}) THEN json_type(${column}) <> '${type}' ELSE 1 END`;
  return `SELECT key, namespace, id, text, metadata${filterColumns ? ", tags, user_meta" : ""} FROM records
    WHERE typeof(namespace) <> 'text' OR typeof(id) <> 'text' OR typeof(text) <> 'text' OR ${json("metadata", "object")}
    ${filterColumns ? `OR ${json("tags", "array")} OR ${json("user_meta", "object")}` : ""}`;
}

/** Whether a suspect row really holds a value the rule rewrites. */
export function isUnreadable(row: SuspectRecord): boolean {
  if (readableRecord(row).changed) return true;
  if ("tags" in row && !readableFilterValue(row.tags, "array")) return true;
  return "user_meta" in row && !readableFilterValue(row.user_meta, "object");
}

/** Whether `records` has the filter columns (version 6). */
export function hasFilterColumns(db: SqliteDatabase): boolean {
  return (db.pragma("table_info(records)") as Array<{ name: string }>).some((c) => c.name === "user_meta");
}

/** Readable ids of up to `limit` rows holding an unreadable value (in key order). A full scan. */
export function unreadableRecordIds(db: SqliteDatabase, limit: number): string[] {
  const ids: string[] = [];
  for (const row of db.prepare(`${suspectRecordsSql(hasFilterColumns(db))} ORDER BY key`).iterate() as Iterable<SuspectRecord>) {
    if (!isUnreadable(row)) continue;
    ids.push(readableRecord(row).id);
    if (ids.length >= limit) break;
  }
  return ids;
}
