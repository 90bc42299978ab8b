import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import {
  DOCUMENT_FREQUENCY_CACHE_SIZE,
  DocumentFrequencies,
  ftsTermCounter,
  planQueryRanking,
  planRanking,
  planRelated,
  relatedTermCap,
  relatedToRank,
} from "./rank-plan.js";
import { relatedTerms } from "./related-terms.js";

describe("planRanking", () => {
  const counts: Record<string, number> = { rare: 40, common: 9_000, absent: 0 };
  const counting = () => {
    const asked: string[] = [];
    return { asked, df: (term: string) => (asked.push(term), counts[term] ?? 0) };
  };

  it("uses FTS5's bm25() in stores of at most 2,000 items, over the words some item holds", () => {
    const c = counting();
    expect(planRanking(["rare", "absent"], 2_000, c.df)).toEqual({ mode: "bm25", terms: ["rare"], floored: [] });
    expect(c.asked).toEqual(["rare", "absent"]);
    expect(planRanking(["absent"], 2_000, c.df)).toBeNull();
    expect(planRanking([], 2_000, c.df)).toBeNull();
  });

  it("leaves out words in at least half the items (FTS5's IDF floor) unless every word is one, offering the cheap ones back", () => {
    const df: Record<string, number> = { name: 40, half: 50, topic: 3, also: 49 };
    const count = (t: string) => df[t] ?? 0;
    // 100 items: "name" (40) and "also" (49) carry weight, "half" (50) is at the floor.
    expect(planRanking(["name", "half", "also"], 100, count)).toEqual({ mode: "bm25", terms: ["name", "also"], floored: ["half"] });
    expect(planRanking(["half", "topic"], 100, count)).toEqual({ mode: "bm25", terms: ["topic"], floored: ["half"] });
    // Only floored words: ranked by them, nothing left to offer back.
    expect(planRanking(["half"], 100, count)).toEqual({ mode: "bm25", terms: ["half"], floored: [] });
    // 80 items: "name" (40 = half) is floored too.
    expect(planRanking(["name", "topic"], 80, count)).toEqual({ mode: "bm25", terms: ["topic"], floored: ["name"] });
    // A floored word too common for FTS5's bm25() (60,000 of 100,000 items) is left out for good.
    expect(planRanking(["rare", "huge"], 100_000, (t) => ({ rare: 40, huge: 60_000 })[t] ?? 0)).toEqual({
      mode: "bm25",
      terms: ["rare"],
      floored: [],
    });
  });

  it("in larger stores drops words no item holds and uses the layered ranker only for a word in more than 0.2 % of the items", () => {
    const c = counting();
    expect(planRanking(["rare", "absent"], 100_000, c.df)).toEqual({ mode: "bm25", terms: ["rare"], floored: [] });
    expect(c.asked).toEqual(["rare", "absent"]);
    expect(planRanking(["absent"], 100_000, c.df)).toBeNull();
    expect(planRanking(["rare", "common", "absent"], 100_000, c.df)).toEqual({
      mode: "layered",
      terms: [
        { term: "rare", df: 40 },
        { term: "common", df: 9_000 },
      ],
      floored: [],
    });
    // The threshold grows with the store: 0.2 % of 5 million is 10,000 > 9,000.
    expect(planRanking(["common"], 5_000_000, c.df)).toEqual({ mode: "bm25", terms: ["common"], floored: [] });
  });
});

