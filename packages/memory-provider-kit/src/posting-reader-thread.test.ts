import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { seededRandom, until } from "@hermes/test-support";
import { LayeredRanker } from "./layered-ranker.js";
import { PostingReaderThread } from "./posting-reader-thread.js";
import { createDocsStore, DOCS_SCHEMA, DOCS_WEIGHTS, type DocsStore } from "./test-support/docs-store.js";

// A store the layered ranker reads through pair pools: 30,000 rows of 8–16 words drawn from a skewed
// vocabulary, so a pair of words holds tens to hundreds of rows and queries need several pools.
const ROWS = 30_000;
const SCHEMA = DOCS_SCHEMA;
const WEIGHTS = DOCS_WEIGHTS;
const vocabulary = Array.from({ length: 400 }, (_, i) => `w${i.toString(36)}q`);

let store: DocsStore;
let dir: string;
let file: string;
let db: Database.Database;
/** Words with their document counts, for `rank`. */
let counted: DocsStore["counted"];

/** Worker threads and message ports that keep the process alive (a helper's must not). */
const activePorts = () => process.getActiveResourcesInfo().filter((r) => r === "MessagePort" || r === "Worker").length;
/** Before any helper of this file started. */
let portsAtStart: number;

beforeAll(() => {
  portsAtStart = activePorts();
  store = createDocsStore(ROWS, vocabulary, 4242);
  ({ dir, file, db, counted } = store);
});

afterAll(() => store.remove());

