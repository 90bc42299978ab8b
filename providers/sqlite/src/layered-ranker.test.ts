import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { BM25_WEIGHTS, openDatabase, type Db } from "./database.js";
import { LayeredRanker } from "@hermes/memory-provider-kit/sqlite";
import { MemoryStore } from "./memory-store.js";
import { until } from "@hermes/test-support";

let dir: string;
let db: Db;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sqlite-layered-"));
  db = openDatabase(path.join(dir, "m.db"));
});
afterEach(() => {
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Each of `words` with the number of rows FTS5 finds it in. */
function countedTerms(words: readonly string[]): Array<{ term: string; df: number }> {
  const count = db.prepare(`SELECT COUNT(*) AS n FROM items_fts WHERE items_fts MATCH ?`).pluck();
  return words.map((term) => ({ term, df: count.get(`"${term}"`) as number }));
}

/** The ids of FTS5's own top `limit` rows for `words` OR-ed (ORDER BY rank, ties by row id). */
function exactTop(words: readonly string[], limit: number): number[] {
  return db
    .prepare(`SELECT rowid AS id FROM items_fts WHERE items_fts MATCH ? ORDER BY rank, rowid LIMIT ?`)
    .pluck()
    .all(words.map((w) => `"${w}"`).join(" OR "), limit) as number[];
}

/**
 * Asserts that the ranker, asked for every match of `words` (each found in some row), gives FTS5's
 * own bm25() order and scores.
 */
function expectFtsRanking(words: string[], rows: number): void {
  const terms = countedTerms(words);
  expect(terms.every((t) => t.df > 0)).toBe(true);
  const exact = db
    .prepare(
      `SELECT rowid AS id, bm25(items_fts, ${BM25_WEIGHTS.content}, ${BM25_WEIGHTS.speaker}) AS rank FROM items_fts WHERE items_fts MATCH ? ORDER BY rank, rowid`,
    )
    .all(words.map((w) => `"${w}"`).join(" OR ")) as Array<{ id: number; rank: number }>;
  const ranked = new LayeredRanker(db, BM25_WEIGHTS).rank(terms, { limit: rows, candidates: rows });
  expect(ranked.map((r) => r.id)).toEqual(exact.map((r) => r.id));
  ranked.forEach((r, i) => expect(r.rank).toBeCloseTo(exact[i]!.rank, 6));
}

describe("LayeredRanker", () => {
  it("gives FTS5's own bm25() scores and order when it reads every match", () => {
    const store = new MemoryStore(db, path.join(dir, "m.db"));
    const words = ["apple", "banana", "cherry", "damson"];
    const items = Array.from({ length: 60 }, (_, i) => ({
      kind: "fact" as const,
      content: `note ${i} ${words.filter((_, w) => (i + w) % (w + 3) === 0).join(" ")} ${"filler ".repeat(i % 7)}`,
    }));
    store.insertMany(items);
    expectFtsRanking(words, items.length);
  });

  it("gives FTS5's scores for words in any case, with accents and outside ASCII", () => {
    const store = new MemoryStore(db, path.join(dir, "m.db"));
    const forms = [
      // No lower-case form: counting must ignore case.
      ["APPLE", "Apples", "Apple"],
      ["ZÜRICH", "Zurich", "ZURICH"],
      ["CRÈME", "Creme", "Crèmes"],
      ["STRAßE", "Straße", "STRAßE"],
    ];
    const items = Array.from({ length: 48 }, (_, i) => ({
      kind: "fact" as const,
      content: `Note ${i} ${forms
        .filter((_, w) => (i + w) % (w + 3) === 0)
        .map((f) => (i % 4 === 0 ? `${f[i % 3]} ${f[(i + 1) % 3]}` : f[i % 3]))
        .join(" ")} ${"Ärger ".repeat(i % 5)}`,
    }));
    store.insertMany(items);
    expectFtsRanking(["apple", "zurich", "creme", "straße"], items.length);
  });

  it("finds the best rows of a layer larger than a recency window, by their length, not their age", () => {
    const store = new MemoryStore(db, path.join(dir, "m.db"));
    // The best match (shortest row holding both words) is the oldest of 300 rows that hold both:
    // a ranker reading only the newest rows of the layer would miss it.
    const filler = (i: number) => Array.from({ length: 30 + (i % 20) }, (_, w) => `word${(i * 7 + w) % 97}`).join(" ");
    store.insertMany([
      { kind: "turn", sessionId: "a", content: "alpha beta" },
      ...Array.from({ length: 300 }, (_, i) => ({
        kind: "turn" as const,
        sessionId: i % 2 ? "a" : "b",
        content: `alpha ${filler(i)} beta gamma`,
      })),
      ...Array.from({ length: 2500 }, (_, i) => ({
        kind: "turn" as const,
        sessionId: "b",
        content: `${i % 5 ? "delta" : "gamma"} ${filler(i)}`,
      })),
    ]);
    const terms = countedTerms(["alpha", "beta", "gamma"]);
    const exact = exactTop(["alpha", "beta", "gamma"], 5);
    const ranker = new LayeredRanker(db, BM25_WEIGHTS);
    const ranked = ranker.rank(terms, { limit: 5, candidates: 20 });
    expect(ranked[0]!.id).toBe(1);
    expect(ranked.slice(0, 5).map((r) => r.id)).toEqual(exact);
    // Filters apply to the pooled rows too.
    const inA = ranker.rank(terms, { limit: 5, candidates: 20, session: "a" });
    expect(inA[0]!.id).toBe(1);
    const sessionOf = db.prepare(`SELECT session_id FROM items WHERE id = ?`).pluck();
    for (const r of inA) expect(sessionOf.get(r.id)).toBe("a");
    expect(ranker.rank(terms, { limit: 5, candidates: 20, session: "b" }).map((r) => r.id)).not.toContain(1);
  });

  it("returns exactly FTS5's top 5 on a generated store where its bounds are provable", () => {
    // Every word at most once per item and item lengths within 0.5–1.5× the average, so a word adds
    // at most 1.5× its IDF (the ranker's stopping bound); queries of 2–3 words, each in fewer items
    // than a pool holds, so every pair and every word is read completely when needed.
    const store = new MemoryStore(db, path.join(dir, "m.db"));
    let seed = 20261;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed / 2_147_483_648;
    };
    const letters = "bcdfghjkmn";
    const vocab = Array.from(
      { length: 300 },
      (_, i) =>
        `zq${String(i)
          .split("")
          .map((d) => letters[Number(d)])
          .join("")}x`,
    );
    // Zipf-like: word i is drawn with weight 1 / (i + 5).
    const weights = vocab.map((_, i) => 1 / (i + 5));
    const total = weights.reduce((a, b) => a + b, 0);
    const draw = () => {
      let r = random() * total;
      for (const [i, w] of weights.entries()) if ((r -= w) <= 0) return vocab[i]!;
      return vocab[vocab.length - 1]!;
    };
    const items = Array.from({ length: 1500 }, () => {
      const words = new Set<string>();
      const length = 8 + Math.floor(random() * 13);
      while (words.size < length) words.add(draw());
      return { kind: "fact" as const, content: [...words].join(" ") };
    });
    store.insertMany(items);
    const count = db.prepare(`SELECT COUNT(*) AS n FROM items_fts WHERE items_fts MATCH ?`).pluck();
    const df = new Map(vocab.map((w) => [w, count.get(`"${w}"`) as number]));
    const usable = vocab.filter((w) => df.get(w)! >= 3 && df.get(w)! < 500);
    expect(usable.length).toBeGreaterThan(100);
    const exact = db.prepare(
      `SELECT rowid AS id, bm25(items_fts, ${BM25_WEIGHTS.content}, ${BM25_WEIGHTS.speaker}) AS rank FROM items_fts WHERE items_fts MATCH ? ORDER BY rank, rowid LIMIT 5`,
    );
    const ranker = new LayeredRanker(db, BM25_WEIGHTS);
    for (let q = 0; q < 60; q++) {
      const words = new Set<string>();
      const size = 2 + (q % 2);
      while (words.size < size) words.add(usable[Math.floor(random() * usable.length)]!);
      const terms = [...words].map((term) => ({ term, df: df.get(term)! }));
      const expected = exact.all([...words].map((w) => `"${w}"`).join(" OR ")) as Array<{ id: number; rank: number }>;
      const ranked = ranker.rank(terms, { limit: 5, candidates: 20 }).slice(0, 5);
      expect(
        ranked.map((r) => r.rank.toFixed(9)),
        [...words].join(" "),
      ).toEqual(expected.map((r) => r.rank.toFixed(9)));
      // Ids agree except among rows tied with the fifth score.
      const fifth = expected[expected.length - 1]!.rank;
      expect(ranked.filter((r) => r.rank < fifth - 1e-9).map((r) => r.id)).toEqual(
        expected.filter((r) => r.rank < fifth - 1e-9).map((r) => r.id),
      );
    }
  });

  it("reads a later pair of a layer while a row pooled from an earlier pair could place with its words", () => {
    const store = new MemoryStore(db, path.join(dir, "m.db"));
    const filler = (i: number, n: number) =>
      Array.from(
        { length: n },
        (_, w) => `filler${String.fromCharCode(97 + ((i + w) % 26))}${String.fromCharCode(97 + ((i * 3 + w) % 26))}`,
      ).join(" ");
    store.insertMany([
      // Five rows with the rarest word settle a bar that new rows of the pair (gamma, delta) cannot beat…
      ...Array.from({ length: 5 }, (_, i) => ({ kind: "turn" as const, sessionId: "s", content: `alpha beta ${filler(i, 4)}` })),
      // …but this row, pooled from (gamma, beta) and shorter than average, holds delta too.
      { kind: "turn" as const, sessionId: "s", content: `beta gamma delta ${filler(7, 2)}` },
      // Shorter rows of (gamma, beta) look better until delta is known.
      ...Array.from({ length: 40 }, (_, i) => ({ kind: "turn" as const, sessionId: "s", content: `beta gamma ${filler(i, 1)}` })),
      ...Array.from({ length: 60 }, (_, i) => ({ kind: "turn" as const, sessionId: "s", content: `beta ${filler(i, 10)}` })),
      ...Array.from({ length: 300 }, (_, i) => ({ kind: "turn" as const, sessionId: "s", content: `delta ${filler(i, 10)}` })),
      ...Array.from({ length: 2500 }, (_, i) => ({ kind: "turn" as const, sessionId: "s", content: filler(i, 10) })),
    ]);
    const terms = countedTerms(["alpha", "beta", "gamma", "delta"]);
    const exact = exactTop(["alpha", "beta", "gamma", "delta"], 5);
    expect(exact[0]).toBe(6);
    const ranked = new LayeredRanker(db, BM25_WEIGHTS).rank(terms, { limit: 5, candidates: 20 });
    expect(ranked.slice(0, 5).map((r) => r.id)).toEqual(exact);
  });

  it("ranks the same with every row length kept in memory as when it reads them as needed", () => {
    const store = new MemoryStore(db, path.join(dir, "m.db"));
    // 300 rows hold both words; the shortest (the best match) is the newest, so a ranker that
    // picked the rows it scores by anything but their true length would miss it.
    const filler = (i: number, n: number) => Array.from({ length: n }, (_, w) => `word${(i * 7 + w) % 97}`).join(" ");
    store.insertMany([
      ...Array.from({ length: 300 }, (_, i) => ({ kind: "fact" as const, content: `alpha ${filler(i, 12 + (i % 40))} beta ${i}` })),
      ...Array.from({ length: 2500 }, (_, i) => ({
        kind: "fact" as const,
        content: `${i % 5 ? "delta" : "gamma"} ${filler(i, 10)} n${i}`,
      })),
      { kind: "fact" as const, content: "alpha beta" },
    ]);
    const terms = countedTerms(["alpha", "beta", "gamma"]);
    const exact = exactTop(["alpha", "beta", "gamma"], 5);
    expect(exact[0]).toBe(2801);
    const cold = new LayeredRanker(db, BM25_WEIGHTS).rank(terms, { limit: 5, candidates: 20 });
    const warmed = new LayeredRanker(db, BM25_WEIGHTS);
    let steps = 0;
    while (!warmed.warmLengths(1000)) steps++;
    expect(steps).toBe(2);
    expect(warmed.rank(terms, { limit: 5, candidates: 20 })).toEqual(cold);
    expect(cold.slice(0, 5).map((r) => r.id)).toEqual(exact);
    // Lengths read during one search serve the next.
    const reused = new LayeredRanker(db, BM25_WEIGHTS);
    reused.rank(terms, { limit: 5, candidates: 20 });
    expect(reused.rank(terms, { limit: 5, candidates: 20 })).toEqual(cold);
  });

  it("finds an edited row by its new length although the old one was kept in memory", async () => {
    const file = path.join(dir, "m.db");
    const store = new MemoryStore(db, file);
    const filler = (i: number, n: number) => Array.from({ length: n }, (_, w) => `word${(i * 7 + w) % 97}`).join(" ");
    // "gamma" in more than 2,000 rows makes the search layered; the pair (alpha, beta) pools 301
    // rows, more than are scored, so the kept lengths choose which are.
    const ids = store.insertMany([
      { kind: "fact" as const, content: `alpha beta ${filler(1, 300)}` },
      ...Array.from({ length: 300 }, (_, i) => ({ kind: "fact" as const, content: `alpha ${filler(i, 12 + (i % 20))} beta ${i}` })),
      ...Array.from({ length: 4600 }, (_, i) => ({
        kind: "fact" as const,
        content: `${i % 2 ? "gamma" : "delta"} ${filler(i, 10)} n${i}`,
      })),
    ]);
    // Every row's length kept in memory, as the provider's background warming leaves them.
    const steps = vi.spyOn(LayeredRanker.prototype, "warmLengths");
    store.warmRankerInBackground(
      () => true,
      (error) => expect.fail(String(error)),
    );
    await vi.waitFor(() => expect(steps.mock.results.at(-1)?.value).toBe(true), { timeout: 15_000 });
    steps.mockRestore();
    expect(store.search("alpha beta gamma", { limit: 5 }).map((h) => h.id)).not.toContain(ids[0]);
    expect(store.update(ids[0]!, { content: "alpha beta" })).toBe(true);
    expect(store.search("alpha beta gamma", { limit: 5 })[0]!.id).toBe(ids[0]);
  });

  it("warms in the background on timers until every length is kept, one chain at a time", async () => {
    const store = new MemoryStore(db, path.join(dir, "m.db"));
    store.insertMany(Array.from({ length: 5000 }, (_, i) => ({ kind: "fact" as const, content: `note ${i} ${"word ".repeat(i % 9)}` })));
    const ranker = new LayeredRanker(db, BM25_WEIGHTS);
    const steps = vi.spyOn(ranker, "warmLengths");
    const errors: unknown[] = [];
    const secondWanted = vi.fn(() => true);
    ranker.warmInBackground(
      () => true,
      (error) => errors.push(error),
    );
    ranker.warmInBackground(secondWanted, (error) => errors.push(error));
    // Nothing is read on the caller's turn of the event loop.
    expect(steps).not.toHaveBeenCalled();
    await vi.waitFor(() => expect(steps.mock.results.at(-1)?.value).toBe(true), { timeout: 15_000 });
    // A second chain would have taken its first step right after the first chain's (timers of one
    // delay run in the order they were set), long before the first chain's last step.
    expect(secondWanted).not.toHaveBeenCalled();
    // 5,000 rows at 2,000 per step: three steps, the last one short; the second call started no chain.
    expect(steps.mock.results.map((r) => r.value)).toEqual([false, false, true]);
    expect(errors).toEqual([]);
  });

  it("stops warming when no longer wanted, and when a step fails (reporting it)", async () => {
    const store = new MemoryStore(db, path.join(dir, "m.db"));
    store.insertMany(Array.from({ length: 5000 }, (_, i) => ({ kind: "fact" as const, content: `note ${i}` })));
    const ranker = new LayeredRanker(db, BM25_WEIGHTS);
    const steps = vi.spyOn(ranker, "warmLengths");
    // The chain asks before every step; once told no, it ends in that step and sets no timer.
    let toldToStop = false;
    ranker.warmInBackground(
      () => {
        const wanted = steps.mock.calls.length < 1;
        if (!wanted) toldToStop = true;
        return wanted;
      },
      () => undefined,
    );
    await until(() => toldToStop, 30_000);
    expect(steps).toHaveBeenCalledTimes(1);
    // A later call starts a new chain, which goes on from where the last one stopped.
    const failure = new Error("disk I/O error");
    steps.mockImplementationOnce(() => {
      throw failure;
    });
    const errors: unknown[] = [];
    ranker.warmInBackground(
      () => true,
      (error) => errors.push(error),
    );
    // The failing step reports and ends the chain in the same step (no timer set after it); the
    // new chain below could not start while this one ran.
    await vi.waitFor(() => expect(errors).toEqual([failure]), { timeout: 15_000 });
    expect(steps).toHaveBeenCalledTimes(2);
    ranker.warmInBackground(
      () => true,
      (error) => errors.push(error),
    );
    await vi.waitFor(() => expect(steps.mock.results.at(-1)?.value).toBe(true), { timeout: 15_000 });
    expect(steps.mock.results.slice(2).map((r) => r.value)).toEqual([false, true]);
  });

  it("returns nothing for no words or an empty store", () => {
    const ranker = new LayeredRanker(db, BM25_WEIGHTS);
    expect(ranker.rank([], { limit: 5, candidates: 20 })).toEqual([]);
    expect(ranker.rank([{ term: "apple", df: 1 }], { limit: 5, candidates: 20 })).toEqual([]);
  });
});

describe("the store's pool helper thread", () => {
  it("is started by the store's background warm-up when the store is large enough, and stopped when the store closes", async () => {
    // A store starts a helper at 200,000 items; this one is told to at any size.
    const store = new MemoryStore(db, path.join(dir, "m.db"), { ranker: { helper: { minRows: 1 } } });
    store.insertMany(Array.from({ length: 50 }, (_, i) => ({ kind: "fact" as const, content: `alpha beta ${i}` })));
    const errors: unknown[] = [];
    store.warmRankerInBackground(
      () => true,
      (error) => errors.push(error),
    );
    const ranker = (store as unknown as { layered: LayeredRanker }).layered;
    await until(() => ranker.helperStatus().state === "running");
    expect(store.search("alpha beta", { limit: 5 })).toHaveLength(5);
    store.close();
    expect(ranker.helperStatus()).toMatchObject({ state: "stopped", reason: "closed" });
    expect(errors).toEqual([]);
  });

  it("keeps the ranker's word lists across the store's own inserts, and finds the new items from them", async () => {
    const store = new MemoryStore(db, path.join(dir, "m.db"), { ranker: { helper: { minRows: 1 } } });
    try {
      // Two words each in a third of 6,300 items (enough for the layered ranker and for kept lists), together in 30.
      store.insertMany(
        Array.from({ length: 6300 }, (_, i) => ({
          kind: "fact" as const,
          content: i < 30 ? `gamma delta both ${i}` : i % 3 === 0 ? `gamma only ${i}` : i % 3 === 1 ? `delta only ${i}` : `neither ${i}`,
        })),
      );
      const ranker = (store as unknown as { layered: LayeredRanker }).layered;
      await until(() => {
        store.search("gamma delta", { limit: 5 });
        return ranker.helperStatus().kept.words === 2;
      }, 20_000);
      const used = ranker.helperStatus().kept.used;
      store.insertMany([{ kind: "fact", content: "gamma delta gamma delta" }]);
      expect(store.search("gamma delta", { limit: 5 })[0]?.content).toBe("gamma delta gamma delta");
      expect(ranker.helperStatus().kept).toMatchObject({ words: 2, used: used + 2 });
      // Deleting an item is not an append: the lists are read again.
      store.forget(store.search("gamma delta", { limit: 1 })[0]!.id);
      expect(store.search("gamma delta", { limit: 5 })[0]?.content).not.toBe("gamma delta gamma delta");
      expect(ranker.helperStatus().kept.words).toBe(0);
    } finally {
      store.close();
    }
  });
});
