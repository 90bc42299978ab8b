/**
 * Every publishable package ships only what it needs and resolves cleanly for consumers:
 * publint, "are the types wrong" (ESM-only profile) and the `npm pack --dry-run` file list.
 * Runs against the built `dist` (`pnpm test` builds first).
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const bin = (name: string) => path.join(root, "node_modules/.bin", name);

interface Manifest {
  name: string;
  private?: boolean;
  files?: string[];
  bin?: Record<string, string>;
}

const packages = ["packages", "providers"]
  .flatMap((group) => fs.readdirSync(path.join(root, group)).map((name) => path.join(root, group, name)))
  .filter((dir) => fs.existsSync(path.join(dir, "package.json")))
  .map((dir) => ({ dir, manifest: JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as Manifest }))
  .filter(({ manifest }) => !manifest.private);

function packList(dir: string): string[] {
  const r = spawnSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: dir, encoding: "utf8" });
  expect(r.status, r.stderr).toBe(0);
  const [info] = JSON.parse(r.stdout) as Array<{ files: Array<{ path: string }> }>;
  return info!.files.map((f) => f.path);
}

describe.each(packages)("$manifest.name", ({ dir, manifest }) => {
  it("packs dist, README and nothing from tests, fixtures or test support", () => {
    const files = packList(dir);
    expect(files).toContain("README.md");
    expect(files).toContain("package.json");
    expect(files).toContain("dist/index.js");
    expect(files).toContain("dist/index.d.ts");
    for (const binPath of Object.values(manifest.bin ?? {})) expect(files).toContain(path.normalize(binPath));
    // The scaffolder's template/ is shipped on purpose (it holds the generated package's own test).
    const offending = files.filter((f) => !f.startsWith("template/") && /\.test\.|__fixtures__|test-support|\.tsbuildinfo$|^src\//.test(f));
    expect(offending).toEqual([]);
  });

  it("passes publint", () => {
    const r = spawnSync(bin("publint"), ["--strict"], { cwd: dir, encoding: "utf8" });
    expect(r.status, r.stdout + r.stderr).toBe(0);
  });

  it("has correct types for ESM consumers (attw)", () => {
    const r = spawnSync(bin("attw"), ["--pack", ".", "--profile", "esm-only", "--format", "ascii"], { cwd: dir, encoding: "utf8" });
    expect(r.status, r.stdout + r.stderr).toBe(0);
  }, 60_000);
});
