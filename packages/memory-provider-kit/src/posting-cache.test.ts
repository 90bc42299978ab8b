import Database from "better-sqlite3";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { seededRandom, until } from "@hermes/test-support";
import { LayeredRanker } from "./layered-ranker.js";
import { PostingReaderThread } from "./posting-reader-thread.js";
import { bitmapOf, intersectFirst } from "./posting-cache.js";
import { createDocsStore, DOCS_SCHEMA, DOCS_WEIGHTS, type DocsStore } from "./test-support/docs-store.js";

// A store whose words are kept as id lists: 20,000 rows of 8–16 words from a skewed vocabulary, so
// that a few words are in most rows and most in a few hundred.
const ROWS = 20_000;
const SCHEMA = DOCS_SCHEMA;
const WEIGHTS = DOCS_WEIGHTS;
const vocabulary = Array.from({ length: 300 }, (_, i) => `v${i.toString(36)}x`);

let store: DocsStore;
let file: string;
let db: Database.Database;
let insertRow: DocsStore["insertRow"];
let counted: DocsStore["counted"];

beforeAll(() => {
  store = createDocsStore(ROWS, vocabulary, 9090);
  ({ file, db, insertRow, counted } = store);
});

afterAll(() => store.remove());

afterEach(() => vi.restoreAllMocks());

/**
 * Move the clock the ranker reads (`performance.now`) past the pause after a drop, during which no
 * list is asked for. Only between rankings: a ranking waiting for the helper reads it too.
 */
const realNow = performance.now.bind(performance);
let shift = 0;
function pastRequestPause(): void {
  shift += 5_001;
  if (!vi.isMockFunction(performance.now)) vi.spyOn(performance, "now").mockImplementation(() => realNow() + shift);
}

/** Queries of 2–5 words, common and rare. */
function queryWords(random: () => number, count: number): string[][] {
  const words = vocabulary.slice(3, 90);
  return Array.from({ length: count }, () => {
    const picked = new Set<string>();
    const size = 2 + Math.floor(random() * 4);
    while (picked.size < size) picked.add(words[Math.floor(random() * words.length)]!);
    return [...picked];
  });
}

/** Rank `queries` with `ranker` until it keeps at least `words` lists (they arrive from the helper thread). */
async function keepLists(
  ranker: LayeredRanker,
  queries: ReadonlyArray<ReturnType<typeof counted>>,
  words: number,
  timeoutMs = 20_000,
): Promise<void> {
  await until(() => {
    for (const terms of queries) ranker.rank(terms, { limit: 5, candidates: 20 });
    return ranker.helperStatus().kept.words >= words;
  }, timeoutMs);
}

