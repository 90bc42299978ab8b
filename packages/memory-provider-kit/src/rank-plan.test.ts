import { describe, expect, it } from "vitest";
import { DOCUMENT_FREQUENCY_CACHE_SIZE, DocumentFrequencies, planRanking } from "./rank-plan.js";

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
    expect(planRanking(["rare", "huge"], 100_000, (t) => ({ rare: 40, huge: 60_000 })[t] ?? 0)).toEqual({ mode: "bm25", terms: ["rare"], floored: [] });
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
  it("counts up to half the store, caches until the store grows by 20 %, then counts again", () => {
    const calls: Array<[string, number]> = [];
    const frequencies = new DocumentFrequencies((term, limit) => (calls.push([term, limit]), 7));
    expect(frequencies.get("word", 10_000)).toBe(7);
    expect(calls).toEqual([["word", 5_001]]);
    expect(frequencies.get("word", 12_000)).toBe(7);
    expect(calls).toHaveLength(1);
    expect(frequencies.get("word", 12_001)).toBe(7);
    expect(calls).toEqual([
      ["word", 5_001],
      ["word", 6_001],
    ]);
    frequencies.clear();
    frequencies.get("word", 12_001);
    expect(calls).toHaveLength(3);
  });

  it("keeps a count of 0 only while the store does not grow: a word first written after a search is counted again", () => {
    let df = 0;
    const calls: string[] = [];
    const frequencies = new DocumentFrequencies((term) => (calls.push(term), df));
    expect(frequencies.get("zeppelin", 100)).toBe(0);
    expect(frequencies.get("zeppelin", 100)).toBe(0);
    expect(calls).toHaveLength(1);
    df = 1;
    expect(frequencies.get("zeppelin", 101)).toBe(1);
    expect(frequencies.get("zeppelin", 101)).toBe(1);
    expect(calls).toHaveLength(2);
  });

  it("keeps at most DOCUMENT_FREQUENCY_CACHE_SIZE words, dropping the least recently counted", () => {
    let counted = 0;
    const frequencies = new DocumentFrequencies(() => (counted++, 1));
    for (let i = 0; i <= DOCUMENT_FREQUENCY_CACHE_SIZE; i++) frequencies.get(`w${i}`, 100);
    expect(counted).toBe(DOCUMENT_FREQUENCY_CACHE_SIZE + 1);
    frequencies.get(`w${DOCUMENT_FREQUENCY_CACHE_SIZE}`, 100); // newest: still cached
    expect(counted).toBe(DOCUMENT_FREQUENCY_CACHE_SIZE + 1);
    frequencies.get("w0", 100); // oldest: dropped, counted again
    expect(counted).toBe(DOCUMENT_FREQUENCY_CACHE_SIZE + 2);
  });
});
