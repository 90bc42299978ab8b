/**
 * A database another process is writing (a second agent on the same $HERMES_HOME, an import) when
 * the provider starts: initialize waits for the lock and opens writable; a lock held past the
 * wait fails initialize with STORAGE_FAILED. It never opens read-only because of a lock.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { holdWriteLock, stallMeter, stopWriteLockHolders } from "@hermes/test-support";
import { SqliteMemoryProvider } from "./sqlite-memory-provider.js";

/**
 * The lock wait an open gets in the stall tests here. An open that waited for the lock on the
 * thread would stall the event loop for all of it (better-sqlite3's busy timeout of a write, 5 s,
 * stalls it the same way); waiting on timers stalls it for an attempt of 25 ms.
 */
const OPEN_LOCK_WAIT_MS = 6000;
/**
 * Longest stall accepted while another process holds the lock: a third of the shortest blocking
 * wait (5 s), so a thread that blocks fails by a wide margin, and far above the hundreds of ms a
 * busy machine adds to a loop that only waits on timers.
 */
const STALL_BOUND_MS = 1500;
/** How long a test watches the event loop while the provider waits for the lock (ms). */
const WATCH_MS = 400;
const watch = (ms = WATCH_MS) => new Promise((resolve) => setTimeout(resolve, ms));

let home: string;
const providers: SqliteMemoryProvider[] = [];
const savedWait = process.env.HERMES_SQLITE_LOCK_WAIT_MS;
beforeEach(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), "sqlite-locked-"));
});
afterEach(async () => {
  if (savedWait === undefined) delete process.env.HERMES_SQLITE_LOCK_WAIT_MS;
  else process.env.HERMES_SQLITE_LOCK_WAIT_MS = savedWait;
  for (const p of providers.splice(0)) await p.shutdown();
  stopWriteLockHolders();
  fs.rmSync(home, { recursive: true, force: true });
});

/** A database with one memory, closed cleanly (so in rollback-journal mode, as a home is between sessions). */
async function seededDatabase(): Promise<string> {
  const first = new SqliteMemoryProvider({ path: path.join(home, "memory", "sqlite.db") });
  await first.initialize("s1", { hermesHome: home });
  first.remember({ content: "stored before the other process started writing" });
  await first.shutdown();
  return path.join(home, "memory", "sqlite.db");
}

async function opened(): Promise<SqliteMemoryProvider> {
  const p = new SqliteMemoryProvider({ path: path.join(home, "memory", "sqlite.db") });
  providers.push(p);
  await p.initialize("s2", { hermesHome: home });
  return p;
}

describe("SqliteMemoryProvider on a database another process is writing", () => {
  it("initialize waits for the other process's write lock and opens writable: remember and flush work", async () => {
    const file = await seededDatabase();
    const holder = await holdWriteLock(file, 1000);
    const p = await opened();
    expect(p.memoryStore!.db.readonly).toBe(false);
    p.remember({ content: "the harbourmaster note, saved while another agent was writing" });
    await p.flush();
    expect(p.stats().byKind.fact).toBe(2);
    expect(p.search("harbourmaster").map((hit) => hit.content)).toEqual(["the harbourmaster note, saved while another agent was writing"]);
    await holder.release();
  });

  it("a lock held past the wait fails initialize with STORAGE_FAILED saying to retry, never a read-only open", async () => {
    const file = await seededDatabase();
    process.env.HERMES_SQLITE_LOCK_WAIT_MS = "200";
    const holder = await holdWriteLock(file, 60_000);
    try {
      const p = new SqliteMemoryProvider({ path: file });
      await expect(p.initialize("s2", { hermesHome: home })).rejects.toMatchObject({
        code: "STORAGE_FAILED",
        message: expect.stringMatching(/another process has held its lock for more than 0\.2 s.*retry once it has finished/),
      });
      expect(p.memoryStore).toBeUndefined();
      await p.shutdown();
    } finally {
      await holder.release();
    }
    // Once the other process is done, the next start opens it writable with everything kept.
    const p = await opened();
    expect(p.memoryStore!.db.readonly).toBe(false);
    p.remember({ content: "saved on the retry" });
    await p.flush();
    expect(p.stats().byKind.fact).toBe(2);
  });

  it("while initialize waits for the lock the event loop keeps running; a shutdown meanwhile leaves no store open", async () => {
    const file = await seededDatabase();
    process.env.HERMES_SQLITE_LOCK_WAIT_MS = String(OPEN_LOCK_WAIT_MS);
    // Held until this test lets go, however long the machine takes.
    const holder = await holdWriteLock(file, 60_000);
    const meter = stallMeter();
    try {
      const p = new SqliteMemoryProvider({ path: file });
      let settled = false;
      const initializing = p.initialize("s2", { hermesHome: home }).finally(() => (settled = true));
      // Another provider's start, a server's request: the loop is free while this one waits.
      await watch();
      expect(settled).toBe(false);
      expect(meter.longest()).toBeLessThan(STALL_BOUND_MS);
      const stopping = p.shutdown();
      await holder.release();
      await stopping;
      await initializing;
      expect(p.memoryStore).toBeUndefined();
      // The overtaken open closed its connection, which leaves the file in rollback-journal mode
      // (no -wal beside it), as the last close does.
      expect(fs.existsSync(`${file}-wal`)).toBe(false);
    } finally {
      meter.stop();
      await holder.release();
    }
    // The next start opens it with everything kept.
    const p = await opened();
    expect(p.stats().byKind.fact).toBe(1);
  });

  it("queued turns wait for another process's lock on timers, not on the thread, and are all stored once it lets go", async () => {
    const file = await seededDatabase();
    const p = await opened();
    const holder = await holdWriteLock(file, 60_000);
    const meter = stallMeter();
    try {
      for (let i = 0; i < 20; i++) p.syncTurn(`lighthouse question ${i}`, `lighthouse answer ${i}`, { sessionId: "s2" });
      // The background writer meets the lock and retries on timers meanwhile.
      await watch();
      // A search (or the prefetch before a turn) first tries to write the queue: it does not wait
      // for the lock either, and answers from what is stored.
      expect(p.search("stored before the other process")).toHaveLength(1);
      expect(p.stats().byKind.turn ?? 0).toBe(0);
      // flush() waits for the lock on timers too, and returns once everything is stored.
      let flushed = false;
      const flushing = p.flush().then(() => (flushed = true));
      await watch();
      expect(flushed).toBe(false);
      expect(meter.longest()).toBeLessThan(STALL_BOUND_MS);
      await holder.release();
      await flushing;
    } finally {
      meter.stop();
      await holder.release();
    }
    expect(p.stats().byKind.turn).toBe(20);
    expect(p.search("lighthouse", { limit: 50 })).toHaveLength(20);
  });
});
