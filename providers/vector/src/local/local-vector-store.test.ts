import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { HermesMemoryError } from "@hermes/memory-core";
import { LocalVectorStore } from "./local-vector-store.js";
import { HashingEmbedder } from "../embedders/hashing-embedder.js";

const dirs: string[] = [];
function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-vector-local-"));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function randomVectors(n: number, dims: number, seed = 1): Float32Array[] {
  let s = seed;
  const rand = (): number => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32 - 0.5;
  };
  return Array.from({ length: n }, () => new Float32Array(dims).map(() => rand()));
}

function exactTopK(vectors: Float32Array[], q: Float32Array, k: number): number[] {
  const cos = (a: Float32Array, b: Float32Array): number => {
    let d = 0,
      na = 0,
      nb = 0;
    for (let i = 0; i < a.length; i++) {
      d += a[i]! * b[i]!;
      na += a[i]! ** 2;
      nb += b[i]! ** 2;
    }
    return d / Math.sqrt(na * nb);
  };
  return vectors
    .map((v, i) => ({ i, s: cos(v, q) }))
    .sort((a, b) => b.s - a.s)
    .slice(0, k)
    .map((x) => x.i);
}

describe("LocalVectorStore query vectors given as views", () => {
  // A query vector may be a view into a larger array (a batch of embeddings, a benchmark's query
  // matrix): every search path reads the view's own components, not its buffer's first ones.
  it("gives the same hits for a query given as a view at an offset as for its copy, exact and accept-filtered", async () => {
    const dims = 16;
    const vectors = randomVectors(300, dims, 7);
    const store = await LocalVectorStore.open({ dimensions: dims, exactThreshold: Infinity });
    try {
      await store.upsert(vectors.map((vector, i) => ({ id: `v${i}`, vector })));
      const batch = new Float32Array(4 * dims);
      for (let q = 0; q < 4; q++) batch.set(vectors[q * 50 + 3]!, q * dims);
      for (let q = 1; q < 4; q++) {
        const view = batch.subarray(q * dims, (q + 1) * dims);
        for (const options of [{ topK: 5 }, { topK: 5, acceptKey: (key: number) => key % 2 === 0 }]) {
          const fromView = await store.query(view, options);
          expect(fromView.map((h) => h.id)).toEqual((await store.query(view.slice(), options)).map((h) => h.id));
          if (!("acceptKey" in options)) expect(fromView[0]!.id).toBe(`v${q * 50 + 3}`);
        }
      }
    } finally {
      await store.close();
    }
  });
});

