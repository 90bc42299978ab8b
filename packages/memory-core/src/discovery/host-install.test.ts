/**
 * Providers installed next to the host: a global install (`npm install -g @hermes/memory-cli
 * @hermes/memory-sqlite`) puts core inside the CLI's folder under `<prefix>/lib/node_modules`,
 * and the provider beside the CLI. Discovery, and so every command and `openMemory()`, finds it
 * there, after the project's and `$HERMES_HOME`'s dependencies.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { discoverMemoryProviders, findMemoryProvider } from "./discover.js";
import { defaultPackageRoots, hostPackageRoot } from "./package-source.js";
import { loadMemoryProvider } from "../loader.js";
import { installPackage, makeTempDir, providerSource, writeFiles } from "../test-support/temp-tree.js";

let tmp: { dir: string; cleanup: () => void };
let prefix: string;
let globalModules: string;
/** Where core sits in a global install of the CLI: inside the CLI's own node_modules. */
let globalCore: string;
let home: string;
let elsewhere: string;

beforeEach(() => {
  tmp = makeTempDir("hermes-host-");
  prefix = path.join(tmp.dir, "prefix");
  globalModules = path.join(prefix, "lib", "node_modules");
  globalCore = path.join(globalModules, "@hermes", "memory-cli", "node_modules", "@hermes", "memory-core");
  writeFiles(path.join(globalModules, "@hermes", "memory-cli"), {
    "package.json": { name: "@hermes/memory-cli", dependencies: { "@hermes/memory-core": "^0.1.0" } },
  });
  writeFiles(globalCore, { "package.json": { name: "@hermes/memory-core", version: "0.1.0" } });
  home = path.join(tmp.dir, "home");
  elsewhere = path.join(tmp.dir, "elsewhere");
  fs.mkdirSync(home);
  fs.mkdirSync(elsewhere);
});
afterEach(() => tmp.cleanup());

function globalProvider(pkg: string, provider: string, files: Record<string, string> = { "index.js": providerSource(provider) }): string {
  return installPackage(path.join(prefix, "lib"), "npm", { name: pkg, hermesMemoryProvider: provider, main: "index.js" }, files);
}

describe("hostPackageRoot", () => {
  it("is the global node_modules folder when nothing beside it has a package.json", async () => {
    expect(await hostPackageRoot(globalCore)).toBe(globalModules);
    expect(await hostPackageRoot(path.join(globalCore, "dist", "index.js"))).toBe(globalModules);
  });

  it("is the project when the outermost node_modules sits beside a package.json (npm, pnpm, npx)", async () => {
    const project = path.join(tmp.dir, "project");
    writeFiles(project, { "package.json": { name: "project", private: true } });
    const pnpmCore = installPackage(project, "pnpm", { name: "@hermes/memory-core", version: "0.1.0" });
    expect(pnpmCore).toContain(`${path.sep}.pnpm${path.sep}`);
    expect(await hostPackageRoot(pnpmCore)).toBe(project);
    expect(await hostPackageRoot(path.join(project, "node_modules", "@hermes", "memory-core"))).toBe(project);
  });

  it("is null outside any node_modules (a development checkout)", async () => {
    expect(await hostPackageRoot(elsewhere)).toBeNull();
  });

  it("follows symlinks to where the host really is", async () => {
    const link = path.join(tmp.dir, "bin-link");
    fs.symlinkSync(globalCore, link, "dir");
    expect(await hostPackageRoot(link)).toBe(globalModules);
  });
});

