import { fork } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { V2_SCHEMA_SQL } from "./test-support/v2-schema.js";
import { CONTEXT_COLUMNS } from "./test-support/context-columns.js";

const MIGRATE_CHILD = fileURLToPath(new URL("./test-support/migrate-child.ts", import.meta.url));

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sqlite-hostile-"));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

/** A version-2 store at `file` built with raw SQL by `fill` (rows and FTS entries as `fill` writes them). */
function writeRawV2(file: string, fill: (db: Database.Database) => void): void {
  const db = new Database(file);
  try {
    db.exec(V2_SCHEMA_SQL);
    fill(db);
    db.pragma("user_version = 2");
  } finally {
    db.close();
  }
}

/** Migrate `file` in a child process (the migration is synchronous: a hang cannot be timed out in-process). */
async function migrateInChild(file: string, timeoutMs: number): Promise<"done" | "timed out" | "failed"> {
  const child = fork(MIGRATE_CHILD, [file], { execArgv: ["--import", "tsx"], stdio: ["ignore", "ignore", "pipe", "ipc"] });
  let done = false;
  child.on("message", (m) => {
    if ((m as { type: string }).type === "done") done = true;
  });
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  await exited;
  const timedOut = child.signalCode === "SIGKILL";
  clearTimeout(timer);
  return done ? "done" : timedOut ? "timed out" : "failed";
}

const ALL = `SELECT id, kind, session_id, user_id, speaker, content, tags, metadata, digest, created_at FROM items ORDER BY id`;

describe("migrating hostile old-schema databases", () => {
  it("migrates a v2 store whose ids have huge gaps (smallest to largest rowid, zero included), dating and indexing every row", async () => {
    const file = path.join(dir, "gaps.db");
    writeRawV2(file, (db) => {
      db.defaultSafeIntegers(true);
      const insert = db.prepare(`INSERT INTO items (id, kind, session_id, content, created_at) VALUES (?, 'turn', 's', ?, 1)`);
      const index = db.prepare(`INSERT INTO items_fts (rowid, content, speaker) VALUES (?, ?, '')`);
      for (const [id, content] of [
        [-9_223_372_036_854_775_808n, "lowest lantern"],
        [0n, "zero lantern"],
        [1n, "first lantern"],
        [2n, "second lantern"],
        [4_000_000_000_000_000n, "third lantern"],
        [9_223_372_036_854_775_807n, "last lantern"],
      ] as const) {
        insert.run(id, content);
        index.run(id, content);
      }
    });
    const raw = new Database(file, { readonly: true });
    raw.defaultSafeIntegers(true);
    const before = raw.prepare(ALL).all();
    raw.close();

    expect(await migrateInChild(file, 15_000)).toBe("done");

    const db = new Database(file, { readonly: true });
    db.defaultSafeIntegers(true);
    try {
      expect(db.pragma("user_version", { simple: true })).toBe(6n);
      expect(db.prepare(ALL).all()).toEqual(before);
      // Every row was dated, given its context and indexed again.
      expect(db.prepare(`SELECT COUNT(*) FROM items WHERE session_date = ''`).pluck().get()).toBe(0n);
      expect(db.prepare(`SELECT ${CONTEXT_COLUMNS}, prev_id FROM items WHERE id = 9223372036854775807`).raw(true).get()).toEqual([
        "third lantern",
        "second lantern",
        4_000_000_000_000_000n,
      ]);
      expect(db.prepare(`SELECT rowid FROM items_fts WHERE items_fts MATCH 'lantern' ORDER BY rowid`).pluck().all()).toEqual([
        -9_223_372_036_854_775_808n,
        0n,
        1n,
        2n,
        4_000_000_000_000_000n,
        9_223_372_036_854_775_807n,
      ]);
    } finally {
      db.close();
    }
  }, 30_000);

  it.each([
    ["its config table is missing", "DROP TABLE items_fts_config"],
    ["its config holds an unknown format version", "INSERT OR REPLACE INTO items_fts_config VALUES ('version', 99)"],
    [
      "its FTS table is gone but the shadow tables remain",
      "PRAGMA writable_schema = ON; DELETE FROM sqlite_master WHERE name = 'items_fts'",
    ],
  ])("migrates a v2 store whose old FTS index is damaged (%s), keeping every item and rebuilding the index", async (_what, damage) => {
    const { SqliteMemoryProvider } = await import("./sqlite-memory-provider.js");
    const file = path.join(dir, "damaged.db");
    writeRawV2(file, (db) => {
      db.exec(
        `INSERT INTO items (kind, session_id, content, created_at) VALUES ('turn', 's', 'the harbour at dawn', 1), ('fact', NULL, 'likes harbour walks', 2)`,
      );
      db.exec(`INSERT INTO items_fts (rowid, content, speaker) SELECT id, content, speaker FROM items`);
      db.unsafeMode(true); // lets this test write FTS5 shadow tables and the schema
      db.exec(damage);
    });
    const raw = new Database(file, { readonly: true });
    const before = raw.prepare(ALL).all();
    raw.close();

    const provider = new SqliteMemoryProvider({ path: file });
    await provider.initialize("after-upgrade", { hermesHome: dir, platform: "cli" });
    try {
      const db = provider.memoryStore!.db;
      expect(db.pragma("user_version", { simple: true })).toBe(6);
      expect(db.prepare(ALL).all()).toEqual(before);
      expect(
        provider
          .search("harbour", { limit: 5 })
          .map((h) => h.id)
          .sort(),
      ).toEqual(["1", "2"]);
      expect(provider.memoryStore!.doctor()).toMatchObject({ ok: true, integrity: "ok", ftsConsistent: true, items: 2 });
    } finally {
      await provider.shutdown();
    }
  });
});