describe("DocumentFrequencies", () => {
  /** A counter that records each call (words and limit) and answers from `df`. */
  const recording = (df: (term: string) => number) => {
    const calls: Array<[string[], number]> = [];
    return { calls, count: (terms: readonly string[], limit: number) => (calls.push([[...terms], limit]), terms.map(df)) };
  };

  it("counts up to half the store, caches until the store grows by 20 %, then counts again", () => {
    const c = recording(() => 7);
    const frequencies = new DocumentFrequencies(c.count);
    expect(frequencies.get("word", 10_000)).toBe(7);
    expect(c.calls).toEqual([[["word"], 5_001]]);
    expect(frequencies.get("word", 12_000)).toBe(7);
    expect(c.calls).toHaveLength(1);
    expect(frequencies.get("word", 12_001)).toBe(7);
    expect(c.calls).toEqual([
      [["word"], 5_001],
      [["word"], 6_001],
    ]);
    frequencies.clear();
    frequencies.get("word", 12_001);
    expect(c.calls).toHaveLength(3);
  });

  it("keeps a count of 0 only while the store does not grow: a word first written after a search is counted again", () => {
    let df = 0;
    const c = recording(() => df);
    const frequencies = new DocumentFrequencies(c.count);
    expect(frequencies.get("zeppelin", 100)).toBe(0);
    expect(frequencies.get("zeppelin", 100)).toBe(0);
    expect(c.calls).toHaveLength(1);
    df = 1;
    expect(frequencies.get("zeppelin", 101)).toBe(1);
    expect(frequencies.get("zeppelin", 101)).toBe(1);
    expect(c.calls).toHaveLength(2);
  });

  it("keeps at most DOCUMENT_FREQUENCY_CACHE_SIZE words, dropping the least recently counted", () => {
    let counted = 0;
    const frequencies = new DocumentFrequencies((terms) => ((counted += terms.length), terms.map(() => 1)));
    for (let i = 0; i <= DOCUMENT_FREQUENCY_CACHE_SIZE; i++) frequencies.get(`w${i}`, 100);
    expect(counted).toBe(DOCUMENT_FREQUENCY_CACHE_SIZE + 1);
    frequencies.get(`w${DOCUMENT_FREQUENCY_CACHE_SIZE}`, 100); // newest: still cached
    expect(counted).toBe(DOCUMENT_FREQUENCY_CACHE_SIZE + 1);
    frequencies.get("w0", 100); // oldest: dropped, counted again
    expect(counted).toBe(DOCUMENT_FREQUENCY_CACHE_SIZE + 2);
  });

  it("counts every word not cached in one call, each once, and answers in the order asked", () => {
    const df: Record<string, number> = { a: 1, b: 2, c: 3 };
    const c = recording((t) => df[t] ?? 0);
    const frequencies = new DocumentFrequencies(c.count);
    expect(frequencies.get("b", 100)).toBe(2);
    expect(frequencies.getMany(["c", "b", "a", "c", "zz"], 100)).toEqual([3, 2, 1, 3, 0]);
    // "b" was cached; the others were counted together, "c" once.
    expect(c.calls).toEqual([
      [["b"], 51],
      [["c", "a", "zz"], 51],
    ]);
    expect(frequencies.getMany(["a", "b", "c"], 100)).toEqual([1, 2, 3]);
    expect(c.calls).toHaveLength(2);
    expect(frequencies.getMany([], 100)).toEqual([]);
    expect(c.calls).toHaveLength(2);
  });

  it("counts up to a lower limit when asked, and counts again for a higher one only when the count was cut short", () => {
    const df: Record<string, number> = { rare: 3, common: 40 };
    // A counter that stops at the limit, as FTS5's does.
    const c = recording(() => 0);
    const frequencies = new DocumentFrequencies((terms, limit) => (c.count(terms, limit), terms.map((t) => Math.min(df[t] ?? 0, limit))));
    expect(frequencies.getMany(["rare", "common"], 100, 6)).toEqual([3, 6]);
    // "rare" (3 < 6) is exact: reused at any limit; "common" stopped at 6: "at least 6", enough for
    // a limit of 6 or less, counted again for the default limit (51).
    expect(frequencies.get("common", 100, 5)).toBe(6);
    expect(c.calls).toHaveLength(1);
    expect(frequencies.getMany(["rare", "common"], 100)).toEqual([3, 40]);
    expect(c.calls).toEqual([
      [["rare", "common"], 6],
      [["common"], 51],
    ]);
  });

  it("lookup counts all its words together on its first call, and a word outside them alone", () => {
    const c = recording((t) => t.length);
    const frequencies = new DocumentFrequencies(c.count);
    const df = frequencies.lookup(["one", "three"], 1_000, 11);
    expect(c.calls).toHaveLength(0);
    expect(df("three")).toBe(5);
    expect(df("one")).toBe(3);
    expect(df("other")).toBe(5);
    expect(c.calls).toEqual([
      [["one", "three"], 11],
      [["other"], 11],
    ]);
  });

  it("refuses a counter that answers for fewer or more words than asked", () => {
    const frequencies = new DocumentFrequencies(() => [1]);
    expect(() => frequencies.getMany(["a", "b"], 10)).toThrow(/1 counts for 2 words/);
  });
});

