import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { HermesMemoryError } from "@hermes/memory-core";
import { holdWriteLock, stopWriteLockHolders } from "@hermes/test-support";
import {
  closeSqliteStore,
  createSqliteDriverLoader,
  DEFAULT_SQLITE_LOCK_WAIT_MS,
  isBusyError,
  withBusyTimeout,
  isUnwritableError,
  openSqliteStore,
  openSqliteStoreAsync,
  storageError,
  type SqliteStoreSpec,
} from "./sqlite-store.js";

const loader = createSqliteDriverLoader(import.meta.url);
const dirs: string[] = [];
const tmp = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kit-store-"));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  stopWriteLockHolders();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

const spec = (version = 2, migrated: number[] = []): SqliteStoreSpec => ({
  driver: loader.load(),
  label: "test store",
  packageName: "@acme/test",
  schemaVersion: version,
  migrate(db, from) {
    migrated.push(from);
    if (from < 1) db.exec("CREATE TABLE t (x TEXT)");
  },
});

describe("openSqliteStore", () => {
  it("creates, migrates once, and sets WAL and the busy timeout", () => {
    const file = path.join(tmp(), "a", "s.db");
    const migrated: number[] = [];
    const db = openSqliteStore(file, spec(2, migrated));
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(db.pragma("user_version", { simple: true })).toBe(2);
    expect(Number(db.pragma("busy_timeout", { simple: true }))).toBeGreaterThanOrEqual(5000);
    closeSqliteStore(db);
    closeSqliteStore(openSqliteStore(file, spec(2, migrated)));
    expect(migrated).toEqual([0]);
  });

  it("a migration that fails is STORAGE_FAILED and leaves the file as it was: same rows, same journal mode, no -wal/-shm", () => {
    const dir = tmp();
    const file = path.join(dir, "s.db");
    const first = openSqliteStore(file, spec(1));
    first.exec("INSERT INTO t VALUES ('kept')");
    closeSqliteStore(first);
    const before = fs.readFileSync(file);
    const failing: SqliteStoreSpec = {
      ...spec(2),
      migrate(db) {
        db.exec("CREATE TABLE half (x TEXT)");
        throw new Error("step 2 failed");
      },
    };
    expect(() => openSqliteStore(file, failing)).toThrow(
      expect.objectContaining({ code: "STORAGE_FAILED", message: expect.stringMatching(/step 2 failed/) }),
    );
    expect(fs.readdirSync(dir)).toEqual(["s.db"]);
    // Only the header's change counters may differ: the schema, the rows and the journal mode are as before.
    const Driver = loader.load()!;
    const read = (bytes: Buffer) => {
      const copy = path.join(tmp(), "copy.db");
      fs.writeFileSync(copy, bytes);
      const db = new Driver(copy, { readonly: true });
      try {
        return {
          schema: db.prepare("SELECT sql FROM sqlite_master ORDER BY name").pluck().all(),
          rows: db.prepare("SELECT x FROM t").pluck().all(),
          version: db.pragma("user_version", { simple: true }),
          journal: db.pragma("journal_mode", { simple: true }),
        };
      } finally {
        db.close();
      }
    };
    expect(read(fs.readFileSync(file))).toEqual(read(before));
    expect(read(before)).toMatchObject({ rows: ["kept"], journal: "delete" });
  });

  it("rejects a newer schema with SCHEMA_TOO_NEW and leaves the file untouched", () => {
    const file = path.join(tmp(), "s.db");
    closeSqliteStore(openSqliteStore(file, spec(5)));
    const before = fs.readFileSync(file);
    const error = (() => {
      try {
        openSqliteStore(file, spec(2));
      } catch (e) {
        return e;
      }
    })();
    expect(HermesMemoryError.hasCode(error, "SCHEMA_TOO_NEW")).toBe(true);
    expect(String((error as Error).message)).toMatch(/Upgrade @acme\/test/);
    expect(fs.readFileSync(file)).toEqual(before);
  });

  it("opens read-only without creating anything, and refuses an uninitialised file", () => {
    const dir = tmp();
    expect(() => openSqliteStore(path.join(dir, "missing.db"), spec(), { readonly: true })).toThrow(/read-only/);
    expect(fs.existsSync(path.join(dir, "missing.db"))).toBe(false);
    const file = path.join(dir, "s.db");
    closeSqliteStore(openSqliteStore(file, spec()));
    const ro = openSqliteStore(file, spec(), { readonly: true });
    expect(ro.readonly).toBe(true);
    closeSqliteStore(ro);
    const empty = path.join(dir, "empty.db");
    const raw = new (loader.load()!)(empty);
    raw.close();
    expect(() => openSqliteStore(empty, spec(), { readonly: true })).toThrow(/has not been initialised/);
  });

  it("a file another process is writing is waited for, then opened writable and migrated", async () => {
    const dir = tmp();
    const file = path.join(dir, "s.db");
    closeSqliteStore(openSqliteStore(file, spec(1)));
    // Cleanly closed: rollback-journal mode, where switching to WAL needs the other writer gone.
    const holder = await holdWriteLock(file, 1000);
    const migrated: number[] = [];
    const db = openSqliteStore(file, spec(2, migrated));
    expect(db.readonly).toBe(false);
    expect(migrated).toEqual([1]);
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
    db.exec("INSERT INTO t VALUES ('written after the wait')");
    expect(db.prepare("SELECT x FROM t").pluck().all()).toEqual(["written after the wait"]);
    // The open's wait does not linger: the busy timeout is the connection's usual one.
    expect(Number(db.pragma("busy_timeout", { simple: true }))).toBe(5000);
    closeSqliteStore(db);
    await holder.release();
  });

  it("a lock held past lockWaitMs is STORAGE_FAILED naming the other process, and the file is left as it was", async () => {
    const dir = tmp();
    const file = path.join(dir, "s.db");
    const first = openSqliteStore(file, spec(1));
    first.exec("INSERT INTO t VALUES ('kept')");
    closeSqliteStore(first);
    const holder = await holdWriteLock(file, 60_000);
    try {
      for (const version of [1, 2]) {
        const error = (() => {
          try {
            openSqliteStore(file, spec(version), { lockWaitMs: 200 });
          } catch (e) {
            return e;
          }
        })();
        expect(HermesMemoryError.hasCode(error, "STORAGE_FAILED")).toBe(true);
        expect(String((error as Error).message)).toMatch(
          /another process has held its lock for more than 0\.2 s.*retry once it has finished/,
        );
        expect(isUnwritableError(error)).toBe(false);
      }
    } finally {
      await holder.release();
    }
    expect(fs.readdirSync(dir)).toEqual(["s.db"]);
    const db = openSqliteStore(file, spec(1), { readonly: true });
    expect(db.pragma("journal_mode", { simple: true })).toBe("delete");
    expect(db.prepare("SELECT x FROM t").pluck().all()).toEqual(["kept"]);
    closeSqliteStore(db);
  });

  /**
   * The longest gap between the ticks of a 5 ms interval while `work` runs: how long the event loop
   * was held up.
   */
  async function longestStall<T>(work: () => Promise<T>): Promise<{ result: T; stallMs: number }> {
    let last = performance.now();
    let stallMs = 0;
    const ticker = setInterval(() => {
      const now = performance.now();
      stallMs = Math.max(stallMs, now - last);
      last = now;
    }, 5);
    try {
      const result = await work();
      stallMs = Math.max(stallMs, performance.now() - last);
      return { result, stallMs };
    } finally {
      clearInterval(ticker);
    }
  }

  it("openSqliteStoreAsync waits for another process's lock on timers: the event loop keeps running, then it opens writable and migrates", async () => {
    for (const mode of ["delete", "wal"] as const) {
      const dir = tmp();
      const file = path.join(dir, "s.db");
      closeSqliteStore(openSqliteStore(file, spec(1)));
      if (mode === "wal") {
        // A file left in WAL mode (another agent has it open): the migration's write lock is
        // waited for in SQLite's busy handler rather than by retrying the switch to WAL.
        const raw = new (loader.load()!)(file);
        raw.pragma("journal_mode = WAL");
        raw.close();
      }
      const holder = await holdWriteLock(file, 1500);
      const migrated: number[] = [];
      const started = performance.now();
      const { result: db, stallMs } = await longestStall(() => openSqliteStoreAsync(file, spec(2, migrated)));
      // It did wait for the holder (which let go after 1.5 s), without holding up the loop.
      expect(performance.now() - started).toBeGreaterThan(1000);
      expect(stallMs).toBeLessThan(400);
      expect(db.readonly).toBe(false);
      expect(migrated).toEqual([1]);
      expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
      expect(Number(db.pragma("busy_timeout", { simple: true }))).toBe(5000);
      closeSqliteStore(db);
      await holder.release();
    }
  });

  it("openSqliteStoreAsync rejects a lock held past lockWaitMs with STORAGE_FAILED and leaves the file as it was; a newer schema is SCHEMA_TOO_NEW", async () => {
    const dir = tmp();
    const file = path.join(dir, "s.db");
    const first = openSqliteStore(file, spec(1));
    first.exec("INSERT INTO t VALUES ('kept')");
    closeSqliteStore(first);
    const holder = await holdWriteLock(file, 60_000);
    try {
      const { result: error, stallMs } = await longestStall(() =>
        openSqliteStoreAsync(file, spec(2), { lockWaitMs: 600 }).then(
          () => undefined,
          (e: unknown) => e,
        ),
      );
      expect(HermesMemoryError.hasCode(error, "STORAGE_FAILED")).toBe(true);
      expect(String((error as Error).message)).toMatch(
        /another process has held its lock for more than 0\.6 s.*retry once it has finished/,
      );
      expect(stallMs).toBeLessThan(300);
    } finally {
      await holder.release();
    }
    expect(fs.readdirSync(dir)).toEqual(["s.db"]);
    await expect(openSqliteStoreAsync(file, spec(0))).rejects.toMatchObject({ code: "SCHEMA_TOO_NEW" });
    await expect(openSqliteStoreAsync(file, { ...spec(), driver: undefined })).rejects.toMatchObject({ code: "PROVIDER_UNAVAILABLE" });
    const db = await openSqliteStoreAsync(file, spec(1), { readonly: true });
    expect(db.prepare("SELECT x FROM t").pluck().all()).toEqual(["kept"]);
    closeSqliteStore(db);
  });

  it("the default wait is $HERMES_SQLITE_LOCK_WAIT_MS, else DEFAULT_SQLITE_LOCK_WAIT_MS; a bad value is INVALID_CONFIG", async () => {
    expect(DEFAULT_SQLITE_LOCK_WAIT_MS).toBe(10_000);
    const file = path.join(tmp(), "s.db");
    closeSqliteStore(openSqliteStore(file, spec()));
    const saved = process.env.HERMES_SQLITE_LOCK_WAIT_MS;
    try {
      process.env.HERMES_SQLITE_LOCK_WAIT_MS = "soon";
      expect(() => openSqliteStore(file, spec())).toThrow(
        expect.objectContaining({ code: "INVALID_CONFIG", message: expect.stringMatching(/HERMES_SQLITE_LOCK_WAIT_MS="soon"/) }),
      );
      expect(() => openSqliteStore(file, spec(), { lockWaitMs: -1 })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
      process.env.HERMES_SQLITE_LOCK_WAIT_MS = "100";
      const holder = await holdWriteLock(file, 60_000);
      try {
        expect(() => openSqliteStore(file, spec())).toThrow(/more than 0\.1 s/);
      } finally {
        await holder.release();
      }
    } finally {
      if (saved === undefined) delete process.env.HERMES_SQLITE_LOCK_WAIT_MS;
      else process.env.HERMES_SQLITE_LOCK_WAIT_MS = saved;
    }
  });

  it("without a driver throws PROVIDER_UNAVAILABLE with the spec's remedy", () => {
    expect(() => openSqliteStore(":memory:", { ...spec(), driver: undefined, unavailable: "install it" })).toThrow(/install it/);
  });
});

describe("errors", () => {
  it("storageError picks the remedy for a full disk and a read-only file", () => {
    expect(storageError("x", { code: "SQLITE_FULL" }, "fix").message).toMatch(/disk is full/);
    expect(storageError("x", { code: "SQLITE_READONLY_DBMOVED" }, "fix").message).toMatch(/read-only/);
    expect(storageError("x", undefined, "fix it").message).toBe("x: fix it.");
    expect(storageError("x", undefined, "f").code).toBe("STORAGE_FAILED");
  });

  it("isUnwritableError recognises permission and read-only failures, also wrapped, and nothing else", () => {
    for (const code of ["EACCES", "EPERM", "EROFS", "SQLITE_READONLY", "SQLITE_READONLY_DIRECTORY", "SQLITE_CANTOPEN", "SQLITE_PERM"]) {
      expect(isUnwritableError({ code }), code).toBe(true);
      expect(isUnwritableError(storageError("x", { code }, "f")), code).toBe(true);
    }
    for (const code of [
      "SQLITE_BUSY",
      "SQLITE_BUSY_SNAPSHOT",
      "SQLITE_LOCKED",
      "SQLITE_CORRUPT",
      "SQLITE_NOTADB",
      "SQLITE_FULL",
      "ENOSPC",
    ]) {
      expect(isUnwritableError({ code }), code).toBe(false);
      expect(isUnwritableError(storageError("x", { code }, "f")), code).toBe(false);
    }
    expect(isUnwritableError(null)).toBe(false);
    expect(isUnwritableError(new HermesMemoryError({ code: "SCHEMA_TOO_NEW", message: "newer" }))).toBe(false);
  });

  it("isBusyError recognises busy and locked codes", () => {
    expect(isBusyError({ code: "SQLITE_BUSY" })).toBe(true);
    expect(isBusyError({ code: "SQLITE_LOCKED_SHAREDCACHE" })).toBe(true);
    expect(isBusyError({ code: "SQLITE_FULL" })).toBe(false);
    expect(isBusyError(null)).toBe(false);
  });

  it("withBusyTimeout runs work at the given busy timeout and puts the usual one back, also when work throws", () => {
    const Driver = loader.load()!;
    const db = new Driver(path.join(tmp(), "t.db"));
    try {
      db.pragma("busy_timeout = 4321");
      expect(withBusyTimeout(db, 0, () => db.pragma("busy_timeout", { simple: true }))).toBe(0);
      expect(db.pragma("busy_timeout", { simple: true })).toBe(4321);
      expect(() =>
        withBusyTimeout(db, 25.7, () => {
          expect(db.pragma("busy_timeout", { simple: true })).toBe(25);
          throw new Error("boom");
        }),
      ).toThrow("boom");
      expect(db.pragma("busy_timeout", { simple: true })).toBe(4321);
      // A connection the work closed is left closed.
      expect(() => withBusyTimeout(db, 0, () => db.close())).not.toThrow();
    } finally {
      if (db.open) db.close();
    }
  });
});
