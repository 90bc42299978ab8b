import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { LayeredRanker } from "@hermes/memory-provider-kit/sqlite";
import { until } from "@hermes/test-support";
import { afterEach, describe, expect, it } from "vitest";
import { Sidecar } from "./sidecar.js";
import { VectorMemoryProvider } from "../vector-memory-provider.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function sidecarFile(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vector-pool-helper-"));
  dirs.push(dir);
  return path.join(dir, "sidecar.sqlite");
}

/** The sidecar's keyword ranker (made on first use). */
function rankerOf(sidecar: Sidecar): LayeredRanker {
  return (sidecar as unknown as { layeredRanker(): LayeredRanker }).layeredRanker();
}

describe("the sidecar's pool helper thread", () => {
  it("starts with the warm-up of a sidecar large enough for the ranker's options, and stops when the sidecar closes", async () => {
    // A sidecar starts a helper at 200,000 rows; this one is told to at any size.
    const sidecar = Sidecar.open(sidecarFile(), { ranker: { helper: { minRows: 1 } } });
    sidecar.upsert(
      "ns",
      Array.from({ length: 40 }, (_, i) => ({ id: `r${i}`, text: `alpha beta note ${i}`, metadata: { kind: "fact" }, vector: null })),
    );
    const errors: unknown[] = [];
    sidecar.warmRankerInBackground(
      () => true,
      (error) => errors.push(error),
    );
    const ranker = rankerOf(sidecar);
    await until(() => ranker.helperStatus().state === "running");
    expect(sidecar.keywordSearch("ns", "alpha beta", 5)).toHaveLength(5);
    sidecar.close();
    expect(ranker.helperStatus()).toMatchObject({ state: "stopped", reason: "closed" });
    expect(errors).toEqual([]);
  });

  it("never starts one with `search_thread: false` (`helper: false`), whatever the sidecar's size", async () => {
    // The helper starts at 200,000 rows, too many to write here: the ranker's threshold says it.
    const threshold = (sidecar: Sidecar) => (rankerOf(sidecar) as unknown as { helperMinRows: number }).helperMinRows;
    const providerSidecar = async (options: { searchThread?: boolean }) => {
      const home = path.dirname(sidecarFile());
      const provider = new VectorMemoryProvider({ env: {}, dimensions: 32, ...options });
      await provider.initialize("s1", { hermesHome: home });
      return { provider, sidecar: (provider as unknown as { backend: { sidecar: Sidecar } }).backend.sidecar };
    };
    const on = await providerSidecar({});
    const off = await providerSidecar({ searchThread: false });
    try {
      expect(threshold(on.sidecar)).toBe(200_000);
      expect(threshold(off.sidecar)).toBe(Infinity);
    } finally {
      await on.provider.shutdown();
      await off.provider.shutdown();
    }
  });
});
