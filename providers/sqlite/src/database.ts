import {
  closeSqliteStore,
  createSqliteDriverLoader,
  isBusyError,
  openSqliteStore,
  storageError,
  type SqliteDb,
  type SqliteDriver,
  type SqliteStoreSpec,
} from "@hermes/memory-provider-kit";
import { describeError } from "@hermes/memory-core";
import { CONTEXT_CHARS, TURN_COLUMN_WEIGHTS, turnContext, turnDateText, type TurnColumnWeights } from "@hermes/memory-provider-kit";

/** A better-sqlite3 connection. */
export type Db = SqliteDb;

/** Schema version this code writes (`PRAGMA user_version`). */
export const SCHEMA_VERSION = 3;

/** FTS column weights for `bm25(items_fts, content, speaker, prev1, prev2, session_date)`. */
export const BM25_WEIGHTS: Readonly<TurnColumnWeights> = TURN_COLUMN_WEIGHTS;

/** The `bm25(items_fts, ...)` call with these column weights (in FTS column order). */
export function bm25Call(w: TurnColumnWeights): string {
  return `bm25(items_fts, ${Number(w.content)}, ${Number(w.speaker)}, ${Number(w.prev1)}, ${Number(w.prev2)}, ${Number(w.date)})`;
}

const driverLoader = createSqliteDriverLoader(import.meta.url);

/**
 * Load better-sqlite3 once, lazily, so that `isAvailable()` can report a missing or broken native
 * addon instead of the whole module failing to import. Returns `undefined` when it cannot load.
 */
export function loadDriver(): SqliteDriver | undefined {
  return driverLoader.load();
}

/** Why the driver failed to load, or `undefined` when it loaded (or was never tried). */
export function driverLoadError(): unknown {
  return driverLoader.error();
}

/** Options for `openDatabase`. */
export interface OpenDatabaseOptions {
  /** Open without write access (inspection, doctor on a read-only copy). Never migrates. */
  readonly?: boolean;
  /** `busy_timeout` in ms; at least 5000. */
  busyTimeoutMs?: number;
}

// Rows are indexed by the store itself right after each insert (see MemoryStore): an AFTER INSERT
// trigger makes FTS5 flush its pending terms per row and costs about 3x the write time. Deletes and
// updates are rare, so triggers keep those in sync.
const SCHEMA_V1 = `
CREATE TABLE IF NOT EXISTS items (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL CHECK (kind IN ('turn', 'fact', 'checkpoint')),
  session_id TEXT,
  user_id TEXT,
  speaker TEXT NOT NULL DEFAULT '',
  content TEXT NOT NULL,
  tags TEXT NOT NULL DEFAULT '[]',
  metadata TEXT NOT NULL DEFAULT '{}',
  digest TEXT,
  created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS speakers (name TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS items_digest ON items(digest) WHERE digest IS NOT NULL;
CREATE INDEX IF NOT EXISTS items_session ON items(session_id, id);
CREATE VIRTUAL TABLE IF NOT EXISTS items_fts USING fts5(
  content, speaker,
  content = 'items', content_rowid = 'id',
  tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS items_ad AFTER DELETE ON items BEGIN
  INSERT INTO items_fts(items_fts, rowid, content, speaker) VALUES ('delete', old.id, old.content, old.speaker);
END;
CREATE TRIGGER IF NOT EXISTS items_au AFTER UPDATE OF content, speaker ON items BEGIN
  INSERT INTO items_fts(items_fts, rowid, content, speaker) VALUES ('delete', old.id, old.content, old.speaker);
  INSERT INTO items_fts(rowid, content, speaker) VALUES (new.id, new.content, new.speaker);
END;
INSERT INTO items_fts(items_fts, rank) VALUES ('rank', 'bm25(${BM25_WEIGHTS.content}, ${BM25_WEIGHTS.speaker})');
`;

// v3: context columns on items, and an FTS table over them. The FTS table is recreated (FTS5 cannot
// add columns) and rebuilt from items after the new columns are filled. Deleting a turn refills the
// context of the next two turns of its session, so forgotten text does not stay searchable there.
const SCHEMA_V3_COLUMNS = `
DROP TRIGGER IF EXISTS items_ad;
DROP TRIGGER IF EXISTS items_au;
DROP TABLE IF EXISTS items_fts;
ALTER TABLE items ADD COLUMN prev1 TEXT NOT NULL DEFAULT '';
ALTER TABLE items ADD COLUMN prev2 TEXT NOT NULL DEFAULT '';
ALTER TABLE items ADD COLUMN session_date TEXT NOT NULL DEFAULT '';
`;
const SCHEMA_V3_FTS = `
CREATE VIRTUAL TABLE items_fts USING fts5(
  content, speaker, prev1, prev2, session_date,
  content = 'items', content_rowid = 'id',
  tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER items_ad AFTER DELETE ON items BEGIN
  INSERT INTO items_fts(items_fts, rowid, content, speaker, prev1, prev2, session_date)
    VALUES ('delete', old.id, old.content, old.speaker, old.prev1, old.prev2, old.session_date);
END;
CREATE TRIGGER items_au AFTER UPDATE OF content, speaker, prev1, prev2, session_date ON items BEGIN
  INSERT INTO items_fts(items_fts, rowid, content, speaker, prev1, prev2, session_date)
    VALUES ('delete', old.id, old.content, old.speaker, old.prev1, old.prev2, old.session_date);
  INSERT INTO items_fts(rowid, content, speaker, prev1, prev2, session_date)
    VALUES (new.id, new.content, new.speaker, new.prev1, new.prev2, new.session_date);
END;
CREATE TRIGGER items_ad_context AFTER DELETE ON items WHEN old.kind = 'turn' AND old.session_id IS NOT NULL BEGIN
  UPDATE items SET
    prev1 = COALESCE((SELECT substr(p.content, 1, ${CONTEXT_CHARS}) FROM items p WHERE p.session_id = items.session_id AND p.kind = 'turn' AND p.id < items.id ORDER BY p.id DESC LIMIT 1), ''),
    prev2 = COALESCE((SELECT substr(p.content, 1, ${CONTEXT_CHARS}) FROM items p WHERE p.session_id = items.session_id AND p.kind = 'turn' AND p.id < items.id ORDER BY p.id DESC LIMIT 1 OFFSET 1), '')
  WHERE id IN (SELECT n.id FROM items n WHERE n.session_id = old.session_id AND n.kind = 'turn' AND n.id > old.id ORDER BY n.id LIMIT 2);
END;
INSERT INTO items_fts(items_fts, rank) VALUES ('rank', '${bm25Call(BM25_WEIGHTS).replace("items_fts, ", "")}');
`;

