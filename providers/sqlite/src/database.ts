import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import type BetterSqlite3 from "better-sqlite3";
import { HermesMemoryError, describeError } from "@hermes/memory-core";

/** A better-sqlite3 connection. */
export type Db = BetterSqlite3.Database;

/** Schema version this code writes (`PRAGMA user_version`). */
export const SCHEMA_VERSION = 2;

/** FTS column weights for `bm25(items_fts, content, speaker)`. */
export const BM25_WEIGHTS = { content: 1.0, speaker: 0.25 } as const;

const require = createRequire(import.meta.url);
let driver: typeof BetterSqlite3 | undefined;
let driverError: unknown;

/**
 * Load better-sqlite3 once, lazily, so that `isAvailable()` can report a missing or broken native
 * addon instead of the whole module failing to import. Returns `undefined` when it cannot load.
 */
export function loadDriver(): typeof BetterSqlite3 | undefined {
  if (driver || driverError) return driver;
  try {
    driver = require("better-sqlite3") as typeof BetterSqlite3;
  } catch (error) {
    driverError = error;
  }
  return driver;
}

/** Why the driver failed to load, or `undefined` when it loaded (or was never tried). */
export function driverLoadError(): unknown {
  return driverError;
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

/**
 * Open (creating when needed) the database at `file`, check and migrate its schema, and set WAL,
 * `synchronous=NORMAL` and a busy timeout. A database whose schema is newer than this code is left
 * untouched and rejected with `SCHEMA_TOO_NEW`. Other failures throw `STORAGE_FAILED`.
 */
export function openDatabase(file: string, options: OpenDatabaseOptions = {}): Db {
  const Driver = loadDriver();
  if (!Driver) {
    throw new HermesMemoryError({
      code: "PROVIDER_UNAVAILABLE",
      message: `better-sqlite3 could not be loaded (${describeError(driverLoadError())}). Reinstall @hermes/memory-sqlite so its native addon is built (pnpm needs "onlyBuiltDependencies: [better-sqlite3]").`,
      cause: driverLoadError(),
    });
  }
  const readonly = options.readonly === true;
  let db: Db;
  try {
    if (!readonly) fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    db = new Driver(file, { readonly, fileMustExist: readonly });
    if (readonly) db.pragma("user_version", { simple: true });
  } catch (error) {
    // A WAL database on a read-only mount cannot be opened without its `-shm` file (files this
    // version closed are in rollback-journal mode; older ones are read from a private copy).
    if (readonly && (error as { code?: string }).code === "SQLITE_CANTOPEN" && fs.existsSync(file)) return openReadOnlyCopy(file, options);
    throw storageError(`cannot open the SQLite memory database at ${file}`, error, "check that the directory exists and is writable, or set memory.sqlite.path");
  }
  return prepare(db, file, readonly, options);
}

function openReadOnlyCopy(file: string, options: OpenDatabaseOptions): Db {
  const Driver = loadDriver()!;
  let db: Db;
  try {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-sqlite-ro-"));
    const copy = path.join(dir, path.basename(file));
    fs.copyFileSync(file, copy);
    if (fs.existsSync(`${file}-wal`)) fs.copyFileSync(`${file}-wal`, `${copy}-wal`);
    process.once("exit", () => fs.rmSync(dir, { recursive: true, force: true }));
    db = new Driver(copy, { readonly: true, fileMustExist: true });
  } catch (error) {
    throw storageError(`cannot open the SQLite memory database at ${file} read-only`, error, "check that it exists and is readable");
  }
  return prepare(db, file, true, options);
}

function prepare(db: Db, file: string, readonly: boolean, options: OpenDatabaseOptions): Db {
  try {
    db.pragma(`busy_timeout = ${Math.max(5000, options.busyTimeoutMs ?? 5000)}`);
    // Read the version before anything else writes to the file: a newer schema stays untouched.
    const version = Number(db.pragma("user_version", { simple: true }));
    if (version > SCHEMA_VERSION) {
      throw new HermesMemoryError({
        code: "SCHEMA_TOO_NEW",
        message: `The SQLite memory database at ${file} has schema version ${version}, but this @hermes/memory-sqlite only knows up to ${SCHEMA_VERSION}. Upgrade @hermes/memory-sqlite; the database was not modified.`,
      });
    }
    if (!readonly) {
      db.pragma("journal_mode = WAL");
      db.pragma("synchronous = NORMAL");
      if (version < SCHEMA_VERSION) migrate(db);
    } else if (version < SCHEMA_VERSION) {
      throw storageError(`the SQLite memory database at ${file} has not been initialised`, undefined, "open it once with write access");
    }
    return db;
  } catch (error) {
    db.close();
    if (HermesMemoryError.isInstance(error)) throw error;
    throw storageError(`cannot prepare the SQLite memory database at ${file}`, error, "run `hermes-memory sqlite doctor`, or move the file away to start fresh");
  }
}

function migrate(db: Db): void {
  // IMMEDIATE: several processes opening a fresh profile at once must not both create the schema.
  const run = db.transaction(() => {
    const current = Number(db.pragma("user_version", { simple: true }));
    if (current >= SCHEMA_VERSION) return;
    if (current < 1) db.exec(SCHEMA_V1);
    // v2: early v1 databases indexed inserts through a trigger; the store now does it directly.
    if (current < 2) db.exec("DROP TRIGGER IF EXISTS items_ai");
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
  });
  run.immediate();
}

/**
 * A `STORAGE_FAILED` error with the cause's text and a remedy. A full disk and a read-only
 * database get their own remedy, whatever `fix` says.
 */
export function storageError(what: string, cause: unknown, fix: string): HermesMemoryError {
  const detail = cause === undefined ? "" : ` (${describeError(cause)})`;
  const code = String((cause as { code?: unknown } | null)?.code ?? "");
  if (code === "SQLITE_FULL" || code === "ENOSPC") {
    fix = "the disk is full: free space on it, then flush() again (queued items are kept until they are written)";
  } else if (code.startsWith("SQLITE_READONLY") || code === "EROFS") {
    fix = "the database or its directory is read-only: make $HERMES_HOME writable (search keeps working meanwhile)";
  }
  return new HermesMemoryError({ code: "STORAGE_FAILED", message: `${what}${detail}: ${fix}.`, cause });
}

/**
 * Close a writable connection, first switching the file back to rollback-journal mode when no
 * other connection has it open: a WAL database cannot be opened from a read-only mount without
 * its `-shm` file, a rollback-journal one can. The next writable open switches to WAL again.
 */
export function closeDatabase(db: Db): void {
  if (!db.open) return;
  if (!db.readonly && db.name !== ":memory:") {
    try {
      db.pragma("busy_timeout = 0");
      db.pragma("journal_mode = DELETE");
    } catch {
      // Another connection is open; the last one to close switches it.
    }
  }
  db.close();
}

/** True for SQLite "database is busy/locked" errors, which a later retry can clear. */
export function isBusyError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED"));
}
