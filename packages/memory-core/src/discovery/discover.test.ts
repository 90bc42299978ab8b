import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { discoverMemoryProviders, findMemoryProvider, listMemoryProviderNames } from "./discover.js";
import { installPackage, makeTempDir, providerSource, THROWS_ON_IMPORT, writeFiles } from "../test-support/temp-tree.js";

let tmp: { dir: string; cleanup: () => void };
let home: string;
let cwd: string;
let bundled: string;

beforeEach(() => {
  tmp = makeTempDir();
  home = path.join(tmp.dir, "home");
  cwd = path.join(tmp.dir, "work");
  bundled = path.join(tmp.dir, "bundled");
  fs.mkdirSync(home, { recursive: true });
  fs.mkdirSync(cwd, { recursive: true });
  writeFiles(cwd, { "package.json": { name: "host", private: true } });
});
afterEach(() => tmp.cleanup());

const opts = (extra: Record<string, unknown> = {}) => ({ hermesHome: home, cwd, bundledDir: bundled, env: {}, ...extra });

function userPlugin(name: string, files: Record<string, string | object>) {
  writeFiles(path.join(home, "plugins", name), files);
}

describe("directory providers", () => {
  it("reads plugin.yaml and finds the entry and cli.js beside it (config-schema.js is not reported: the schema comes from getConfigSchema())", async () => {
    userPlugin("alpha", {
      "plugin.yaml": "name: alpha\nversion: 1.2.0\ndescription: Alpha memory\nhooks: [sync_turn, on_session_end]\n",
      "index.js": providerSource("alpha"),
      "cli.js": "export function registerCli() {}\n",
      "config-schema.js": "export default [];\n",
    });
    const result = await discoverMemoryProviders(opts());
    expect(result.problems).toEqual([]);
    expect(result.providers).toEqual([
      {
        name: "alpha",
        source: "user",
        dir: path.join(home, "plugins", "alpha"),
        entry: path.join(home, "plugins", "alpha", "index.js"),
        version: "1.2.0",
        description: "Alpha memory",
        hooks: ["sync_turn", "on_session_end"],
        cli: path.join(home, "plugins", "alpha", "cli.js"),
        packageName: null,
      },
    ]);
  });

  it("uses plugin.yaml entry and index.mjs", async () => {
    userPlugin("beta", { "plugin.yaml": "name: beta\nentry: dist/main.js\n", "dist/main.js": "export {}", "dist/cli.js": "" });
    userPlugin("gamma", { "plugin.yaml": "name: gamma\n", "index.mjs": "export {}" });
    const { providers, problems } = await discoverMemoryProviders(opts());
    expect(problems).toEqual([]);
    const beta = providers.find((p) => p.name === "beta")!;
    expect(beta.entry).toBe(path.join(home, "plugins", "beta", "dist", "main.js"));
    expect(beta.cli).toBe(path.join(home, "plugins", "beta", "dist", "cli.js"));
    expect(providers.find((p) => p.name === "gamma")!.entry).toMatch(/index\.mjs$/);
  });

  it("without plugin.yaml accepts an entry mentioning MemoryProvider within its first 8192 characters only", async () => {
    userPlugin("near", { "index.js": "// uses MemoryProvider\nexport {}" });
    userPlugin("far", { "index.js": " ".repeat(8200) + "registerMemoryProvider" });
    userPlugin("other", { "index.js": "export function register(ctx) { ctx.registerTool() }" });
    userPlugin("viaRegister", { "index.js": "// ctx.registerMemoryProvider(x)" });
    const names = await listMemoryProviderNames(opts());
    expect(names).toContain("near");
    expect(names).not.toContain("far");
    expect(names).not.toContain("other");
  });

  it("skips folders starting with _ or . and does not look deeper than one level", async () => {
    userPlugin("_private", { "plugin.yaml": "name: private\n", "index.js": "" });
    userPlugin(".hidden", { "plugin.yaml": "name: hidden\n", "index.js": "" });
    userPlugin("memory/nested", { "plugin.yaml": "name: nested\n", "index.js": "" });
    writeFiles(path.join(home, "plugins"), { "stray.js": "MemoryProvider" });
    const result = await discoverMemoryProviders(opts());
    expect(result.providers.map((p) => p.name)).toEqual([]);
  });

  it("ignores Python plugins sharing the plugins folder", async () => {
    userPlugin("honcho", { "plugin.yaml": "name: honcho\n", "__init__.py": "class X(MemoryProvider): pass" });
    const result = await discoverMemoryProviders(opts());
    expect(result.providers).toEqual([]);
    expect(result.problems).toEqual([]);
  });

  it("reports bad YAML, wrong field types, bad names and missing entries, and keeps going", async () => {
    userPlugin("a-bad-yaml", { "plugin.yaml": "name: [unterminated\n", "index.js": "" });
    userPlugin("b-types", { "plugin.yaml": "name: btypes\nhooks: nope\ndescription: [1]\n", "index.js": "" });
    userPlugin("c-name", { "plugin.yaml": "name: Not_Valid\n", "index.js": "" });
    userPlugin("d-builtin", { "plugin.yaml": "name: builtin\n", "index.js": "" });
    userPlugin("e-missing", { "plugin.yaml": "name: emissing\nentry: dist/index.js\n" });
    userPlugin("f-noentry", { "plugin.yaml": "name: fnoentry\n" });
    userPlugin("Upper", { "index.js": "MemoryProvider" });
    userPlugin("good", { "plugin.yaml": "name: good\n", "index.js": "" });
    const result = await discoverMemoryProviders(opts());
    expect(result.providers.map((p) => p.name)).toEqual(["good"]);
    const byLocation = (frag: string) => result.problems.find((p) => p.location.includes(frag));
    expect(byLocation("a-bad-yaml")).toMatchObject({ code: "INVALID_MANIFEST", source: "user" });
    expect(byLocation("a-bad-yaml")!.message).toContain("invalid YAML");
    expect(byLocation("b-types")!.message).toMatch(/'description' must be a string.*'hooks' must be a list of strings/);
    expect(byLocation("c-name")!.message).toContain("Not_Valid");
    expect(byLocation("d-builtin")!.message).toContain("reserved");
    expect(byLocation("e-missing")).toMatchObject({ code: "MISSING_ENTRY", name: "emissing" });
    expect(byLocation("f-noentry")).toMatchObject({ code: "MISSING_ENTRY" });
    expect(byLocation("Upper")).toMatchObject({ code: "INVALID_NAME" });
    for (const p of result.problems) expect(p.remedy.length).toBeGreaterThan(10);
  });

  it("refuses ../ and absolute entries and symlinks leaving the folder", async () => {
    writeFiles(tmp.dir, { "outside/evil.js": "MemoryProvider" });
    userPlugin("escape", { "plugin.yaml": "name: escape\nentry: ../../../etc/passwd\n" });
    userPlugin("escape2", { "plugin.yaml": "name: escape2\nentry: ../../../outside/evil.js\n" });
    userPlugin("absolute", { "plugin.yaml": `name: absolute\nentry: ${path.join(tmp.dir, "outside", "evil.js")}\n` });
    userPlugin("linked", { "plugin.yaml": "name: linked\nentry: evil.js\n" });
    fs.symlinkSync(path.join(tmp.dir, "outside", "evil.js"), path.join(home, "plugins", "linked", "evil.js"));
    userPlugin("linked-default", { "plugin.yaml": "name: linkeddefault\n" });
    fs.symlinkSync(path.join(tmp.dir, "outside", "evil.js"), path.join(home, "plugins", "linked-default", "index.js"));
    fs.mkdirSync(path.join(home, "plugins", "linked-bare"));
    fs.symlinkSync(path.join(tmp.dir, "outside", "evil.js"), path.join(home, "plugins", "linked-bare", "index.js"));
    const result = await discoverMemoryProviders(opts());
    expect(result.providers).toEqual([]);
    expect(result.problems.map((p) => [p.name, p.code]).sort()).toEqual([
      ["absolute", "ENTRY_OUTSIDE_PACKAGE"],
      ["escape", "ENTRY_OUTSIDE_PACKAGE"],
      ["escape2", "ENTRY_OUTSIDE_PACKAGE"],
      ["linked", "ENTRY_OUTSIDE_PACKAGE"],
      ["linked-bare", "ENTRY_OUTSIDE_PACKAGE"],
      ["linkeddefault", "ENTRY_OUTSIDE_PACKAGE"],
    ]);
  });

  it("a folder plugin's cli.js symlinked outside the folder is refused (reported, never imported); the provider stays", async () => {
    writeFiles(tmp.dir, { "outside/cli.js": "export function registerCli() {}" });
    userPlugin("clilink", { "plugin.yaml": "name: clilink\n", "index.js": providerSource("clilink") });
    fs.symlinkSync(path.join(tmp.dir, "outside", "cli.js"), path.join(home, "plugins", "clilink", "cli.js"));
    const result = await discoverMemoryProviders(opts());
    expect(result.providers.map((p) => [p.name, p.cli])).toEqual([["clilink", null]]);
    expect(result.problems).toMatchObject([{ name: "clilink", code: "ENTRY_OUTSIDE_PACKAGE" }]);
    expect(result.problems[0]!.message).toContain("cli.js");
  });

  it("an unreadable plugin folder is a problem, not a failure", async () => {
    fs.mkdirSync(path.join(home, "plugins"), { recursive: true });
    fs.symlinkSync(path.join(tmp.dir, "nowhere"), path.join(home, "plugins", "broken"));
    userPlugin("ok", { "plugin.yaml": "name: ok\n", "index.js": "" });
    if (process.getuid?.() !== 0) {
      userPlugin("locked", { "plugin.yaml": "name: locked\n", "index.js": "" });
      fs.chmodSync(path.join(home, "plugins", "locked"), 0o000);
    }
    try {
      const result = await discoverMemoryProviders(opts());
      expect(result.providers.map((p) => p.name)).toEqual(["ok"]);
      expect(result.problems.every((p) => p.code === "UNREADABLE_DIRECTORY")).toBe(true);
      expect(result.problems.some((p) => p.location.endsWith("broken"))).toBe(true);
    } finally {
      if (fs.existsSync(path.join(home, "plugins", "locked"))) fs.chmodSync(path.join(home, "plugins", "locked"), 0o755);
    }
  });
});

