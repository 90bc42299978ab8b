import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { NODE_FIRST_CALL_TIMER, providerIndexes, writePackageRoot, writeSitePackages } from "./discovery-fixture.js";

const dirs: string[] = [];
const tempDir = (): string => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bench-discovery-"));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

describe("discovery fixtures", () => {
  it("spreads the manifests evenly", () => {
    expect([...providerIndexes(1000, 10)]).toEqual([50, 150, 250, 350, 450, 550, 650, 750, 850, 950]);
  });

  it("writes an npm-flat root with direct dependencies and manifest fields", () => {
    const root = tempDir();
    writePackageRoot(root, "npm-flat", 20, 2);
    const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"));
    expect(Object.keys(pkg.dependencies)).toHaveLength(20);
    const manifests = fs
      .readdirSync(path.join(root, "node_modules"))
      .map((d) => JSON.parse(fs.readFileSync(path.join(root, "node_modules", d, "package.json"), "utf8")))
      .filter((m) => m.hermesMemoryProvider);
    expect(manifests.map((m) => m.hermesMemoryProvider.name)).toEqual(["bench-provider-0005", "bench-provider-0015"]);
  });

  it("writes a pnpm layout where node_modules entries are symlinks into .pnpm", () => {
    const root = tempDir();
    writePackageRoot(root, "pnpm-symlinked", 4, 1);
    const link = path.join(root, "node_modules", "bench-dep-0002");
    expect(fs.lstatSync(link).isSymbolicLink()).toBe(true);
    expect(fs.realpathSync(link)).toBe(
      fs.realpathSync(path.join(root, "node_modules/.pnpm/bench-dep-0002@1.0.0/node_modules/bench-dep-0002")),
    );
    expect(JSON.parse(fs.readFileSync(path.join(link, "package.json"), "utf8")).hermesMemoryProvider.name).toBe("bench-provider-0002");
  });

  it("writes .dist-info folders with entry points for the Python baseline", () => {
    const site = tempDir();
    writeSitePackages(site, 10, 2);
    expect(fs.readdirSync(site)).toHaveLength(10);
    const withEntryPoints = fs.readdirSync(site).filter((d) => fs.existsSync(path.join(site, d, "entry_points.txt")));
    expect(withEntryPoints).toEqual(["bench_dep_0002-1.0.0.dist-info", "bench_dep_0007-1.0.0.dist-info"]);
    expect(fs.readFileSync(path.join(site, withEntryPoints[0]!, "entry_points.txt"), "utf8")).toContain("[hermes_agent.memory_providers]");
  });

  it("times one discovery in a fresh process and counts the generated providers it found", () => {
    const root = tempDir();
    writePackageRoot(root, "pnpm-symlinked", 20, 2);
    const options = { packageRoots: [root], hermesHome: path.join(root, "home"), cwd: root };
    const r = spawnSync(
      process.execPath,
      ["--input-type=module", "-e", NODE_FIRST_CALL_TIMER, import.meta.resolve("@hermes/memory-core"), JSON.stringify(options)],
      { encoding: "utf8" },
    );
    expect(r.stderr).toBe("");
    const printed = JSON.parse(r.stdout) as { ms: number; found: number };
    expect(printed.found).toBe(2);
    expect(printed.ms).toBeGreaterThan(0);
  });
});