/**
 * Schema v3 on a v2 store: add the context columns, fill them for every existing turn (the two
 * previous turns of its session, in id order, and its date from metadata or creation time), then
 * rebuild the FTS index from items. Nothing is deleted from items.
 */
function migrateToV3(db: Db): void {
  // The old FTS table and its triggers go first, so filling the columns touches no index.
  db.exec(SCHEMA_V3_COLUMNS);
  const update = db.prepare(`UPDATE items SET prev1 = ?, prev2 = ?, session_date = ? WHERE id = ?`);
  const rows = db.prepare(`SELECT id, session_id, metadata, created_at, content FROM items WHERE kind = 'turn' ORDER BY session_id, id`).raw(true);
  let session: string | null = null;
  let previous: string[] = [];
  // Rows are read first: updating items while iterating over it is not allowed by better-sqlite3.
  const all = rows.all() as Array<[number, string | null, string, number, string]>;
  for (const [id, sessionId, metadata, createdAt, text] of all) {
    if (sessionId !== session) {
      session = sessionId;
      previous = [];
    }
    let meta: Record<string, unknown> = {};
    try {
      meta = JSON.parse(metadata) as Record<string, unknown>;
    } catch {
      // Unreadable metadata: the date falls back to the creation time.
    }
    const date = turnDateText("turn", meta, createdAt);
    if (sessionId === null || sessionId === "") update.run("", "", date, id);
    else {
      const context = turnContext(previous);
      update.run(context.prev1, context.prev2, date, id);
    }
    if (sessionId !== null && sessionId !== "") previous = [text, ...previous].slice(0, 2);
  }
  db.exec(SCHEMA_V3_FTS);
  db.exec(`INSERT INTO items_fts(items_fts) VALUES ('rebuild')`);
}

function storeSpec(): SqliteStoreSpec {
  return {
    driver: loadDriver(),
    unavailable: `better-sqlite3 could not be loaded (${describeError(driverLoadError())}). Reinstall @hermes/memory-sqlite so its native addon is built (pnpm needs "onlyBuiltDependencies: [better-sqlite3]").`,
    label: "SQLite memory database",
    packageName: "@hermes/memory-sqlite",
    schemaVersion: SCHEMA_VERSION,
    migrate(db, current) {
      if (current < 1) db.exec(SCHEMA_V1);
      // v2: early v1 databases indexed inserts through a trigger; the store now does it directly.
      if (current < 2) db.exec("DROP TRIGGER IF EXISTS items_ai");
      // v3: each turn's FTS document also holds the two previous turns of its session and its date.
      if (current < 3) migrateToV3(db);
    },
  };
}

/**
 * Open (creating when needed) the database at `file`, check and migrate its schema, and set WAL,
 * `synchronous=NORMAL` and a busy timeout. A database whose schema is newer than this code is left
 * untouched and rejected with `SCHEMA_TOO_NEW`. Other failures throw `STORAGE_FAILED`.
 */
export function openDatabase(file: string, options: OpenDatabaseOptions = {}): Db {
  const db = openSqliteStore(file, storeSpec(), { ...options, openFix: "check that the directory exists and is writable, or set memory.sqlite.path" });
  if (!options.readonly) {
    try {
      db.exec(TURN_INDEX);
    } catch (error) {
      // Another process holding the write lock past the busy timeout: search works without the
      // index, and a later open creates it.
      if (isBusyError(error)) return db;
      closeSqliteStore(db);
      throw storageError(`cannot prepare the SQLite memory database at ${file}`, error, "check free disk space and write permission on the database directory");
    }
  }
  return db;
}

/**
 * The turns of each session in id order, covering the neighbour lookups of every search (next two
 * and previous turn of a match) without reading table rows. Not part of the versioned schema:
 * created on every writable open when missing, so older versions of this package still open the
 * file, and a read-only open without it searches the same, only slower.
 */
const TURN_INDEX = `CREATE INDEX IF NOT EXISTS items_session_turns ON items(session_id, id) WHERE kind = 'turn'`;

/**
 * Close a writable connection, first switching the file back to rollback-journal mode when no
 * other connection has it open (a read-only mount can then open it without a `-shm` file).
 */
export function closeDatabase(db: Db): void {
  closeSqliteStore(db);
}

export { isBusyError, storageError };