describe("precedence", () => {
  beforeEach(() => {
    writeFiles(path.join(bundled, "shared"), { "plugin.yaml": "name: shared\ndescription: bundled\n", "index.js": "" });
    userPlugin("shared", { "plugin.yaml": "name: shared\ndescription: user\n", "index.js": "" });
    userPlugin("mine", { "plugin.yaml": "name: mine\ndescription: user\n", "index.js": "" });
    writeFiles(path.join(cwd, ".hermes", "plugins", "mine"), { "plugin.yaml": "name: mine\ndescription: project\n", "index.js": "" });
    writeFiles(path.join(cwd, ".hermes", "plugins", "proj"), { "plugin.yaml": "name: proj\n", "index.js": "" });
    writeFiles(path.join(cwd, ".hermes", "plugins", "shared"), { "plugin.yaml": "name: shared\n", "index.js": "" });
  });

  it("ignores project plugins without the opt-in", async () => {
    const result = await discoverMemoryProviders(opts());
    expect(result.providers.map((p) => `${p.source}:${p.name}`)).toEqual(["bundled:shared", "user:mine"]);
    expect(result.searched.find((s) => s.source === "project")).toMatchObject({ enabled: false });
  });

  it.each(["1", "true", "YES", "On"])("scans project plugins when HERMES_ENABLE_PROJECT_PLUGINS=%s", async (value) => {
    const result = await discoverMemoryProviders(opts({ env: { HERMES_ENABLE_PROJECT_PLUGINS: value } }));
    expect(result.providers.map((p) => `${p.source}:${p.name}`)).toEqual(["bundled:shared", "user:mine", "project:proj"]);
  });

  it("does not scan project plugins for other values", async () => {
    const result = await discoverMemoryProviders(opts({ env: { HERMES_ENABLE_PROJECT_PLUGINS: "0" } }));
    expect(result.providers.map((p) => p.name)).not.toContain("proj");
  });

  it("a user plugin cannot shadow a bundled one, nor a project one a user one", async () => {
    const result = await discoverMemoryProviders(opts({ enableProjectPlugins: true }));
    expect(result.providers.find((p) => p.name === "shared")).toMatchObject({ source: "bundled", description: "bundled" });
    expect(result.providers.find((p) => p.name === "mine")).toMatchObject({ source: "user" });
    expect(result.shadowed.map((s) => `${s.provider.source}:${s.provider.name}<${s.shadowedBy.source}`)).toEqual([
      "user:shared<bundled",
      "project:mine<user",
      "project:shared<bundled",
    ]);
    expect(await findMemoryProvider("shared", opts())).toMatchObject({ source: "bundled" });
    expect(await findMemoryProvider("nope", opts())).toBeNull();
  });

  it("a package provider loses against every folder source", async () => {
    installPackage(cwd, "npm", { name: "mine-pkg", hermesMemoryProvider: "mine", main: "index.js" }, { "index.js": "" });
    writeFiles(cwd, { "package.json": { name: "host", dependencies: { "mine-pkg": "1.0.0" } } });
    const result = await discoverMemoryProviders(opts());
    expect(result.providers.find((p) => p.name === "mine")!.source).toBe("user");
    expect(result.shadowed.some((s) => s.provider.source === "package" && s.provider.packageName === "mine-pkg")).toBe(true);
  });
});