describe("LayeredRanker with a pool helper thread", () => {
  it("ranks exactly as without the helper while the helper reads part of the pools, filtered or not", async () => {
    const alone = new LayeredRanker(db, WEIGHTS, SCHEMA, { helper: false });
    // Without kept word lists: every pool is read through FTS5, here or on the helper's thread.
    const helped = new LayeredRanker(db, WEIGHTS, SCHEMA, { helper: { minRows: 0 }, postingBytes: 0 });
    try {
      const random = seededRandom(77);
      // Mid-frequency words: in a few percent of the rows each, so every query reads several pairs.
      const words = vocabulary.slice(12, 120);
      const queries = Array.from({ length: 120 }, () => {
        const picked = new Set<string>();
        const size = 3 + Math.floor(random() * 4);
        while (picked.size < size) picked.add(words[Math.floor(random() * words.length)]!);
        return counted([...picked]);
      });
      const optionsFor = (q: number) =>
        q % 4 === 0
          ? { limit: 5, candidates: 20 }
          : q % 4 === 1
            ? { limit: 5, candidates: 20, kind: "turn" as const }
            : q % 4 === 2
              ? { limit: 5, candidates: 20, where: { sql: "i.session <> ?", params: ["s3"] } }
              : { limit: 10, candidates: 40, user: "ann", session: "s2" };
      helped.rank(queries[0]!, optionsFor(0));
      expect(helped.helperStatus().state).toMatch(/starting|running/);
      await until(() => helped.helperStatus().state === "running");
      for (const [q, terms] of queries.entries()) {
        const expected = alone.rank(terms, optionsFor(q));
        expect(expected.length).toBeGreaterThan(0);
        expect(helped.rank(terms, optionsFor(q)), terms.map((t) => t.term).join(" ")).toEqual(expected);
      }
      // The helper did read pools the ranker used (not only the calling thread).
      expect(helped.helperStatus().answered).toBeGreaterThan(0);
      expect(alone.helperStatus()).toMatchObject({ state: "off", answered: 0, kept: { words: 0 } });
    } finally {
      helped.close();
      alone.close();
    }
    expect(helped.helperStatus().state).toBe("stopped");
    // After close, rankings run on the calling thread alone and still work.
    expect(helped.rank(counted(["w10q", "w11q", "w12q"]), { limit: 5, candidates: 20 })).toEqual(
      new LayeredRanker(db, WEIGHTS, SCHEMA, { helper: false }).rank(counted(["w10q", "w11q", "w12q"]), { limit: 5, candidates: 20 }),
    );
  });

  it("starts no helper below its row threshold, for a database without a file, or inside a write transaction", async () => {
    const terms = counted(["w10q", "w11q", "w12q", "w13q"]);
    const small = new LayeredRanker(db, WEIGHTS, SCHEMA, { helper: { minRows: ROWS + 1 } });
    small.rank(terms, { limit: 5, candidates: 20 });
    expect(small.helperStatus().state).toBe("off");

    const memory = new Database(":memory:");
    try {
      memory.exec(`
        CREATE TABLE docs (id INTEGER PRIMARY KEY, body TEXT NOT NULL, who TEXT NOT NULL, kind TEXT NOT NULL, session TEXT NOT NULL);
        CREATE VIRTUAL TABLE docs_fts USING fts5(body, who, content = 'docs', content_rowid = 'id');
        INSERT INTO docs (body, who, kind, session) VALUES ('w10q w11q', 'ann', 'fact', 's'), ('w11q w12q', 'bob', 'fact', 's'),
          ('a b', 'ann', 'fact', 's'), ('c d', 'ann', 'fact', 's'), ('e f', 'ann', 'fact', 's'), ('g h', 'ann', 'fact', 's');
        INSERT INTO docs_fts(docs_fts) VALUES ('rebuild');
      `);
      const inMemory = new LayeredRanker(memory, WEIGHTS, SCHEMA, { helper: { minRows: 0 } });
      expect(
        inMemory
          .rank(
            [
              { term: "w10q", df: 1 },
              { term: "w12q", df: 1 },
            ],
            { limit: 5, candidates: 20 },
          )
          .map((r) => r.id),
      ).toEqual([1, 2]);
      expect(inMemory.helperStatus().state).toBe("off");
    } finally {
      memory.close();
    }

    // Inside a transaction the helper's connection would not see the transaction's own rows.
    const inTransaction = new LayeredRanker(db, WEIGHTS, SCHEMA, { helper: { minRows: 0 } });
    try {
      db.transaction(() => inTransaction.rank(terms, { limit: 5, candidates: 20 }))();
      expect(inTransaction.helperStatus().state).toBe("off");
    } finally {
      inTransaction.close();
    }
  });

  it("is started by the background warm-up of a large store, before any search", async () => {
    const large = new LayeredRanker(db, WEIGHTS, SCHEMA, { helper: { minRows: ROWS } });
    const small = new LayeredRanker(db, WEIGHTS, SCHEMA, { helper: { minRows: ROWS + 1 } });
    const errors: unknown[] = [];
    try {
      large.warmInBackground(
        () => true,
        (error) => errors.push(error),
      );
      small.warmInBackground(
        () => true,
        (error) => errors.push(error),
      );
      await until(() => large.helperStatus().state === "running");
      await until(() => small.warmLengths(1)); // every length kept: the warm-up has run to its end
      expect(small.helperStatus().state).toBe("off");
      expect(errors).toEqual([]);
    } finally {
      large.close();
      small.close();
    }
  });

  it("keeps no handle that would hold the process open", async () => {
    // Helpers of earlier tests end asynchronously: wait until none of theirs is left.
    await until(() => activePorts() === portsAtStart, 10_000);
    const ranker = new LayeredRanker(db, WEIGHTS, SCHEMA, { helper: { minRows: 0 } });
    try {
      ranker.rank(counted(["w10q", "w11q", "w12q"]), { limit: 5, candidates: 20 });
      await until(() => ranker.helperStatus().state === "running");
      expect(activePorts()).toBe(portsAtStart);
    } finally {
      ranker.close();
    }
  });

  it("reports a helper that cannot open the file and ranks on the calling thread", async () => {
    const stopped: string[] = [];
    const ranker = new LayeredRanker(db, WEIGHTS, SCHEMA, { helper: { minRows: 0 }, onHelperStopped: (reason) => stopped.push(reason) });
    // The helper opens the file by its path: once it is gone, the helper cannot start.
    Object.defineProperty(ranker, "file", { value: path.join(dir, "missing", "docs.db") });
    const terms = counted(["w10q", "w11q", "w12q", "w13q"]);
    const expected = new LayeredRanker(db, WEIGHTS, SCHEMA, { helper: false }).rank(terms, { limit: 5, candidates: 20 });
    expect(ranker.rank(terms, { limit: 5, candidates: 20 })).toEqual(expected);
    await until(() => ranker.helperStatus().state === "stopped");
    expect(ranker.helperStatus().reason).toMatch(/could not open the database/);
    expect(stopped).toHaveLength(1);
    expect(ranker.rank(terms, { limit: 5, candidates: 20 })).toEqual(expected);
    ranker.close();
  });
});

