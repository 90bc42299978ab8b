/**
 * Opening a provider's SQLite file the same way everywhere: WAL with `synchronous=NORMAL`, a busy
 * timeout, the schema version in `PRAGMA user_version` (a file written by a newer version is
 * rejected with `SCHEMA_TOO_NEW` and left untouched; an older one is migrated inside one IMMEDIATE
 * transaction so concurrent openers never both migrate), and a read-only open for read-only homes.
 * A file another process is writing is waited for, never opened read-only instead: read-only is
 * only for a file or directory this process cannot write (`isUnwritableError`).
 * The better-sqlite3 driver is passed in by the provider, which owns that dependency.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type BetterSqlite3 from "better-sqlite3";
import { HermesMemoryError, describeError } from "@hermes/memory-core";
import { NATIVE_MODULE_MISSING, createNativeModuleLoader, isNativeAddonFailure, nativeModuleMissing } from "./native-module.js";

/** A better-sqlite3 connection. */
export type SqliteDb = BetterSqlite3.Database;

/** The better-sqlite3 constructor (the module's default export). */
export type SqliteDriver = typeof BetterSqlite3;

/** Loads better-sqlite3 on first use and remembers the outcome. */
export interface SqliteDriverLoader {
  /** The driver, or `undefined` when it cannot load (a missing or broken native addon). */
  load(): SqliteDriver | undefined;
  /** Why the driver failed to load, or `undefined` when it loaded (or was never tried). */
  error(): unknown;
}

/**
 * A lazy better-sqlite3 loader resolving the driver from `from` (pass the provider's
 * `import.meta.url`, so the provider's own dependency is used). Loading is deferred to the first
 * `load()`, so `isAvailable()` can report a broken addon instead of the module failing to import.
 * better-sqlite3 reaches its native addon only when a first database opens, so `load()` opens
 * and closes one in memory: an addon that was never built (install scripts not run) is found
 * here, as `NATIVE_MODULE_MISSING` naming `packageName` and the fix.
 */
export function createSqliteDriverLoader(from: string | URL, packageName = "this provider"): SqliteDriverLoader {
  const loader = createNativeModuleLoader<SqliteDriver>(from, "better-sqlite3", packageName, (Driver) => new Driver(":memory:").close());
  return { load: loader.load, error: loader.error };
}

/** What a store is and how its schema evolves. */
export interface SqliteStoreSpec {
  /** The better-sqlite3 driver; `undefined` when it failed to load (`unavailable` explains why). */
  driver: SqliteDriver | undefined;
  /** Why the driver is missing and how to fix it (used when `driver` is `undefined`). */
  unavailable?: string;
  /** The driver loader's error (`SqliteDriverLoader.error()`): a `NATIVE_MODULE_MISSING` one is thrown as it is. */
  driverError?: unknown;
  /** What the file is, for messages: e.g. `SQLite memory database`, `vector sidecar`. */
  label: string;
  /** Package whose upgrade reads a newer schema, for the `SCHEMA_TOO_NEW` remedy. */
  packageName: string;
  /** Schema version this code writes. */
  schemaVersion: number;
  /** Oldest schema a read-only open accepts as is (default: `schemaVersion`). */
  minReadableVersion?: number;
  /** Bring a database at `fromVersion` (0 = empty) up to `schemaVersion`; runs in a transaction. */
  migrate(db: SqliteDb, fromVersion: number): void;
}

/** Options for `openSqliteStore`. */
export interface OpenSqliteStoreOptions {
  /** Open without write access: nothing is created or migrated. */
  readonly?: boolean;
  /** `busy_timeout` in ms; at least 5000. */
  busyTimeoutMs?: number;
  /** Remedy of the `STORAGE_FAILED` error when the file cannot be opened for writing. */
  openFix?: string;
  /**
   * How long a writable open waits, in all, for another connection's lock on the file (switching
   * to WAL and migrating need the write lock) before failing with `STORAGE_FAILED`, in ms.
   * Default: `$HERMES_SQLITE_LOCK_WAIT_MS`, else `DEFAULT_SQLITE_LOCK_WAIT_MS`.
   */
  lockWaitMs?: number;
}

/**
 * How long a writable open waits for another process's lock by default (ms). Another agent's write
 * batch or an import chunk holds the lock for milliseconds to a few seconds; 10 s covers those and
 * leaves a third of a memory manager's default 15 s bound on `initialize()` for the rest of it.
 */
