/**
 * The tarballs packed from this commit, installed the way a new user installs them with npm (no
 * snapshot versions, nothing rewritten): together in an empty project, globally beside the CLI,
 * used from another working directory, and without their install scripts. Third-party
 * dependencies come from the npm registry; `@hermes` packages never do: that scope points at a
 * loopback Verdaccio with no uplinks, empty until the global install publishes the tarballs to it.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRegistry, type LocalRegistry } from "./registry.js";
import { run, type RunResult } from "./run.js";

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
/** The integrations' own libraries, at the versions the packages are tested with. */
const PEERS = ["ai@6.0.326", "zod@4.1.12"];

interface Packed {
  name: string;
  version: string;
  bin: Record<string, string>;
  tarball: string;
}

let work: string;
let registry: LocalRegistry;
let env: NodeJS.ProcessEnv;
let packed: Packed[];
/** The project of (a), reused by (c). */
let project: string;

/** An empty directory under the work dir (a project gets a package.json and the scope's .npmrc). */
function dir(name: string, asProject = false): string {
  const d = path.join(work, name);
  fs.mkdirSync(d, { recursive: true });
  if (asProject) {
    fs.writeFileSync(path.join(d, "package.json"), JSON.stringify({ name, version: "1.0.0", private: true }, null, 2));
    fs.writeFileSync(path.join(d, ".npmrc"), `@hermes:registry=${registry.url}\n`);
  }
  return d;
}

/** Run an ES module script from `cwd` (so it imports that project's packages); its last line is JSON. */
function script<T = Record<string, unknown>>(cwd: string, name: string, source: string, extraEnv: NodeJS.ProcessEnv = {}): T {
  const file = path.join(cwd, name);
  fs.writeFileSync(file, source);
  const out = run(process.execPath, [file], { cwd, env: { ...env, ...extraEnv } })
    .stdout.trim()
    .split("\n")
    .pop()!;
  return JSON.parse(out) as T;
}

const noStack = (r: RunResult) => expect(`${r.stdout}\n${r.stderr}`).not.toMatch(/\n\s+at .+:\d+:\d+\)?\n/);

