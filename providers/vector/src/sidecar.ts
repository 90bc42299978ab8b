import fs from "node:fs";
import Database from "better-sqlite3";
import type { Database as SqliteDatabase, Statement } from "better-sqlite3";
import { HermesMemoryError } from "@hermes/memory-core";
import {
  buildFtsQuery,
  CONTEXT_CHARS,
  CONTEXT_TURNS,
  closeSqliteStore,
  DocumentFrequencies,
  LayeredRanker,
  NO_CONTEXT,
  SmallIndexCompactor,
  WalCheckpointer,
  withBusyTimeout,
  openSqliteStore,
  type OpenSqliteStoreOptions,
  openSqliteStoreAsync,
  planQueryRanking,
  ftsTermCounter,
  quoteTerm,
  RecentTurns,
  storageError,
  TURN_COLUMN_WEIGHTS,
  turnContext,
  turnDateText,
  uniqueTerms,
  filterToSql,
  checkpointCopies,
  isEmptyFilter,
  type FilterSqlColumns,
  type LayeredRankerOptions,
  type LayeredRankerSchema,
  type ParsedMemoryFilter,
  type SqliteStoreSpec,
  UNREADABLE_KEY,
  keepUnreadable,
  unreadableOriginal,
} from "@hermes/memory-provider-kit";
import { ReadCache, type TurnLinks } from "./read-cache.js";
import { matchesFilter, type MetadataFilter, type VectorMetadata } from "./metadata-filter.js";
import { hasFilterColumns, isUnreadable, readableRecord, suspectRecordsSql, textOf, unreadableRecordIds, type SuspectRecord } from "./sidecar-values.js";

/**
 * Weight of the related words' BM25 score (the kit's `relatedTerms`) against the query words' own in
 * the keyword ranking. Lower than the SQLite provider's `RELATED_TERM_WEIGHT` (0.3): this ranking is
 * fused with the vector ranking, which already finds turns worded differently from the question.
 * Chosen on the LoCoMo development set, hybrid search with the hashing embedder: 0.1 and 0.15 gave
 * recall@50 90.0 and multi-hop recall@10 37.4; 0.2 and more lost multi-hop recall (37.0 at 0.2,
 * 36.6 at 0.3).
 */
const KEYWORD_RELATED_WEIGHT = 0.1;

/** One sidecar row: the text and metadata of a record, plus its vector when the local store holds it. */
export interface SidecarRow {
  /** Integer key of the row; the ANN index uses it as its label. */
  key: number;
  namespace: string;
  id: string;
  text: string;
  metadata: VectorMetadata;
  vector: Float32Array | null;
}

/** A row to write. `metadata` excludes `text`, which has its own (full-text indexed) column. */
export interface SidecarWrite {
  id: string;
  text: string;
  metadata: VectorMetadata;
  vector: Float32Array | null;
}

/** A row's key, id and metadata, without text or vector: what ranking and context spreading read. */
export interface SidecarRef {
  key: number;
  id: string;
  metadata: VectorMetadata;
}

/**
 * The metadata of a row read as JSON text (`CAST(metadata AS TEXT)`), or `undefined` when it is not
 * a JSON object: the row is then read again whole, as `readableRecord` makes it readable.
 */
