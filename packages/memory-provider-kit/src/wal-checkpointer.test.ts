import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { rowsInFileAlone, until } from "@hermes/test-support";
import { closeSqliteStore } from "./sqlite-store.js";
import { CHECKPOINT_COMMITS, CHECKPOINT_ITEMS, WAL_LIMIT_BYTES, WalCheckpointer } from "./wal-checkpointer.js";

let dir: string;
let file: string;
let db: Database.Database;
let nextId = 1;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "wal-checkpointer-"));
  file = path.join(dir, "t.db");
  db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)`);
  db.pragma("wal_checkpoint(TRUNCATE)");
  nextId = 1;
});
afterEach(() => {
  if (db.open) db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Commit `rows` rows of about `chars` characters in one transaction; returns how many. */
function write(rows: number, chars = 200): number {
  const insert = db.prepare(`INSERT INTO t (id, body) VALUES (?, ?)`);
  db.transaction(() => {
    for (let i = 0; i < rows; i++, nextId++) insert.run(nextId, `row ${nextId} `.padEnd(chars, String.fromCharCode(97 + (nextId % 26))));
  })();
  return rows;
}

const rowsInMainFile = (): number => rowsInFileAlone(file, "t");

const autocheckpoint = (): number => db.pragma("wal_autocheckpoint", { simple: true }) as number;
const sizeLimit = (): number => db.pragma("journal_size_limit", { simple: true }) as number;

describe("WalCheckpointer", () => {
  it("copies committed pages into the database file on its own thread while the writer checkpoints no more", async () => {
    const checkpointer = new WalCheckpointer(db);
    try {
      checkpointer.afterCommit(write(CHECKPOINT_ITEMS));
      expect(checkpointer.status().state).toBe("running");
      expect(autocheckpoint()).toBe(0);
      expect(sizeLimit()).toBe(WAL_LIMIT_BYTES);
      await until(() => checkpointer.status().checkpoints >= 1);
      // The writer checkpoints only past WAL_LIMIT_BYTES, which these rows are far from: the rows
      // can only have reached the database file through the thread.
      expect(rowsInMainFile()).toBe(CHECKPOINT_ITEMS);
      // A later burst is copied too.
      checkpointer.afterCommit(write(CHECKPOINT_ITEMS));
      await until(() => checkpointer.status().checkpoints >= 2);
      expect(rowsInMainFile()).toBe(2 * CHECKPOINT_ITEMS);
    } finally {
      checkpointer.close();
    }
    expect(checkpointer.status().state).toBe("stopped");
    expect(autocheckpoint()).toBe(1000);
    expect(sizeLimit()).toBe(-1);
  });

  it("asks after CHECKPOINT_COMMITS small transactions, and starts no thread before", async () => {
    const checkpointer = new WalCheckpointer(db);
    try {
      for (let i = 1; i < CHECKPOINT_COMMITS; i++) checkpointer.afterCommit(write(1));
      expect(checkpointer.status()).toEqual({ state: "idle", checkpoints: 0 });
      expect(autocheckpoint()).toBe(1000);
      expect(rowsInMainFile()).toBe(0);
      checkpointer.afterCommit(write(1));
      await until(() => checkpointer.status().checkpoints >= 1);
      expect(rowsInMainFile()).toBe(CHECKPOINT_COMMITS);
    } finally {
      checkpointer.close();
    }
  });

  it("keeps the log bounded while the writer never pauses", () => {
    const checkpointer = new WalCheckpointer(db);
    let largest = 0;
    try {
      // About 45 MB of rows, written without a pause: the log could only start over when a
      // checkpoint had copied all of it before the next transaction began.
      for (let i = 0; i < 60; i++) {
        checkpointer.afterCommit(write(CHECKPOINT_ITEMS, 3000));
        largest = Math.max(largest, fs.statSync(`${file}-wal`).size);
      }
    } finally {
      checkpointer.close();
    }
    expect(db.prepare(`SELECT COUNT(*) FROM t`).pluck().get()).toBe(60 * CHECKPOINT_ITEMS);
    expect(checkpointer.status().checkpoints).toBeGreaterThan(0);
    // At most the limit plus one transaction (256 rows of 3,000 characters: under 1 MB).
    expect(largest).toBeGreaterThan(WAL_LIMIT_BYTES / 2);
    expect(largest).toBeLessThan(WAL_LIMIT_BYTES + 2 * 1024 * 1024);
  });

  it("closes its connection before close() returns, so the writer's close is the file's last", async () => {
    const checkpointer = new WalCheckpointer(db);
    checkpointer.afterCommit(write(CHECKPOINT_ITEMS));
    await until(() => checkpointer.status().checkpoints >= 1);
    // Closed while the thread is copying a few megabytes: close() waits for it.
    checkpointer.afterCommit(write(4 * CHECKPOINT_ITEMS, 3000));
    checkpointer.close();
    checkpointer.close();
    closeSqliteStore(db);
    // The last connection switches the file back to rollback-journal mode and removes the log.
    expect(fs.existsSync(`${file}-wal`)).toBe(false);
    const reopened = new Database(file, { readonly: true });
    expect(reopened.pragma("journal_mode", { simple: true })).toBe("delete");
    expect(reopened.prepare(`SELECT COUNT(*) FROM t`).pluck().get()).toBe(5 * CHECKPOINT_ITEMS);
    reopened.close();
  });

  it("stops when its thread cannot open the database, gives the writer its checkpoints back and never throws", async () => {
    const heard: string[] = [];
    const checkpointer = new WalCheckpointer(db, {
      driverPath: path.join(dir, "no-such-driver.js"),
      onStopped: (reason) => heard.push(reason),
    });
    checkpointer.afterCommit(write(CHECKPOINT_ITEMS));
    await until(() => checkpointer.status().state === "stopped");
    expect(checkpointer.status().reason).toMatch(/could not open the database/);
    expect(heard).toHaveLength(1);
    expect(autocheckpoint()).toBe(1000);
    expect(sizeLimit()).toBe(-1);
    expect(() => checkpointer.afterCommit(write(CHECKPOINT_ITEMS))).not.toThrow();
    checkpointer.close();
    expect(heard).toHaveLength(1);
    expect(db.prepare(`SELECT COUNT(*) FROM t`).pluck().get()).toBe(2 * CHECKPOINT_ITEMS);
  });

  it("stops a thread whose checkpoint outlasts a commit's wait, so later commits never wait for it", () => {
    // A driver whose checkpoint hangs for 20 s (a stuck disk): the thread opens it and never answers.
    const driver = path.join(dir, "hanging-driver.cjs");
    fs.writeFileSync(
      driver,
      `module.exports = class { pragma(sql) { if (sql.startsWith("wal_checkpoint")) { const end = Date.now() + 20000; while (Date.now() < end); } } close() {} };`,
    );
    const heard: string[] = [];
    const checkpointer = new WalCheckpointer(db, { driverPath: driver, waitMs: 200, onStopped: (reason) => heard.push(reason) });
    try {
      let slowest = 0;
      // Past WAL_LIMIT_BYTES: about 800 KB per transaction.
      for (let i = 0; i < 30; i++) {
        const started = performance.now();
        checkpointer.afterCommit(write(CHECKPOINT_ITEMS, 3000));
        const took = performance.now() - started;
        if (checkpointer.status().state === "stopped" && heard.length === 1 && took > 150) continue;
        slowest = Math.max(slowest, took);
      }
      expect(heard).toEqual(["a checkpoint on the thread took more than 200 ms"]);
      // Only the commit that found the thread stuck waited; SQLite checkpoints on the writer again.
      expect(slowest).toBeLessThan(150);
      expect(autocheckpoint()).toBe(1000);
      expect(db.prepare(`SELECT COUNT(*) FROM t`).pluck().get()).toBe(30 * CHECKPOINT_ITEMS);
    } finally {
      checkpointer.close();
    }
  });

  it("never starts a thread for a read-only, in-memory or rollback-journal connection", () => {
    db.close();
    const cases = [new Database(file, { readonly: true }), new Database(":memory:"), new Database(path.join(dir, "journal.db"))];
    for (const other of cases) {
      const checkpointer = new WalCheckpointer(other);
      for (let i = 0; i < CHECKPOINT_COMMITS + 1; i++) checkpointer.afterCommit(CHECKPOINT_ITEMS);
      expect(checkpointer.status()).toEqual({ state: "stopped", checkpoints: 0, reason: "not a writable WAL database" });
      checkpointer.close();
      other.close();
    }
  });

  it("never keeps the process alive", () => {
    // A child process using the built package starts a thread, never closes it, and must exit on its own.
    const packageDir = fileURLToPath(new URL("..", import.meta.url));
    const script = path.join(packageDir, `.wal-checkpointer-exit-${process.pid}.mjs`);
    fs.writeFileSync(
      script,
      `import Database from "better-sqlite3";
import { WalCheckpointer } from "@hermes/memory-provider-kit/sqlite";
const CHECKPOINT_ITEMS = ${CHECKPOINT_ITEMS};
const db = new Database(${JSON.stringify(path.join(dir, "child.db"))});
db.pragma("journal_mode = WAL");
db.exec("CREATE TABLE t (body TEXT)");
const insert = db.prepare("INSERT INTO t (body) VALUES (?)");
db.transaction(() => { for (let i = 0; i < CHECKPOINT_ITEMS; i++) insert.run("row " + i); })();
const checkpointer = new WalCheckpointer(db);
checkpointer.afterCommit(CHECKPOINT_ITEMS);
const started = Date.now();
const poll = () => checkpointer.status().checkpoints >= 1 || Date.now() - started > 5000 ? console.log(checkpointer.status().state, checkpointer.status().checkpoints) : setTimeout(poll, 10);
poll();
`,
    );
    try {
      const r = spawnSync(process.execPath, [script], { cwd: packageDir, encoding: "utf8", timeout: 20_000 });
      expect(r.stderr).toBe("");
      expect(r.status).toBe(0);
      expect(r.stdout).toBe("running 1\n");
    } finally {
      fs.rmSync(script, { force: true });
    }
  }, 30_000);
});
