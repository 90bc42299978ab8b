import { describe, expect, it } from "vitest";
import { HermesMemoryError } from "@hermes/memory-core";
import { HashingEmbedder } from "./hashing-embedder.js";
import { cosineSimilarity } from "./embedder.js";

describe("HashingEmbedder", () => {
  const embedder = new HashingEmbedder();

  it("is deterministic, L2-normalised and 384-d by default", async () => {
    const [a, b] = await embedder.embed(["The quick brown fox", "The quick brown fox"]);
    expect(embedder.dimensions).toBe(384);
    expect(embedder.id).toBe("hashing-v1");
    expect(Array.from(a!)).toEqual(Array.from(b!));
    expect(Math.hypot(...a!)).toBeCloseTo(1, 5);
    // Pinned values: the same on every machine and run (a change here breaks stored indexes).
    const nonZero = Array.from(a!)
      .map((v, i) => [i, Number(v.toFixed(4))] as const)
      .filter(([, v]) => v !== 0)
      .slice(0, 3);
    expect(nonZero).toEqual([
      [9, -0.1128],
      [16, 0.1128],
      [17, -0.1128],
    ]);
  });

  it("ranks lexically related texts above unrelated ones, tolerating inflections", async () => {
    const [q, near, far] = await embedder.embed([
      "deploying kubernetes clusters",
      "we deployed a kubernetes cluster yesterday",
      "my grandmother's apple pie recipe",
    ]);
    expect(cosineSimilarity(q!, near!)).toBeGreaterThan(0.3);
    expect(cosineSimilarity(q!, near!)).toBeGreaterThan(cosineSimilarity(q!, far!) + 0.2);
  });

  it("maps empty text to the zero vector and rejects silly dimensions", async () => {
    const [z] = await embedder.embed(["  "]);
    expect(z!.every((v) => v === 0)).toBe(true);
    expect(() => new HashingEmbedder({ dimensions: 2 })).toThrow(HermesMemoryError);
    // Every vector allocates this many floats: past Pinecone's 20,000 it is a typo or hostile input,
    // refused before any memory is taken.
    expect(() => new HashingEmbedder({ dimensions: 1e9 })).toThrow(
      expect.objectContaining({ code: "INVALID_CONFIG", message: expect.stringMatching(/from 8 to 20000 \(got 1000000000\)/) }),
    );
    expect(new HashingEmbedder({ dimensions: 20_000 }).dimensions).toBe(20_000);
  });
});
