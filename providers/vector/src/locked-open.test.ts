/**
 * A sidecar another process is writing (a second agent on the same $HERMES_HOME, an import) when
 * the provider starts: initialize waits for the lock and opens writable; a lock held past the
 * wait fails initialize with STORAGE_FAILED saying to retry.
 */
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PineconeFake } from "@hermes/pinecone-fake";
import { holdWriteLock, stallMeter, stopWriteLockHolders } from "@hermes/test-support";
import { VectorMemoryProvider } from "./vector-memory-provider.js";

/**
 * The lock wait an open gets in the stall tests here. An open that waited for the lock on the
 * thread would stall the event loop for all of it (better-sqlite3's busy timeout of a write, 5 s,
 * stalls it the same way); waiting on timers stalls it for an attempt of 25 ms.
 */
const OPEN_LOCK_WAIT_MS = 6000;
/**
 * Longest stall accepted while another process holds the lock: half the shortest wait a thread
 * that blocked would sit through in these tests (3 s, the sidecar's holder in the shared-wait
 * test), so blocking fails by a wide margin, and far above the hundreds of ms a busy machine adds
 * to a loop that only waits on timers.
 */
const STALL_BOUND_MS = 1500;
/** How long a test watches the event loop while the provider waits for the lock (ms). */
const WATCH_MS = 400;
const watch = (ms = WATCH_MS) => new Promise((resolve) => setTimeout(resolve, ms));

let home: string;
const providers: VectorMemoryProvider[] = [];
const savedWait = process.env.HERMES_SQLITE_LOCK_WAIT_MS;
beforeEach(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), "vector-locked-"));
});
afterEach(async () => {
  if (savedWait === undefined) delete process.env.HERMES_SQLITE_LOCK_WAIT_MS;
  else process.env.HERMES_SQLITE_LOCK_WAIT_MS = savedWait;
  for (const p of providers.splice(0)) await p.shutdown();
  stopWriteLockHolders();
  fs.rmSync(home, { recursive: true, force: true });
});

const provider = () => new VectorMemoryProvider({ env: {}, dimensions: 64 });

/** A home whose sidecar holds one memory, closed cleanly (so in rollback-journal mode, as between sessions). */
async function seededSidecar(): Promise<string> {
  const first = provider();
  await first.initialize("s1", { hermesHome: home });
  first.remember({ content: "stored before the other process started writing" });
  await first.flush();
  await first.shutdown();
  return path.join(home, "memory", "vector", "sidecar.sqlite");
}

async function opened(): Promise<VectorMemoryProvider> {
  const p = provider();
  providers.push(p);
  await p.initialize("s2", { hermesHome: home });
  return p;
}

