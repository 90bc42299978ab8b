/**
 * The vector sidecar's schema: its tables, indexes and triggers, the migrations that bring older
 * files to the current version, the repair of values other programs stored unreadably, and the
 * derived columns (context, date, filter columns) computed from a row's metadata.
 */
import Database from "better-sqlite3";
import type { Database as SqliteDatabase } from "better-sqlite3";
import {
  CONTEXT_CHARS,
  CONTEXT_TURNS,
  keepUnreadable,
  unreadableOriginal,
  TURN_COLUMN_WEIGHTS,
  turnDateText,
  UNREADABLE_KEY,
  type LayeredRankerSchema,
  type OpenSqliteStoreOptions,
  type SqliteStoreSpec,
} from "@hermes/memory-provider-kit/sqlite";
import type { VectorMetadata } from "../metadata-filter.js";
import { FILTER_TERMS_SCHEMA, fillFilterTerms } from "./filter-terms.js";
import { hasFilterColumns, isUnreadable, readableRecord, suspectRecordsSql, type SuspectRecord } from "./sidecar-values.js";

export const SCHEMA_VERSION = 7;

/** The records' session id as SQL; the session index is built on exactly this expression. */
export const SESSION_EXPR = `json_extract(metadata, '$.session_id')`;
/** The records' kind as SQL; the session index is built on exactly this expression. */
export const KIND_EXPR = `json_extract(metadata, '$.kind')`;
/** Kind, session and user of a row `r`, for compiled filters. */
export const kindSql = (alias: string) => `json_extract(${alias}.metadata, '$.kind')`;
export const sessionSql = (alias: string) => `json_extract(${alias}.metadata, '$.session_id')`;
export const userSql = (alias: string) => `json_extract(${alias}.metadata, '$.user_id')`;

/**
 * BM25 column weights of `records_fts` in column order (text, prev1, prev2, session_date): the
 * kit's turn weights, so both providers rank turns alike. The sidecar has no speaker column.
 */
const FTS_WEIGHTS = [TURN_COLUMN_WEIGHTS.content, TURN_COLUMN_WEIGHTS.prev1, TURN_COLUMN_WEIGHTS.prev2, TURN_COLUMN_WEIGHTS.date] as const;
/** `bm25()` over `records_fts` with `FTS_WEIGHTS`. */
export const BM25_CALL = `bm25(records_fts, ${FTS_WEIGHTS.join(", ")})`;

/**
 * SQL for the text of the turn `offset` places before the row `records` (0 = the previous one) in
 * the same namespace and session, cut to the kit's `CONTEXT_CHARS` (as `clipContext` cuts it);
 * '' when there is none.
 */
function precedingTurnSql(offset: number): string {
  return `COALESCE((SELECT substr(p.text, 1, ${CONTEXT_CHARS}) FROM records p
      WHERE p.namespace = records.namespace AND json_extract(p.metadata, '$.session_id') = json_extract(records.metadata, '$.session_id')
        AND json_extract(p.metadata, '$.kind') = 'turn' AND p.key < records.key ORDER BY p.key DESC LIMIT 1 OFFSET ${offset}), '')`;
}

/**
 * SQL refilling the context columns of the `CONTEXT_TURNS` turns after `row` (`old` or `new`) in
 * its session, when `condition` (SQL) holds.
 */
function refillFollowingSql(row: "old" | "new", condition = "1"): string {
  return `UPDATE records SET prev1 = ${precedingTurnSql(0)}, prev2 = ${precedingTurnSql(1)}
    WHERE ${condition} AND key IN (SELECT n.key FROM records n WHERE n.namespace = ${row}.namespace
      AND json_extract(n.metadata, '$.session_id') = json_extract(${row}.metadata, '$.session_id')
      AND json_extract(n.metadata, '$.kind') = 'turn' AND n.key > ${row}.key ORDER BY n.key LIMIT ${CONTEXT_TURNS});`;
}

/** True (SQL) when `row` is a turn with a session, i.e. part of some turns' context. */
function sessionTurnSql(row: "old" | "new"): string {
  return `(json_extract(${row}.metadata, '$.kind') = 'turn' AND json_type(${row}.metadata, '$.session_id') = 'text' AND json_extract(${row}.metadata, '$.session_id') <> '')`;
}

