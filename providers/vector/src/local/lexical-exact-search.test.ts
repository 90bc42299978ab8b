import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { Logger } from "@hermes/memory-core";
import { HashingEmbedder } from "../embedders/hashing-embedder.js";
import type { Embedder } from "../embedders/embedder.js";
import { DEFAULT_EXACT_THRESHOLD, LEXICAL_EXACT_THRESHOLD, LocalVectorStore } from "./local-vector-store.js";
import { TWO_PASS_MIN_VECTORS } from "./exact-namespace.js";
import { VectorMemoryProvider } from "../vector-memory-provider.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

/** A logger keeping its warnings. */
function warningLog(): { logger: Logger; warnings: string[] } {
  const warnings: string[] = [];
  const ignore = (): void => undefined;
  return { warnings, logger: { debug: ignore, info: ignore, warn: (message: string) => void warnings.push(message), error: ignore } };
}

/** Short texts over a shared vocabulary, as chat memories are: many share a word or two with a query. */
function texts(n: number, seed: number, words: number): string[] {
  let s = seed;
  const next = (): number => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
  const vocabulary = Array.from({ length: 1500 }, (_, i) => `w${(i * 7919) % 100_003}x`);
  return Array.from({ length: n }, () =>
    Array.from({ length: words }, () => vocabulary[Math.floor(next() ** 2 * vocabulary.length)]!).join(" "),
  );
}

function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

/** A semantic-looking embedder (any id not starting with `hashing`) with the hashing embedder's vectors. */
function semanticEmbedder(dimensions: number): Embedder {
  const inner = new HashingEmbedder({ dimensions });
  return { id: "custom-semantic-test", dimensions, embed: (t) => inner.embed(t) };
}

