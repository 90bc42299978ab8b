import { describe, expect, it } from "vitest";
import { bestByRank, keptOfExactTop } from "./top-k.js";

const exact = [
  { id: 1, rank: -9 },
  { id: 2, rank: -8 },
  { id: 3, rank: -7 },
  { id: 4, rank: -6 },
  { id: 5, rank: -5 },
];

describe("keptOfExactTop", () => {
  it("counts returned ids that are in the exact top k", () => {
    expect(keptOfExactTop(exact, [], ["1", "2", "3", "4", "5"])).toBe(5);
    expect(keptOfExactTop(exact, [{ id: 9, rank: -1 }], ["1", "9", "3"])).toBe(2);
  });

  it("counts a row tied with the k-th best score, which FTS5 happened to list later", () => {
    const ranks = [
      { id: 6, rank: -5 },
      { id: 7, rank: -5 + 1e-12 },
    ];
    expect(keptOfExactTop(exact, ranks, ["1", "2", "3", "4", "6"])).toBe(5);
    expect(keptOfExactTop(exact, ranks, ["1", "2", "3", "4", "7"])).toBe(5);
  });

  it("does not count a row scoring below the k-th best, or one that does not match at all", () => {
    expect(keptOfExactTop(exact, [{ id: 6, rank: -4.999 }], ["1", "2", "3", "4", "6"])).toBe(4);
    expect(keptOfExactTop(exact, [], ["1", "2", "3", "4", "8"])).toBe(4);
  });

  it("never counts more than k, nor one id twice", () => {
    const ties = [6, 7, 8].map((id) => ({ id, rank: -5 }));
    expect(keptOfExactTop(exact, ties, ["1", "2", "3", "4", "5", "6", "7", "8"])).toBe(5);
    expect(keptOfExactTop(exact, [], ["1", "1", "1"])).toBe(1);
    expect(keptOfExactTop([], [], ["1"])).toBe(0);
  });
});

describe("bestByRank", () => {
  it("returns the k lowest ranks, best first, ties by id, like a full sort", () => {
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const rows = Array.from({ length: 500 }, (_, id) => ({ id, rank: Math.floor(next() * 50) }));
    const sorted = [...rows].sort((a, b) => a.rank - b.rank || a.id - b.id);
    for (const k of [1, 10, 499, 500, 600]) expect(bestByRank(rows, k), String(k)).toEqual(sorted.slice(0, k));
    expect(bestByRank(rows, 0)).toEqual([]);
  });
});