// The schema, and why it is shaped so:
// - FTS5 folds every diacritic (remove_diacritics 2: "café" = "cafe").
// - New rows are indexed by `upsert` itself right after the insert: an AFTER INSERT trigger makes
//   FTS5 flush its pending terms per row and costs about 3x the write time. Deletes and text
//   updates are rare, so triggers keep those in sync.
// - The session index holds (namespace, session, kind, key), so the neighbouring turns of a
//   search's candidates are found in the index alone, without reading each row's metadata.
// - A turn's FTS document also holds the first characters of the two previous turns of its
//   namespace and session (prev1, prev2) and its date (session_date), stored in `records` and
//   weighted as the kit's TURN_COLUMN_WEIGHTS. Deleting a turn, or changing a turn's text or
//   metadata, refills the context of the next two turns of its session, so text that is gone is
//   not searchable as another turn's context.
// - Memory filters read their own columns: `tags` (a JSON list of text), `created_ms` (creation
//   time, epoch ms), `user_meta` (the caller's metadata as a JSON object) and `expires_at` (epoch
//   ms, NULL when the item never expires, with a partial index for purging).
// - Deleted rows are overwritten (secure_delete, and FTS5's secure-delete), so erased text does not
//   linger in the file.
// Files of versions 1–4 lack the context columns (`migrateToV5` adds them); files of version 5 lack
// the filter columns; files of version 6 lack the filter term index (`record_terms`, filter-terms.ts:
// a filter on tags or metadata values reads the rows holding them instead of the whole namespace).
export const FILTER_INDEX = `CREATE INDEX IF NOT EXISTS records_filtering ON records (namespace, created_ms, expires_at, tags, user_meta)`;
const FILTER_SCHEMA = `
  CREATE INDEX IF NOT EXISTS records_expiring ON records (expires_at) WHERE expires_at IS NOT NULL;
  ${FILTER_INDEX};
  INSERT INTO records_fts (records_fts, rank) VALUES ('secure-delete', 1);
`;

const FTS_AND_SESSION_SCHEMA = `
  CREATE VIRTUAL TABLE IF NOT EXISTS records_fts USING fts5(text, prev1, prev2, session_date, content='records', content_rowid='key', tokenize='porter unicode61 remove_diacritics 2');
  CREATE TRIGGER IF NOT EXISTS records_ad AFTER DELETE ON records BEGIN
    INSERT INTO records_fts (records_fts, rowid, text, prev1, prev2, session_date) VALUES ('delete', old.key, old.text, old.prev1, old.prev2, old.session_date);
  END;
  CREATE TRIGGER IF NOT EXISTS records_au AFTER UPDATE OF text, prev1, prev2, session_date ON records BEGIN
    INSERT INTO records_fts (records_fts, rowid, text, prev1, prev2, session_date) VALUES ('delete', old.key, old.text, old.prev1, old.prev2, old.session_date);
    INSERT INTO records_fts (rowid, text, prev1, prev2, session_date) VALUES (new.key, new.text, new.prev1, new.prev2, new.session_date);
  END;
  CREATE TRIGGER IF NOT EXISTS records_ad_context AFTER DELETE ON records WHEN ${sessionTurnSql("old")} BEGIN
    ${refillFollowingSql("old")}
  END;
  CREATE TRIGGER IF NOT EXISTS records_au_context AFTER UPDATE OF text, metadata ON records
    WHEN (old.text IS NOT new.text OR old.metadata IS NOT new.metadata) AND (${sessionTurnSql("old")} OR ${sessionTurnSql("new")}) BEGIN
    ${refillFollowingSql("old")}
    ${refillFollowingSql("new", `json_extract(old.metadata, '$.session_id') IS NOT json_extract(new.metadata, '$.session_id')`)}
  END;
  CREATE INDEX IF NOT EXISTS records_turns_by_session ON records (namespace, ${SESSION_EXPR}, ${KIND_EXPR}, key);
  INSERT INTO records_fts (records_fts, rank) VALUES ('rank', 'bm25(${FTS_WEIGHTS.join(", ")})');
`;