describe.each(["npm", "pnpm"] as const)("package providers (%s layout)", (layout) => {
  function host(deps: Record<string, Record<string, string>>) {
    writeFiles(cwd, { "package.json": { name: "host", private: true, ...deps } });
  }

  it("finds direct dependencies with hermesMemoryProvider: string, object and array forms", async () => {
    const strDir = installPackage(
      cwd,
      layout,
      {
        name: "mem-str",
        version: "2.0.0",
        hermesMemoryProvider: "strmem",
        description: "String form",
        exports: { ".": { types: "./d.ts", import: "./dist/index.js" } },
      },
      { "dist/index.js": "" },
    );
    installPackage(
      cwd,
      layout,
      {
        name: "@acme/mem-obj",
        version: "0.3.0",
        hermesMemoryProvider: {
          name: "objmem",
          entry: "./lib/provider.js",
          cli: "./lib/cli.js",
          configSchema: "./lib/schema.js",
          description: "Object form",
          hooks: ["prefetch"],
        },
      },
      { "lib/provider.js": "", "lib/cli.js": "", "lib/schema.js": "" },
    );
    installPackage(
      cwd,
      layout,
      { name: "mem-multi", hermesMemoryProvider: [{ name: "multi-a" }, { name: "multi-b", entry: "b.js" }], main: "a.js" },
      { "a.js": "", "b.js": "" },
    );
    installPackage(cwd, layout, { name: "not-a-provider", main: "index.js" }, { "index.js": THROWS_ON_IMPORT });
    host({
      dependencies: { "mem-str": "2.0.0", "not-a-provider": "1" },
      devDependencies: { "@acme/mem-obj": "0.3.0" },
      optionalDependencies: { "mem-multi": "1", "not-installed": "1" },
    });

    const result = await discoverMemoryProviders(opts());
    expect(result.problems).toEqual([]);
    expect(result.providers.map((p) => p.name)).toEqual(["strmem", "multi-a", "multi-b", "objmem"]);
    const str = result.providers[0]!;
    expect(str).toMatchObject({
      source: "package",
      packageName: "mem-str",
      version: "2.0.0",
      description: "String form",
      dir: strDir,
      entry: path.join(strDir, "dist", "index.js"),
      cli: null,
    });
    expect(str).not.toHaveProperty("configSchema");
    const obj = result.providers.find((p) => p.name === "objmem")!;
    expect(obj.entry.endsWith(path.join("lib", "provider.js"))).toBe(true);
    expect(obj.cli!.endsWith(path.join("lib", "cli.js"))).toBe(true);
    expect(obj).not.toHaveProperty("configSchema");
    expect(obj).toMatchObject({ description: "Object form", hooks: ["prefetch"], packageName: "@acme/mem-obj" });
    if (layout === "pnpm") expect(obj.dir).toContain(`${path.sep}.pnpm${path.sep}`);
    expect(result.providers.find((p) => p.name === "multi-b")!.entry.endsWith("b.js")).toBe(true);
  });

  it("a package whose package.json is a symlink to a file elsewhere resolves its entry inside the real package folder", async () => {
    // The symlink target declares a main that exists next to the target, not in the package.
    writeFiles(tmp.dir, {
      "elsewhere/package.json": { name: "linkpkg", hermesMemoryProvider: "linkpkg", main: "evil.js" },
      "elsewhere/evil.js": THROWS_ON_IMPORT,
    });
    const pkgDir = installPackage(
      cwd,
      layout,
      { name: "linkpkg", hermesMemoryProvider: "linkpkg", main: "evil.js" },
      { "placeholder.txt": "" },
    );
    fs.rmSync(path.join(pkgDir, "package.json"));
    fs.symlinkSync(path.join(tmp.dir, "elsewhere", "package.json"), path.join(pkgDir, "package.json"));
    host({ dependencies: { linkpkg: "1.0.0" } });
    let result = await discoverMemoryProviders(opts());
    expect(result.providers).toEqual([]);
    expect(result.problems).toMatchObject([{ name: "linkpkg", code: "MISSING_ENTRY" }]);
    writeFiles(pkgDir, { "evil.js": "" });
    result = await discoverMemoryProviders(opts());
    expect(result.providers.map((p) => [p.dir, p.entry])).toEqual([[pkgDir, path.join(pkgDir, "evil.js")]]);
  });

  it("ignores dependency names that are paths", async () => {
    writeFiles(tmp.dir, { "evil/package.json": { name: "evil", hermesMemoryProvider: "evil", main: "i.js" }, "evil/i.js": "" });
    host({ dependencies: { "../../evil": "1", "..": "1", "a/b/c": "1" } });
    const result = await discoverMemoryProviders(opts());
    expect(result.providers).toEqual([]);
    expect(result.problems).toEqual([]);
  });

  it("ignores transitive dependencies (no tree scan)", async () => {
    installPackage(cwd, layout, { name: "direct", main: "i.js", dependencies: { transitive: "1" } }, { "i.js": "" });
    installPackage(cwd, "npm", { name: "transitive", hermesMemoryProvider: "transitive", main: "i.js" }, { "i.js": "" });
    host({ dependencies: { direct: "1" } });
    expect((await discoverMemoryProviders(opts())).providers).toEqual([]);
  });

  it("falls back to the node_modules walk when ./package.json is not exported", async () => {
    installPackage(cwd, layout, { name: "hidden-pkg", hermesMemoryProvider: "hidden", exports: { ".": "./main.js" } }, { "main.js": "" });
    host({ dependencies: { "hidden-pkg": "1" } });
    const { providers } = await discoverMemoryProviders(opts());
    expect(providers.map((p) => p.name)).toEqual(["hidden"]);
    expect(providers[0]!.entry.endsWith("main.js")).toBe(true);
  });

  it("finds dependencies installed in an ancestor node_modules (hoisting) from a nested root", async () => {
    installPackage(tmp.dir, layout, { name: "hoisted", hermesMemoryProvider: "hoisted", main: "i.js" }, { "i.js": "" });
    host({ dependencies: { hoisted: "1" } });
    expect(await listMemoryProviderNames(opts())).toEqual(["hoisted"]);
  });

  it("reports a broken manifest while the other packages load", async () => {
    installPackage(cwd, layout, { name: "good-pkg", hermesMemoryProvider: "good", main: "i.js" }, { "i.js": "" });
    const brokenDir = installPackage(cwd, layout, { name: "broken-json" }, {});
    fs.writeFileSync(path.join(brokenDir, "package.json"), '{ "name": "broken-json", "hermesMemoryProvider": "broken", }');
    const brokenOther = installPackage(cwd, layout, { name: "broken-non-provider" }, {});
    fs.writeFileSync(path.join(brokenOther, "package.json"), "{ not json, and not a provider");
    installPackage(cwd, layout, { name: "bad-field", hermesMemoryProvider: { entry: "./i.js" } }, { "i.js": "" });
    installPackage(cwd, layout, { name: "bad-name", hermesMemoryProvider: "Bad Name" }, { "index.js": "" });
    installPackage(cwd, layout, { name: "escapes", hermesMemoryProvider: { name: "escapes", entry: "../../etc/passwd" } }, {});
    installPackage(cwd, layout, { name: "abs", hermesMemoryProvider: { name: "abs", entry: "/etc/passwd" } }, {});
    installPackage(
      cwd,
      layout,
      { name: "unbuilt", hermesMemoryProvider: { name: "unbuilt", entry: "./dist/index.js", cli: "./dist/cli.js" } },
      {},
    );
    installPackage(cwd, layout, { name: "nocli", hermesMemoryProvider: { name: "nocli", cli: "./cli.js" }, main: "i.js" }, { "i.js": "" });
    host({
      dependencies: {
        "good-pkg": "1",
        "broken-json": "1",
        "broken-non-provider": "1",
        "bad-field": "1",
        "bad-name": "1",
        escapes: "1",
        abs: "1",
        unbuilt: "1",
        nocli: "1",
      },
    });

    const result = await discoverMemoryProviders(opts());
    expect(result.providers.map((p) => p.name)).toEqual(["good", "nocli"]);
    const codes = Object.fromEntries(result.problems.map((p) => [path.basename(path.dirname(p.location)), p.code]));
    expect(codes).toMatchObject({
      "broken-json": "INVALID_MANIFEST",
      "bad-field": "INVALID_NAME",
      "bad-name": "INVALID_NAME",
      escapes: "ENTRY_OUTSIDE_PACKAGE",
      abs: "ENTRY_OUTSIDE_PACKAGE",
      unbuilt: "MISSING_ENTRY",
      nocli: "MISSING_ENTRY",
    });
    expect(codes).not.toHaveProperty("broken-non-provider");
    expect(result.providers.find((p) => p.name === "nocli")!.cli).toBeNull();
  });

  it("scans $HERMES_HOME as a package root when it has a package.json", async () => {
    writeFiles(home, { "package.json": { name: "hermes-user-plugins", private: true, dependencies: { "user-mem": "1" } } });
    installPackage(home, layout, { name: "user-mem", hermesMemoryProvider: "usermem", main: "i.js" }, { "i.js": "" });
    expect(await listMemoryProviderNames(opts())).toEqual(["usermem"]);
    // Explicit roots replace the defaults.
    expect(await listMemoryProviderNames(opts({ packageRoots: [cwd] }))).toEqual([]);
  });

  it("1,000 dependency manifests: imports nothing and finishes well under a second", async () => {
    const deps: Record<string, string> = {};
    for (let i = 0; i < 1000; i++) {
      const name = `dep-${String(i).padStart(4, "0")}`;
      deps[name] = "1.0.0";
      const isProvider = i % 100 === 0;
      installPackage(
        cwd,
        layout,
        { name, main: "index.js", ...(isProvider ? { hermesMemoryProvider: `prov-${i}` } : {}) },
        { "index.js": THROWS_ON_IMPORT },
      );
    }
    host({ dependencies: deps });
    const g = globalThis as { __hermesImported?: number };
    const before = g.__hermesImported ?? 0;
    await discoverMemoryProviders(opts()); // warm the file system cache like a second start would
    const started = performance.now();
    const result = await discoverMemoryProviders(opts());
    const elapsed = performance.now() - started;
    expect(result.providers).toHaveLength(10);
    expect(result.problems).toEqual([]);
    expect(g.__hermesImported ?? 0).toBe(before);
    expect(elapsed).toBeLessThan(1000);
  }, 60_000);
});

describe("the folder-source test for imports", () => {
  it("never imports directory providers either", async () => {
    userPlugin("boom", { "plugin.yaml": "name: boom\n", "index.js": THROWS_ON_IMPORT });
    const g = globalThis as { __hermesImported?: number };
    const before = g.__hermesImported ?? 0;
    expect((await discoverMemoryProviders(opts())).providers.map((p) => p.name)).toEqual(["boom"]);
    expect(g.__hermesImported ?? 0).toBe(before);
  });
});