describe("intersectFirst", () => {
  it("returns the first ids common to two ascending lists, as a merge of the two would, with and without bitmaps", () => {
    const random = seededRandom(5);
    let withBits = 0;
    for (let round = 0; round < 300; round++) {
      // Ids from `low` (negative in some rounds: no bitmap is made then) to `low + spread`.
      const low = round % 7 === 0 ? -50 : 0;
      const list = (n: number, spread: number) =>
        Int32Array.from(new Set(Array.from({ length: n }, () => low + Math.floor(random() * spread)))).sort();
      const a = list(Math.floor(random() * 400), 1 + Math.floor(random() * 3000));
      // Sometimes a hundred times longer, so the galloping search takes long steps; some sparse
      // enough to have no bitmap.
      const b = list(
        Math.floor(random() * (round % 3 === 0 ? 40_000 : 400)),
        1 + Math.floor(random() * (round % 2 === 0 ? 60_000 : 600_000)),
      );
      const max = 1 + Math.floor(random() * 200);
      const inB = new Set(b);
      const expected = [...a].filter((id) => inB.has(id)).slice(0, max);
      for (const [ka, kb] of [
        [
          { ids: a, bits: null },
          { ids: b, bits: null },
        ],
        [
          { ids: a, bits: bitmapOf(a, a.length, Infinity) },
          { ids: b, bits: bitmapOf(b, b.length, Infinity) },
        ],
      ] as const) {
        if (kb.bits !== null) withBits++;
        expect(intersectFirst(ka, kb, max)).toEqual(expected);
        expect(intersectFirst(kb, ka, max)).toEqual(expected);
      }
    }
    // The bitmap path ran, including for lists whose ids pass the other's bitmap.
    expect(withBits).toBeGreaterThan(50);
    expect(intersectFirst({ ids: new Int32Array(0), bits: null }, { ids: Int32Array.of(1, 2), bits: null }, 5)).toEqual([]);
    const dense = Int32Array.from({ length: 100 }, (_, i) => i * 2);
    expect(
      intersectFirst(
        { ids: Int32Array.of(-3, 4, 7, 198, 200, 5000), bits: null },
        { ids: dense, bits: bitmapOf(dense, dense.length, Infinity) },
        10,
      ),
    ).toEqual([4, 198]);
  });

  it("makes a bitmap only for a dense list of non-negative ids within the size given", () => {
    const dense = Int32Array.from({ length: 1000 }, (_, i) => i * 10);
    const bits = bitmapOf(dense, dense.length, Infinity)!;
    expect(bits).not.toBeNull();
    for (let id = 0; id < bits.length * 32; id++) expect(((bits[id >>> 5]! >>> (id & 31)) & 1) === 1).toBe(id % 10 === 0 && id < 10_000);
    // One id per 100: too sparse.
    expect(
      bitmapOf(
        Int32Array.from({ length: 1000 }, (_, i) => i * 100),
        1000,
        Infinity,
      ),
    ).toBeNull();
    expect(bitmapOf(Int32Array.of(-1, 2, 3), 3, Infinity)).toBeNull();
    expect(bitmapOf(new Int32Array(0), 0, Infinity)).toBeNull();
    expect(bitmapOf(dense, dense.length, dense.byteLength + 100)).toBeNull();
  });
});