describe("LocalVectorStore", () => {
  it("refuses dimensions that are not an integer from 1 to 20,000 before opening anything", async () => {
    for (const dimensions of [0, -3, 2.5, Number.NaN, 20_001, 1e9]) {
      await expect(LocalVectorStore.open({ dimensions })).rejects.toMatchObject({
        code: "INVALID_CONFIG",
        message: expect.stringMatching(/from 1 to 20000/),
      });
    }
  });

  it("upserts, queries exactly and via HNSW with the same top result, fetches and deletes", async () => {
    const vectors = randomVectors(400, 32);
    for (const threshold of [Infinity, 0]) {
      // A search beam as wide as the store: the graph's answer must then not depend on how the
      // (multi-threaded, so not repeatable) build happened to link the vectors.
      const store = await LocalVectorStore.open({ dimensions: 32, exactThreshold: threshold, expansionSearch: 512 });
      await store.upsert(vectors.map((v, i) => ({ id: `v${i}`, vector: v, metadata: { text: `doc ${i}`, even: i % 2 === 0 } })));
      const q = vectors[7]!;
      const hits = await store.query(q, { topK: 10 });
      expect(hits[0]!.id).toBe("v7");
      expect(hits[0]!.score).toBeGreaterThan(0.999);
      const expected = exactTopK(vectors, q, 10).map((i) => `v${i}`);
      const overlap = hits.filter((h) => expected.includes(h.id)).length;
      expect(overlap).toBeGreaterThanOrEqual(9);
      const odd = await store.query(q, { topK: 5, filter: { even: false } });
      expect(odd).toHaveLength(5);
      expect(odd.every((h) => h.metadata.even === false)).toBe(true);
      const fetched = await store.fetch(["v1", "missing"]);
      expect([...fetched.keys()]).toEqual(["v1"]);
      expect(fetched.get("v1")!.metadata!.text).toBe("doc 1");
      await store.delete({ ids: ["v7"] });
      expect((await store.query(q, { topK: 1 }))[0]!.id).not.toBe("v7");
      await store.delete({ filter: { even: true } });
      expect((await store.stats()).totalRecords).toBe(199);
      await store.close();
    }
  });

  it("keeps namespaces apart and replaces on re-upsert", async () => {
    const store = await LocalVectorStore.open({ dimensions: 8, exactThreshold: 0 });
    const [a, b] = randomVectors(2, 8, 5);
    await store.upsert([{ id: "x", vector: a!, metadata: { text: "alpha" } }], { namespace: "p1:u1" });
    await store.upsert([{ id: "x", vector: b!, metadata: { text: "beta" } }], { namespace: "p1:u2" });
    expect((await store.query(a!, { topK: 5, namespace: "p1:u1" })).map((h) => h.metadata.text)).toEqual(["alpha"]);
    expect((await store.query(a!, { topK: 5, namespace: "p1:u2" })).map((h) => h.metadata.text)).toEqual(["beta"]);
    await store.upsert([{ id: "x", vector: b!, metadata: { text: "alpha2" } }], { namespace: "p1:u1" });
    expect(store.indexSize()).toBe(2);
    expect((await store.query(b!, { topK: 5, namespace: "p1:u1" }))[0]!.metadata.text).toBe("alpha2");
    await store.delete({ all: true }, { namespace: "p1:u1" });
    expect((await store.stats()).namespaces).toEqual({ "p1:u2": 1 });
    expect(store.keywordSearch("beta", { topK: 3, namespace: "p1:u2" }).map((h) => h.id)).toEqual(["x"]);
    await store.close();
  });

  it("answers idsOnly queries with the same ids and scores, without metadata, exact and HNSW alike", async () => {
    for (const threshold of [1000, 0]) {
      const store = await LocalVectorStore.open({ dimensions: 16, exactThreshold: threshold });
      const vectors = randomVectors(60, 16, 11);
      await store.upsert(
        vectors.slice(0, 40).map((v, i) => ({ id: `a${i}`, vector: v, metadata: { text: `t${i}`, even: i % 2 === 0 } })),
        { namespace: "a" },
      );
      await store.upsert(
        vectors.slice(40).map((v, i) => ({ id: `b${i}`, vector: v, metadata: { text: `u${i}` } })),
        { namespace: "b" },
      );
      // A re-upsert keeps its key and id; a delete drops the id.
      await store.upsert([{ id: "a3", vector: vectors[50]!, metadata: { text: "moved" } }], { namespace: "a" });
      await store.delete({ ids: ["a5"] }, { namespace: "a" });
      for (const q of vectors.slice(0, 5)) {
        const full = await store.query(q, { topK: 10, namespace: "a" });
        const light = await store.query(q, { topK: 10, namespace: "a", idsOnly: true });
        expect(light.map((h) => [h.id, h.score])).toEqual(full.map((h) => [h.id, h.score]));
        expect(light.every((h) => Object.keys(h.metadata).length === 0)).toBe(true);
        // Below the exact threshold the sidecar key comes along.
        if (threshold > 0) expect(light.every((h) => typeof h.key === "number")).toBe(true);
        expect(light.map((h) => h.id)).not.toContain("a5");
        // A filter needs the metadata, so it is read.
        const filtered = await store.query(q, { topK: 5, namespace: "a", filter: { even: true }, idsOnly: true });
        expect(filtered.every((h) => h.metadata.even === true)).toBe(true);
      }
      await store.close();
    }
  });

  it("persists, rebuilds a deleted or corrupt index file from the sidecar, and refuses other dimensions", async () => {
    const dir = tempDir();
    const embedder = new HashingEmbedder({ dimensions: 64 });
    const texts = ["the cat sat on the mat", "quarterly revenue report", "hiking in the alps", "python asyncio tips"];
    const vectors = await embedder.embed(texts);
    let store = await LocalVectorStore.open({ directory: dir, dimensions: 64 });
    await store.upsert(texts.map((t, i) => ({ id: `t${i}`, vector: vectors[i]!, metadata: { text: t } })));
    await store.close();
    expect(fs.existsSync(path.join(dir, "index.usearch"))).toBe(true);

    store = await LocalVectorStore.open({ directory: dir, dimensions: 64 });
    expect(store.rebuiltOnOpen).toBe(false);
    expect(store.indexSize()).toBe(4);
    await store.close();

    fs.rmSync(path.join(dir, "index.usearch"));
    store = await LocalVectorStore.open({ directory: dir, dimensions: 64, exactThreshold: 0 });
    expect(store.rebuiltOnOpen).toBe(true);
    const [q] = await embedder.embed(["revenue report for the quarter"]);
    expect((await store.query(q!, { topK: 1 }))[0]!.id).toBe("t1");
    await store.close();

    fs.writeFileSync(path.join(dir, "index.usearch"), "garbage");
    store = await LocalVectorStore.open({ directory: dir, dimensions: 64, exactThreshold: 0 });
    expect(store.rebuiltOnOpen).toBe(true);
    expect(store.indexSize()).toBe(4);
    await store.close();

    let caught: unknown;
    try {
      await LocalVectorStore.open({ directory: dir, dimensions: 32 });
    } catch (error) {
      caught = error;
    }
    expect(HermesMemoryError.hasCode(caught, "EMBEDDING_DIMENSION_MISMATCH")).toBe(true);
    expect((caught as Error).message).toMatch(/64 dimensions.*32 dimensions.*hermes-memory vector reindex/s);
  });

  it("is consistent with its sidecar after a writer is killed with SIGKILL", async () => {
    const dir = tempDir();
    const require = createRequire(import.meta.url);
    const tsx = pathToFileURL(require.resolve("tsx/esm")).href;
    const child = spawn(
      process.execPath,
      ["--import", tsx, fileURLToPath(new URL("../test-support/crash-writer.ts", import.meta.url)), dir],
      {
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    await new Promise<void>((resolve, reject) => {
      let out = "";
      child.stdout.on("data", (d: Buffer) => {
        out += d.toString();
        const lines = out.trim().split("\n");
        if (Number(lines[lines.length - 1]) >= 400) {
          child.kill("SIGKILL");
          resolve();
        }
      });
      child.on("exit", (code) => (code === null ? resolve() : reject(new Error(`writer exited ${code}: ${stderr}`))));
    });
    await new Promise((resolve) => child.once("close", resolve));
    const store = await LocalVectorStore.open({ directory: dir, dimensions: 16, exactThreshold: 0 });
    const count = store.sidecar.countVectors();
    expect(count).toBeGreaterThanOrEqual(400);
    expect(store.indexSize()).toBe(count);
    // Every committed row is findable through the index.
    const sample = [...store.sidecar.iterate(null, { withVectors: true })].filter((_, i) => i % 50 === 0);
    for (const row of sample) {
      const hits = await store.query(row.vector!, { topK: 1 });
      expect(hits[0]!.id).toBe(row.id);
    }
    await store.close();
  });

  describe("index file verification (a damaged file must never reach the native loader)", () => {
    async function seeded(dir: string): Promise<{ size: number; query: Float32Array }> {
      const embedder = new HashingEmbedder({ dimensions: 32 });
      const texts = Array.from({ length: 40 }, (_, i) => `note number ${i} about topic ${i % 7}`);
      const vectors = await embedder.embed(texts);
      const store = await LocalVectorStore.open({ directory: dir, dimensions: 32 });
      await store.upsert(texts.map((t, i) => ({ id: `n${i}`, vector: vectors[i]!, metadata: { text: t } })));
      await store.close();
      return { size: fs.statSync(path.join(dir, "index.usearch")).size, query: vectors[17]! };
    }
    function recordingLogger(): { warnings: string[]; logger: { debug(): void; info(): void; warn(m: string): void; error(): void } } {
      const warnings: string[] = [];
      return {
        warnings,
        logger: { debug: () => undefined, info: () => undefined, warn: (m: string) => void warnings.push(m), error: () => undefined },
      };
    }
    async function reopen(dir: string, expectRebuild: RegExp | null, query: Float32Array): Promise<void> {
      const { warnings, logger } = recordingLogger();
      // Exact search: what is checked here is which file was loaded, not ANN recall on 40 vectors.
      const store = await LocalVectorStore.open({ directory: dir, dimensions: 32, logger });
      expect(store.rebuiltOnOpen).toBe(expectRebuild !== null);
      if (expectRebuild) expect(warnings.join("\n")).toMatch(expectRebuild);
      else expect(warnings).toEqual([]);
      expect(store.indexSize()).toBe(40);
      expect((await store.query(query, { topK: 1 }))[0]!.id).toBe("n17");
      await store.close();
    }

    it("loads an intact file, and records its length and SHA-256 in the sidecar", async () => {
      const dir = tempDir();
      const { size, query } = await seeded(dir);
      await reopen(dir, null, query);
      const store = await LocalVectorStore.open({ directory: dir, dimensions: 32 });
      expect(store.sidecar.getMeta("index_bytes")).toBe(String(size));
      expect(store.sidecar.getMeta("index_sha256")).toMatch(/^[0-9a-f]{64}$/);
      await store.close();
    });

    it.each([10, 33, 50, 90, 99])("rebuilds from the sidecar when the file is truncated to %i %%", async (percent) => {
      const dir = tempDir();
      const { size, query } = await seeded(dir);
      fs.truncateSync(path.join(dir, "index.usearch"), Math.floor((size * percent) / 100));
      await reopen(dir, /was not loaded \(length \d+ bytes, \d+ recorded\); rebuilding it from the sidecar's 40 vectors/, query);
      // The rebuilt file is saved and verified again: the next open loads it.
      await reopen(dir, null, query);
    });

    it("rebuilds when a same-length file has different bytes", async () => {
      const dir = tempDir();
      const { size, query } = await seeded(dir);
      const file = path.join(dir, "index.usearch");
      const bytes = fs.readFileSync(file);
      for (let i = 0; i < 64; i++) bytes[i] = 0xff;
      bytes[Math.floor(size / 2)] = bytes[Math.floor(size / 2)]! ^ 0x55;
      fs.writeFileSync(file, bytes);
      await reopen(dir, /checksum mismatch/, query);
    });

    it("rebuilds when the checksum record is missing or garbled", async () => {
      const dir = tempDir();
      const { query } = await seeded(dir);
      let store = await LocalVectorStore.open({ directory: dir, dimensions: 32 });
      store.sidecar.db.prepare("DELETE FROM meta WHERE key = 'index_sha256'").run();
      await store.close();
      await reopen(dir, /no valid checksum record/, query);
      store = await LocalVectorStore.open({ directory: dir, dimensions: 32 });
      store.sidecar.setMeta("index_sha256", "not-a-digest");
      store.sidecar.setMeta("index_bytes", "-3");
      await store.close();
      await reopen(dir, /no valid checksum record/, query);
    });

    it("removes temp files left by an interrupted save of a dead process", async () => {
      const dir = tempDir();
      const { query } = await seeded(dir);
      // PID 2^22 + 1 is above Linux's pid_max, so no live process owns it.
      const orphan = path.join(dir, `index.usearch.${2 ** 22 + 1}.tmp`);
      fs.writeFileSync(orphan, Buffer.alloc(4096, 7));
      await reopen(dir, null, query);
      expect(fs.existsSync(orphan)).toBe(false);
    });
  });

  it("readOnly: serves queries, rebuilds a damaged index in memory without touching any file, refuses writes", async () => {
    const dir = tempDir();
    const embedder = new HashingEmbedder({ dimensions: 32 });
    const texts = ["alpha station", "bravo harbour", "charlie summit"];
    const vectors = await embedder.embed(texts);
    let store = await LocalVectorStore.open({ directory: dir, dimensions: 32 });
    await store.upsert(texts.map((t, i) => ({ id: `r${i}`, vector: vectors[i]!, metadata: { text: t } })));
    await store.close();
    fs.truncateSync(path.join(dir, "index.usearch"), 100);
    const before = new Map(fs.readdirSync(dir).map((f) => [f, fs.readFileSync(path.join(dir, f)).toString("base64")]));
    store = await LocalVectorStore.open({ directory: dir, dimensions: 32, readOnly: true, exactThreshold: 0 });
    expect(store.rebuiltOnOpen).toBe(true);
    expect((await store.query(vectors[1]!, { topK: 1 }))[0]!.id).toBe("r1");
    let error: unknown;
    try {
      store.upsertSync([{ id: "new", vector: vectors[0]!, metadata: { text: "x" } }]);
    } catch (e) {
      error = e;
    }
    expect(HermesMemoryError.hasCode(error, "STORAGE_FAILED")).toBe(true);
    expect((error as Error).message).toMatch(/read-only.*search works/);
    await store.flush();
    await store.close();
    const after = new Map(fs.readdirSync(dir).map((f) => [f, fs.readFileSync(path.join(dir, f)).toString("base64")]));
    expect(after).toEqual(before);
  });
});
