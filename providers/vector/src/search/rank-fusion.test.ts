import { describe, expect, it } from "vitest";
import { seededRandom } from "@hermes/test-support";
import {
  LEXICAL_EMBEDDER_FUSION,
  RRF_K,
  SEMANTIC_EMBEDDER_FUSION,
  reciprocalRankFusion,
  scoreFusion,
  scoreFusionByKey,
} from "./rank-fusion.js";
import { matchesMetadataFilter } from "../metadata-filter.js";

describe("reciprocalRankFusion", () => {
  it("rewards items both rankings agree on and keeps each component score", () => {
    const fused = reciprocalRankFusion(
      [
        { id: "a", score: 0.9 },
        { id: "b", score: 0.8 },
        { id: "c", score: 0.1 },
      ],
      [
        { id: "c", score: 7 },
        { id: "b", score: 5 },
      ],
    );
    // c: ranks 3 + 1, b: ranks 2 + 2 — both beat a, which only one ranking found.
    expect(fused.map((f) => f.id)).toEqual(["c", "b", "a"]);
    expect(fused[1]).toEqual({ id: "b", score: 1 / (RRF_K + 2) + 1 / (RRF_K + 2), vector: 0.8, bm25: 5 });
    expect(fused[2]).toMatchObject({ id: "a", bm25: null });
  });
});

describe("matchesMetadataFilter (Pinecone filter syntax)", () => {
  const meta = { kind: "fact", n: 3, tags: ["a", "b"], ok: true };
  it.each([
    [{ kind: "fact" }, true],
    [{ kind: { $ne: "fact" } }, false],
    [{ n: { $gt: 2, $lte: 3 } }, true],
    [{ n: { $lt: 3 } }, false],
    [{ kind: { $in: ["turn", "fact"] } }, true],
    [{ kind: { $nin: ["fact"] } }, false],
    [{ tags: "b" }, true],
    [{ tags: { $in: ["z"] } }, false],
    [{ missing: { $exists: false } }, true],
    [{ $or: [{ kind: "turn" }, { ok: true }] }, true],
    [{ $and: [{ kind: "fact" }, { n: { $gte: 4 } }] }, false],
  ])("%j → %s", (filter, expected) => {
    expect(matchesMetadataFilter(meta, filter)).toBe(expected);
  });
});

describe("scoreFusion", () => {
  it("keeps BM25 margins, lets vector agreement reorder close keyword matches, and tails vector-only hits", () => {
    const fused = scoreFusion(
      [
        { id: "b", score: 0.5 },
        { id: "v", score: 0.45 },
        { id: "a", score: 0.1 },
      ],
      [
        { id: "a", score: 10 },
        { id: "b", score: 9.5 },
        { id: "c", score: 2 },
      ],
      LEXICAL_EMBEDDER_FUSION,
    );
    // b: 0.95 · (1 + 0.5 · 1) + 0.05 beats a: 1 · (1 + 0) + 0; c (weak keyword match) stays above v (vector only).
    expect(fused.map((f) => f.id)).toEqual(["b", "a", "c", "v"]);
    expect(fused[0]).toEqual({ id: "b", score: 0.95 * 1.5 + 0.05, vector: 0.5, bm25: 9.5 });
    expect(fused.find((f) => f.id === "c")).toMatchObject({ vector: null, bm25: 2 });
  });

  it("weighs both rankings equally for semantic embedders and handles empty lists", () => {
    const fused = scoreFusion(
      [
        { id: "x", score: 0.9 },
        { id: "y", score: 0.3 },
      ],
      [{ id: "y", score: 4 }],
      SEMANTIC_EMBEDDER_FUSION,
    );
    expect(fused.map((f) => [f.id, f.score])).toEqual([
      ["y", 1],
      ["x", 1],
    ]); // tie: the keyword match first
    expect(scoreFusion([], [], LEXICAL_EMBEDDER_FUSION)).toEqual([]);
    expect(scoreFusion([{ id: "only", score: 0.2 }], [], LEXICAL_EMBEDDER_FUSION)[0]!.score).toBeCloseTo(0.05);
  });
});

describe("scoreFusionByKey", () => {
  it("gives scoreFusion's results, scores and order, each with its row key (random rankings, ties and duplicates)", () => {
    const next = seededRandom(7);
    for (let round = 0; round < 200; round++) {
      const rows = Array.from({ length: 1 + Math.floor(next() * 30) }, (_, key) => ({ key: key * 7 + 3, id: `row-${key}` }));
      // Scores from a few values, so ties are common; a row may appear twice in one list.
      const ranking = () =>
        Array.from({ length: Math.floor(next() * 25) }, () => {
          const row = rows[Math.floor(next() * rows.length)]!;
          return { ...row, score: Math.floor(next() * 4) / 4 };
        }).sort((a, b) => b.score - a.score);
      const vector = ranking();
      const keyword = ranking();
      for (const weights of [LEXICAL_EMBEDDER_FUSION, SEMANTIC_EMBEDDER_FUSION]) {
        const keyed = scoreFusionByKey(vector, keyword, weights);
        expect(keyed.map(({ key: _key, ...result }) => result)).toEqual(scoreFusion(vector, keyword, weights));
        for (const result of keyed) expect(rows.find((r) => r.key === result.key)?.id).toBe(result.id);
      }
    }
  });
});
