import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HermesMemoryError } from "./errors.js";
import { DEFAULT_IMPORT_TIMEOUT_MS, loadMemoryProvider, loadProviderCli } from "./loader.js";
import { makeTempDir, providerSource, writeFiles } from "./test-support/temp-tree.js";

const BOUND_MS = 150;
let tmp: ReturnType<typeof makeTempDir>;
let home: string;

beforeEach(() => {
  tmp = makeTempDir("hermes-loader-bounds-");
  home = path.join(tmp.dir, "home");
  fs.mkdirSync(home, { recursive: true });
});
afterEach(() => tmp.cleanup());

const opts = (extra: Record<string, unknown> = {}) => ({ hermesHome: home, cwd: tmp.dir, env: {}, importTimeoutMs: BOUND_MS, ...extra });

async function failure(fn: () => Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = performance.now();
  const error = await fn().then(
    () => null,
    (e: unknown) => e,
  );
  return { error, ms: performance.now() - started };
}

describe("the loader bounds provider imports", () => {
  it("defaults to 10 s", () => {
    expect(DEFAULT_IMPORT_TIMEOUT_MS).toBe(10_000);
  });

  it("a top-level await that never settles fails with PROVIDER_TIMEOUT at the bound", async () => {
    writeFiles(path.join(home, "plugins", "stuck"), {
      "plugin.yaml": "name: stuck\n",
      "index.js": providerSource("stuck", { topLevel: "await new Promise(() => {});" }),
    });
    const { error, ms } = await failure(() => loadMemoryProvider("stuck", opts()));
    expect(HermesMemoryError.hasCode(error, "PROVIDER_TIMEOUT")).toBe(true);
    expect((error as Error).message).toContain("Memory provider 'stuck': importing the entry from");
    expect(ms).toBeGreaterThanOrEqual(BOUND_MS - 5);
    expect(ms).toBeLessThan(BOUND_MS + 1500);
  });

  it("a slow import within the bound loads", async () => {
    writeFiles(path.join(home, "plugins", "slow"), {
      "plugin.yaml": "name: slow\n",
      "index.js": providerSource("slow", { topLevel: "await new Promise((r) => setTimeout(r, 20));" }),
    });
    const provider = await loadMemoryProvider("slow", opts({ importTimeoutMs: 5000 }));
    expect(provider.name).toBe("slow");
  });

  it("a provider CLI module that never finishes importing fails with PROVIDER_TIMEOUT", async () => {
    writeFiles(path.join(home, "plugins", "stuckcli"), {
      "plugin.yaml": "name: stuckcli\n",
      "index.js": providerSource("stuckcli"),
      "cli.js": "await new Promise(() => {});\nexport function registerCli() {}\n",
    });
    const { error } = await failure(() => loadProviderCli("stuckcli", opts()));
    expect(HermesMemoryError.hasCode(error, "PROVIDER_TIMEOUT")).toBe(true);
  });

  it("refuses a non-positive importTimeoutMs", async () => {
    const { error } = await failure(() => loadMemoryProvider("whatever", opts({ importTimeoutMs: 0 })));
    expect(HermesMemoryError.hasCode(error, "INVALID_ARGUMENT")).toBe(true);
  });
});
