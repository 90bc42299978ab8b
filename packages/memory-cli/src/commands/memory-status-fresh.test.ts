import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseJson, projectWithProvider, runCli, tempDir } from "../test-support/cli-harness.js";

/** Every file and folder under `dir` (relative paths, sorted). */
function tree(dir: string): string[] {
  return (fs.readdirSync(dir, { recursive: true }) as string[]).sort();
}

describe("memory status right after setup, before the agent stored anything", { timeout: 60_000 }, () => {
  let root: string;
  let home: string;
  let cleanup: () => void;

  beforeEach(() => {
    ({ dir: root, cleanup } = tempDir("hermes-cli-status-fresh-"));
    home = path.join(root, "home");
  });
  afterEach(() => cleanup());

  for (const [provider, pkg] of [
    ["sqlite", "@hermes/memory-sqlite"],
    ["vector", "@hermes/memory-vector"],
  ] as const) {
    it(`${provider}: says nothing is stored yet and where it will be, and creates no file`, async () => {
      const cwd = projectWithProvider(root, pkg, provider);
      const setup = await runCli(["--hermes-home", home, "memory", "setup", provider, "--yes"], { cwd });
      expect(setup.code, setup.stderr).toBe(0);
      const before = tree(home);

      const text = await runCli(["--hermes-home", home, "memory", "status"], { cwd });
      expect(text.code, text.stderr).toBe(0);
      expect(text.stdout).toContain("Stats: nothing stored yet");
      expect(text.stdout).not.toMatch(/not initiali[sz]ed|initialize\(/);
      expect(text.stdout).not.toContain("unavailable");

      const json = parseJson(await runCli(["--hermes-home", home, "memory", "status", "--json"], { cwd }));
      expect(json.provider.stats).toMatchObject({ items: 0 });
      expect(json.provider.statsError).toBeUndefined();
      expect(String(json.provider.stats.location)).toContain(home);
      expect(tree(home)).toEqual(before);
    });
  }
});
