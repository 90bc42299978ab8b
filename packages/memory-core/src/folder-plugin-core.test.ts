// Real processes against the built package: the resolve hook that lets folder plugins import the
// host's @hermes/memory-core only exists in compiled output (Node loads hooks off-thread).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { installPackage, makeTempDir, writeFiles } from "./test-support/temp-tree.js";

const PACKAGE_DIR = path.resolve(import.meta.dirname, "..");
const CORE_DIST = path.join(PACKAGE_DIR, "dist", "index.js");
// Core's runtime dependencies, linked beside a bundled copy the way an install would place them.
const CORE_DEPENDENCIES: string[] = Object.keys(
  JSON.parse(fs.readFileSync(path.join(PACKAGE_DIR, "package.json"), "utf8")).dependencies ?? {},
);

let tmp: ReturnType<typeof makeTempDir>;
let home: string;
let cwd: string;

beforeAll(() => {
  if (!fs.existsSync(path.join(PACKAGE_DIR, "dist", "plugin-resolve-hooks.js"))) {
    throw new Error(`${CORE_DIST} is not built; run \`pnpm build\` first.`);
  }
});
beforeEach(() => {
  tmp = makeTempDir("hermes-folder-core-");
  home = path.join(tmp.dir, "home");
  cwd = path.join(tmp.dir, "work");
  writeFiles(cwd, { "package.json": { name: "host", private: true } });
  fs.mkdirSync(home, { recursive: true });
});
afterEach(() => tmp.cleanup());

/** A provider module written the way the guide says, importing core by its package name. */
function pluginSource(name: string, marker = ""): string {
  return `import { MemoryProvider, getHermesHome } from "@hermes/memory-core";
${marker}
export const coreUrl = import.meta.resolve("@hermes/memory-core");
class P extends MemoryProvider {
  get name() { return ${JSON.stringify(name)}; }
  isAvailable() { return true; }
  initialize() {}
  getToolSchemas() { return []; }
  homeSeen() { return getHermesHome(); }
}
export function register(ctx) { ctx.registerMemoryProvider(new P()); }
`;
}

/** Copy the built core into `dir/node_modules/@hermes/memory-core` (with its yaml dependency). */
function bundleCoreCopy(dir: string): string {
  const copy = path.join(dir, "node_modules", "@hermes", "memory-core");
  fs.mkdirSync(copy, { recursive: true });
  fs.copyFileSync(path.join(PACKAGE_DIR, "package.json"), path.join(copy, "package.json"));
  fs.cpSync(path.join(PACKAGE_DIR, "dist"), path.join(copy, "dist"), { recursive: true, filter: (f) => !/\.test\./.test(f) });
  fs.mkdirSync(path.join(dir, "node_modules"), { recursive: true });
  for (const dependency of CORE_DEPENDENCIES) {
    const link = path.join(dir, "node_modules", dependency);
    fs.mkdirSync(path.dirname(link), { recursive: true });
    fs.symlinkSync(fs.realpathSync(path.join(PACKAGE_DIR, "node_modules", dependency)), link, "dir");
  }
  return copy;
}

/** Load `name` in a fresh Node process through the built core and report what the host sees. */
function loadInProcess(name: string, withCli = false): Record<string, unknown> {
  const script = `
import { loadMemoryProvider, loadProviderCli, MemoryProvider, isMemoryProvider, runWithProfile } from ${JSON.stringify(pathToFileURL(CORE_DIST).href)};
const out = {};
try {
  const p = await loadMemoryProvider(${JSON.stringify(name)}, { hermesHome: ${JSON.stringify(home)}, cwd: ${JSON.stringify(cwd)}, env: {} });
  out.name = p.name;
  out.sameClass = p instanceof MemoryProvider;
  out.isProvider = isMemoryProvider(p);
  out.homeSeen = runWithProfile(${JSON.stringify(path.join(tmp.dir, "scoped"))}, () => p.homeSeen());
  if (${withCli}) out.cli = typeof (await loadProviderCli(${JSON.stringify(name)}, { hermesHome: ${JSON.stringify(home)}, cwd: ${JSON.stringify(cwd)}, env: {} }));
} catch (e) { out.error = e.message; }
console.log(JSON.stringify(out));
`;
  const stdout = execFileSync(process.execPath, ["--input-type=module", "-e", script], {
    cwd,
    encoding: "utf8",
    env: { ...process.env, HERMES_HOME: home },
  });
  return JSON.parse(stdout.trim().split("\n").pop()!) as Record<string, unknown>;
}

describe("folder plugins importing @hermes/memory-core", () => {
  it("a $HERMES_HOME/plugins provider without node_modules gets the host's core: one class, one profile scope", () => {
    writeFiles(path.join(home, "plugins", "my-provider"), { "index.js": pluginSource("my-provider") });
    const seen = loadInProcess("my-provider");
    expect(seen.error).toBeUndefined();
    expect(seen).toMatchObject({ name: "my-provider", sameClass: true, isProvider: true, homeSeen: path.join(tmp.dir, "scoped") });
  });

  it("its cli.js may import core too", () => {
    writeFiles(path.join(home, "plugins", "my-provider"), {
      "index.js": pluginSource("my-provider"),
      "cli.js": `import { getHermesHome } from "@hermes/memory-core";\nexport function registerCli() { return getHermesHome(); }\n`,
    });
    expect(loadInProcess("my-provider", true)).toMatchObject({ name: "my-provider", cli: "function" });
  });

  it("an unrelated copy of core above the plugin folder is not used: still the host's class", () => {
    bundleCoreCopy(home);
    writeFiles(path.join(home, "plugins", "my-provider"), { "index.js": pluginSource("my-provider") });
    expect(loadInProcess("my-provider")).toMatchObject({ name: "my-provider", sameClass: true });
  });

  it("a folder plugin that ships its own copy of core keeps loading that copy", () => {
    const dir = path.join(home, "plugins", "own-core");
    bundleCoreCopy(dir);
    writeFiles(dir, { "index.js": pluginSource("own-core") });
    const seen = loadInProcess("own-core");
    expect(seen.error).toBeUndefined();
    // Its own class (not the host's), recognised across copies.
    expect(seen).toMatchObject({ name: "own-core", sameClass: false, isProvider: true });
  });

  it("a package plugin that bundles its own copy of core still loads, and shares the host's profile scope", () => {
    // npm gives every globally installed package its own copy of its peers, so a provider
    // installed with `npm install -g` beside the CLI runs on a second copy of core.
    const pkgDir = installPackage(
      cwd,
      "npm",
      { name: "mem-pkg", hermesMemoryProvider: "pkgmem", type: "module", main: "index.js" },
      { "index.js": pluginSource("pkgmem") },
    );
    bundleCoreCopy(pkgDir);
    writeFiles(cwd, { "package.json": { name: "host", private: true, dependencies: { "mem-pkg": "1.0.0" } } });
    expect(loadInProcess("pkgmem")).toMatchObject({
      name: "pkgmem",
      sameClass: false,
      isProvider: true,
      homeSeen: path.join(tmp.dir, "scoped"),
    });
  });
});
