import { describe, expect, it } from "vitest";
import { bruteForceTopK, recallAt } from "./knn.js";
import { EmbeddingSpace } from "./vector-data.js";

describe("bruteForceTopK", () => {
  it("returns the same top-k as a full sort, best first", () => {
    const dim = 16;
    const space = new EmbeddingSpace(dim, 4, 0.35, 9);
    const data = space.sample(500, 1);
    const query = space.sample(1, 2);
    const scores = Array.from({ length: 500 }, (_, r) => {
      let s = 0;
      for (let d = 0; d < dim; d++) s += data[r * dim + d]! * query[d]!;
      return { index: r, score: s };
    }).sort((a, b) => b.score - a.score);
    const top = bruteForceTopK(data, dim, query, 10);
    expect(top.map((n) => n.index)).toEqual(scores.slice(0, 10).map((n) => n.index));
    expect(top[0]!.score).toBeCloseTo(scores[0]!.score, 5);
  });

  it("returns fewer than k when there are fewer rows", () => {
    const data = new Float32Array([1, 0, 0, 1]);
    expect(bruteForceTopK(data, 2, new Float32Array([1, 0]), 5).map((n) => n.index)).toEqual([0, 1]);
  });
});

describe("recallAt", () => {
  it("is the share of true neighbours found", () => {
    expect(recallAt([1, 2, 3, 4], [4, 3, 9, 8])).toBe(0.5);
    expect(recallAt([], [1])).toBe(1);
  });
});

describe("EmbeddingSpace", () => {
  it("samples deterministic unit vectors", () => {
    const space = new EmbeddingSpace(32);
    const a = space.sample(3, 5);
    expect(new EmbeddingSpace(32).sample(3, 5)).toEqual(a);
    for (let r = 0; r < 3; r++) {
      let norm = 0;
      for (let d = 0; d < 32; d++) norm += a[r * 32 + d]! ** 2;
      expect(norm).toBeCloseTo(1, 5);
    }
  });
});