describe("ftsTermCounter", () => {
  it("counts the rows of an FTS5 table holding each word, in any column, up to the limit, whatever the text", () => {
    const db = new Database(":memory:");
    try {
      db.exec("CREATE VIRTUAL TABLE t USING fts5(a, b, tokenize = 'porter unicode61 remove_diacritics 2')");
      const insert = db.prepare("INSERT INTO t (a, b) VALUES (?, ?)");
      for (let i = 0; i < 30; i++) insert.run(i % 3 === 0 ? "dogs and cats" : "cats only", i % 10 === 0 ? "a puppy" : "");
      const count = ftsTermCounter(db, "t");
      // Porter stems: "dog" finds "dogs"; "puppy" is only in column b; quotes and operators are text.
      expect(count(["dog", "cat", "puppy", "zebra", 'x" OR "cat', "NEAR(", "and"], 100)).toEqual([10, 30, 3, 0, 0, 0, 10]);
      expect(count(["cat", "dog"], 4)).toEqual([4, 4]);
      expect(count([], 10)).toEqual([]);
    } finally {
      db.close();
    }
  });
});

describe("relatedToRank", () => {
  it("counts a query's related words in one call, only up to the cap plus one, and keeps the rare ones", () => {
    const related = relatedTerms(["kids"]);
    expect(related).toContain("children");
    const calls: Array<[string[], number]> = [];
    const frequencies = new DocumentFrequencies(
      (terms, limit) => (calls.push([[...terms], limit]), terms.map((t) => (t === "children" ? 3 : 1_000))),
    );
    // 1,000 items: cap 50, counted up to 51.
    expect(relatedToRank(["kids"], 1_000, frequencies)).toEqual(["children"]);
    expect(calls).toEqual([[related, 51]]);
    expect(relatedToRank(["zzqx"], 1_000, frequencies)).toEqual([]);
    expect(calls).toHaveLength(1);
  });
});

describe("relatedTermCap", () => {
  it("is 5 % of the store, at most the rare-word cap, and 0 for an empty store", () => {
    expect(relatedTermCap(0)).toBe(0);
    expect(relatedTermCap(19)).toBe(0);
    expect(relatedTermCap(100)).toBe(5);
    expect(relatedTermCap(40_000)).toBe(2_000);
    expect(relatedTermCap(1_000_000)).toBe(2_000);
    expect(relatedTermCap(10_000_000)).toBe(20_000);
  });
});

describe("planRelated", () => {
  it("keeps the related words some item holds, in at most 5 % of the items and few enough for FTS5's bm25(), in the order given", () => {
    const df: Record<string, number> = { pets: 3, absent: 0, half: 50, also: 6, five: 5 };
    const count = (t: string) => df[t] ?? 0;
    // 100 items: at most 5.
    expect(planRelated(["also", "absent", "five", "half", "pets"], 100, count)).toEqual(["five", "pets"]);
    expect(planRelated([], 100, count)).toEqual([]);
    expect(planRelated(["pets"], 0, count)).toEqual([]);
    // 19 items: 5 % is below one item, so no related word is ranked.
    expect(planRelated(["pets"], 19, count)).toEqual([]);
    // 1,000,000 items: the rare-word cap (0.2 %, 2,000 items) is below 5 %; 2,000 is kept, 2,001 is not.
    const big = (t: string) => ({ at: 2_000, over: 2_001, rare: 7 })[t] ?? 0;
    expect(planRelated(["over", "at", "rare"], 1_000_000, big)).toEqual(["at", "rare"]);
    // 10,000,000 items: that cap grows with the store (20,000).
    expect(planRelated(["over"], 10_000_000, big)).toEqual(["over"]);
  });
});

describe("planQueryRanking", () => {
  it("is planRanking over the query words counted together, then relatedToRank, and null when no word is found", () => {
    const calls: Array<[string[], number]> = [];
    const counts: Record<string, number> = { kids: 4, park: 0, children: 3 };
    const frequencies = new DocumentFrequencies((terms, limit) => (calls.push([[...terms], limit]), terms.map((t) => counts[t] ?? 1_000)));
    const planned = planQueryRanking(["kids", "park"], 1_000, frequencies);
    expect(planned).toEqual({
      plan: planRanking(["kids", "park"], 1_000, (t) => counts[t] ?? 1_000),
      related: relatedToRank(["kids"], 1_000, frequencies),
    });
    expect(planned!.related).toContain("children");
    // The query's words in one call (up to half the store plus one), the related words in another.
    expect(calls[0]).toEqual([["kids", "park"], 501]);
    expect(calls[1]![1]).toBe(51);
    expect(planQueryRanking(["park"], 1_000, frequencies)).toBeNull();
  });
});