function parseRefMetadata(text: string): VectorMetadata | undefined {
  try {
    const parsed = JSON.parse(text) as unknown;
    return parsed !== null && typeof parsed === "object" && !Array.isArray(parsed) ? (parsed as VectorMetadata) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A candidate's row with the keys of its conversational neighbours: the next two and the two previous
 * rows of kind `turn` in the same namespace and session (empty when not looked up).
 */
export interface LinkedRef extends SidecarRef {
  next: number[];
  previous: number[];
  /** Whether the row's text asks a question (the kit's `asksQuestion` rule); false when not linked. */
  asksQuestion: boolean;
  /** False when the metadata was not read (`metadataFirst`): `metadata` is then `{}`. */
  hasMetadata: boolean;
  /**
   * Whether the row is a turn with a session (kind `turn`, a string `session_id`): a turn that can
   * pass context on. Read for the first `linkFirst` ids (with or without their metadata); false for the rest.
   */
  sessionTurn: boolean;
}

/** A keyword (BM25) rank from the FTS5 index, without text; `score` is positive, higher is better. */
export interface KeywordRank {
  key: number;
  id: string;
  score: number;
}

/** A keyword (BM25) hit from the FTS5 index; `score` is positive, higher is better. */
export interface KeywordHit {
  key: number;
  id: string;
  score: number;
  text: string;
  metadata: VectorMetadata;
}

/** A row as stored: the text columns may hold a BLOB another program wrote (`readableRecord` reads it). */
interface RawRow {
  key: number;
  namespace: unknown;
  id: unknown;
  text: unknown;
  metadata: unknown;
  vector: Buffer | null;
}

const SCHEMA_VERSION = 6;

/** The records' session id as SQL; the session index is built on exactly this expression. */
const SESSION_EXPR = `json_extract(metadata, '$.session_id')`;
/** The records' kind as SQL; the session index is built on exactly this expression. */
const KIND_EXPR = `json_extract(metadata, '$.kind')`;
/** Kind, session and user of a row `r`, for compiled filters. */
const kindSql = (alias: string) => `json_extract(${alias}.metadata, '$.kind')`;
const sessionSql = (alias: string) => `json_extract(${alias}.metadata, '$.session_id')`;
const userSql = (alias: string) => `json_extract(${alias}.metadata, '$.user_id')`;

/**
 * BM25 column weights of `records_fts` in column order (text, prev1, prev2, session_date): the
 * kit's turn weights, so both providers rank turns alike. The sidecar has no speaker column.
 */
const FTS_WEIGHTS = [TURN_COLUMN_WEIGHTS.content, TURN_COLUMN_WEIGHTS.prev1, TURN_COLUMN_WEIGHTS.prev2, TURN_COLUMN_WEIGHTS.date] as const;
/** `bm25()` over `records_fts` with `FTS_WEIGHTS`. */
const BM25_CALL = `bm25(records_fts, ${FTS_WEIGHTS.join(", ")})`;

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

// Version 2: FTS5 folds every diacritic (remove_diacritics 2: "café" = "cafe", also for letters
// version 1 left alone) and an index on (namespace, session, key) serves neighbour look-ups.
// Version 3: new rows are indexed by `upsert` itself right after the insert: an AFTER INSERT
// trigger makes FTS5 flush its pending terms per row and costs about 3x the write time. Deletes
// and text updates are rare, so triggers keep those in sync.
// Version 4: the session index also holds the kind, so the neighbouring turns of a search's
// candidates are found in the index alone, without reading each row's metadata.
// Version 5: a turn's FTS document also holds the first characters of the two previous turns of
// its namespace and session (prev1, prev2) and its date (session_date), stored in `records` and
// weighted as the kit's TURN_COLUMN_WEIGHTS. Deleting a turn, or changing a turn's text or
// metadata, refills the context of the next two turns of its session, so text that is gone is not
// searchable as another turn's context.
// Version 6: the columns memory filters read: `tags` (a JSON list of text), `created_ms` (creation
// time, epoch ms), `user_meta` (the caller's metadata as a JSON object) and `expires_at` (epoch ms,
// NULL when the item never expires, with a partial index for purging). Deleted rows are
// overwritten (secure_delete, and FTS5's secure-delete), so erased text does not linger in the file.
const FILTER_INDEX = `CREATE INDEX IF NOT EXISTS records_filtering ON records (namespace, created_ms, expires_at, tags, user_meta)`;
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
    return user !== null && typeof user === "object" && !Array.isArray(user) ? { ...metadata, ...(user as Record<string, unknown>) } : metadata;
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
function contextSession(metadata: VectorMetadata): string | undefined {
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
  db.exec(`UPDATE records SET session_date = hermes_record_date(metadata) WHERE ${KIND_EXPR} = 'turn' AND session_date IS NOT hermes_record_date(metadata)`);
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
  const created = typeof metadata.created_at === "string" ? Date.parse(metadata.created_at) : typeof metadata.created_at === "number" ? metadata.created_at : NaN;
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
function registerFilterFunctions(db: SqliteDatabase): void {
  db.function("hermes_tags", { deterministic: true }, (raw: unknown) => filterColumnsOf(parseStoredMetadata(raw)).tags);
  db.function("hermes_created_ms", { deterministic: true }, (raw: unknown) => filterColumnsOf(parseStoredMetadata(raw)).createdMs);
  db.function("hermes_user_meta", { deterministic: true }, (raw: unknown) => filterColumnsOf(parseStoredMetadata(raw)).userMeta);
  db.function("hermes_expires_at", { deterministic: true }, (raw: unknown) => filterColumnsOf(parseStoredMetadata(raw)).expiresAt);
}

/** A condition over `records r`: SQL with `?` placeholders bound, in order, to `params`. */
export type SqlCondition = Pick<RowCondition, "sql" | "params">;

/** A compiled row condition over `records r` (SQL with `?` parameters), as `Sidecar.condition` builds it. */
export interface RowCondition {
  sql: string;
  params: unknown[];
  /** What it was compiled from, to compile it again over another alias of `records`. */
  filter: ParsedMemoryFilter;
  now: number | null;
}

const SIDECAR_SPEC: SqliteStoreSpec = {
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
      `);
      return;
    }
    // Every migration first makes the values of older versions or other programs readable (BLOBs,
    // non-JSON metadata), keeping their originals: the session index and context filling below read
    // the metadata with SQLite's JSON functions.
    repairRecords(db);
    if (current < 5) migrateToV5(db);
    // Version 6: the filter columns, filled from each row's stored metadata (no row is dropped).
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
  },
};

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
const RANKER_SCHEMA: LayeredRankerSchema = {
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
const RANKER_WEIGHTS = { content: TURN_COLUMN_WEIGHTS.content, speaker: 0, prev1: TURN_COLUMN_WEIGHTS.prev1, prev2: TURN_COLUMN_WEIGHTS.prev2, date: TURN_COLUMN_WEIGHTS.date };

/**
 * SQL for the keys of the two turns after (`next`) or before (`prev`) the row `r` in its namespace
 * and session, as the JSON array [smaller key, larger key] (the same key twice when there is one,
 * nulls when there is none; `neighbourKeys` reads it): one seek in the session index for both,
 * and no aggregate that depends on row order.
 */
function neighbourKeysSql(direction: "next" | "prev"): string {
  const order = direction === "next" ? "" : " DESC";
  return `json((SELECT json_array(min(k), max(k)) FROM (SELECT n.key AS k FROM records n
      WHERE n.namespace = r.namespace AND json_extract(n.metadata, '$.session_id') = json_extract(r.metadata, '$.session_id')
        AND json_extract(n.metadata, '$.kind') = 'turn' AND n.key ${direction === "next" ? ">" : "<"} r.key ORDER BY n.key${order} LIMIT 2)))`;
}

/** The keys of `neighbourKeysSql`'s [smaller, larger] pair, nearest first (`prev`: the larger key is nearer). */
function neighbourKeys(pair: [number | null, number | null] | null, direction: "next" | "prev"): number[] {
  if (pair === null || pair[0] === null || pair[1] === null) return [];
  const [low, high] = pair;
  if (low === high) return [low];
  return direction === "next" ? [low, high] : [high, low];
}

/**
 * `Sidecar.linkedRefs`: per id of `@ids` (by id, or by key), key, id, metadata (first `@meta`),
 * neighbour keys, whether it asks a question and whether it is a turn with a session (first
 * `@link`), whether its values are stored as text, and its session when that is text (first `@link`).
 */
function linkedRefsSql(by: "r.id" | "r.key"): string {
  return `SELECT json_group_array(json_array(r.key, CAST(r.id AS TEXT), CASE WHEN c.key < @meta THEN CAST(r.metadata AS TEXT) END,
        CASE WHEN c.key < @link THEN ${neighbourKeysSql("next")} END,
        CASE WHEN c.key < @link THEN ${neighbourKeysSql("prev")} END,
        CASE WHEN c.key < @link THEN instr(r.text, '?') > 0 OR instr(r.text, '？') > 0 END,
        typeof(r.id) = 'text' AND typeof(r.text) = 'text' AND typeof(r.metadata) = 'text',
        CASE WHEN c.key < @link THEN json_extract(r.metadata, '$.kind') = 'turn' AND json_type(r.metadata, '$.session_id') = 'text' END,
        CASE WHEN c.key < @link AND json_type(r.metadata, '$.session_id') = 'text' THEN json_extract(r.metadata, '$.session_id') END))
      FROM json_each(@ids) c CROSS JOIN records r ON r.namespace = @namespace AND ${by} = c.value`;
}
const LINKED_BY_ID_SQL = linkedRefsSql("r.id");
const LINKED_BY_KEY_SQL = linkedRefsSql("r.key");

/**
 * Turn arbitrary user text into an FTS5 query that can never be a syntax error: stopwords
 * dropped, every remaining word quoted, the words OR-ed (see `buildFtsQuery`).
 */
export function toFtsQuery(text: string): string | null {
  return buildFtsQuery(text);
}

function decodeVector(blob: Buffer | null): Float32Array | null {
  if (!blob) return null;
  // Copy: the Buffer may share a pooled ArrayBuffer and be unaligned for Float32 access.
  const copy = new Uint8Array(blob.byteLength);
  copy.set(blob);
  return new Float32Array(copy.buffer, 0, blob.byteLength / 4);
}

function encodeVector(vector: Float32Array | null): Buffer | null {
  return vector ? Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength) : null;
}

/** Whether `error` is SQLite refusing a value its JSON functions cannot read ("malformed JSON", "JSON cannot hold BLOB values"). */
function isJsonError(error: unknown): boolean {
  return !HermesMemoryError.isInstance(error) && /\bJSON\b/.test(String((error as Error | null)?.message));
}

/** A stored row; values stored unreadably read as a repair would store them (`readableRecord`). */
function toRow(raw: RawRow): SidecarRow {
  const { namespace, id, text, metadata } = readableRecord(raw);
  if (text) metadata.text = text;
  return { key: raw.key, namespace, id, text, metadata, vector: decodeVector(raw.vector) };
}

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
function repairRecords(db: SqliteDatabase): number {
  const filterColumns = hasFilterColumns(db);
  const contextColumns = (db.pragma("table_info(records)") as Array<{ name: string }>).some((c) => c.name === "prev1");
  const rows = (db.prepare(suspectRecordsSql(filterColumns)).all() as SuspectRecord[]).filter(isUnreadable);
  if (rows.length === 0) return 0;
  const trigger = db.prepare(`SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'records_au_context'`).pluck().get() as string | undefined;
  if (trigger) db.exec(`DROP TRIGGER records_au_context`);
  const taken = db.prepare(`SELECT 1 FROM records WHERE namespace = ? AND id = ? AND key <> ?`).pluck();
  const set = ["namespace = ?", "id = ?", "text = ?", "metadata = ?"];
  if (filterColumns) set.push("tags = ?", "created_ms = ?", "user_meta = ?", "expires_at = ?");
  if (contextColumns) set.push("session_date = ?", "prev1 = CASE WHEN ? THEN prev1 ELSE '' END", "prev2 = CASE WHEN ? THEN prev2 ELSE '' END");
  const update = db.prepare(`UPDATE records SET ${set.join(", ")} WHERE key = ?`);
  for (const row of rows) {
    const readable = readableRecord(row);
    let { id, metadata } = readable;
    for (let n = 0; taken.get(readable.namespace, id, row.key) !== undefined; n++) id = `${readable.id}~${row.key}${n === 0 ? "" : `-${n}`}`;
    // The id changes from what was stored, so the stored one is kept (unless it already is).
    const keptIds = metadata[UNREADABLE_KEY] as unknown as Record<string, unknown> | undefined;
    if (id !== readable.id && keptIds?.id === undefined) metadata = keepUnreadable(metadata, { id: unreadableOriginal(row.id) }) as VectorMetadata;
    const { text: _text, ...stored } = metadata;
    const values: unknown[] = [readable.namespace, id, readable.text, id === readable.id ? readable.metadataText : JSON.stringify(metadata)];
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
  db.prepare(`INSERT INTO meta (key, value) VALUES ('generation', '1') ON CONFLICT(key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)`).run();
  return rows.length;
}

/** How the sidecar file is opened (read-only or not), with the remedy its open failures give. */
function sidecarOpenOptions(options: { readOnly?: boolean }): OpenSqliteStoreOptions {
  return {
    readonly: options.readOnly === true,
    openFix: "check permissions and free space; if the file is corrupt, restore it from a backup or move it away and re-import an export",
  };
}

/** Options of `Sidecar.open` / `openAsync`. */
export interface SidecarOpenOptions {
  /** Open an existing file without writing anything. */
  readOnly?: boolean;
  /** Options of the keyword ranker (e.g. `{ helper: false }`: never start its pool helper thread). */
  ranker?: LayeredRankerOptions;
}

/**
 * The SQLite sidecar: the source of truth for text, metadata and (for the local store) vectors,
 * with an FTS5 index for BM25. Every write bumps a generation counter so the ANN index file can
 * tell whether it is stale. One instance per database file; synchronous (better-sqlite3).
 */
export class Sidecar {
  readonly file: string;
  readonly db: SqliteDatabase;
  /** True when opened with `openReadOnly`: every write throws. */
  readonly readOnly: boolean;
  private readonly statements: {
    insertNew: Statement;
    indexNew: Statement;
    updateExisting: Statement;
    bump: Statement;
    getMeta: Statement;
    setMeta: Statement;
    dataVersion: Statement;
    versions: Statement;
    precedingTurns: Statement;
    keyOf: Statement;
  };
  /** The last turns of recently written sessions (keyed by namespace and session), as this connection wrote them. */
  private readonly recentTurns = new RecentTurns();
  /** What searches read (turn links, ids, metadata, texts), kept while no other change could have moved it. */
  private readonly kept = new ReadCache();

  /** The layered BM25 ranker, prepared on the first query that needs it (large stores only). */
  private ranker: LayeredRanker | undefined;
  /** Options of the layered ranker (its pool helper thread). */
  private readonly rankerOptions: LayeredRankerOptions;
  /** Per word: items containing it (counted up to half the store) and the store size when counted. */
  private readonly frequencies: DocumentFrequencies;
  /** Keeps a small store's full-text index in few segments (none on a read-only connection). */
  private readonly compactor: SmallIndexCompactor | undefined;
  /** Runs the write-ahead log's checkpoints on a thread of their own during bursts of writes (none read-only). */
  private readonly checkpointer: WalCheckpointer | undefined;

  /** Prepared statements by SQL text: the hot read paths run the same few shapes every query. */
  private readonly prepared = new Map<string, Statement>();

  private prepare(sql: string): Statement {
    let stmt = this.prepared.get(sql);
    if (!stmt) {
      stmt = this.db.prepare(sql);
      if (this.prepared.size > 256) this.prepared.clear();
      this.prepared.set(sql, stmt);
    }
    return stmt;
  }

  /** False for a file older than version 5 opened read-only: one FTS column, no context. */
  private readonly contextColumns: boolean;
  /** False for a file older than version 6 opened read-only: filters read the metadata JSON instead of the filter columns. */
  private readonly filterColumns: boolean;

  private constructor(file: string, db: SqliteDatabase, readOnly = false, rankerOptions: LayeredRankerOptions = {}) {
    this.file = file;
    this.rankerOptions = rankerOptions;
    this.db = db;
    this.frequencies = new DocumentFrequencies(ftsTermCounter(db, "records_fts"));
    this.readOnly = readOnly;
    this.compactor = readOnly ? undefined : new SmallIndexCompactor(db, "records_fts");
    this.checkpointer = readOnly ? undefined : new WalCheckpointer(db);
    const version = db.pragma("user_version", { simple: true }) as number;
    this.contextColumns = !readOnly || version >= 5;
    this.filterColumns = !readOnly || version >= 6;
    registerFilterFunctions(db);
    // Deleted rows' pages are zeroed, so erased text does not linger in the file.
    if (!readOnly) db.pragma("secure_delete = ON");
    // A filter over a namespace reads the filter columns from this covering index instead of every
    // row (rows hold the vectors, so a table scan reads the whole namespace's vectors). Created here
    // as well as in the schema so files written before it get it at their next writable open.
    if (!readOnly && this.filterColumns) db.exec(FILTER_INDEX);
    this.statements = {
      // Read-only opens of a file older than version 6 lack the newer columns and never write.
      insertNew: !this.filterColumns
        ? db.prepare(`SELECT NULL`)
        : db.prepare(
            `INSERT INTO records (namespace, id, text, metadata, vector, prev1, prev2, session_date, tags, created_ms, user_meta, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT(namespace, id) DO NOTHING RETURNING key`,
          ),
      indexNew: !this.contextColumns ? db.prepare(`SELECT NULL`) : db.prepare(`INSERT INTO records_fts (rowid, text, prev1, prev2, session_date) VALUES (?, ?, ?, ?, ?)`),
      updateExisting: !this.filterColumns
        ? db.prepare(`SELECT NULL`)
        : db.prepare(
            `UPDATE records SET text = ?, metadata = ?, vector = ?, prev1 = ?, prev2 = ?, session_date = ?, tags = ?, created_ms = ?, user_meta = ?, expires_at = ? WHERE key = ?`,
          ),
      keyOf: db.prepare(`SELECT key FROM records WHERE namespace = ? AND id = ?`).pluck(),
      dataVersion: db.prepare(`PRAGMA data_version`).pluck(),
      // Both numbers `ReadCache.sync` compares, in one statement (it runs before every search read).
      versions: db.prepare(`SELECT data_version, total_changes() FROM pragma_data_version`).raw(true),
      // The texts of a session's turns before `key`, most recent first (a turn's context; only
      // their first CONTEXT_CHARS characters are ever used).
      precedingTurns: db
        .prepare(`SELECT substr(text, 1, ${CONTEXT_CHARS}) FROM records WHERE namespace = ? AND ${SESSION_EXPR} = ? AND ${KIND_EXPR} = 'turn' AND key < ? ORDER BY key DESC LIMIT ${CONTEXT_TURNS}`)
        .pluck(),
      bump: db.prepare(`INSERT INTO meta (key, value) VALUES ('generation', '1')
         ON CONFLICT(key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)`),
      getMeta: db.prepare(`SELECT value FROM meta WHERE key = ?`),
      setMeta: db.prepare(`INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`),
    };
  }

  /**
   * Open (creating if needed) the sidecar at `file`, or an in-memory one for `":memory:"`.
   * Throws `SCHEMA_TOO_NEW` for a newer schema (file untouched) and `STORAGE_FAILED` when the
   * file is not a usable database. `readOnly` opens an existing file without writing anything
   * (read-only mount, a directory the process cannot write).
   */
  static open(file: string, options: SidecarOpenOptions = {}): Sidecar {
    return new Sidecar(file, openSqliteStore(file, SIDECAR_SPEC, sidecarOpenOptions(options)), options.readOnly === true, options.ranker);
  }

  /**
   * `open` for the provider's `initialize()`: waiting for another process's lock on the file leaves
   * the event loop free (each attempt blocks the thread for a few tens of milliseconds at most).
   */
  static async openAsync(file: string, options: SidecarOpenOptions = {}): Promise<Sidecar> {
    return new Sidecar(file, await openSqliteStoreAsync(file, SIDECAR_SPEC, sidecarOpenOptions(options)), options.readOnly === true, options.ranker);
  }

  /** `open(file, { readOnly: true })`. */
  static openReadOnly(file: string): Sidecar {
    return Sidecar.open(file, { readOnly: true });
  }

  /** Monotonic write counter (bumped by every write transaction). */
  get generation(): number {
    return Number(this.getMeta("generation") ?? "0");
  }

  getMeta(key: string): string | undefined {
    return (this.statements.getMeta.get(key) as { value: string } | undefined)?.value;
  }

  setMeta(key: string, value: string): void {
    this.statements.setMeta.run(key, value);
  }

  /** Set several meta keys in one transaction (all or none). */
  setMetas(values: Record<string, string>): void {
    this.db.transaction(() => {
      for (const [key, value] of Object.entries(values)) this.statements.setMeta.run(key, value);
    })();
  }

  /** The layered BM25 ranker over the records' keyword index (prepared once). */
  private layeredRanker(): LayeredRanker {
    return (this.ranker ??= this.contextColumns
      ? new LayeredRanker(this.db, RANKER_WEIGHTS, RANKER_SCHEMA, this.rankerOptions)
      : new LayeredRanker(this.db, { content: 1, speaker: 0 }, { ...RANKER_SCHEMA, extra: [] }, this.rankerOptions));
  }

  /**
   * Keep the layered ranker's row lengths in memory, step by step on timers (see
   * `LayeredRanker.warmInBackground`), so a large sidecar's searches need not read them row by row.
   * Never throws: a failure is passed to `onError`.
   */
  warmRankerInBackground(stillWanted: () => boolean, onError: (error: unknown) => void): void {
    let ranker: LayeredRanker;
    try {
      ranker = this.layeredRanker();
    } catch (error) {
      onError(error);
      return;
    }
    ranker.warmInBackground(stillWanted, onError);
  }

  /**
   * Run `work` with SQLite's busy timeout at `ms` (how long a statement waits on the thread for
   * another connection's write lock before failing as busy), then put the connection's usual one back.
   */
  withBusyTimeout<T>(ms: number, work: () => T): T {
    return withBusyTimeout(this.db, ms, work);
  }

  /**
   * Insert or replace rows in one transaction. Returns each row's key, in order. A new turn with a
   * session is indexed with the first characters of the two previous turns of its namespace and
   * session (insertion order) and its date (`recordDateText`), as the kit's helpers build them.
   * `lockWaitMs`: how long to wait on the thread for another process's write lock before failing
   * as busy (the connection's busy timeout when absent).
   */
  upsert(namespace: string, rows: SidecarWrite[], lockWaitMs?: number): number[] {
    if (!this.filterColumns) {
      throw storageError(`the vector sidecar ${this.file} is open read-only`, undefined, "open it with write access to save records");
    }
    if (lockWaitMs !== undefined) return this.withBusyTimeout(lockWaitMs, () => this.upsert(namespace, rows));
    // Settled first, so that a transaction of inserts only drops no more kept links than its sessions'.
    this.syncKept();
    let replaced = false;
    const run = this.db.transaction((items: SidecarWrite[]) => {
      this.recentTurns.sync(this.statements.dataVersion.get() as number);
      const keys: number[] = [];
      for (const row of items) {
        const { text: _text, ...rest } = row.metadata;
        const metadata = JSON.stringify(rest);
        const vector = encodeVector(row.vector);
        const session = contextSession(rest);
        const date = recordDateText(rest);
        const columns = filterColumnsOf(rest);
        const group = session === undefined ? undefined : `${namespace}\u0000${session}`;
        const previous =
          group === undefined ? undefined : this.recentTurns.previous(group, () => this.statements.precedingTurns.all(namespace, session, Number.MAX_SAFE_INTEGER) as string[]);
        const context = previous === undefined ? NO_CONTEXT : turnContext(previous);
        const inserted = this.statements.insertNew.get(
          namespace,
          row.id,
          row.text,
          metadata,
          vector,
          context.prev1,
          context.prev2,
          date,
          columns.tags,
          columns.createdMs,
          columns.userMeta,
          columns.expiresAt,
        ) as { key: number } | undefined;
        if (inserted) {
          // New row: indexed here, not by a trigger (see the schema notes).
          this.statements.indexNew.run(inserted.key, row.text, context.prev1, context.prev2, date);
          if (group !== undefined) this.recentTurns.push(group, row.text, previous!);
          keys.push(inserted.key);
        } else {
          // Existing id: its context is that of its own place in its (possibly new) session; the
          // update triggers re-index it and refill the next turns' context. The remembered last
          // turns may have changed.
          this.recentTurns.clear();
          replaced = true;
          // Its length and its next turns' lengths change: the ranker's kept lengths are stale.
          this.ranker?.forgetLengths();
          const key = this.statements.keyOf.get(namespace, row.id) as number;
          const own = session === undefined ? NO_CONTEXT : turnContext(this.statements.precedingTurns.all(namespace, session, key) as string[]);
          this.statements.updateExisting.run(row.text, metadata, vector, own.prev1, own.prev2, date, columns.tags, columns.createdMs, columns.userMeta, columns.expiresAt, key);
          keys.push(key);
        }
      }
      this.statements.bump.run();
      return keys;
    });
    try {
      // BEGIN IMMEDIATE: the write lock is taken first, waiting (up to the busy timeout) for another
      // process that holds it; a deferred transaction would read first and then fail at once when
      // it tried to write.
      const keys = run.immediate(rows);
      let largest = 0;
      for (const key of keys) largest = Math.max(largest, key);
      if (keys.length > 0) {
        this.compactor?.afterWrite(largest);
        this.checkpointer?.afterCommit(keys.length);
      }
      // New rows only: just the links of turns in their sessions moved (a replaced row may have
      // left its session, so then every kept link is dropped at the next read).
      if (!replaced) {
        const sessions: Array<[string, string]> = [];
        for (const row of rows) if (typeof row.metadata.session_id === "string") sessions.push([namespace, row.metadata.session_id]);
        this.kept.inserted(sessions, this.versions()[1]);
      }
      return keys;
    } catch (error) {
      // Rolled back: the remembered last turns may name rows that were never committed.
      this.recentTurns.clear();
      throw error;
    }
  }

  /** Rows with the given ids in one namespace (or any namespace when `namespace` is null). */
  getByIds(namespace: string | null, ids: string[]): SidecarRow[] {
    if (ids.length === 0) return [];
    const out: SidecarRow[] = [];
    for (let i = 0; i < ids.length; i += 250) {
      // Each id also as UTF-8 bytes: another program may have stored an id as a BLOB, which reads
      // as its text (both are look-ups in the id index).
      const chunk = ids.slice(i, i + 250).flatMap((id) => [id, Buffer.from(id)]);
      const marks = chunk.map(() => "?").join(",");
      const sql =
        namespace === null
          ? `SELECT * FROM records WHERE id IN (${marks})`
          : `SELECT * FROM records WHERE namespace = ? AND id IN (${marks})`;
      const params = namespace === null ? chunk : [namespace, ...chunk];
      for (const raw of this.prepare(sql).all(...params) as RawRow[]) out.push(toRow(raw));
    }
    return out;
  }

  /** Rows by integer key (used to resolve ANN results). Missing keys are left out. */
  getByKeys(keys: number[], withVectors = false): Map<number, SidecarRow> {
    const out = new Map<number, SidecarRow>();
    const cols = withVectors ? "*" : "key, namespace, id, text, metadata, NULL AS vector";
    for (let i = 0; i < keys.length; i += 500) {
      const chunk = keys.slice(i, i + 500);
      const sql = `SELECT ${cols} FROM records WHERE key IN (${chunk.map(() => "?").join(",")})`;
      for (const raw of this.prepare(sql).all(...chunk) as RawRow[]) out.set(raw.key, toRow(raw));
    }
    return out;
  }

  /** Delete rows; returns the keys removed (so the ANN index can drop them too). */
  delete(namespace: string, target: { ids: string[] } | { filter: MetadataFilter } | { all: true }): number[] {
    return this.readingValues("deletion", () => this.deleteUnchecked(namespace, target));
  }

  private deleteUnchecked(namespace: string, target: { ids: string[] } | { filter: MetadataFilter } | { all: true }): number[] {
    const run = this.db.transaction((): number[] => {
      let keys: number[];
      if ("ids" in target) {
        keys = this.getByIds(namespace, target.ids).map((r) => r.key);
      } else if ("filter" in target) {
        keys = [];
        for (const row of this.iterate(namespace)) if (matchesFilter(row.metadata, target.filter)) keys.push(row.key);
      } else {
        keys = (this.db.prepare(`SELECT key FROM records WHERE namespace = ?`).all(namespace) as Array<{ key: number }>).map((r) => r.key);
      }
      const del = this.db.prepare(`DELETE FROM records WHERE key = ?`);
      // The delete trigger refills the next turns' context; the remembered last turns may be gone.
      // Newest first: a deleted turn's following turns are then already gone when they are also
      // deleted (a whole session or namespace), so the trigger has nothing to refill.
      this.recentTurns.clear();
      for (const key of [...keys].sort((a, b) => b - a)) del.run(key);
      this.statements.bump.run();
      return keys;
    });
    return run();
  }

  /** Every row of one namespace (or all namespaces), in insertion order. Lazy. */
  *iterate(namespace: string | null = null, options: { withVectors?: boolean } = {}): Generator<SidecarRow> {
    const cols = options.withVectors ? "*" : "key, namespace, id, text, metadata, NULL AS vector";
    // Page by key so no statement stays open across yields (writes may happen in between).
    let after = -1;
    for (;;) {
      const sql =
        namespace === null
          ? `SELECT ${cols} FROM records WHERE key > ? ORDER BY key LIMIT 500`
          : `SELECT ${cols} FROM records WHERE namespace = ? AND key > ? ORDER BY key LIMIT 500`;
      const page = (namespace === null ? this.prepare(sql).all(after) : this.prepare(sql).all(namespace, after)) as RawRow[];
      if (page.length === 0) return;
      for (const raw of page) yield toRow(raw);
      after = page[page.length - 1]!.key;
    }
  }

  /** Key, id and vector of every row that has a vector (rebuilding the index). */
  vectorRows(): Array<{ key: number; id: string; vector: Float32Array }> {
    const rows = this.prepare(`SELECT key, id, vector FROM records WHERE vector IS NOT NULL`).all() as Array<{ key: number; id: unknown; vector: Buffer }>;
    return rows.map((r) => ({ key: r.key, id: textOf(r.id), vector: decodeVector(r.vector)! }));
  }

  /**
   * Visit the key, id and stored vector bytes (float32, little-endian) of every row of `namespace`
   * that has a vector, streaming: no row objects or vector copies are kept (a 100k-row namespace
   * holds 150 MB of vectors). `bytes` is only valid during the call.
   */
  eachVector(namespace: string, visit: (key: number, id: string, bytes: Buffer) => void): void {
    const rows = this.prepare(`SELECT key, id, vector FROM records WHERE namespace = ? AND vector IS NOT NULL`).raw(true).iterate(namespace) as IterableIterator<[number, unknown, Buffer]>;
    for (const [key, id, bytes] of rows) visit(key, textOf(id), bytes);
  }

  /** Key, id and vector of the rows with these keys that have a vector. */
  vectorsByKeys(keys: readonly number[]): Array<{ key: number; id: string; vector: Float32Array }> {
    if (keys.length === 0) return [];
    const sql = `SELECT key, id, vector FROM records WHERE key IN (SELECT value FROM json_each(?)) AND vector IS NOT NULL`;
    const rows = this.prepare(sql).all(JSON.stringify(keys)) as Array<{ key: number; id: unknown; vector: Buffer }>;
    return rows.map((r) => ({ key: r.key, id: textOf(r.id), vector: decodeVector(r.vector)! }));
  }

  /** Number of rows with a vector, optionally in one namespace. */
  countVectors(namespace: string | null = null): number {
    const row = (namespace === null
      ? this.prepare(`SELECT COUNT(*) AS n FROM records WHERE vector IS NOT NULL`).get()
      : this.prepare(`SELECT COUNT(*) AS n FROM records WHERE namespace = ? AND vector IS NOT NULL`).get(namespace)) as { n: number };
    return row.n;
  }

  /** Run `read` in one read transaction: every statement in it sees the same snapshot of the file. */
  inOneRead<T>(read: () => T): T {
    return this.db.transaction(read)();
  }

  /** Row counts per namespace (all rows, with or without vectors). */
  namespaceCounts(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const r of this.db.prepare(`SELECT namespace, COUNT(*) AS n FROM records GROUP BY namespace`).all() as Array<{ namespace: string; n: number }>) {
      out[r.namespace] = r.n;
    }
    return out;
  }

  /** Drop every stored vector (text and metadata stay): the first step of a reindex. */
  clearVectors(): void {
    this.db.transaction(() => {
      this.db.prepare(`UPDATE records SET vector = NULL WHERE vector IS NOT NULL`).run();
      this.statements.bump.run();
    })();
  }

  /** Store one row's vector (reindex). */
  setVectors(updates: Array<{ key: number; vector: Float32Array }>): void {
    const stmt = this.db.prepare(`UPDATE records SET vector = ? WHERE key = ?`);
    this.db.transaction(() => {
      for (const u of updates) stmt.run(encodeVector(u.vector), u.key);
      this.statements.bump.run();
    })();
  }

  /**
   * BM25 keyword search in one namespace. The query is sanitised (never an FTS syntax error).
   * With a filter, more candidates are read and filtered in JS.
   */
  keywordSearch(namespace: string, query: string, limit: number, filter?: MetadataFilter): KeywordHit[] {
    const ranks = this.keywordRanks(namespace, query, limit, filter);
    const rows = this.getByKeys(ranks.map((r) => r.key));
    const hits: KeywordHit[] = [];
    for (const rank of ranks) {
      const row = rows.get(rank.key);
      if (row) hits.push({ key: rank.key, id: rank.id, score: rank.score, text: row.text, metadata: row.metadata });
    }
    return hits;
  }

  /**
   * `keywordSearch` without text or metadata: the best `limit` rows' keys, ids and BM25 scores,
   * best first. With a filter, more candidates are read and their metadata filtered in JS. A row
   * `condition` is part of the ranking query itself (FTS5's bm25() query, or the layered ranker's
   * candidate pools), so the best `limit` passing rows are returned, not a filtered remainder.
   * Words found in half the rows or more carry no BM25 weight and are left out of the ranking;
   * rows holding only such words fill the list when fewer rows match, unless `fill` is false (a
   * hybrid search, whose vector ranking orders those rows better than a score of about 0).
   * `knownIds` (key → id) names rows the caller knows to exist (e.g. the vector hits): their ids
   * need not be looked up.
   */
  keywordRanks(
    namespace: string,
    query: string,
    limit: number,
    filter?: MetadataFilter,
    condition?: RowCondition | null,
    fill = true,
    knownIds?: ReadonlyMap<number, string>,
  ): KeywordRank[] {
    return this.readingValues("keyword search", () => this.keywordRanksUnchecked(namespace, query, limit, filter, condition, fill, knownIds));
  }

  private keywordRanksUnchecked(
    namespace: string,
    query: string,
    limit: number,
    filter: MetadataFilter | undefined,
    condition: RowCondition | null | undefined,
    fill: boolean,
    knownIds: ReadonlyMap<number, string> | undefined,
  ): KeywordRank[] {
    if (limit <= 0 || typeof query !== "string") return [];
    const total = (this.prepare(`SELECT COALESCE(MAX(key), 0) AS n FROM records`).get() as { n: number }).n;
    const terms = uniqueTerms(query);
    // The query words' related words (rare ones only: cheap at any size) are ranked on their own.
    const planned = planQueryRanking(terms, total, this.frequencies);
    if (!planned) return [];
    const { plan, related } = planned;
    const fetchLimit = filter ? Math.max(limit * 10, 200) : limit;
    const cols = filter ? "r.metadata, r.text" : "NULL AS metadata, NULL AS text";
    type Raw = { key: number; id: unknown; metadata: unknown; text: unknown; rank: number };
    const words = plan.mode === "bm25" ? plan.terms : plan.terms.map((t) => t.term);
    // FTS5's own bm25() over every matching row of the namespace that passes `condition`.
    // Rows are read as arrays (cheaper than a row object each), in rank order.
    const exact = (matched: readonly string[]): Raw[] =>
      (!filter && !condition && this.holdsOnly(namespace) ? this.exactUnjoined(matched.map(quoteTerm).join(" OR "), fetchLimit, knownIds) : undefined) ??
      (
        this.prepare(
          `SELECT r.key, r.id, ${cols}, ${this.contextColumns ? BM25_CALL : "bm25(records_fts)"} AS rank
           FROM records_fts JOIN records r ON r.key = records_fts.rowid
           WHERE records_fts MATCH ? AND r.namespace = ?${condition ? ` AND ${condition.sql}` : ""} ORDER BY rank LIMIT ?`,
        )
          .raw(true)
          .all(matched.map(quoteTerm).join(" OR "), namespace, ...(condition?.params ?? []), fetchLimit) as Array<[number, unknown, unknown, unknown, number]>
      ).map(([key, id, metadata, text, rank]) => ({ key, id, metadata, text, rank }));
    let raws: Raw[];
    if (plan.mode === "bm25") {
      raws = exact(words);
    } else {
      // A word in more than 0.2 % of a large store: FTS5's bm25() would walk its whole document
      // list, so the kit's layered ranker scores a bounded candidate set with the same formula,
      // pooling only rows that pass the condition.
      const where = condition ? this.conditionSql(condition.filter, condition.now, "i") : null;
      const ranked = this.layeredRanker().rank(plan.terms, { limit, candidates: fetchLimit, user: namespace, where });
      if (condition && ranked.length < limit) {
        // The ranker skips words found in most rows; when the passing rows hold only such words it
        // finds fewer than `limit`, and FTS5's exact ranking over the passing rows gives them instead.
        raws = exact(words);
      } else {
        const rows = new Map<number, { key: number; id: unknown; metadata: unknown; text: unknown }>();
        const sql = `SELECT r.key AS key, r.id AS id, ${cols} FROM records r WHERE r.key IN (SELECT value FROM json_each(?))`;
        for (const row of this.prepare(sql).all(JSON.stringify(ranked.map((r) => r.id))) as Array<{ key: number; id: unknown; metadata: unknown; text: unknown }>) {
          rows.set(row.key, row);
        }
        raws = [];
        for (const r of ranked) {
          const row = rows.get(r.id);
          if (row) raws.push({ ...row, rank: r.rank });
        }
      }
    }
    // A related word's match counts `KEYWORD_RELATED_WEIGHT` of its BM25 score, added to the row's own.
    const relatedRaws = related.length > 0 ? exact(related) : [];
    const withRelated = (own: readonly Raw[]): Raw[] => {
      if (relatedRaws.length === 0) return [...own];
      const merged = new Map<number, Raw>();
      for (const raw of own) merged.set(raw.key, { ...raw });
      for (const raw of relatedRaws) {
        const entry = merged.get(raw.key);
        if (entry === undefined) merged.set(raw.key, { ...raw, rank: raw.rank * KEYWORD_RELATED_WEIGHT });
        else entry.rank += raw.rank * KEYWORD_RELATED_WEIGHT;
      }
      // Best (lowest rank) first; equal ranks by key, so the order never depends on the merge.
      return [...merged.values()].sort((a, b) => a.rank - b.rank || a.key - b.key);
    };
    const toHits = (ranked: readonly Raw[]): KeywordRank[] => {
      const raws = withRelated(ranked);
      const hits: KeywordRank[] = [];
      for (const raw of raws) {
        // Filters see the metadata as stored rows carry it (text included).
        if (filter && !matchesFilter(toRow({ ...raw, namespace, vector: null }).metadata, filter)) continue;
        hits.push({ key: raw.key, id: textOf(raw.id), score: -raw.rank });
        if (hits.length >= limit) break;
      }
      return hits;
    };
    const hits = toHits(raws);
    // Rows holding only words found in half the rows or more score about 0 and come after every
    // other match; they are ranked (with those words added) only to fill a short list.
    if (fill && hits.length < limit && plan.floored.length > 0) return toHits(exact([...words, ...plan.floored]));
    return hits;
  }

  /** Whether every row of the sidecar is in `namespace` (two seeks in the (namespace, id) index). */
  private holdsOnly(namespace: string): boolean {
    const sql = `SELECT (SELECT namespace FROM records ORDER BY namespace LIMIT 1) = @namespace AND (SELECT namespace FROM records ORDER BY namespace DESC LIMIT 1) = @namespace`;
    return this.prepare(sql).pluck().get({ namespace }) === 1;
  }

  /**
   * FTS5's bm25() ranking of `match` over every row, best `limit` first, when every row is in the
   * searched namespace: the ranking reads the full-text index only, and the rows are looked up
   * for the ids of the best `limit` alone (not those in `knownIds`). `undefined` when a ranked row
   * has no stored row (the ranking joined with the rows gives the answer then).
   */
  private exactUnjoined(match: string, limit: number, knownIds: ReadonlyMap<number, unknown> = new Map()): Array<{ key: number; id: unknown; metadata: null; text: null; rank: number }> | undefined {
    const ranked = this.prepare(`SELECT rowid, ${this.contextColumns ? BM25_CALL : "bm25(records_fts)"} AS rank FROM records_fts WHERE records_fts MATCH ? ORDER BY rank LIMIT ?`)
      .raw(true)
      .all(match, limit) as Array<[number, number]>;
    const unknown: number[] = [];
    for (const [key] of ranked) if (!knownIds.has(key)) unknown.push(key);
    const ids = new Map<number, unknown>(
      unknown.length === 0
        ? []
        : (this.prepare(`SELECT key, id FROM records WHERE key IN (SELECT value FROM json_each(?))`).raw(true).all(JSON.stringify(unknown)) as Array<[number, unknown]>),
    );
    if (ids.size < unknown.length) return undefined;
    return ranked.map(([key, rank]) => ({ key, id: ids.get(key) ?? knownIds.get(key), metadata: null, text: null, rank }));
  }

  /**
   * Key, id and metadata of the rows with these ids in `namespace` (by id), in one statement; the
   * first `linkFirst` ids in `ids` order that are turns also get the keys of their neighbours (the
   * next two and previous two turns of their namespace and session, in key order) and whether they
   * ask a question. Only the first `metadataFirst` ids (default all) get their metadata read. No text is returned (SQL only tests
   * it for a question mark). `keys`, when every id's key is known (same order), makes each
   * look-up one by key.
   */
  linkedRefs(namespace: string, ids: readonly string[], linkFirst: number, metadataFirst = ids.length, keys?: readonly number[]): Map<string, LinkedRef> {
    return this.readingValues("search", () => this.linkedRefsUnchecked(namespace, ids, linkFirst, metadataFirst, keys));
  }

  private linkedRefsUnchecked(namespace: string, ids: readonly string[], linkFirst: number, metadataFirst: number, keys?: readonly number[]): Map<string, LinkedRef> {
    // Links only, by key: the turns whose links are kept need no look-up.
    if (keys === undefined || metadataFirst > 0 || linkFirst < ids.length || ids.length === 0) return this.readLinkedRefs(namespace, ids, linkFirst, metadataFirst, keys);
    this.syncKept();
    const found: Array<LinkedRef | undefined> = [];
    const missingIds: string[] = [];
    const missingKeys: number[] = [];
    for (let i = 0; i < keys.length; i++) {
      const links = this.kept.linksOf(namespace, keys[i]!);
      if (links) {
        found.push({ key: links.key, id: links.id, metadata: {}, hasMetadata: false, next: links.next, previous: links.previous, asksQuestion: links.asksQuestion, sessionTurn: true });
      } else {
        found.push(undefined);
        missingIds.push(ids[i]!);
        missingKeys.push(keys[i]!);
      }
    }
    const read = new Map<number, LinkedRef>();
    for (const ref of this.readLinkedRefs(namespace, missingIds, missingIds.length, 0, missingKeys, (links, session) => this.kept.keepLinks(links, session)).values()) read.set(ref.key, ref);
    // In the order asked, as when every row is read.
    const out = new Map<string, LinkedRef>();
    for (let i = 0; i < keys.length; i++) {
      const ref = found[i] ?? read.get(keys[i]!);
      if (ref) out.set(ref.id, ref);
    }
    return out;
  }

  /** `PRAGMA data_version` and `total_changes()`: what `ReadCache` compares to know whether anything else wrote. */
  private versions(): [dataVersion: number, totalChanges: number] {
    return this.statements.versions.get() as [number, number];
  }

  /** Trust what is kept only while nothing but this connection's reported inserts changed the file. */
  private syncKept(): void {
    const [dataVersion, totalChanges] = this.versions();
    this.kept.sync(dataVersion, totalChanges);
  }

  /**
   * `linkedRefs` read from the file. `keep` receives the links of each turn with a text session
   * read as stored (not repaired on the way), with its session.
   */
  private readLinkedRefs(
    namespace: string,
    ids: readonly string[],
    linkFirst: number,
    metadataFirst: number,
    keys?: readonly number[],
    keep?: (links: TurnLinks, session: string) => void,
  ): Map<string, LinkedRef> {
    const out = new Map<string, LinkedRef>();
    if (ids.length === 0) return out;
    // CROSS JOIN keeps the id list outside, so each id is one look-up in the (namespace, id) index.
    // The rows come back as one JSON text of [key, id, metadata, next keys, previous keys, asks,
    // stored as text, session turn] arrays: building a row object per candidate in JavaScript cost
    // more than the look-ups. Text values are cast, as JSON cannot hold a BLOB (another program may
    // have written one); rows holding one, or metadata that is not a JSON object, are read again whole.
    const json = this.prepare(keys ? LINKED_BY_KEY_SQL : LINKED_BY_ID_SQL)
      .pluck()
      .get({ link: linkFirst, meta: metadataFirst, ids: JSON.stringify(keys ?? ids), namespace }) as string;
    type Linked = [
      key: number,
      id: string,
      metadata: string | null,
      next: [number | null, number | null] | null,
      previous: [number | null, number | null] | null,
      asks: number | null,
      stored: number,
      sessionTurn: number | null,
      session: string | null,
    ];
    const rows = JSON.parse(json) as Linked[];
    const metadataOf = new Map<number, VectorMetadata>();
    const unread: number[] = [];
    for (const [key, , rawMetadata, , , , stored] of rows) {
      const metadata = rawMetadata === null ? undefined : parseRefMetadata(rawMetadata);
      if (metadata) metadataOf.set(key, metadata);
      if (stored !== 1 || (rawMetadata !== null && metadata === undefined)) unread.push(key);
    }
    const reread = this.readableRefs(unread);
    for (const [key, castId, rawMetadata, next, previous, asks, , sessionTurn, session] of rows) {
      const whole = reread.get(key);
      const id = whole ? whole.id : castId;
      const metadata = whole ? whole.metadata : (metadataOf.get(key) ?? {});
      // A row read again whole: its kind and session as the readable metadata holds them.
      const turn = whole ? sessionTurn !== null && whole.metadata.kind === "turn" && typeof whole.metadata.session_id === "string" : sessionTurn === 1;
      const ref: LinkedRef = { key, id, metadata, hasMetadata: whole !== undefined || rawMetadata !== null, next: neighbourKeys(next, "next"), previous: neighbourKeys(previous, "prev"), asksQuestion: asks === 1, sessionTurn: turn };
      out.set(id, ref);
      if (keep && turn && !whole && typeof session === "string") keep({ key, namespace, id, next: ref.next, previous: ref.previous, asksQuestion: ref.asksQuestion }, session);
    }
    return out;
  }

  /** Id and namespace (no text, metadata `{}`) of the rows with these keys, in one statement. */
  idsByKeys(keys: readonly number[]): Map<number, { key: number; id: string; namespace: string; metadata: VectorMetadata }> {
    const out = new Map<number, { key: number; id: string; namespace: string; metadata: VectorMetadata }>();
    if (keys.length === 0) return out;
    const sql = `SELECT key, id, namespace FROM records WHERE key IN (SELECT value FROM json_each(?))`;
    for (const raw of this.prepare(sql).all(JSON.stringify(keys)) as Array<{ key: number; id: unknown; namespace: unknown }>) {
      out.set(raw.key, { key: raw.key, id: textOf(raw.id), namespace: textOf(raw.namespace), metadata: {} });
    }
    return out;
  }

  /**
   * Key, id and metadata (no text, no vector) of the rows with these keys, in one statement for
   * those not kept from an earlier read. The metadata of a row read as stored is kept, frozen:
   * never change it (copy what a caller may change).
   */
  refsByKeys(keys: readonly number[]): Map<number, SidecarRef> {
    const out = new Map<number, SidecarRef>();
    if (keys.length === 0) return out;
    this.syncKept();
    const missing: number[] = [];
    for (const key of keys) {
      const ref = this.kept.refOf(key);
      if (ref) out.set(key, ref);
      else missing.push(key);
    }
    if (missing.length === 0) return out;
    // Rows as [key, id, metadata, stored as text] arrays (cheaper than a row object per row, and
    // than one JSON text holding the metadata as JSON strings, parsed twice); text cast, and
    // unreadable rows read again whole, as above.
    const sql = `SELECT key, CAST(id AS TEXT), CAST(metadata AS TEXT), typeof(id) = 'text' AND typeof(text) = 'text' AND typeof(metadata) = 'text'
      FROM records WHERE key IN (SELECT value FROM json_each(?))`;
    const unread: number[] = [];
    for (const [key, id, text, stored] of this.prepare(sql).raw(true).all(JSON.stringify(missing)) as Array<[number, string, string, number]>) {
      const metadata = stored === 1 ? parseRefMetadata(text) : undefined;
      if (metadata) out.set(key, this.kept.keepRef(key, id, metadata, text.length));
      else unread.push(key);
    }
    for (const [key, ref] of this.readableRefs(unread)) out.set(key, ref);
    return out;
  }

  /** Key, readable id and metadata (`readableRecord`, with the originals it keeps) of the rows with these keys. */
  private readableRefs(keys: readonly number[]): Map<number, SidecarRef> {
    const out = new Map<number, SidecarRef>();
    if (keys.length === 0) return out;
    const sql = `SELECT key, namespace, id, text, metadata FROM records WHERE key IN (SELECT value FROM json_each(?))`;
    for (const raw of this.prepare(sql).all(JSON.stringify(keys)) as RawRow[]) {
      const { id, metadata } = readableRecord(raw);
      out.set(raw.key, { key: raw.key, id, metadata });
    }
    return out;
  }

  /** The text of the rows with these keys, in one statement for those not kept from an earlier read. */
  textsByKeys(keys: readonly number[]): Map<number, string> {
    const out = new Map<number, string>();
    if (keys.length === 0) return out;
    this.syncKept();
    const missing: number[] = [];
    for (const key of keys) {
      const text = this.kept.textOf(key);
      if (text === undefined) missing.push(key);
      else out.set(key, text);
    }
    if (missing.length === 0) return out;
    const sql = `SELECT key, text FROM records WHERE key IN (SELECT value FROM json_each(?))`;
    for (const [key, stored] of this.prepare(sql).raw(true).all(JSON.stringify(missing)) as Array<[number, unknown]>) {
      const text = textOf(stored);
      out.set(key, text);
      // Only text stored as text is kept (a value read through `textOf` is shown as a repair would store it).
      if (typeof stored === "string") this.kept.keepText(key, text);
    }
    return out;
  }



  /**
   * `filter` (parsed by the kit) as a condition over `records r`, with `now` (epoch ms) leaving out
   * the items expired at that time (`null`: expired items are included, e.g. for erasure). `null`
   * when nothing is left out.
   */
  condition(filter: ParsedMemoryFilter, now: number | null): RowCondition | null {
    const compiled = this.conditionSql(filter, now, "r");
    return compiled === null ? null : { ...compiled, filter, now };
  }

  /** `condition` as SQL over `records` under the alias `a`; `null` when nothing is left out. */
  private conditionSql(filter: ParsedMemoryFilter, now: number | null, a: string): { sql: string; params: unknown[] } | null {
    const columns: FilterSqlColumns = this.filterColumns
      ? { id: `${a}.id`, kind: kindSql(a), sessionId: sessionSql(a), userId: userSql(a), tags: `${a}.tags`, metadata: `${a}.user_meta`, createdAt: `${a}.created_ms` }
      : {
          id: `${a}.id`,
          kind: kindSql(a),
          sessionId: sessionSql(a),
          userId: userSql(a),
          tags: `hermes_tags(${a}.metadata)`,
          metadata: `hermes_user_meta(${a}.metadata)`,
          createdAt: `hermes_created_ms(${a}.metadata)`,
        };
    const parts: string[] = [];
    const params: unknown[] = [];
    if (!isEmptyFilter(filter)) {
      // Tags and user metadata are stored by `filterColumnsOf` (JSON.stringify), on every path.
      const compiled = filterToSql(filter, columns, { stringifiedJson: true });
      parts.push(`(${compiled.sql})`);
      params.push(...compiled.params);
    }
    if (now !== null) {
      const expires = this.filterColumns ? `${a}.expires_at` : `hermes_expires_at(${a}.metadata)`;
      parts.push(`(${expires} IS NULL OR ${expires} > ?)`);
      params.push(now);
    }
    return parts.length === 0 ? null : { sql: parts.join(" AND "), params };
  }

  /**
   * Keys of the rows of `namespace` (every namespace when null) passing `condition`, in key order;
   * `null` when there are more than `cap` (the caller then filters another way).
   */
  passingKeys(namespace: string | null, condition: SqlCondition | null, cap = Number.MAX_SAFE_INTEGER): number[] | null {
    const where = [namespace === null ? "1" : "r.namespace = ?", condition ? condition.sql : "1"].join(" AND ");
    const params = [...(namespace === null ? [] : [namespace]), ...(condition?.params ?? [])];
    const limit = Math.min(cap, Number.MAX_SAFE_INTEGER - 1) + 1;
    const keys = this.readingValues("filter", () => this.prepare(`SELECT r.key FROM records r WHERE ${where} ORDER BY r.key LIMIT ?`).pluck().all(...params, limit) as number[]);
    return keys.length > cap ? null : keys;
  }

  /** The keys among `keys` whose rows pass `condition` (all existing ones when it is null). */
  filterKeys(keys: readonly number[], condition: SqlCondition | null): Set<number> {
    const out = new Set<number>();
    if (keys.length === 0) return out;
    const sql = `SELECT r.key FROM records r WHERE r.key IN (SELECT value FROM json_each(?)) AND ${condition ? condition.sql : "1"}`;
    for (const key of this.readingValues("filter", () => this.prepare(sql).pluck().all(JSON.stringify(keys), ...(condition?.params ?? [])) as number[])) out.add(key);
    return out;
  }

  /**
   * The checkpoint rows holding an archived copy of a message of one of the turn rows with these
   * keys (same namespace and session; the texts the kit's `checkpointCopies` gives), so erasing a
   * turn erases those copies too.
   */
  checkpointCopyRows(keys: readonly number[]): Array<{ key: number; namespace: string; id: string }> {
    return this.readingValues("erasure", () => this.checkpointCopyRowsUnchecked(keys));
  }

  private checkpointCopyRowsUnchecked(keys: readonly number[]): Array<{ key: number; namespace: string; id: string }> {
    if (keys.length === 0) return [];
    const turns = this.prepare(
      `SELECT r.namespace AS namespace, ${sessionSql("r")} AS session, r.text AS text FROM records r
       WHERE r.key IN (SELECT value FROM json_each(?)) AND ${kindSql("r")} = 'turn' AND ${sessionSql("r")} IS NOT NULL`,
    ).all(JSON.stringify(keys)) as Array<{ namespace: unknown; session: string; text: unknown }>;
    const groups = new Map<string, { namespace: string; session: string; texts: Set<string> }>();
    for (const turn of turns) {
      const namespace = textOf(turn.namespace);
      const group = `${namespace}\u0000${turn.session}`;
      let entry = groups.get(group);
      if (!entry) groups.set(group, (entry = { namespace, session: turn.session, texts: new Set() }));
      for (const text of checkpointCopies(textOf(turn.text))) entry.texts.add(text);
    }
    const copies = this.prepare(
      `SELECT r.key AS key, r.namespace AS namespace, r.id AS id FROM records r
       WHERE r.namespace = ? AND ${kindSql("r")} = 'checkpoint' AND ${sessionSql("r")} = ? AND r.text IN (SELECT value FROM json_each(?))`,
    );
    const out: Array<{ key: number; namespace: string; id: string }> = [];
    for (const { namespace, session, texts } of groups.values()) {
      for (const row of copies.all(namespace, session, JSON.stringify([...texts])) as Array<{ key: number; namespace: unknown; id: unknown }>) {
        out.push({ key: row.key, namespace: textOf(row.namespace), id: textOf(row.id) });
      }
    }
    return out;
  }

  /** Namespace, id and key of the rows passing `condition` (in every namespace, or one). */
  rowsWhere(namespace: string | null, condition: SqlCondition | null): Array<{ key: number; namespace: string; id: string }> {
    const where = [namespace === null ? "1" : "r.namespace = ?", condition ? condition.sql : "1"].join(" AND ");
    const params = [...(namespace === null ? [] : [namespace]), ...(condition?.params ?? [])];
    const rows = this.readingValues("filter", () => this.prepare(`SELECT r.key AS key, r.namespace AS namespace, r.id AS id FROM records r WHERE ${where} ORDER BY r.key`).all(...params)) as Array<{
      key: number;
      namespace: unknown;
      id: unknown;
    }>;
    return rows.map((r) => ({ key: r.key, namespace: textOf(r.namespace), id: textOf(r.id) }));
  }

  /** Whether any row of `namespace` (any namespace when null) has expired at `now`. Served by the expiry index. */
  hasExpired(namespace: string | null, now: number): boolean {
    if (!this.filterColumns) {
      const sql = `SELECT 1 FROM records r WHERE ${namespace === null ? "1" : "r.namespace = ?"} AND hermes_expires_at(r.metadata) <= ? LIMIT 1`;
      return this.prepare(sql).get(...(namespace === null ? [now] : [namespace, now])) !== undefined;
    }
    // `+r.namespace`: the expiry index must drive the look-up, not the namespace (which holds every row).
    const sql = `SELECT 1 FROM records r WHERE r.expires_at IS NOT NULL AND r.expires_at <= ? ${namespace === null ? "" : "AND +r.namespace = ?"} LIMIT 1`;
    return this.prepare(sql).get(...(namespace === null ? [now] : [now, namespace])) !== undefined;
  }

  /** Keys of the rows of `namespace` expired at `now` (served by the expiry index). */
  expiredKeys(namespace: string, now: number): number[] {
    if (!this.filterColumns) return [];
    return this.prepare(`SELECT r.key FROM records r WHERE r.expires_at IS NOT NULL AND r.expires_at <= ? AND +r.namespace = ?`).pluck().all(now, namespace) as number[];
  }

  /** Delete the rows with these keys (any namespace); returns the keys removed, per namespace. */
  deleteKeys(keys: readonly number[]): Map<string, number[]> {
    const run = this.db.transaction((): Map<string, number[]> => {
      const byNamespace = new Map<string, number[]>();
      const found = (this.prepare(`SELECT key, namespace FROM records WHERE key IN (SELECT value FROM json_each(?))`).all(JSON.stringify(keys)) as Array<{ key: number; namespace: unknown }>).map(
        (row) => ({ key: row.key, namespace: textOf(row.namespace) }),
      );
      const del = this.prepare(`DELETE FROM records WHERE key = ?`);
      this.recentTurns.clear();
      // Newest first, so a deleted turn's following turns are gone before the trigger refills them.
      for (const row of found.sort((a, b) => b.key - a.key)) {
        del.run(row.key);
        byNamespace.set(row.namespace, [...(byNamespace.get(row.namespace) ?? []), row.key]);
      }
      this.statements.bump.run();
      return byNamespace;
    });
    return this.readingValues("erasure", () => run());
  }

  /** Database file size in bytes (0 in memory). */
  sizeBytes(): number {
    if (this.file === ":memory:") return 0;
    let total = 0;
    for (const suffix of ["", "-wal"]) {
      try {
        total += fs.statSync(this.file + suffix).size;
      } catch {
        // missing -wal is normal
      }
    }
    return total;
  }

  /** Stored records per `metadata.kind`. */
  kindCounts(): Record<string, number> {
    const out: Record<string, number> = {};
    const rows = this.tolerantRead(`SELECT json_extract(metadata, '$.kind') AS kind, COUNT(*) AS n FROM records GROUP BY kind`) as Array<{ kind: string | null; n: number }>;
    for (const r of rows) {
      if (typeof r.kind === "string") out[r.kind] = r.n;
    }
    return out;
  }

  /** Number of distinct sessions the records belong to. */
  sessionCount(): number {
    return (this.tolerantRead(`SELECT COUNT(DISTINCT json_extract(metadata, '$.session_id')) AS n FROM records`)[0] as { n: number }).n;
  }

  /**
   * The rows of `sql`, a read over every row's metadata. When SQLite's JSON functions refuse some
   * row's metadata (a BLOB or non-JSON text another program wrote), it runs again reading such
   * metadata as `{}`, as a repair stores it; the first form uses the session index.
   */
  private tolerantRead(sql: string): unknown[] {
    try {
      return this.prepare(sql).all();
    } catch (error) {
      if (!isJsonError(error)) throw error;
      const readable = `CASE WHEN typeof(metadata) = 'text' AND json_valid(metadata) AND json_type(metadata) = 'object' THEN metadata ELSE '{}' END`;
      return this.prepare(sql.replace(/json_extract\(metadata,/g, `json_extract(${readable},`)).all();
    }
  }

  /**
   * Run `fn`, a read, filter or erasure evaluated by SQLite's JSON functions over stored values.
   * When it fails on a value those functions cannot read (a BLOB or non-JSON metadata, tags or user
   * metadata, left by an older version or another program), it throws `STORAGE_FAILED` naming those
   * items and the repair, instead of SQLite's own error: results that skip such items silently could
   * miss an item a filter or an erasure should reach.
   */
  private readingValues<T>(what: string, fn: () => T): T {
    try {
      return fn();
    } catch (error) {
      if (!isJsonError(error)) throw error;
      const ids = unreadableRecordIds(this.db, 6).map((id) => JSON.stringify(id.length > 80 ? `${id.slice(0, 80)}…` : id));
      if (ids.length === 0) throw error;
      const named = ids.length > 5 ? `${ids.slice(0, 5).join(", ")} and more` : ids.join(", ");
      throw new HermesMemoryError({
        code: "STORAGE_FAILED",
        message:
          `The ${what} failed: the vector sidecar ${this.file} holds item(s) whose id, text or metadata cannot be read as text or JSON (id ${named}), ` +
          `written by an older version or another program. Run \`hermes-memory vector reindex\` to repair them: every item is kept, and unreadable originals move to metadata.${UNREADABLE_KEY}.`,
        cause: error,
      });
    }
  }

  /**
   * Make every stored value readable (see `readableRecord`: BLOBs and non-JSON metadata of older
   * versions or other programs; no item is dropped and unreadable originals are kept in the item's
   * metadata under `UNREADABLE_KEY`), in one transaction. Returns how many items were rewritten.
   */
  repairUnreadableValues(): number {
    if (this.readOnly) throw storageError(`the vector sidecar ${this.file} is open read-only`, undefined, "open it with write access to repair it");
    try {
      return this.db.transaction(() => repairRecords(this.db)).immediate();
    } finally {
      // Texts and sessions of rows may have changed.
      this.recentTurns.clear();
    }
  }

  /**
   * Close the database. Idempotent. The ranker's helper thread and the checkpoint thread stop
   * first (the checkpoint thread closes its connection before this returns). A writable file is
   * then switched back to rollback-journal mode when no other connection has it open, so it can
   * later be opened from a read-only mount (WAL needs a writable `-shm` next to it); the next
   * writable open switches to WAL again.
   */
  close(): void {
    this.ranker?.close();
    this.checkpointer?.close();
    closeSqliteStore(this.db);
  }
}
