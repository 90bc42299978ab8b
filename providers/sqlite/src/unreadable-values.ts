import type BetterSqlite3 from "better-sqlite3";
import { readableRow, tooDeepForSqlite, UNREADABLE_KEY } from "@hermes/memory-provider-kit/sqlite";
import type { Db } from "./database.js";

/**
 * Values of an items row that this package cannot read as written, and how they are made readable
 * (the kit's rule, `readableRow`: originals kept under `UNREADABLE_KEY`).
 *
 * Every text column (`session_id`, `user_id`, `speaker`, `content`) must hold text (or NULL where
 * allowed); `metadata` must hold a JSON object and `tags` a JSON array, as text. Older versions of
 * this package, or another program writing the file, can leave a BLOB (or a number) there, or text
 * that is not such JSON. SQLite's JSON functions refuse those, so a search returning such a row, or
 * any metadata or tags filter, would fail. `repairUnreadableValues` (migrations, `vacuum`) rewrites
 * them as the rule says, and every read of a row (get, list, export) shows what it will store.
 */
export { UNREADABLE_KEY };

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

/**
 * The readable values of a row (the rule above), whether they differ from what is stored, and the
 * tags and metadata parsed.
 */
export function readableValues(
  row: RawValues,
): ReadableValues & { changed: boolean; parsedTags: unknown[]; parsedMetadata: Record<string, unknown> } {
  // Every row this package writes: text columns hold text, tags a JSON array, metadata a JSON
  // object. Checked first, as every search hit and read goes through here.
  const { session_id: sessionId, user_id: userId, speaker, content, tags, metadata } = row;
  if (
    typeof content === "string" &&
    typeof speaker === "string" &&
    typeof tags === "string" &&
    typeof metadata === "string" &&
    (sessionId === null || typeof sessionId === "string") &&
    (userId === null || typeof userId === "string") &&
    !tooDeepForSqlite(tags) &&
    !tooDeepForSqlite(metadata)
  ) {
    try {
      const parsedTags = JSON.parse(tags) as unknown;
      const parsedMetadata = JSON.parse(metadata) as unknown;
      if (Array.isArray(parsedTags) && parsedMetadata !== null && typeof parsedMetadata === "object" && !Array.isArray(parsedMetadata)) {
        return {
          session_id: sessionId,
          user_id: userId,
          speaker,
          content,
          tags,
          metadata,
          changed: false,
          parsedTags,
          parsedMetadata: parsedMetadata as Record<string, unknown>,
        };
      }
    } catch {
      // Not JSON: the rule below keeps the original.
    }
  }
  return readableValuesSlow(row);
}

/** `readableValues` for a row holding at least one value that is not as this package writes it. */
function readableValuesSlow(
  row: RawValues,
): ReadableValues & { changed: boolean; parsedTags: unknown[]; parsedMetadata: Record<string, unknown> } {
  const readable = readableRow(row as unknown as Record<string, unknown>, {
    textColumns: { session_id: true, user_id: true, speaker: false, content: false },
    jsonColumns: { tags: "array" },
    metadataColumn: "metadata",
  });
  const { session_id: sessionId, user_id: userId, speaker, content } = readable.text;
  const tags = readable.json.tags!;
  const out: ReadableValues = {
    session_id: sessionId ?? null,
    user_id: userId ?? null,
    speaker: speaker!,
    content: content!,
    tags: tags.text,
    metadata: readable.metadataText,
  };
  const changed = (Object.keys(out) as Array<keyof ReadableValues>).some((column) => out[column] !== row[column]);
  return { ...out, changed, parsedTags: tags.parsed as unknown[], parsedMetadata: readable.metadata };
}

/**
 * The rows possibly holding an unreadable value (a full scan; rows it returns are checked again by
 * `readableValues`). `typeof` catches every BLOB (SQLite may read a BLOB holding JSON text as
 * JSON), and the CASE keeps `json_type` away from text that is not JSON.
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
  const rows = (db.prepare(SUSPECT_ROWS).all() as SuspectRow[])
    .map((row) => ({ id: row.id, before: row, after: readableValues(row) }))
    .filter((r) => r.after.changed);
  const statements = new Map<string, BetterSqlite3.Statement>();
  for (const { id, before, after } of rows) {
    const columns = (["session_id", "user_id", "speaker", "content", "tags", "metadata"] as const).filter((c) => after[c] !== before[c]);
    const key = columns.join(",");
    let statement = statements.get(key);
    if (!statement)
      statements.set(key, (statement = db.prepare(`UPDATE items SET ${columns.map((c) => `${c} = ?`).join(", ")} WHERE id = ?`)));
    statement.run(...columns.map((c) => after[c]), id);
  }
  return rows.length;
}