describe("LayeredRanker with kept word lists", () => {
  it("ranks exactly as a ranker reading every pool through FTS5, filtered or not, once the lists of common words are kept", async () => {
    const plain = new LayeredRanker(db, WEIGHTS, SCHEMA, { helper: false });
    const listed = new LayeredRanker(db, WEIGHTS, SCHEMA, { helper: { minRows: 0 } });
    try {
      const queries = queryWords(seededRandom(31), 150).map((words) => counted(words));
      const words = new Set(queries.flat().map((t) => t.term));
      expect(words.size).toBeGreaterThan(50);
      // Rankings before every list arrives mix pools from lists and pools read through FTS5.
      await keepLists(listed, queries, words.size);
      const used = listed.helperStatus().kept.used;
      const optionsFor = (q: number) =>
        q % 3 === 0
          ? { limit: 5, candidates: 20 }
          : q % 3 === 1
            ? { limit: 10, candidates: 40 }
            : { limit: 5, candidates: 20, where: { sql: "i.id % 2 = ?", params: [0] } };
      for (const [q, terms] of queries.entries()) {
        expect(listed.rank(terms, optionsFor(q)), terms.map((t) => t.term).join(" ")).toEqual(plain.rank(terms, optionsFor(q)));
      }
      // The lists were used by the unfiltered rankings (filtered ones read FTS5).
      expect(listed.helperStatus().kept.used).toBeGreaterThan(used + 100);
      expect(listed.helperStatus().kept.words).toBe(words.size);
    } finally {
      listed.close();
    }
    expect(listed.helperStatus().kept).toMatchObject({ words: 0, bytes: 0 });
  });

  it("finds rows appended since a list was read, and drops the lists after any other write by this connection or another", async () => {
    const listed = new LayeredRanker(db, WEIGHTS, SCHEMA, { helper: { minRows: 0 } });
    const plain = new LayeredRanker(db, WEIGHTS, SCHEMA, { helper: false });
    const other = new Database(file);
    try {
      // Words with kept lists whose pairs hold fewer rows than a pool's cap, so that new rows are pooled.
      const [a, b, c] = counted(vocabulary)
        .filter((t) => t.df >= 1_000 && t.df < 2_000)
        .slice(0, 3)
        .map((t) => t.term) as [string, string, string];
      const terms = () => counted([a, b, c]);
      await keepLists(listed, [terms()], 3);
      const same = () =>
        expect(listed.rank(terms(), { limit: 5, candidates: 20 })).toEqual(plain.rank(terms(), { limit: 5, candidates: 20 }));
      same();

      // Appended through `writing`: the lists stay, and the new rows (short, holding all three
      // words twice: the best matches) are found from them.
      const appended = listed.writing(
        () => db.transaction(() => [insertRow(`${a} ${b} ${c} ${a} ${b} ${c}`), insertRow(`${c} ${b} ${a} ${c} ${b} ${a}`)])(),
        () => true,
      );
      const top = listed.rank(terms(), { limit: 5, candidates: 20 });
      expect(
        top
          .slice(0, 2)
          .map((r) => r.id)
          .sort(),
      ).toEqual([...appended].sort());
      expect(listed.helperStatus().kept.words).toBe(3);
      same();

      // A row edited by this connection, outside `writing`: every list is dropped at the next ranking.
      const id = appended[0]!;
      db.transaction(() => {
        db.prepare("INSERT INTO docs_fts (docs_fts, rowid, body, who) VALUES ('delete', ?, ?, 'bob')").run(
          id,
          `${a} ${b} ${c} ${a} ${b} ${c}`,
        );
        db.prepare("UPDATE docs SET body = 'nothing here' WHERE id = ?").run(id);
        db.prepare("INSERT INTO docs_fts (rowid, body, who) VALUES (?, 'nothing here', 'bob')").run(id);
      })();
      const afterEdit = listed.rank(terms(), { limit: 5, candidates: 20 });
      expect(listed.helperStatus().kept.words).toBe(0);
      expect(afterEdit.map((r) => r.id)).not.toContain(id);
      same();

      // No list is asked for within 5 s of a drop (a store written by another process every few
      // seconds would have the helper read them all again after each commit).
      for (let i = 0; i < 3; i++) {
        await new Promise((resolve) => setTimeout(resolve, 150));
        listed.rank(terms(), { limit: 5, candidates: 20 });
      }
      expect(listed.helperStatus().kept.words).toBe(0);

      // Kept again, then a row appended by another connection: dropped as well (this connection
      // cannot tell what the other one wrote).
      pastRequestPause();
      await keepLists(listed, [terms()], 3);
      const otherId = Number(
        other.prepare("INSERT INTO docs (body, who, kind, session) VALUES (?, 'bob', 'fact', 's1')").run(`${a} ${b} ${c} ${c}`)
          .lastInsertRowid,
      );
      other.prepare("INSERT INTO docs_fts (rowid, body, who) VALUES (?, ?, 'bob')").run(otherId, `${a} ${b} ${c} ${c}`);
      const afterOther = listed.rank(terms(), { limit: 5, candidates: 20 });
      expect(listed.helperStatus().kept.words).toBe(0);
      expect(afterOther.map((r) => r.id)).toContain(otherId);
      same();

      // A write this connection reports as more than appends drops them too.
      pastRequestPause();
      await keepLists(listed, [terms()], 3);
      listed.writing(
        () => insertRow(`${a} ${b}`),
        () => false,
      );
      listed.rank(terms(), { limit: 5, candidates: 20 });
      expect(listed.helperStatus().kept.words).toBe(0);
      same();

      // A write while nothing is kept or asked for drops nothing, so it starts no pause: an agent
      // writing a turn between every two searches still gets its lists (well within 5 s).
      pastRequestPause();
      listed.writing(
        () => insertRow(`${a} ${c}`),
        () => true,
      );
      await keepLists(listed, [terms()], 3, 3_000);
      same();
    } finally {
      other.close();
      listed.close();
    }
  });

  it("keeps no more than its memory budget, least recently used lists going first", async () => {
    const budget = 48 * 1024;
    const small = new LayeredRanker(db, WEIGHTS, SCHEMA, { helper: { minRows: 0 }, postingBytes: budget });
    const plain = new LayeredRanker(db, WEIGHTS, SCHEMA, { helper: false });
    try {
      const queries = queryWords(seededRandom(8), 60).map((words) => counted(words));
      // Lists of up to an eighth of the budget are kept (words in at most about 1,500 rows here): the
      // rankings mix pools from lists with pools read through FTS5 throughout.
      await keepLists(small, queries, 3);
      for (let round = 0; round < 5; round++) {
        for (const terms of queries) {
          expect(small.rank(terms, { limit: 5, candidates: 20 })).toEqual(plain.rank(terms, { limit: 5, candidates: 20 }));
          expect(small.helperStatus().kept.bytes).toBeLessThanOrEqual(budget);
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(small.helperStatus().kept.used).toBeGreaterThan(0);
    } finally {
      small.close();
    }
  });

  it("drops its lists when the helper thread stops, and ranks through FTS5 from then on", async () => {
    const listed = new LayeredRanker(db, WEIGHTS, SCHEMA, { helper: { minRows: 0 } });
    const plain = new LayeredRanker(db, WEIGHTS, SCHEMA, { helper: false });
    try {
      const terms = counted([vocabulary[4]!, vocabulary[6]!, vocabulary[9]!]);
      await keepLists(listed, [terms], 3);
      // The thread ends on its own (as a crash would end it).
      void (listed as unknown as { helper: { worker: { terminate(): Promise<number> } } }).helper.worker.terminate();
      await until(() => listed.helperStatus().state === "stopped");
      expect(listed.rank(terms, { limit: 5, candidates: 20 })).toEqual(plain.rank(terms, { limit: 5, candidates: 20 }));
      expect(listed.helperStatus().kept).toMatchObject({ words: 0, bytes: 0 });
    } finally {
      listed.close();
    }
  });

  it("keeps none with postingBytes 0 or without a helper", () => {
    const terms = counted([vocabulary[4]!, vocabulary[6]!]);
    for (const options of [{ helper: { minRows: 0 }, postingBytes: 0 }, { helper: false as const }]) {
      const ranker = new LayeredRanker(db, WEIGHTS, SCHEMA, options);
      ranker.rank(terms, { limit: 5, candidates: 20 });
      expect(ranker.helperStatus().kept).toEqual({ words: 0, bytes: 0, used: 0 });
      ranker.close();
    }
  });
});

describe("PostingReaderThread.readPostings", () => {
  it("reads a word's ids in ascending order with the table's largest id, and answers null to open requests when closed", async () => {
    const helper = PostingReaderThread.start({ file, maxRows: 10 })!;
    try {
      await until(() => helper.usable);
      const word = vocabulary[5]!;
      const read = { sql: "SELECT rowid FROM docs_fts WHERE docs_fts MATCH ?", args: [`"${word}"`], maxSql: "SELECT MAX(id) FROM docs" };
      const answers: Array<{ ids: Int32Array; seenTo: number } | null> = [];
      expect(helper.readPostings(read, (list) => answers.push(list))).toBe(true);
      await until(() => {
        helper.receivePostings();
        return answers.length === 1;
      });
      const expected = db.prepare(read.sql).pluck().all(`"${word}"`) as number[];
      expect(Array.from(answers[0]!.ids)).toEqual(expected);
      expect(answers[0]!.seenTo).toBe(db.prepare(read.maxSql).pluck().get());
      // A read the helper cannot run is answered with null.
      expect(helper.readPostings({ ...read, sql: "SELECT nope FROM missing" }, (list) => answers.push(list))).toBe(true);
      // Received without the event loop: wait on the thread until the helper has answered.
      const deadline = Date.now() + 5000;
      while (answers.length < 2 && Date.now() < deadline) {
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
        helper.receivePostings();
      }
      expect(answers[1]).toBeNull();
      // Closed before it answers: the request is answered with null, once.
      expect(helper.readPostings(read, (list) => answers.push(list))).toBe(true);
      helper.close();
      expect(answers).toHaveLength(3);
      expect(answers[2]).toBeNull();
      expect(helper.readPostings(read, (list) => answers.push(list))).toBe(false);
    } finally {
      helper.close();
    }
  });
});