export const DEFAULT_SQLITE_LOCK_WAIT_MS = 10_000;

/** Pause between attempts to take a lock that does not invoke SQLite's busy handler (ms). */
const LOCK_RETRY_MS = 20;

function lockWaitMs(options: OpenSqliteStoreOptions): number {
  if (options.lockWaitMs !== undefined) {
    if (!Number.isFinite(options.lockWaitMs) || options.lockWaitMs < 0) {
      throw new HermesMemoryError({
        code: "INVALID_ARGUMENT",
        message: `lockWaitMs must be a non-negative number of milliseconds; got ${String(options.lockWaitMs)}.`,
      });
    }
    return options.lockWaitMs;
  }
  const env = process.env.HERMES_SQLITE_LOCK_WAIT_MS;
  if (env === undefined || env.trim() === "") return DEFAULT_SQLITE_LOCK_WAIT_MS;
  const ms = Number(env);
  if (!Number.isFinite(ms) || ms < 0) {
    throw new HermesMemoryError({
      code: "INVALID_CONFIG",
      message: `HERMES_SQLITE_LOCK_WAIT_MS=${JSON.stringify(env)} is not a number of milliseconds: set it to a non-negative number (default ${DEFAULT_SQLITE_LOCK_WAIT_MS}) or unset it.`,
    });
  }
  return ms;
}

/**
 * The wait for another process's lock an open gets by default (ms): `$HERMES_SQLITE_LOCK_WAIT_MS`,
 * else `DEFAULT_SQLITE_LOCK_WAIT_MS`. A provider opening several files at start-up shares it among
 * them (passing each the `lockWaitMs` left), so its start stays inside one bound. Throws
 * `INVALID_CONFIG` for a variable that is not a number of milliseconds.
 */
export function sqliteLockWaitMs(): number {
  return lockWaitMs({});
}

/** Block this thread for `ms` (the synchronous open waits like every better-sqlite3 call). */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * How long one attempt of an asynchronous open may block the thread in SQLite's busy handler (ms)
 * before it gives the event loop back and tries again.
 */
const ASYNC_LOCK_ATTEMPT_MS = 25;

/**
 * The steps of an open. It yields each pause (ms) it needs while another connection holds the lock,
 * and returns the prepared connection. `attemptMs` bounds how long one attempt may sit in SQLite's
 * busy handler (`Infinity`: the whole wait, as the synchronous open does).
 */
type OpenSteps = Generator<number, SqliteDb, void>;

/** Run an open's steps on this thread, sleeping through every pause. */
function runBlocking(steps: OpenSteps): SqliteDb {
  for (let next = steps.next(); ; next = steps.next()) {
    if (next.done) return next.value;
    sleepSync(next.value);
  }
}

/** Run an open's steps, giving the event loop back during every pause. */
async function runYielding(steps: OpenSteps): Promise<SqliteDb> {
  for (let next = steps.next(); ; next = steps.next()) {
    if (next.done) return next.value;
    const ms = next.value;
    await new Promise<void>((resolve) => setTimeout(resolve, ms));
  }
}

/**
 * Open (creating when needed) the store at `file` (`":memory:"` for a private in-memory one),
 * check and migrate its schema, set WAL and the busy timeout. Throws `PROVIDER_UNAVAILABLE` without
 * a driver, `SCHEMA_TOO_NEW` for a newer schema (file untouched) and `STORAGE_FAILED` otherwise.
 * While another process holds the file's lock this thread waits (up to `lockWaitMs`); a provider's
 * `initialize` uses `openSqliteStoreAsync`, which leaves the event loop free meanwhile.
 */
export function openSqliteStore(file: string, spec: SqliteStoreSpec, options: OpenSqliteStoreOptions = {}): SqliteDb {
  return runBlocking(openSteps(file, spec, options, Infinity));
}

/**
 * `openSqliteStore`, waiting for another process's lock without holding up the event loop: each
 * attempt blocks the thread for at most a few tens of milliseconds, and the pauses between attempts
 * are timers. The schema migration itself still runs in one synchronous transaction.
 */
export function openSqliteStoreAsync(file: string, spec: SqliteStoreSpec, options: OpenSqliteStoreOptions = {}): Promise<SqliteDb> {
  return runYielding(openSteps(file, spec, options, ASYNC_LOCK_ATTEMPT_MS));
}

