import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { HashingEmbedder } from "../embedders/hashing-embedder.js";
import type { Embedder } from "../embedders/embedder.js";
import { fusionWeightsFor, LEXICAL_EMBEDDER_FUSION, scoreFusion, SEMANTIC_EMBEDDER_FUSION } from "./rank-fusion.js";
import { VectorMemoryProvider } from "../vector-memory-provider.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

/** A semantic-looking embedder (any id not starting with `hashing`) with the hashing embedder's vectors. */
function semanticEmbedder(dimensions: number): Embedder {
  const inner = new HashingEmbedder({ dimensions });
  return { id: "custom-semantic-test", dimensions, embed: (texts) => inner.embed(texts) };
}

async function fusedScoreOfOnlyHit(embedderInstance?: Embedder): Promise<number> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-vector-fusion-"));
  cleanups.push(() => fs.rmSync(home, { recursive: true, force: true }));
  const provider = new VectorMemoryProvider({ env: {}, dimensions: 64, ...(embedderInstance ? { embedderInstance } : {}) });
  await provider.initialize("s1", { hermesHome: home });
  cleanups.push(() => provider.shutdown());
  provider.remember({ content: "Caroline adopted a golden retriever puppy", kind: "fact" });
  await provider.flush();
  const [hit] = await provider.search("golden retriever", { limit: 1 });
  return (hit!.metadata.scores as { fused: number }).fused;
}

describe("fusion weights per embedder", () => {
  it("the lexical hashing embedder gets LEXICAL_EMBEDDER_FUSION, every other embedder SEMANTIC_EMBEDDER_FUSION", () => {
    expect(fusionWeightsFor("hashing-v1")).toBe(LEXICAL_EMBEDDER_FUSION);
    for (const id of ["openai:text-embedding-3-small", "onnx:all-MiniLM-L6-v2", "custom-semantic-test"])
      expect(fusionWeightsFor(id)).toBe(SEMANTIC_EMBEDDER_FUSION);
    // The two sets must rank differently, or swapping them would go unnoticed.
    const vector = [
      { id: "paraphrase", score: 0.9 },
      { id: "keyword", score: 0.1 },
      { id: "both", score: 0.8 },
    ];
    const keyword = [
      { id: "keyword", score: 10 },
      { id: "both", score: 6 },
    ];
    expect(scoreFusion(vector, keyword, LEXICAL_EMBEDDER_FUSION)[0]!.id).toBe("keyword");
    expect(scoreFusion(vector, keyword, SEMANTIC_EMBEDDER_FUSION)[0]!.id).toBe("both");
  });

  // One stored item is both the best BM25 hit (b = 1) and the only vector hit (v = 1), so its fused
  // score is bm25 · (1 + agreement) + vector: 1.55 with the lexical weights, 2 with the semantic ones.
  it("the provider fuses with the lexical weights when it runs the hashing embedder", async () => {
    const w = LEXICAL_EMBEDDER_FUSION;
    expect(await fusedScoreOfOnlyHit()).toBeCloseTo(w.bm25 * (1 + w.agreement) + w.vector, 6);
  });

  it("the provider fuses with the semantic weights when it runs any other embedder", async () => {
    const w = SEMANTIC_EMBEDDER_FUSION;
    expect(await fusedScoreOfOnlyHit(semanticEmbedder(64))).toBeCloseTo(w.bm25 * (1 + w.agreement) + w.vector, 6);
  });
});