describe("exact search of lexical (hashing) vectors", () => {
  it("defaults the exact threshold by embedder kind; an explicit threshold wins", async () => {
    const lexical = await LocalVectorStore.open({ dimensions: 8, lexicalVectors: true });
    const semantic = await LocalVectorStore.open({ dimensions: 8 });
    const explicit = await LocalVectorStore.open({ dimensions: 8, lexicalVectors: true, exactThreshold: 50 });
    expect([lexical.exactThreshold, semantic.exactThreshold, explicit.exactThreshold]).toEqual([
      LEXICAL_EXACT_THRESHOLD,
      DEFAULT_EXACT_THRESHOLD,
      50,
    ]);
    expect(LEXICAL_EXACT_THRESHOLD).toBeGreaterThan(DEFAULT_EXACT_THRESHOLD);
    for (const store of [lexical, semantic, explicit]) await store.close();
  });

  // Above the general default of 10,000 a lexical namespace is still searched exactly: every hit
  // of the top 10 scores at least the brute-force 10th best cosine (ties count).
  it("returns the brute-force top 10 for a lexical namespace larger than the general default", { timeout: 60_000 }, async () => {
    const dims = 64;
    const embedder = new HashingEmbedder({ dimensions: dims });
    const docs = texts(DEFAULT_EXACT_THRESHOLD + 500, 7, 10);
    const vectors = docs.map((t) => embedder.embedSync(t));
    const { logger, warnings } = warningLog();
    const store = await LocalVectorStore.open({ dimensions: dims, lexicalVectors: true, logger });
    cleanups.push(() => store.close());
    for (let i = 0; i < docs.length; i += 2_000) {
      await store.upsert(docs.slice(i, i + 2_000).map((text, j) => ({ id: `d${i + j}`, vector: vectors[i + j]!, metadata: { text } })));
    }
    for (const query of texts(12, 99, 3)) {
      const q = embedder.embedSync(query);
      const exact = vectors.map((v) => cosine(v, q)).sort((a, b) => b - a);
      const hits = await store.query(q, { topK: 10, idsOnly: true });
      expect(hits).toHaveLength(10);
      for (const hit of hits) {
        expect(cosine(vectors[Number(hit.id.slice(1))]!, q)).toBeGreaterThanOrEqual(exact[9]! - 1e-5);
      }
    }
    expect(warnings).toEqual([]);
  });

  // Large lexical namespaces are searched in two passes (int8 codes, then float32 scoring of the
  // best candidates): the hits are the brute-force top 10 with their cosines, as a float32 scan
  // gives them, and nothing goes through the graph. (The bench's filtered suite measures recall at
  // 100,000 and 120,000 hashing vectors.)
  it(
    "returns the brute-force top 10 and its cosines from the int8 first pass over a large lexical namespace",
    { timeout: 120_000 },
    async () => {
      const dims = 16;
      const size = TWO_PASS_MIN_VECTORS + 2_000;
      const embedder = new HashingEmbedder({ dimensions: dims });
      const docs = texts(size, 11, 8);
      const vectors = docs.map((t) => embedder.embedSync(t));
      const { logger, warnings } = warningLog();
      const store = await LocalVectorStore.open({ dimensions: dims, lexicalVectors: true, logger });
      const scan = await LocalVectorStore.open({ dimensions: dims, sidecar: store.sidecar, exactThreshold: Infinity });
      cleanups.push(() => store.close());
      for (let i = 0; i < size; i += 5_000) {
        store.upsertSync(docs.slice(i, i + 5_000).map((text, j) => ({ id: `d${i + j}`, vector: vectors[i + j]!, metadata: { text } })));
      }
      // The default threshold keeps lexical namespaces exact well past the 100,000 where a graph finds 9 % of the top 10.
      expect(store.exactThreshold).toBeGreaterThanOrEqual(120_000);
      for (const query of texts(20, 98, 3)) {
        const q = embedder.embedSync(query);
        const exact = vectors.map((v) => cosine(v, q)).sort((a, b) => b - a);
        const hits = await store.query(q, { topK: 10, idsOnly: true });
        expect(hits).toHaveLength(10);
        for (const [i, hit] of hits.entries()) {
          expect(cosine(vectors[Number(hit.id.slice(1))]!, q)).toBeGreaterThanOrEqual(exact[9]! - 1e-5);
          expect(hit.score).toBeCloseTo(exact[i]!, 5);
        }
        const scanned = await scan.query(q, { topK: 10, idsOnly: true });
        expect(scanned.map((h) => h.score)).toEqual(hits.map((h) => expect.closeTo(h.score, 5)));
      }
      expect(warnings).toEqual([]);
    },
  );

  it("warns once per namespace when lexical vectors are searched through the graph", async () => {
    const dims = 32;
    const embedder = new HashingEmbedder({ dimensions: dims });
    const { logger, warnings } = warningLog();
    const store = await LocalVectorStore.open({ dimensions: dims, lexicalVectors: true, exactThreshold: 5, logger });
    cleanups.push(() => store.close());
    for (const namespace of ["a", "b"]) {
      await store.upsert(
        texts(20, namespace === "a" ? 1 : 2, 6).map((text, i) => ({
          id: `${namespace}${i}`,
          vector: embedder.embedSync(text),
          metadata: { text },
        })),
        { namespace },
      );
    }
    const q = embedder.embedSync(texts(1, 5, 3)[0]!);
    await store.query(q, { topK: 3, namespace: "a" });
    await store.query(q, { topK: 3, namespace: "a" });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/namespace a holds 20 vectors, more than exact_threshold \(5\)/);
    expect(warnings[0]).toMatch(/memory\.vector\.embedder: openai or onnx/);
    await store.query(q, { topK: 3, namespace: "b" });
    expect(warnings).toHaveLength(2);
    // Semantic vectors are not warned about.
    const quiet = warningLog();
    const semantic = await LocalVectorStore.open({ dimensions: dims, exactThreshold: 5, logger: quiet.logger });
    cleanups.push(() => semantic.close());
    await semantic.upsert(texts(20, 3, 6).map((text, i) => ({ id: `s${i}`, vector: embedder.embedSync(text), metadata: { text } })));
    await semantic.query(q, { topK: 3 });
    expect(quiet.warnings).toEqual([]);
  });

  it("the provider searches the hashing embedder's vectors exactly up to LEXICAL_EXACT_THRESHOLD, others up to the general default; memory.vector.exact_threshold wins", async () => {
    const open = async (
      options: ConstructorParameters<typeof VectorMemoryProvider>[0],
    ): Promise<{ threshold: number; warnings: string[]; provider: VectorMemoryProvider }> => {
      const home = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-vector-exact-"));
      cleanups.push(() => fs.rmSync(home, { recursive: true, force: true }));
      const { logger, warnings } = warningLog();
      const provider = new VectorMemoryProvider({ env: {}, dimensions: 32, hybrid: false, logger, ...options });
      await provider.initialize("s1", { hermesHome: home });
      cleanups.push(() => provider.shutdown());
      const threshold = (provider as unknown as { backend: { store: { exactThreshold: number } } }).backend.store.exactThreshold;
      return { threshold, warnings, provider };
    };
    expect((await open({})).threshold).toBe(LEXICAL_EXACT_THRESHOLD);
    expect((await open({ embedderInstance: semanticEmbedder(32) })).threshold).toBe(DEFAULT_EXACT_THRESHOLD);
    const small = await open({ exactThreshold: 3 });
    expect(small.threshold).toBe(3);
    for (const [i, text] of texts(6, 4, 5).entries()) small.provider.remember({ content: `${text} item ${i}`, kind: "fact" });
    await small.provider.flush();
    expect(await small.provider.search("item", { limit: 2 })).toHaveLength(2);
    expect(small.warnings.filter((w) => w.includes("searched through the HNSW graph"))).toHaveLength(1);
  });
});