describe("PostingReaderThread", () => {
  it("runs a query the helper cannot run on the calling thread instead", async () => {
    const helper = PostingReaderThread.start({ file, maxRows: 600 })!;
    try {
      await until(() => helper.usable);
      // A temporary table exists only on the connection that made it, so the helper's read fails.
      db.exec("CREATE TEMP TABLE IF NOT EXISTS only_here (id INTEGER); DELETE FROM only_here; INSERT INTO only_here VALUES (5), (6)");
      const local = db.prepare("SELECT id FROM only_here ORDER BY id").pluck();
      const batch = helper.offer([
        { sql: "SELECT id FROM docs WHERE id <= 3 ORDER BY id", args: [] },
        { sql: "SELECT id FROM only_here ORDER BY id", args: [] },
      ])!;
      expect(batch).not.toBeNull();
      // The helper takes the last query first, fails on it, then answers the first.
      await until(() => batch.finished(1) && batch.finished(0));
      expect(batch.take(0, () => db.prepare("SELECT id FROM docs WHERE id <= 3 ORDER BY id").pluck().all() as number[])).toEqual([1, 2, 3]);
      let ranHere = 0;
      expect(batch.take(1, () => (ranHere++, local.all() as number[]))).toEqual([5, 6]);
      batch.end();
      expect(ranHere).toBe(1);
      expect(helper.answered).toBe(1);
      expect(helper.stopped).toBeNull();
    } finally {
      helper.close();
      db.exec("DROP TABLE IF EXISTS temp.only_here");
    }
  });

  it("answers a query the helper ran, and ids beyond the slot size are never taken from it", async () => {
    const helper = PostingReaderThread.start({ file, maxRows: 4 })!;
    try {
      await until(() => helper.usable);
      const batch = helper.offer([
        { sql: "SELECT id FROM docs WHERE id <= ? ORDER BY id", args: [2] },
        { sql: "SELECT id FROM docs WHERE id > ? ORDER BY id LIMIT 3", args: [100] },
        { sql: "SELECT id FROM docs WHERE id <= ? ORDER BY id", args: [9] },
      ])!;
      await until(() => batch.finished(2) && batch.finished(1) && batch.finished(0));
      // The caller's own reads are marked: only the nine ids (more than a slot of four holds) are read here.
      expect(batch.take(0, () => [-1])).toEqual([1, 2]);
      expect(batch.take(1, () => [-1])).toEqual([101, 102, 103]);
      expect(batch.take(2, () => [-2])).toEqual([-2]);
      batch.end();
      expect(helper.answered).toBe(2);
    } finally {
      helper.close();
    }
    expect(helper.stopped).toBe("closed");
    expect(
      helper.offer([
        { sql: "SELECT 1", args: [] },
        { sql: "SELECT 2", args: [] },
      ]),
    ).toBeNull();
  });

  /**
   * A helper on a store in rollback-journal mode, and rounds that each end one way: the helper
   * answers (`answered`), or it reads a table this connection holds an EXCLUSIVE lock on, so its
   * read cannot finish before the caller's wait for it ends (`missed`). The caller takes a query
   * only once the helper has taken it (`took`), so every round is the one it is meant to be,
   * however loaded the machine.
   */
  async function lockedStore(waitMs: number) {
    const own = path.join(dir, `locked-${waitMs}.db`);
    const local = new Database(own);
    local.pragma("journal_mode = DELETE");
    local.exec("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY); DELETE FROM t; INSERT INTO t (id) VALUES (1), (2), (3)");
    const reasons: string[] = [];
    const helper = PostingReaderThread.start({ file: own, maxRows: 10, waitMs, onStopped: (reason) => reasons.push(reason) })!;
    const readT = { sql: "SELECT id FROM t ORDER BY id", args: [] };
    await until(() => helper.usable);
    return {
      helper,
      reasons,
      /** The helper answers both queries before the caller takes them. */
      async answered(): Promise<void> {
        const batch = helper.offer([readT, { sql: "SELECT id FROM t WHERE id <= 2 ORDER BY id", args: [] }])!;
        await until(() => batch.finished(0) && batch.finished(1));
        expect(batch.take(0, () => [-1])).toEqual([1, 2, 3]);
        expect(batch.take(1, () => [-1])).toEqual([1, 2]);
        batch.end();
      },
      /**
       * The helper takes the last query (its first pick) and waits for the lock; the caller runs the
       * first itself, then waits for the last in vain and runs it too. Returns how long that wait was.
       */
      async missed(): Promise<number> {
        local.exec("BEGIN EXCLUSIVE");
        let batch: ReturnType<PostingReaderThread["offer"]> = null;
        let waited: number;
        try {
          batch = helper.offer([{ sql: "SELECT 1", args: [] }, readT])!;
          await until(() => batch!.took(1));
          expect(batch.take(0, () => [1])).toEqual([1]);
          const started = performance.now();
          expect(batch.take(1, () => [7])).toEqual([7]);
          waited = performance.now() - started;
          batch.end();
        } finally {
          local.exec("COMMIT");
        }
        // Its read goes on once the lock is gone; the next round starts after it.
        await until(() => batch!.finished(1) || helper.stopped !== null, 10_000);
        return waited;
      },
      close(): void {
        helper.close();
        local.close();
      },
    };
  }

  it("counts only missed waits in a row: an answered query in between starts the count again", async () => {
    const store = await lockedStore(60);
    const { helper, reasons } = store;
    try {
      await store.answered(); // also reads the schema, which a locked file would hold up
      await store.missed();
      await store.missed();
      await store.answered();
      expect(helper.stopped).toBeNull();
      await store.missed();
      await store.missed();
      expect(helper.stopped).toBeNull();
      expect(reasons).toEqual([]);
      await store.missed();
      expect(helper.stopped).toMatch(/did not answer within 60 ms 3 times in a row/);
      expect(reasons).toHaveLength(1);
    } finally {
      store.close();
    }
  });

  it("waits at least waitMs and never for the whole read of a helper that does not answer, and stops it after three such waits", async () => {
    const waitMs = 60;
    const store = await lockedStore(waitMs);
    const { helper, reasons } = store;
    try {
      await store.answered();
      for (let round = 1; round <= 3; round++) {
        // The helper's read could only end after the lock is released, which happens after `take`
        // returned: `take` came back without waiting for it, and only after waitMs.
        expect(await store.missed()).toBeGreaterThanOrEqual(waitMs);
        if (round < 3) expect(helper.stopped).toBeNull();
      }
      expect(helper.stopped).toMatch(/did not answer within 60 ms 3 times/);
      expect(reasons).toHaveLength(1);
      expect(helper.usable).toBe(false);
      // A stopped helper takes no more batches: the caller reads every pool itself.
      expect(
        helper.offer([
          { sql: "SELECT 1", args: [] },
          { sql: "SELECT 2", args: [] },
        ]),
      ).toBeNull();
    } finally {
      store.close();
    }
  });
});
