import { describe, expect, it } from "vitest";
import { RRF_K, reciprocalRankFusion } from "./rank-fusion.js";
import { matchesFilter } from "./metadata-filter.js";

describe("reciprocalRankFusion", () => {
  it("rewards items both rankings agree on and keeps each component score", () => {
    const fused = reciprocalRankFusion(
      [{ id: "a", score: 0.9 }, { id: "b", score: 0.8 }, { id: "c", score: 0.1 }],
      [{ id: "c", score: 7 }, { id: "b", score: 5 }],
    );
    // c: ranks 3 + 1, b: ranks 2 + 2 — both beat a, which only one ranking found.
    expect(fused.map((f) => f.id)).toEqual(["c", "b", "a"]);
    expect(fused[1]).toEqual({ id: "b", score: 1 / (RRF_K + 2) + 1 / (RRF_K + 2), vector: 0.8, bm25: 5 });
    expect(fused[2]).toMatchObject({ id: "a", bm25: null });
  });
});

describe("matchesFilter (Pinecone filter syntax)", () => {
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
    expect(matchesFilter(meta, filter)).toBe(expected);
  });
});