/** The FTS table, triggers and session index of versions 1–4: all derived from `records`, so recreated by the upgrade. */
const DROP_DERIVED = `
  DROP TRIGGER IF EXISTS records_ai;
  DROP TRIGGER IF EXISTS records_ad;
  DROP TRIGGER IF EXISTS records_au;
  DROP TRIGGER IF EXISTS records_ad_context;
  DROP TRIGGER IF EXISTS records_au_context;
  DROP TABLE IF EXISTS records_fts;
  DROP INDEX IF EXISTS records_by_session;
`;

/**
 * The stored metadata of a row with the caller's own metadata (the JSON `extra` field) unpacked
 * over it when that holds a `date` (the only caller key the index reads).
 */
function hostMetadata(metadata: VectorMetadata): Record<string, unknown> {
  const extra = metadata.extra;
  if (typeof extra !== "string" || !extra.includes('"date"')) return metadata;
  try {
    const user = JSON.parse(extra) as unknown;
    return user !== null && typeof user === "object" && !Array.isArray(user)
      ? { ...metadata, ...(user as Record<string, unknown>) }
      : metadata;
  } catch {
    return metadata;
  }
}

/**
 * The date indexed with a row (the kit's `turnDateText`): a turn's `date` from the caller's
 * metadata, else its `created_at` day; '' for other kinds and for turns without either.
 */
export function recordDateText(metadata: VectorMetadata): string {
  const kind = typeof metadata.kind === "string" ? metadata.kind : "";
  if (kind !== "turn") return "";
  const created = metadata.created_at;
  const createdAt = typeof created === "string" ? Date.parse(created) : typeof created === "number" ? created : NaN;
  return turnDateText(kind, hostMetadata(metadata), createdAt);
}

/** The session whose turns a row's context comes from: a turn's non-empty string `session_id`. */
export function contextSession(metadata: VectorMetadata): string | undefined {
  const session = metadata.session_id;
  return metadata.kind === "turn" && typeof session === "string" && session !== "" ? session : undefined;
}

/**
 * Fill the context columns of every turn (the two previous turns of its namespace and session in
 * key order, and its date): version 5 on an older file, and after turns moved between namespaces.
 * No row changes apart from these columns. The filling runs inside SQLite (a window over each
 * session's turns), so a large sidecar never sits in memory.
 */
export function fillContext(db: SqliteDatabase): void {
  db.function("hermes_record_date", { deterministic: true }, (rawMetadata: unknown) => {
    let metadata: VectorMetadata = {};
    try {
      const parsed = JSON.parse(String(rawMetadata)) as unknown;
      if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) metadata = parsed as VectorMetadata;
    } catch {
      // Unreadable metadata: no date.
    }
    return recordDateText(metadata);
  });
  db.exec(
    `UPDATE records SET session_date = hermes_record_date(metadata) WHERE ${KIND_EXPR} = 'turn' AND session_date IS NOT hermes_record_date(metadata)`,
  );
  db.exec(`
    UPDATE records SET prev1 = c.prev1, prev2 = c.prev2
    FROM (
      SELECT key,
        substr(lag(text, 1, '') OVER session_turns, 1, ${CONTEXT_CHARS}) AS prev1,
        substr(lag(text, 2, '') OVER session_turns, 1, ${CONTEXT_CHARS}) AS prev2
      FROM records
      WHERE ${KIND_EXPR} = 'turn' AND json_type(metadata, '$.session_id') = 'text' AND ${SESSION_EXPR} <> ''
      WINDOW session_turns AS (PARTITION BY namespace, ${SESSION_EXPR} ORDER BY key)
    ) AS c
    WHERE records.key = c.key AND (records.prev1 IS NOT c.prev1 OR records.prev2 IS NOT c.prev2)`);
}