function* openSteps(file: string, spec: SqliteStoreSpec, options: OpenSqliteStoreOptions, attemptMs: number): OpenSteps {
  const Driver = spec.driver;
  if (!Driver) {
    if (HermesMemoryError.hasCode(spec.driverError, NATIVE_MODULE_MISSING)) throw spec.driverError;
    throw new HermesMemoryError({
      code: "PROVIDER_UNAVAILABLE",
      message: spec.unavailable ?? `better-sqlite3 could not be loaded. Reinstall ${spec.packageName} so its native addon is built.`,
    });
  }
  const readonly = options.readonly === true;
  const waitMs = lockWaitMs(options);
  let db: SqliteDb;
  try {
    if (!readonly && file !== ":memory:") fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    db = new Driver(file, { readonly, fileMustExist: readonly });
    if (readonly) db.pragma("user_version", { simple: true });
  } catch (error) {
    // A driver passed in unprobed (imported directly) meets a missing addon at its first open.
    if (isNativeAddonFailure(error)) throw nativeModuleMissing("better-sqlite3", spec.packageName, error);
    // A WAL database on a read-only mount cannot be opened without its `-shm` file (files closed
    // by `closeSqliteStore` are in rollback-journal mode; older ones are read from a private copy).
    if (readonly && (error as { code?: string }).code === "SQLITE_CANTOPEN" && fs.existsSync(file))
      return yield* prepareStore(openReadOnlyCopy(file, spec), file, true, spec, options, waitMs, attemptMs);
    throw storageError(
      `cannot open the ${spec.label} at ${file}${readonly ? " read-only" : ""}`,
      error,
      readonly
        ? "check that it exists and is readable"
        : (options.openFix ?? "check that the directory exists and is writable, and that there is free space"),
    );
  }
  return yield* prepareStore(db, file, readonly, spec, options, waitMs, attemptMs);
}

/** A read-only connection to a private copy of `file` (and its WAL), removed when the process exits. */
function openReadOnlyCopy(file: string, spec: SqliteStoreSpec): SqliteDb {
  const Driver = spec.driver!;
  try {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-sqlite-ro-"));
    const copy = path.join(dir, path.basename(file));
    fs.copyFileSync(file, copy);
    if (fs.existsSync(`${file}-wal`)) fs.copyFileSync(`${file}-wal`, `${copy}-wal`);
    process.once("exit", () => fs.rmSync(dir, { recursive: true, force: true }));
    return new Driver(copy, { readonly: true, fileMustExist: true });
  } catch (error) {
    throw storageError(`cannot open the ${spec.label} at ${file} read-only`, error, "check that it exists and is readable");
  }
}

