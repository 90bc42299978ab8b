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

/** A better-sqlite3 connection. */
export type Db = SqliteDb;

/** Schema version this code writes (`PRAGMA user_version`). */
export const SCHEMA_VERSION = 2;

/** FTS column weights for `bm25(items_fts, content, speaker)`. */
export const BM25_WEIGHTS = { content: 1.0, speaker: 0.25 } as const;

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
