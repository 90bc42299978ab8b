/**
 * usearch 2.25 aborts the process loading an index file in which half the entries were removed.
 * The store never writes such a file (a save rebuilds the graph once removals reach a fifth of its
 * slots) and never hands one to the loader (a file recorded with a third or more is rebuilt from
 * the sidecar), so erasing most of a store and restarting opens it, in a child process that would
 * otherwise die of the abort.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { runScriptInChild } from "../test-support/run-script.js";

const STORE = pathToFileURL(path.join(import.meta.dirname, "local-vector-store.ts")).href;
const SIDECAR = pathToFileURL(path.join(import.meta.dirname, "sidecar.ts")).href;
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** A child that fills a store with `total` vectors, erases `erased` of them, closes it, and opens it again. */
function eraseAndReopen(dir: string, total: number, erased: number): string {
  return `
import { LocalVectorStore } from ${JSON.stringify(STORE)};
const vector = (i) => Float32Array.from({ length: 16 }, (_, d) => Math.sin(i * 7 + d) + (d === i % 16 ? 2 : 0));
let store = await LocalVectorStore.open({ directory: ${JSON.stringify(dir)}, dimensions: 16, exactThreshold: 0 });
await store.upsert(Array.from({ length: ${total} }, (_, i) => ({ id: "v" + i, vector: vector(i), metadata: { text: "item " + i } })));
await store.flush();
await store.delete({ ids: Array.from({ length: ${erased} }, (_, i) => "v" + i) });
await store.close();
const warnings = [];
store = await LocalVectorStore.open({ directory: ${JSON.stringify(dir)}, dimensions: 16, exactThreshold: 0, logger: { debug() {}, info() {}, warn: (m) => warnings.push(m), error: (m) => warnings.push(m) } });
const hits = await store.query(vector(${total - 1}), { topK: 3 });
await store.close();
process.stdout.write(JSON.stringify({ top: hits[0]?.id, warnings }));
`;
}

describe("an index with many removed entries", () => {
  it.each([
    [400, 300],
    [400, 200],
    [400, 100],
  ])(
    "of %i vectors with %i erased is saved so that it reopens (no abort) and still finds the rest",
    async (total, erased) => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-tombstones-"));
      dirs.push(dir);
      const run = await runScriptInChild(eraseAndReopen(dir, total, erased), { ms: 60_000 });
      expect({ code: run.code, signal: run.signal }).toEqual({ code: 0, signal: null });
      const result = JSON.parse(run.out) as { top: string; warnings: string[] };
      expect(result.top).toBe(`v${total - 1}`);
      // Saved compacted: the reopen loads the file instead of rebuilding it.
      expect(result.warnings).toEqual([]);
    },
    90_000,
  );

  it("a file recorded with a third or more removed entries is rebuilt from the sidecar instead of loaded", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-tombstones-"));
    dirs.push(dir);
    const script = `
import { LocalVectorStore } from ${JSON.stringify(STORE)};
import { Sidecar } from ${JSON.stringify(SIDECAR)};
let store = await LocalVectorStore.open({ directory: ${JSON.stringify(dir)}, dimensions: 8 });
await store.upsert(Array.from({ length: 30 }, (_, i) => ({ id: "v" + i, vector: Float32Array.from({ length: 8 }, (_, d) => i + d + 1) })));
await store.close();
const sidecar = Sidecar.open(${JSON.stringify(path.join(dir, "sidecar.sqlite"))});
sidecar.setMeta("index_freed_slots", "20");
sidecar.close();
const warnings = [];
store = await LocalVectorStore.open({ directory: ${JSON.stringify(dir)}, dimensions: 8, logger: { debug() {}, info() {}, warn: (m) => warnings.push(m), error() {} } });
await store.close();
process.stdout.write(JSON.stringify(warnings));
`;
    const run = await runScriptInChild(script, { ms: 60_000 });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.out)).toEqual([
      expect.stringMatching(/was not loaded \(20 removed entries, which usearch cannot load safely\); rebuilding it/),
    ]);
  }, 90_000);
});
