import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HermesMemoryError } from "@hermes/memory-core";
import { OnnxEmbedder } from "./onnx-embedder.js";
import { WordPieceTokenizer } from "./wordpiece-tokenizer.js";
import { cosineSimilarity } from "./embedder.js";
import { VectorMemoryProvider } from "../vector-memory-provider.js";
import { TINY_DIMS, writeTinyOnnxModel } from "../test-support/tiny-onnx-model.js";

let root: string;
let modelDir: string;
beforeAll(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-vector-onnx-"));
  modelDir = writeTinyOnnxModel(path.join(root, "tiny-model"));
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

describe("WordPieceTokenizer", () => {
  it("lowercases, splits punctuation, uses ## sub-words and [UNK], and adds [CLS]/[SEP]", () => {
    const t = WordPieceTokenizer.fromDirectory(modelDir);
    expect(t.encode("The CATS!").ids).toEqual([2, 8, 4, 6, 9, 3]);
    expect(t.encode("zebra").ids).toEqual([2, 1, 3]);
    expect(t.encode("cat cat cat cat", 4).ids).toEqual([2, 4, 4, 3]);
  });
});

describe("OnnxEmbedder (tiny graph built by the test; no real weights exist offline)", () => {
  it("loads a local model directory, mean-pools under the attention mask and normalises", async () => {
    const e = await OnnxEmbedder.load({ modelDir });
    expect(e.dimensions).toBe(TINY_DIMS);
    expect(e.id).toBe("onnx:tiny-model");
    const [cat, dog, car] = await e.embed(["cat", "dog", "car"]);
    expect(cosineSimilarity(cat!, dog!)).toBeGreaterThan(0.95);
    expect(cosineSimilarity(cat!, car!)).toBeLessThan(0.3);
    expect(Math.hypot(...cat!)).toBeCloseTo(1, 5);
    // Padding must not change an embedding: same text alone and next to a longer one.
    const [alone] = await e.embed(["cat"]);
    const [padded] = await e.embed(["cat", "the dog the dog the dog the dog"]);
    Array.from(alone!).forEach((v, i) => expect(padded![i]).toBeCloseTo(v, 6));
    await e.close();
  });

  it("refuses a wrong dimension and a directory without a model", async () => {
    const mismatch = await OnnxEmbedder.load({ modelDir, dimensions: 8 }).catch((err: unknown) => err);
    expect(HermesMemoryError.hasCode(mismatch, "EMBEDDING_DIMENSION_MISMATCH")).toBe(true);
    expect((mismatch as Error).message).toMatch(/produces 4-dimensional.*dimensions is 8/);
    const empty = fs.mkdtempSync(path.join(root, "empty-"));
    const missing = await OnnxEmbedder.load({ modelDir: empty }).catch((err: unknown) => err);
    expect(HermesMemoryError.hasCode(missing, "INVALID_CONFIG")).toBe(true);
  });

  it("drives the provider end to end with embedder: onnx", async () => {
    const home = fs.mkdtempSync(path.join(root, "home-"));
    const p = new VectorMemoryProvider({ env: {}, embedder: "onnx", onnxModelDir: modelDir, dimensions: TINY_DIMS, hybrid: false });
    expect(p.isAvailable()).toBe(true);
    await p.initialize("s1", { hermesHome: home });
    p.remember({ content: "dog" });
    p.remember({ content: "car" });
    await p.flush();
    expect((await p.search("cats", { limit: 1 }))[0]!.content).toBe("dog");
    await p.shutdown();
  });
});