describe("providers installed next to the host", () => {
  const opts = (extra: Record<string, unknown> = {}) => ({ hermesHome: home, cwd: elsewhere, env: {}, hostDir: globalCore, ...extra });

  it("finds every provider package installed in a global prefix (scoped too), from any working directory", async () => {
    const plain = globalProvider("hermes-memory-notes", "notes");
    const scoped = globalProvider("@acme/hermes-memory-acme", "acme");
    // Not providers: a plain package, npm's bookkeeping, a stray file.
    writeFiles(globalModules, { "plain/package.json": { name: "plain" }, ".bin/notes": "", ".package-lock.json": "{}", "stray-file": "" });

    const result = await discoverMemoryProviders(opts());
    expect(result.problems).toEqual([]);
    expect(result.providers.map((p) => [p.name, p.source, p.dir])).toEqual([
      ["acme", "package", scoped],
      ["notes", "package", plain],
    ]);
    expect(result.searched).toContainEqual({ source: "package", location: globalModules, enabled: true });
    expect(await defaultPackageRoots({ cwd: elsewhere, hermesHome: home, hostDir: globalCore })).toEqual([globalModules]);
  });

  it("loads a globally installed provider by name", async () => {
    globalProvider("hermes-memory-notes", "notes");
    const provider = await loadMemoryProvider("notes", opts());
    expect(provider.name).toBe("notes");
  });

  it("comes after the project's and $HERMES_HOME's dependencies: theirs win, the global one is reported shadowed", async () => {
    globalProvider("hermes-memory-notes", "notes");
    globalProvider("hermes-memory-home", "home-notes");
    writeFiles(elsewhere, { "package.json": { name: "project", dependencies: { "project-notes": "1" } } });
    const projectDir = installPackage(
      elsewhere,
      "npm",
      { name: "project-notes", hermesMemoryProvider: "notes", main: "index.js" },
      { "index.js": "" },
    );
    writeFiles(home, { "package.json": { name: "hermes-user-plugins", private: true, dependencies: { "home-notes-pkg": "1" } } });
    const homeDir = installPackage(
      home,
      "npm",
      { name: "home-notes-pkg", hermesMemoryProvider: "home-notes", main: "index.js" },
      { "index.js": "" },
    );

    expect(await defaultPackageRoots({ cwd: elsewhere, hermesHome: home, hostDir: globalCore })).toEqual([elsewhere, home, globalModules]);
    const result = await discoverMemoryProviders(opts());
    expect((await findMemoryProvider("notes", opts()))?.dir).toBe(projectDir);
    expect((await findMemoryProvider("home-notes", opts()))?.dir).toBe(homeDir);
    expect(result.shadowed.map((s) => [s.provider.name, s.provider.dir.startsWith(globalModules)])).toEqual([
      ["home-notes", true],
      ["notes", true],
    ]);
  });

  it("a package reached from two roots is found once and shadows nothing", async () => {
    const project = path.join(tmp.dir, "project");
    writeFiles(project, { "package.json": { name: "project", dependencies: { "hermes-memory-notes": "1" } } });
    installPackage(project, "npm", { name: "hermes-memory-notes", hermesMemoryProvider: "notes", main: "index.js" }, { "index.js": "" });
    const projectCore = installPackage(project, "npm", { name: "@hermes/memory-core", version: "0.1.0" });
    const result = await discoverMemoryProviders({
      hermesHome: home,
      cwd: project,
      env: {},
      hostDir: projectCore,
      packageRoots: [project, path.join(project, "node_modules")],
    });
    expect(result.providers.map((p) => p.name)).toEqual(["notes"]);
    expect(result.shadowed).toEqual([]);
  });

  it("an unreadable global folder is a problem, not a failure", async () => {
    if (process.getuid?.() === 0) return; // root reads every folder
    globalProvider("hermes-memory-notes", "notes");
    fs.chmodSync(globalModules, 0o000);
    try {
      const result = await discoverMemoryProviders(opts());
      expect(result.providers).toEqual([]);
      expect(result.problems).toMatchObject([{ code: "UNREADABLE_DIRECTORY", location: globalModules }]);
    } finally {
      fs.chmodSync(globalModules, 0o755);
    }
  });
});

describe("the default host is this copy of core", () => {
  it("core copied into a global prefix finds the providers installed beside the CLI, with no options", () => {
    const coreDir = path.resolve(import.meta.dirname, "../..");
    const dist = path.join(coreDir, "dist", "index.js");
    if (!fs.existsSync(dist)) throw new Error(`Build core first (pnpm build): ${dist} is missing`);
    // A real installed layout: core's built files inside the CLI's node_modules, its own
    // dependencies resolved through a link, a provider package beside the CLI.
    fs.cpSync(path.join(coreDir, "dist"), path.join(globalCore, "dist"), { recursive: true });
    fs.copyFileSync(path.join(coreDir, "package.json"), path.join(globalCore, "package.json"));
    fs.symlinkSync(path.join(coreDir, "node_modules"), path.join(globalCore, "node_modules"), "dir");
    globalProvider("hermes-memory-notes", "notes", { "index.js": "export {};\n" });
    const script = `const core = await import(${JSON.stringify(path.join(globalCore, "dist", "index.js"))});
const result = await core.discoverMemoryProviders({ hermesHome: ${JSON.stringify(home)}, cwd: ${JSON.stringify(elsewhere)}, env: {} });
console.log(JSON.stringify(result.providers.map((p) => [p.name, p.dir])));`;
    const run = spawnSync(process.execPath, ["--input-type=module", "-e", script], { cwd: elsewhere, encoding: "utf8" });
    expect(run.stderr).toBe("");
    expect(JSON.parse(run.stdout)).toEqual([["notes", path.join(globalModules, "hermes-memory-notes")]]);
  });
});