/** The values of a row's filter columns (version 6), derived from its flat metadata. */
export interface FilterColumns {
  /** JSON list of the item's tags. */
  tags: string;
  /** Creation time, epoch ms (null when `created_at` is missing or unreadable). */
  createdMs: number | null;
  /** The caller's metadata (`extra`) as a JSON object. */
  userMeta: string;
  /** Expiry time, epoch ms, or null. */
  expiresAt: number | null;
}

/** The caller's metadata of a row: its `extra` field parsed, `{}` when absent or not an object. */
export function userMetadataOf(metadata: VectorMetadata): Record<string, unknown> {
  const extra = metadata.extra;
  if (typeof extra !== "string") return {};
  try {
    const parsed = JSON.parse(extra) as unknown;
    return parsed !== null && typeof parsed === "object" && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** The filter columns of a row with this flat metadata. */
export function filterColumnsOf(metadata: VectorMetadata): FilterColumns {
  const tags = Array.isArray(metadata.tags) ? metadata.tags.filter((t) => typeof t === "string") : [];
  const created =
    typeof metadata.created_at === "string"
      ? Date.parse(metadata.created_at)
      : typeof metadata.created_at === "number"
        ? metadata.created_at
        : NaN;
  const expires = metadata.expires_at;
  return {
    tags: JSON.stringify(tags),
    createdMs: Number.isFinite(created) ? Math.trunc(created) : null,
    userMeta: typeof metadata.extra === "string" ? JSON.stringify(userMetadataOf(metadata)) : "{}",
    expiresAt: typeof expires === "number" && Number.isFinite(expires) ? Math.trunc(expires) : null,
  };
}

function parseStoredMetadata(raw: unknown): VectorMetadata {
  try {
    const parsed = JSON.parse(String(raw)) as unknown;
    if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) return parsed as VectorMetadata;
  } catch {
    // Unreadable metadata: no filterable values.
  }
  return {};
}

/**
 * SQL functions computing the filter columns from a row's stored metadata JSON: they fill the
 * columns when a version 5 file is upgraded, and stand in for them on a read-only older file.
 */
export function registerFilterFunctions(db: SqliteDatabase): void {
  db.function("hermes_tags", { deterministic: true }, (raw: unknown) => filterColumnsOf(parseStoredMetadata(raw)).tags);
  db.function("hermes_created_ms", { deterministic: true }, (raw: unknown) => filterColumnsOf(parseStoredMetadata(raw)).createdMs);
  db.function("hermes_user_meta", { deterministic: true }, (raw: unknown) => filterColumnsOf(parseStoredMetadata(raw)).userMeta);
  db.function("hermes_expires_at", { deterministic: true }, (raw: unknown) => filterColumnsOf(parseStoredMetadata(raw)).expiresAt);
}

export const SIDECAR_SPEC: SqliteStoreSpec = {
  driver: Database,
  label: "vector sidecar",
  packageName: "@hermes/memory-vector",
  schemaVersion: SCHEMA_VERSION,
  // Older files are read as they are (without context columns); the upgrade waits for a writable open.
  minReadableVersion: 1,
  migrate(db, current) {
    if (current < 1) {
      db.exec(`
        CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS records (
          key INTEGER PRIMARY KEY,
          namespace TEXT NOT NULL,
          id TEXT NOT NULL,
          text TEXT NOT NULL DEFAULT '',
          metadata TEXT NOT NULL DEFAULT '{}',
          vector BLOB,
          prev1 TEXT NOT NULL DEFAULT '',
          prev2 TEXT NOT NULL DEFAULT '',
          session_date TEXT NOT NULL DEFAULT '',
          tags TEXT NOT NULL DEFAULT '[]',
          created_ms INTEGER,
          user_meta TEXT NOT NULL DEFAULT '{}',
          expires_at INTEGER,
          UNIQUE (namespace, id)
        );
        CREATE INDEX IF NOT EXISTS records_by_id ON records (id);
        CREATE INDEX IF NOT EXISTS records_with_vectors ON records (namespace) WHERE vector IS NOT NULL;
        ${FTS_AND_SESSION_SCHEMA}
        ${FILTER_SCHEMA}
        ${FILTER_TERMS_SCHEMA}
      `);
      return;
    }
    // Every migration first makes the values of older versions or other programs readable (BLOBs,
    // non-JSON metadata), keeping their originals: the session index and context filling below read
    // the metadata with SQLite's JSON functions.
    repairRecords(db);
    if (current < 5) migrateToV5(db);
    if (current < 6) migrateToV6(db);
    // Version 7: the filter term index (filter-terms.ts), filled from every row's filter columns.
    db.exec(FILTER_TERMS_SCHEMA);
    fillFilterTerms(db);
  },
};

/** Version 5 to version 6: the filter columns, filled from each row's stored metadata (no row is dropped). */
function migrateToV6(db: SqliteDatabase): void {
  db.exec(`
    ALTER TABLE records ADD COLUMN tags TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE records ADD COLUMN created_ms INTEGER;
    ALTER TABLE records ADD COLUMN user_meta TEXT NOT NULL DEFAULT '{}';
    ALTER TABLE records ADD COLUMN expires_at INTEGER;
  `);
  // Filled in SQL (JSON functions), with JavaScript only for parsing the ISO creation time as
  // `Date.parse` does; rows whose metadata is not valid JSON keep the defaults.
  db.function("hermes_time_ms", { deterministic: true }, (value: unknown) => {
    const ms = typeof value === "string" ? Date.parse(value) : NaN;
    return Number.isFinite(ms) ? Math.trunc(ms) : null;
  });
  db.exec(`UPDATE records SET
      tags = CASE WHEN json_type(metadata, '$.tags') = 'array' THEN json_extract(metadata, '$.tags') ELSE '[]' END,
      created_ms = hermes_time_ms(json_extract(metadata, '$.created_at')),
      user_meta = CASE WHEN json_type(metadata, '$.extra') = 'text' AND json_valid(json_extract(metadata, '$.extra'))
        AND json_type(json_extract(metadata, '$.extra')) = 'object' THEN json(json_extract(metadata, '$.extra')) ELSE '{}' END,
      expires_at = CASE WHEN json_type(metadata, '$.expires_at') IN ('integer', 'real') THEN CAST(json_extract(metadata, '$.expires_at') AS INTEGER) END
    WHERE json_valid(metadata)`);
  db.exec(FILTER_SCHEMA);
}

/** Versions 1-4 to version 5 (see the schema notes). */
function migrateToV5(db: SqliteDatabase): void {
  {
    // Versions 1-4: the FTS table, its triggers and the session index are derived from `records`,
    // so they are dropped and recreated; the context columns are added, filled, then indexed.
    db.exec(`
      ${DROP_DERIVED}
      ALTER TABLE records ADD COLUMN prev1 TEXT NOT NULL DEFAULT '';
      ALTER TABLE records ADD COLUMN prev2 TEXT NOT NULL DEFAULT '';
      ALTER TABLE records ADD COLUMN session_date TEXT NOT NULL DEFAULT '';
      CREATE INDEX IF NOT EXISTS records_turns_by_session ON records (namespace, ${SESSION_EXPR}, ${KIND_EXPR}, key);
    `);
    fillContext(db);
    db.exec(`
      ${FTS_AND_SESSION_SCHEMA}
      INSERT INTO records_fts (records_fts) VALUES ('rebuild');
    `);
  }
}

/**
 * The sidecar's tables for the kit's `LayeredRanker`: `records_fts` (text, prev1, prev2,
 * session_date) over `records` keyed by `key`; its `user` filter is the namespace (kind and
 * session come from the metadata, as the session index reads them).
 */
export const RANKER_SCHEMA: LayeredRankerSchema = {
  fts: "records_fts",
  table: "records",
  id: "key",
  content: "text",
  speaker: null,
  filters: { kind: `json_extract(i.metadata, '$.kind')`, session: `json_extract(i.metadata, '$.session_id')`, user: "i.namespace" },
  extra: [
    ["prev1", "prev1"],
    ["prev2", "prev2"],
    ["session_date", "date"],
  ],
};
/** The column weights `BM25_CALL` uses, so the layered ranker's scores match FTS5's (no speaker column). */
export const RANKER_WEIGHTS = {
  content: TURN_COLUMN_WEIGHTS.content,
  speaker: 0,
  prev1: TURN_COLUMN_WEIGHTS.prev1,
  prev2: TURN_COLUMN_WEIGHTS.prev2,
  date: TURN_COLUMN_WEIGHTS.date,
};

/**
 * Make every unreadable value of `records` readable (see `readableRecord`), in the caller's
 * transaction; returns how many rows were rewritten. No row is deleted: a row whose readable id is
 * already another row's id in its namespace gets `~<key>` appended to it (the original is kept).
 * The derived columns of a rewritten row (filter columns, date) are computed again from its
 * readable metadata. The context trigger reads the old metadata with SQLite's JSON functions,
 * which fail on the values being rewritten, so it is dropped meanwhile; every turn's context is then
 * computed again (only rows whose context changes are written) and the session index is recreated
 * if another program dropped it.
 */
export function repairRecords(db: SqliteDatabase): number {
  const filterColumns = hasFilterColumns(db);
  const contextColumns = (db.pragma("table_info(records)") as Array<{ name: string }>).some((c) => c.name === "prev1");
  const rows = (db.prepare(suspectRecordsSql(filterColumns)).all() as SuspectRecord[]).filter(isUnreadable);
  if (rows.length === 0) return 0;
  const trigger = db.prepare(`SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'records_au_context'`).pluck().get() as
    string | undefined;
  if (trigger) db.exec(`DROP TRIGGER records_au_context`);
  const taken = db.prepare(`SELECT 1 FROM records WHERE namespace = ? AND id = ? AND key <> ?`).pluck();
  const set = ["namespace = ?", "id = ?", "text = ?", "metadata = ?"];
  if (filterColumns) set.push("tags = ?", "created_ms = ?", "user_meta = ?", "expires_at = ?");
  if (contextColumns)
    set.push("session_date = ?", "prev1 = CASE WHEN ? THEN prev1 ELSE '' END", "prev2 = CASE WHEN ? THEN prev2 ELSE '' END");
  const update = db.prepare(`UPDATE records SET ${set.join(", ")} WHERE key = ?`);
  for (const row of rows) {
    const readable = readableRecord(row);
    let { id, metadata } = readable;
    for (let n = 0; taken.get(readable.namespace, id, row.key) !== undefined; n++)
      id = `${readable.id}~${row.key}${n === 0 ? "" : `-${n}`}`;
    // The id changes from what was stored, so the stored one is kept (unless it already is).
    const keptIds = metadata[UNREADABLE_KEY] as unknown as Record<string, unknown> | undefined;
    if (id !== readable.id && keptIds?.id === undefined)
      metadata = keepUnreadable(metadata, { id: unreadableOriginal(row.id) }) as VectorMetadata;
    const { text: _text, ...stored } = metadata;
    const values: unknown[] = [
      readable.namespace,
      id,
      readable.text,
      id === readable.id ? readable.metadataText : JSON.stringify(metadata),
    ];
    if (filterColumns) {
      const columns = filterColumnsOf(stored);
      values.push(columns.tags, columns.createdMs, columns.userMeta, columns.expiresAt);
    }
    if (contextColumns) {
      const turn = contextSession(stored) !== undefined ? 1 : 0;
      values.push(recordDateText(stored), turn, turn);
    }
    update.run(...values, row.key);
  }
  if (contextColumns) {
    fillContext(db);
    db.exec(`CREATE INDEX IF NOT EXISTS records_turns_by_session ON records (namespace, ${SESSION_EXPR}, ${KIND_EXPR}, key)`);
  }
  if (trigger) db.exec(trigger);
  db.prepare(
    `INSERT INTO meta (key, value) VALUES ('generation', '1') ON CONFLICT(key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)`,
  ).run();
  return rows.length;
}

/** How the sidecar file is opened (read-only or not), with the remedy its open failures give. */
export function sidecarOpenOptions(options: { readOnly?: boolean }): OpenSqliteStoreOptions {
  return {
    readonly: options.readOnly === true,
    openFix: "check permissions and free space; if the file is corrupt, restore it from a backup or move it away and re-import an export",
  };
}
