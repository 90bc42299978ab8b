import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { HermesMemoryError } from "@hermes/memory-core";
import { closeSqliteStore, createSqliteDriverLoader, isBusyError, openSqliteStore, storageError, type SqliteStoreSpec } from "./sqlite-store.js";

const loader = createSqliteDriverLoader(import.meta.url);
const dirs: string[] = [];
const tmp = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kit-store-"));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
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
    expect(() => openSqliteStore(file, failing)).toThrow(expect.objectContaining({ code: "STORAGE_FAILED", message: expect.stringMatching(/step 2 failed/) }));
    expect(fs.readdirSync(dir)).toEqual(["s.db"]);
    // Only the header's change counters may differ: the schema, the rows and the journal mode are as before.
    const Driver = loader.load()!;
    const read = (bytes: Buffer) => {
      const copy = path.join(tmp(), "copy.db");
      fs.writeFileSync(copy, bytes);
      const db = new Driver(copy, { readonly: true });
      try {
        return { schema: db.prepare("SELECT sql FROM sqlite_master ORDER BY name").pluck().all(), rows: db.prepare("SELECT x FROM t").pluck().all(), version: db.pragma("user_version", { simple: true }), journal: db.pragma("journal_mode", { simple: true }) };
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

  it("isBusyError recognises busy and locked codes", () => {
    expect(isBusyError({ code: "SQLITE_BUSY" })).toBe(true);
    expect(isBusyError({ code: "SQLITE_LOCKED_SHAREDCACHE" })).toBe(true);
    expect(isBusyError({ code: "SQLITE_FULL" })).toBe(false);
    expect(isBusyError(null)).toBe(false);
  });
});