describe("packed tarballs installed with npm, as a user would", () => {
  beforeAll(async () => {
    work = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "hermes-packed-")));
    registry = await startRegistry(work);
    // A user's environment: none of the npm_config_* settings pnpm passes to the scripts it runs
    // (its registry would override a project's .npmrc), only the Node headers' location.
    env = Object.fromEntries(
      Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key) || key.toLowerCase() === "npm_config_nodedir"),
    );
    Object.assign(env, {
      CI: "true",
      npm_config_update_notifier: "false",
      npm_config_fund: "false",
      npm_config_audit: "false",
      HERMES_HOME: path.join(work, "unused-home"),
    });
    for (const key of ["HERMES_ENABLE_PROJECT_PLUGINS", "NO_COLOR", "FORCE_COLOR", "HERMES_MEMORY_DEBUG"]) delete env[key];
  });

  afterAll(async () => {
    await registry?.stop();
    if (work && !process.env.KEEP_E2E) fs.rmSync(work, { recursive: true, force: true });
  });

  it("packs every public package at HEAD with no workspace: range left", () => {
    const tarballs = dir("tarballs");
    packed = [];
    for (const group of ["packages", "providers"]) {
      for (const name of fs.readdirSync(path.join(repoRoot, group)).sort()) {
        const pkgDir = path.join(repoRoot, group, name);
        const manifestFile = path.join(pkgDir, "package.json");
        if (!fs.existsSync(manifestFile)) continue;
        const manifest = JSON.parse(fs.readFileSync(manifestFile, "utf8")) as {
          name: string;
          version: string;
          private?: boolean;
          bin?: Record<string, string>;
        };
        if (manifest.private) continue;
        // pnpm pack turns workspace: ranges into the versions a registry install would see.
        const out = run("pnpm", ["pack", "--pack-destination", tarballs], { cwd: pkgDir, env }).stdout.trim().split("\n").pop()!;
        const tarball = path.isAbsolute(out) ? out : path.join(tarballs, path.basename(out));
        expect(fs.existsSync(tarball), tarball).toBe(true);
        const inner = run("tar", ["-xzOf", tarball, "package/package.json"], { env }).stdout;
        expect(inner).not.toContain("workspace:");
        packed.push({ name: manifest.name, version: manifest.version, bin: manifest.bin ?? {}, tarball });
      }
    }
    expect(packed.map((p) => p.name)).toEqual(
      expect.arrayContaining(["@hermes/memory-core", "@hermes/memory-cli", "@hermes/memory-sqlite", "@hermes/memory-vector"]),
    );
  });

  it("(a) install together with plain npm install in an empty project; every package imports, every bin answers --help and --version", () => {
    project = dir("project", true);
    const installed = run("npm", ["install", ...packed.map((p) => p.tarball), ...PEERS], { cwd: project, env });
    expect(installed.stderr).not.toMatch(/ERESOLVE|peer dep/i);
    const imported = script<Record<string, number>>(
      project,
      "import-all.mjs",
      `const out = {};\nfor (const name of ${JSON.stringify(packed.map((p) => p.name))}) out[name] = Object.keys(await import(name)).length;\nconsole.log(JSON.stringify(out));\n`,
    );
    for (const p of packed) expect(imported[p.name], p.name).toBeGreaterThan(0);
    for (const p of packed) {
      for (const bin of Object.keys(p.bin)) {
        const binPath = path.join(project, "node_modules", ".bin", bin);
        const help = run(binPath, ["--help"], { cwd: project, env });
        expect(help.stdout, bin).toContain(`Usage: ${bin}`);
        expect(run(binPath, ["--version"], { cwd: project, env }).stdout.trim(), bin).toBe(p.version);
      }
    }
    // fs-ext's install script ran: core takes the flock(2) lock the Python agent takes.
    expect(
      script(
        project,
        "lock-mode.mjs",
        `import { fileLockMode } from "@hermes/memory-core";\nconsole.log(JSON.stringify({ mode: fileLockMode() }));\n`,
      ),
    ).toEqual({ mode: "flock" });
  });

  it("(c) the project's CLI run from another directory (as an MCP client starts it) finds the project's provider, and fails loudly when one is missing", () => {
    const elsewhere = dir("elsewhere");
    const home = dir("home-project");
    const cli = (...args: string[]) =>
      run(path.join(project, "node_modules", ".bin", "hermes-memory"), args, {
        cwd: elsewhere,
        env: { ...env, HERMES_HOME: home },
        allowFail: true,
      });
    const setup = cli("memory", "setup", "sqlite", "--yes");
    expect(setup.stderr).toBe("");
    expect(setup.status).toBe(0);
    const status = cli("memory", "status", "--json");
    expect(status.status).toBe(0);
    expect(JSON.parse(status.stdout).provider).toMatchObject({
      name: "sqlite",
      installed: true,
      available: true,
      source: "package",
      location: path.join(project, "node_modules", "@hermes", "memory-sqlite"),
    });
    const demo = cli("demo", "--no-color");
    expect(demo.status).toBe(0);
    expect(demo.stdout).toContain("3/3 facts from session one recalled after a restart, with sqlite.");

    // An MCP client starting the project's CLI with its working directory elsewhere gets the
    // provider's tools, not a silent built-in-only server.
    const mcp = script<{ tools: string[] }>(
      project,
      "mcp-client.mjs",
      `import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
const transport = new StdioClientTransport({ command: ${JSON.stringify(path.join(project, "node_modules", ".bin", "hermes-memory"))}, args: ["mcp"], cwd: ${JSON.stringify(elsewhere)}, env: { ...process.env, HERMES_HOME: ${JSON.stringify(home)} } });
const client = new Client({ name: "packed", version: "1.0.0" });
await client.connect(transport);
const tools = (await client.listTools()).tools.map((t) => t.name);
await client.close();
console.log(JSON.stringify({ tools }));
`,
    );
    // The SQLite provider's tools are served, as one tool per action (search, not sqlite_memory_search).
    expect(mcp.tools).toEqual(expect.arrayContaining(["memory", "search", "remember", "get", "forget", "sqlite_memory_list"]));
    expect(mcp.tools).not.toContain("sqlite_memory_search");

    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  provider: ghost\n");
    const missing = cli("memory", "status");
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/memory\.provider is 'ghost' .* not installed \(searched .*package roots .*\): install it/);
    noStack(missing);
  });

  it("(b) a global install of the CLI and the SQLite provider sets up and runs from any directory", () => {
    // The registry a user installs from: the same tarballs, published unchanged.
    const publisher = dir("publisher");
    fs.writeFileSync(path.join(publisher, ".npmrc"), `registry=${registry.url}\n//127.0.0.1:${registry.port}/:_authToken=e2e-anonymous\n`);
    for (const p of packed) run("npm", ["publish", p.tarball, "--ignore-scripts"], { cwd: publisher, env });

    const prefix = dir("global-prefix");
    const start = dir("global-start");
    run("npm", ["install", "-g", "--prefix", prefix, `--@hermes:registry=${registry.url}`, "@hermes/memory-cli", "@hermes/memory-sqlite"], {
      cwd: start,
      env,
    });
    const bin = path.join(prefix, "bin", "hermes-memory");
    const home = dir("home-global");
    const anywhere = dir("anywhere");
    const cli = (...args: string[]) => run(bin, args, { cwd: anywhere, env: { ...env, HERMES_HOME: home }, allowFail: true });

    const setup = cli("memory", "setup", "sqlite", "--yes");
    expect(setup.stderr).toBe("");
    expect(setup.status).toBe(0);
    const status = cli("memory", "status");
    expect(status.status).toBe(0);
    expect(status.stdout).toContain(`installed ✓  package ${path.join(prefix, "lib", "node_modules", "@hermes", "memory-sqlite")}`);
    expect(status.stdout).toContain("available ✓");
    const listed = JSON.parse(cli("plugins", "list", "--json").stdout) as { providers: Array<{ name: string; source: string }> };
    expect(listed.providers).toEqual([expect.objectContaining({ name: "sqlite", source: "package" })]);
    const demo = cli("demo", "--no-color");
    expect(demo.status).toBe(0);
    expect(demo.stdout).toContain("Activated sqlite");
    expect(demo.stdout).toContain("3/3 facts from session one recalled after a restart, with sqlite.");
    // npm gave the provider its own copy of core; --hermes-home still decides where it writes.
    expect(
      fs.existsSync(path.join(prefix, "lib", "node_modules", "@hermes", "memory-sqlite", "node_modules", "@hermes", "memory-core")),
    ).toBe(true);
    const other = dir("home-global-flag");
    const kept = run(bin, ["--hermes-home", other, "demo", "--no-color"], { cwd: anywhere, env: { ...env, HERMES_HOME: home } });
    expect(kept.stdout).toContain("3/3 facts from session one recalled after a restart, with sqlite.");
    const flagged = JSON.parse(
      run(bin, ["--hermes-home", other, "memory", "status", "--json"], { cwd: anywhere, env: { ...env, HERMES_HOME: home } }).stdout,
    );
    expect(flagged.provider).toMatchObject({ name: "sqlite", available: true });
    expect(flagged.provider.stats.items).toBeGreaterThan(0);
    expect(String(flagged.provider.stats.location).startsWith(other)).toBe(true);
  });

  it("(d) installed without install scripts, each provider fails with NATIVE_MODULE_MISSING naming the fix, never a loader stack", () => {
    const bare = dir("no-scripts", true);
    const home = dir("home-no-scripts");
    run("npm", ["install", "--ignore-scripts", ...packed.filter((p) => !p.name.endsWith("ai-sdk")).map((p) => p.tarball)], {
      cwd: bare,
      env,
    });
    expect(fs.existsSync(path.join(bare, "node_modules", "better-sqlite3", "build"))).toBe(false);
    // usearch ships prebuilt binaries for a few platforms and compiles elsewhere: take this
    // platform's away, as on a platform it has none for.
    fs.rmSync(path.join(bare, "node_modules", "usearch", "prebuilds"), { recursive: true, force: true });

    const seen = script<Record<string, unknown>>(
      bare,
      "providers.mjs",
      `import fs from "node:fs";
import { fileLockMode, openMemory } from "@hermes/memory-core";
import { SqliteMemoryProvider } from "@hermes/memory-sqlite";
import { VectorMemoryProvider } from "@hermes/memory-vector";
import { LocalVectorStore } from "@hermes/memory-vector/internal";
const home = ${JSON.stringify(home)};
const failure = async (fn) => { try { await fn(); return null; } catch (error) { return { code: error.code, message: error.message, stack: String(error.stack).split("\\n").length }; } };
const sqlite = new SqliteMemoryProvider();
const vector = new VectorMemoryProvider({ hermesHome: home });
fs.writeFileSync(home + "/config.yaml", "memory:\\n  provider: sqlite\\n");
console.log(JSON.stringify({
  lockMode: fileLockMode(),
  sqliteAvailable: sqlite.isAvailable(),
  sqliteReason: sqlite.unavailableReason(),
  sqliteInit: await failure(() => sqlite.initialize("s1", { hermesHome: home })),
  vectorAvailable: vector.isAvailable(),
  vectorReason: vector.unavailableReason(),
  vectorInit: await failure(() => vector.initialize("s1", { hermesHome: home })),
  usearch: await failure(() => LocalVectorStore.open({ dimensions: 8 })),
  strict: await failure(() => openMemory({ sessionId: "s1", hermesHome: home, strict: true })),
}));
`,
    );
    const fix = (module: string, pkg: string) => [
      `${pkg} needs ${module}, whose native addon is not built`,
      `npm install-scripts approve ${module}`,
      `npm rebuild ${module}`,
      `npm install -g --allow-scripts=${module} ${pkg}`,
      "pnpm approve-builds",
    ];
    const expectFix = (text: unknown, module: string, pkg: string) => {
      for (const part of fix(module, pkg)) expect(String(text)).toContain(part);
    };
    // fs-ext was not built either: core falls back to its pid-file lock and says so.
    expect(seen.lockMode).toBe("pidfile");
    expect(seen.sqliteAvailable).toBe(false);
    expectFix(seen.sqliteReason, "better-sqlite3", "@hermes/memory-sqlite");
    expect(seen.sqliteInit).toMatchObject({ code: "NATIVE_MODULE_MISSING" });
    expectFix((seen.sqliteInit as { message: string }).message, "better-sqlite3", "@hermes/memory-sqlite");
    expect(seen.vectorAvailable).toBe(false);
    expectFix(seen.vectorReason, "better-sqlite3", "@hermes/memory-vector");
    expect(seen.vectorInit).toMatchObject({ code: "NATIVE_MODULE_MISSING" });
    expect(seen.usearch).toMatchObject({ code: "NATIVE_MODULE_MISSING" });
    expectFix((seen.usearch as { message: string }).message, "usearch", "@hermes/memory-vector");
    expect(seen.strict).toMatchObject({ code: "PROVIDER_UNAVAILABLE" });
    expectFix((seen.strict as { message: string }).message, "better-sqlite3", "@hermes/memory-sqlite");

    // `memory status` (sqlite is configured above) says the same, without a stack.
    const status = run(path.join(bare, "node_modules", ".bin", "hermes-memory"), ["memory", "status"], {
      cwd: bare,
      env: { ...env, HERMES_HOME: home },
      allowFail: true,
    });
    expect(status.stdout).toContain("not available");
    expectFix(status.stdout, "better-sqlite3", "@hermes/memory-sqlite");
    noStack(status);
  });
});