describe("VectorMemoryProvider on a sidecar another process is writing", () => {
  it("initialize waits for the other process's write lock and opens writable: remember and flush work", async () => {
    const sidecar = await seededSidecar();
    const holder = await holdWriteLock(sidecar, 1000);
    const p = await opened();
    p.remember({ content: "the harbourmaster note, saved while another agent was writing" });
    await p.flush();
    const hits = await p.search("harbourmaster note", { limit: 5 });
    expect(hits.map((hit) => hit.content)).toContain("the harbourmaster note, saved while another agent was writing");
    expect((await p.stats()).items).toBe(2);
    await holder.release();
  });

  it("queued writes meet another process's lock on timers, not on the thread, and are all stored once it lets go", async () => {
    const sidecar = await seededSidecar();
    const p = await opened();
    // Held until this test lets go, however long the machine takes.
    const holder = await holdWriteLock(sidecar, 60_000);
    const meter = stallMeter();
    try {
      for (let i = 0; i < 20; i++) p.syncTurn(`lighthouse question ${i}`, `lighthouse answer ${i}`, { sessionId: "s2" });
      p.remember({ content: "the lighthouse keeper's note" });
      // The queue meets the lock and tries again on timers meanwhile; a search answers from what is stored.
      await watch();
      expect((await p.search("stored before the other process", { limit: 5 })).map((hit) => hit.content)).toEqual([
        "stored before the other process started writing",
      ]);
      expect((await p.stats()).items).toBe(1);
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
    expect((await p.stats()).items).toBe(22);
    const found = (await p.search("lighthouse", { limit: 50 }))
      .map((hit) => hit.content)
      .filter((content) => content.includes("lighthouse"));
    expect(found).toHaveLength(21);
  });

  it("a write the caller waits for (the remember tool) waits for a lock held briefly and is stored", async () => {
    const sidecar = await seededSidecar();
    const p = await opened();
    const holder = await holdWriteLock(sidecar, 400);
    try {
      const stored = JSON.parse(await p.handleToolCall("vector_memory_remember", { content: "the ferry timetable changes in May" }));
      expect(stored).toMatchObject({ status: "stored" });
    } finally {
      await holder.release();
    }
    expect((await p.search("ferry timetable", { limit: 5 })).map((hit) => hit.content)).toContain("the ferry timetable changes in May");
  });

  it("a lock held past the wait fails initialize with STORAGE_FAILED saying to retry", async () => {
    const sidecar = await seededSidecar();
    process.env.HERMES_SQLITE_LOCK_WAIT_MS = "200";
    const holder = await holdWriteLock(sidecar, 60_000);
    try {
      const p = provider();
      await expect(p.initialize("s2", { hermesHome: home })).rejects.toMatchObject({
        code: "STORAGE_FAILED",
        message: expect.stringMatching(/another process has held its lock for more than 0\.2 s.*retry once it has finished/),
      });
      await p.shutdown();
    } finally {
      await holder.release();
    }
    // Once the other process is done, the next start opens it writable with everything kept.
    const p = await opened();
    p.remember({ content: "saved on the retry" });
    await p.flush();
    expect((await p.stats()).items).toBe(2);
  });

  it("while initialize waits for the lock the event loop keeps running; a shutdown meanwhile fails it and leaves nothing open", async () => {
    const sidecar = await seededSidecar();
    process.env.HERMES_SQLITE_LOCK_WAIT_MS = String(OPEN_LOCK_WAIT_MS);
    const holder = await holdWriteLock(sidecar, 60_000);
    try {
      const p = provider();
      const meter = stallMeter();
      let settled = false;
      const initializing = p
        .initialize("s2", { hermesHome: home })
        .catch((e: unknown) => e)
        .finally(() => (settled = true));
      await watch();
      expect(settled).toBe(false);
      expect(meter.stop()).toBeLessThan(STALL_BOUND_MS);
      const stopping = p.shutdown();
      await holder.release();
      await stopping;
      expect(await initializing).toMatchObject({
        code: "PROVIDER_UNAVAILABLE",
        message: expect.stringMatching(/shut down while it was starting/),
      });
      // The overtaken open closed its connection, which leaves the file in rollback-journal mode
      // (no -wal beside it), as the last close does.
      expect(fs.existsSync(`${sidecar}-wal`)).toBe(false);
    } finally {
      await holder.release();
    }
    const p = await opened();
    expect((await p.stats()).items).toBe(1);
  });

  it("the sidecar and the outbox share one wait: a start blocked on both fails inside it, not after two", async () => {
    const fake = await PineconeFake.start({ dimension: 64, indexName: "mem", metric: "cosine" });
    try {
      const pinecone = () =>
        new VectorMemoryProvider({
          env: { PINECONE_API_KEY: "test-key" },
          dimensions: 64,
          store: "pinecone",
          pineconeIndex: "mem",
          pineconeControllerUrl: fake.url,
          maxRetries: 0,
        });
      const first = pinecone();
      await first.initialize("s1", { hermesHome: home });
      first.remember({ content: "stored in Pinecone through the outbox" });
      await first.flush();
      await first.shutdown();
      const dir = path.join(home, "memory", "vector");
      // One wait of 5 s: the sidecar takes up to 3 s of it, leaving the outbox 2 s. Separate waits
      // would take up to 8 s; the bound between them leaves 1.5 s either side for a busy machine.
      process.env.HERMES_SQLITE_LOCK_WAIT_MS = "5000";
      const outboxHolder = await holdWriteLock(path.join(dir, "outbox.sqlite"), 60_000);
      const sidecarHolder = await holdWriteLock(path.join(dir, "sidecar.sqlite"), 3000);
      try {
        const p = pinecone();
        const started = Date.now();
        const meter = stallMeter();
        await expect(p.initialize("s2", { hermesHome: home })).rejects.toMatchObject({
          code: "STORAGE_FAILED",
          message: expect.stringMatching(/outbox.*another process/),
        });
        expect(Date.now() - started).toBeLessThan(6500);
        // Both waits ran on timers: the event loop was never held up for long.
        expect(meter.stop()).toBeLessThan(STALL_BOUND_MS);
        await p.shutdown();
      } finally {
        await sidecarHolder.release();
        await outboxHolder.release();
      }
    } finally {
      await fake.close();
    }
  });
});

describe("the remote layout's outbox, held by another process at start-up", () => {
  it("initialize waits on timers (the event loop keeps running), and a shutdown meanwhile fails it and leaves nothing open", async () => {
    const fake = await PineconeFake.start({ dimension: 64, indexName: "mem", metric: "dotproduct" });
    try {
      const remote = () =>
        new VectorMemoryProvider({
          env: { PINECONE_API_KEY: "test-key" },
          dimensions: 64,
          store: "pinecone",
          pineconeLayout: "remote",
          pineconeIndex: "mem",
          pineconeControllerUrl: fake.url,
          maxRetries: 0,
        });
      const first = remote();
      await first.initialize("s1", { hermesHome: home, agentIdentity: "team" });
      first.remember({ content: "stored in Pinecone through the remote outbox" });
      await first.flush();
      await first.shutdown();
      const outbox = path.join(home, "memory", "vector", "remote-outbox.sqlite");
      expect(fs.existsSync(outbox)).toBe(true);
      process.env.HERMES_SQLITE_LOCK_WAIT_MS = String(OPEN_LOCK_WAIT_MS);
      const holder = await holdWriteLock(outbox, 60_000);
      try {
        const p = remote();
        const meter = stallMeter();
        let settled = false;
        const initializing = p
          .initialize("s2", { hermesHome: home, agentIdentity: "team" })
          .catch((e: unknown) => e)
          .finally(() => (settled = true));
        await watch();
        expect(settled).toBe(false);
        expect(meter.stop()).toBeLessThan(STALL_BOUND_MS);
        const stopping = p.shutdown();
        await holder.release();
        await stopping;
        expect(await initializing).toMatchObject({
          code: "PROVIDER_UNAVAILABLE",
          message: expect.stringMatching(/shut down while it was starting/),
        });
        expect(fs.existsSync(`${outbox}-wal`)).toBe(false);
      } finally {
        await holder.release();
      }
      const again = remote();
      providers.push(again);
      await again.initialize("s3", { hermesHome: home, agentIdentity: "team" });
      expect((await again.search("remote outbox", { limit: 3 })).map((h) => h.content)).toContain(
        "stored in Pinecone through the remote outbox",
      );
    } finally {
      await fake.close();
    }
  });
});

describe("a sidecar that refuses the start-up writes", () => {
  it("fails initialize with STORAGE_FAILED, closes the sidecar, and a later initialize tries again instead of running without a store", async () => {
    // A sidecar another program left with a trigger refusing writes to its meta table: the
    // provider's first write at start-up (the profile id) fails inside SQLite.
    const Database = createRequire(import.meta.url)("better-sqlite3") as typeof import("better-sqlite3");
    const file = await seededSidecar();
    const db = new Database(file);
    const profile = db.prepare("SELECT value FROM meta WHERE key = 'profile_id'").pluck().get() as string;
    db.exec(
      `DELETE FROM meta WHERE key = 'profile_id'; CREATE TRIGGER refuse_meta BEFORE INSERT ON meta BEGIN SELECT RAISE(ABORT, 'meta is frozen'); END;`,
    );
    db.close();

    const p = provider();
    providers.push(p);
    const first = await p.initialize("s1", { hermesHome: home }).catch((e: unknown) => e);
    expect(first).toMatchObject({ code: "STORAGE_FAILED", message: expect.stringMatching(/sidecar\.sqlite.*meta is frozen/s) });
    // Nothing was left half-open: the next start meets the same refusal instead of "succeeding"
    // with no store behind it.
    await expect(p.initialize("s1", { hermesHome: home })).rejects.toMatchObject({ code: "STORAGE_FAILED" });

    const repaired = new Database(file);
    repaired.exec("DROP TRIGGER refuse_meta");
    repaired.prepare("INSERT INTO meta (key, value) VALUES ('profile_id', ?)").run(profile);
    repaired.close();
    await p.initialize("s1", { hermesHome: home });
    expect((await p.search("stored before", { limit: 1 })).map((h) => h.content)).toEqual([
      "stored before the other process started writing",
    ]);
  });
});