function* prepareStore(
  db: SqliteDb,
  file: string,
  readonly: boolean,
  spec: SqliteStoreSpec,
  options: OpenSqliteStoreOptions,
  waitMs: number,
  attemptMs: number,
): OpenSteps {
  const deadline = Date.now() + waitMs;
  /**
   * Run one step of the open, waiting while another connection holds the lock it needs, until the
   * open's deadline. SQLite's busy handler (bounded by the time left and by `attemptMs`) covers most
   * steps; a step that needs to upgrade a lock while another connection holds the write lock
   * (switching to WAL) fails at once instead. Either way the step is tried again after a pause.
   */
  function* whenUnlocked<T>(step: () => T): Generator<number, T, void> {
    for (;;) {
      db.pragma(`busy_timeout = ${Math.max(0, Math.ceil(Math.min(attemptMs, deadline - Date.now())))}`);
      try {
        return step();
      } catch (error) {
        if (!isBusyError(error)) throw error;
        const left = deadline - Date.now();
        if (left <= 0) {
          throw storageError(
            `cannot open the ${spec.label} at ${file}${readonly ? " read-only" : " for writing"}: another process has held its lock for more than ${Number((waitMs / 1000).toFixed(3))} s`,
            error,
            "another agent or an import using the same $HERMES_HOME is writing to it; retry once it has finished (nothing in the file was changed)",
          );
        }
        yield Math.min(LOCK_RETRY_MS, left);
      }
    }
  }
  try {
    // Read the version before anything else writes to the file: a newer schema stays untouched.
    const version = yield* whenUnlocked(() => Number(db.pragma("user_version", { simple: true })));
    if (version > spec.schemaVersion) {
      throw new HermesMemoryError({
        code: "SCHEMA_TOO_NEW",
        message: `The ${spec.label} at ${file} has schema version ${version}, but this ${spec.packageName} only knows up to ${spec.schemaVersion}. Upgrade ${spec.packageName}; the database was not modified.`,
      });
    }
    if (!readonly) {
      const journal = yield* whenUnlocked(() => String(db.pragma("journal_mode", { simple: true })));
      yield* whenUnlocked(() => db.pragma("journal_mode = WAL"));
      db.pragma("synchronous = NORMAL");
      try {
        if (version < spec.schemaVersion) yield* whenUnlocked(() => migrateStore(db, spec));
      } catch (error) {
        // The migration rolled back; the file goes back to the journal mode it had (no -wal/-shm
        // left), so a file that cannot be migrated is left as it was found.
        if (journal !== "wal") {
          try {
            db.pragma(`journal_mode = ${journal === "memory" || journal === "off" ? "DELETE" : journal}`);
          } catch {
            // Another connection has it open; its close switches it back.
          }
        }
        throw error;
      }
    } else if (version < 1) {
      throw storageError(`the ${spec.label} at ${file} has not been initialised`, undefined, "open it once with write access");
    } else if (version < (spec.minReadableVersion ?? spec.schemaVersion)) {
      throw storageError(
        `the ${spec.label} at ${file} has schema version ${version}, older than this ${spec.packageName} reads read-only (${spec.minReadableVersion ?? spec.schemaVersion})`,
        undefined,
        "open it once with write access to migrate it in place (every item is kept); it was not modified",
      );
    }
    db.pragma(`busy_timeout = ${Math.max(5000, options.busyTimeoutMs ?? 5000)}`);
    return db;
  } catch (error) {
    db.close();
    if (HermesMemoryError.isInstance(error)) throw error;
    throw storageError(
      `cannot prepare the ${spec.label} at ${file}`,
      error,
      "check the file; if it is corrupt, restore it from a backup or move it away to start fresh",
    );
  }
}

function migrateStore(db: SqliteDb, spec: SqliteStoreSpec): void {
  // IMMEDIATE: several processes opening a fresh profile at once must not both migrate.
  const run = db.transaction(() => {
    const current = Number(db.pragma("user_version", { simple: true }));
    if (current >= spec.schemaVersion) return;
    spec.migrate(db, current);
    db.pragma(`user_version = ${spec.schemaVersion}`);
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
 * Close a connection, first switching a writable file back to rollback-journal mode when no other
 * connection has it open: a WAL database cannot be opened from a read-only mount without its
 * `-shm` file, a rollback-journal one can. The next writable open switches to WAL again.
 */
export function closeSqliteStore(db: SqliteDb): void {
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

/**
 * True when `error` (or an error it wraps, through `cause`) says this process cannot write the
 * file or its directory: permissions, a read-only mount, a read-only database. Only these make a
 * provider fall back to a read-only open; a busy or locked file is not one of them.
 */
export function isUnwritableError(error: unknown): boolean {
  for (let e = error, depth = 0; e !== null && typeof e === "object" && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code !== "string") continue;
    if (
      code === "EACCES" ||
      code === "EPERM" ||
      code === "EROFS" ||
      code === "SQLITE_PERM" ||
      code.startsWith("SQLITE_READONLY") ||
      code.startsWith("SQLITE_CANTOPEN")
    )
      return true;
  }
  return false;
}

/**
 * Run `work` with the connection's busy timeout (how long a statement waits on the thread for
 * another connection's lock before failing as busy) at `ms`, then put the one it had back (also when
 * `work` throws; not on a connection `work` closed).
 */
export function withBusyTimeout<T>(db: SqliteDb, ms: number, work: () => T): T {
  const usual = Number(db.pragma("busy_timeout", { simple: true }));
  db.pragma(`busy_timeout = ${Math.max(0, Math.floor(ms))}`);
  try {
    return work();
  } finally {
    if (db.open) db.pragma(`busy_timeout = ${usual}`);
  }
}

/** True for SQLite "database is busy/locked" errors, which a later retry can clear. */
export function isBusyError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED"));
}
