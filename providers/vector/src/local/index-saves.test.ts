import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { LocalVectorStore } from "./local-vector-store.js";
import { eraseRowsInSteps, selectRowsInSteps } from "../backends/stepped-erasure.js";

const dirs: string[] = [];
function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-vector-saves-"));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function vectors(n: number, dims: number): Float32Array[] {
  let s = 7;
  const rand = (): number => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32 - 0.5;
  };
  return Array.from({ length: n }, () => new Float32Array(dims).map(() => rand()));
}

async function seeded(dir: string, n: number, saveDelayMs?: number): Promise<LocalVectorStore> {
  const store = await LocalVectorStore.open({ directory: dir, dimensions: 16, exactThreshold: 0, saveDelayMs });
  await store.upsert(vectors(n, 16).map((vector, i) => ({ id: `v${i}`, vector, metadata: { text: `item ${i}` } })));
  return store;
}

async function waitFor(condition: () => boolean, what: string, deadlineMs = 10_000): Promise<void> {
  const until = Date.now() + deadlineMs;
  while (!condition()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe("index file saves", () => {
  it("flush() serves the event loop while the saved file is synced and checksummed, and the file loads on reopen", async () => {
    const dir = tempDir();
    const store = await seeded(dir, 300);
    let served = false;
    setImmediate(() => (served = true));
    await store.flush();
    expect(served).toBe(true);
    await store.close();
    const reopened = await LocalVectorStore.open({ directory: dir, dimensions: 16, exactThreshold: 0 });
    expect(reopened.rebuiltOnOpen).toBe(false);
    expect(reopened.indexSize()).toBe(300);
    expect(fs.readdirSync(dir).filter((name) => name.endsWith(".tmp"))).toEqual([]);
    await reopened.close();
  });

  it("no timed save replaces the index file while an erasure runs in steps; one follows when it ends, and it loads on reopen", async () => {
    const dir = tempDir();
    const store = await seeded(dir, 600, 1);
    await store.flush();
    const file = path.join(dir, "index.usearch");
    const identity = (): string => {
      const stat = fs.statSync(file);
      return `${stat.ino}:${stat.mtimeMs}`;
    };
    const before = identity();
    const seen = new Set<string>([before]);
    const watch = setInterval(() => seen.add(identity()), 1);
    const { rows } = await selectRowsInSteps(store.sidecar, null, null);
    const erased = await eraseRowsInSteps(store, store.sidecar, rows.slice(0, 250), false);
    seen.add(identity());
    clearInterval(watch);
    expect(erased).toHaveLength(250);
    expect([...seen]).toEqual([before]);
    // The held save runs saveDelayMs after the erasure: the file then records the sidecar's generation.
    await waitFor(() => store.sidecar.getMeta("index_generation") === String(store.sidecar.generation), "the save after the erasure");
    await store.close();
    const reopened = await LocalVectorStore.open({ directory: dir, dimensions: 16, exactThreshold: 0 });
    expect(reopened.rebuiltOnOpen).toBe(false);
    expect(reopened.indexSize()).toBe(350);
    await reopened.close();
  });
});
