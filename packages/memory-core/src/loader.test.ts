import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HermesMemoryError } from "./errors.js";
import { loadMemoryProvider, loadProviderCli } from "./loader.js";
import { pluginRegistrationsOf } from "./plugin-registrations.js";
import { discoverMemoryProviders } from "./discovery/discover.js";
import { runWithProfile } from "./profile.js";
import { isMemoryProvider } from "./provider.js";
import { clearProviderSkills, listSkills, skillView } from "./skills.js";
import { installPackage, makeTempDir, providerSource, writeFiles } from "./test-support/temp-tree.js";
import type { Logger } from "./logger.js";

let tmp: ReturnType<typeof makeTempDir>;
let home: string;
let cwd: string;
let bundled: string;
let warnings: string[];
let logger: Logger;

beforeEach(() => {
  tmp = makeTempDir("hermes-loader-");
  home = path.join(tmp.dir, "home");
  cwd = path.join(tmp.dir, "work");
  bundled = path.join(tmp.dir, "bundled");
  writeFiles(cwd, { "package.json": { name: "host" } });
  fs.mkdirSync(home, { recursive: true });
  warnings = [];
  logger = { debug() {}, info() {}, warn: (m: string) => warnings.push(m), error: (m: string) => warnings.push(m) };
  clearProviderSkills();
});
afterEach(() => tmp.cleanup());

const opts = (extra: Record<string, unknown> = {}) => ({ hermesHome: home, cwd, bundledDir: bundled, env: {}, logger, ...extra });
const userPlugin = (name: string, files: Record<string, string | object>) => writeFiles(path.join(home, "plugins", name), files);

async function loadError(name: string, extra: Record<string, unknown> = {}): Promise<HermesMemoryError> {
  const error = await loadMemoryProvider(name, opts(extra)).then(
    () => null,
    (e: unknown) => e,
  );
  expect(HermesMemoryError.isInstance(error)).toBe(true);
  return error as HermesMemoryError;
}

describe("loadMemoryProvider", () => {
  it("imports the entry and calls register(ctx) with the provider name and home", async () => {
    userPlugin("alpha", {
      "plugin.yaml": "name: alpha\n",
      "index.js": providerSource("alpha", { afterRegister: "globalThis.__alphaCtx = { name: ctx.providerName, home: ctx.hermesHome };" }),
    });
    const provider = await loadMemoryProvider("alpha", opts());
    expect(isMemoryProvider(provider)).toBe(true);
    expect(provider.name).toBe("alpha");
    expect((globalThis as Record<string, unknown>).__alphaCtx).toEqual({ name: "alpha", home });
  });

  it("hands register(ctx) the host's logger, so what the provider reports reaches the host", async () => {
    userPlugin("talker", {
      "plugin.yaml": "name: talker\n",
      "index.js": providerSource("talker", { afterRegister: "ctx.logger.warn('talker: a background write failed');" }),
    });
    await loadMemoryProvider("talker", opts());
    expect(warnings).toEqual(["talker: a background write failed"]);
  });

  it("accepts the other plugin registrations (camelCase and snake_case) and collects them beside the provider", async () => {
    const calls = [
      "registerHook('on_session_end', () => {})",
      "registerTool('t', 'set', {}, () => '{}')",
      "registerCommand('c', () => {}, 'd')",
      "registerCliCommand('x')",
      "registerAuxiliaryTask('a', 'A', 'aux')",
      "registerDashboardAuthProvider({})",
      "register_hook('pre_llm_call', () => {})",
      "register_tool('t2')",
      "register_auxiliary_task('b')",
    ];
    userPlugin("pythonic", {
      "plugin.yaml": "name: pythonic\n",
      "index.js": providerSource("pythonic", {
        style: "register",
        afterRegister: `${calls.map((c) => `ctx.${c};`).join(" ")} ctx.register_skill("s", "s.md"); globalThis.__pythonicDone = true;`,
      }),
    });
    const provider = await loadMemoryProvider("pythonic", opts());
    expect(provider.name).toBe("pythonic");
    // register(ctx) ran to its end: nothing threw, so nothing was skipped.
    expect((globalThis as Record<string, unknown>).__pythonicDone).toBe(true);
    const registrations = pluginRegistrationsOf(provider);
    expect(registrations.hooks.map((h) => h.name)).toEqual(["on_session_end", "pre_llm_call"]);
    expect(registrations.tools.map((t) => t.name)).toEqual(["t"]);
    expect(registrations.commands.map((c) => c.name)).toEqual(["c"]);
    expect(registrations.other.map((o) => o.method)).toEqual([
      "registerCliCommand",
      "registerAuxiliaryTask",
      "registerDashboardAuthProvider",
      "registerAuxiliaryTask",
    ]);
    // register_tool('t2') has no handler: dropped with a warning, the provider is kept.
    expect(warnings).toEqual(["Memory provider 'pythonic' failed to register_tool: the tool handler must be a function (got undefined)"]);
  });

  it("registers through snake_case register_memory_provider", async () => {
    userPlugin("snake", {
      "plugin.yaml": "name: snake\n",
      "index.js": providerSource("snake", { style: "named-class" }).replace(
        "export { FixtureProvider };",
        "export function register(ctx) { ctx.register_memory_provider(new FixtureProvider()); }",
      ),
    });
    expect((await loadMemoryProvider("snake", opts())).name).toBe("snake");
  });

  it.each(["default-instance", "default-class", "named-class"] as const)("falls back to a %s export", async (style) => {
    userPlugin("fb", { "plugin.yaml": "name: fb\n", "index.js": providerSource("fb", { style }) });
    expect((await loadMemoryProvider("fb", opts())).name).toBe("fb");
  });

  it("keeps the registered instance when register throws afterwards (logged)", async () => {
    userPlugin("late", {
      "plugin.yaml": "name: late\n",
      "index.js": providerSource("late", { afterRegister: "throw new Error('secondary registration failed');" }),
    });
    expect((await loadMemoryProvider("late", opts())).name).toBe("late");
    expect(warnings.join("\n")).toContain("raised after registering");
  });

  it("loads a package provider resolved through a pnpm symlink", async () => {
    installPackage(
      cwd,
      "pnpm",
      { name: "@acme/mem", hermesMemoryProvider: "acme", exports: { ".": { import: "./dist/index.js" } } },
      { "dist/index.js": providerSource("acme") },
    );
    writeFiles(cwd, { "package.json": { name: "host", dependencies: { "@acme/mem": "1.0.0" } } });
    expect((await loadMemoryProvider("acme", opts())).name).toBe("acme");
  });

  it("imports only the named provider", async () => {
    userPlugin("good", { "plugin.yaml": "name: good\n", "index.js": providerSource("good") });
    userPlugin("bad", {
      "plugin.yaml": "name: bad\n",
      "index.js": providerSource("bad", { topLevel: "throw new Error('bad was imported');" }),
    });
    expect((await loadMemoryProvider("good", opts())).name).toBe("good");
  });

  it("PROVIDER_NOT_FOUND names the sources searched and the providers found", async () => {
    userPlugin("sqlite", { "plugin.yaml": "name: sqlite\n", "index.js": "" });
    userPlugin("vector", { "plugin.yaml": "name: vector\n", "index.js": "" });
    const error = await loadError("foo");
    expect(error.code).toBe("PROVIDER_NOT_FOUND");
    expect(error.message).toContain(`bundled ${bundled}`);
    expect(error.message).toContain(`user ${path.join(home, "plugins")}`);
    expect(error.message).toContain("HERMES_ENABLE_PROJECT_PLUGINS");
    expect(error.message).toContain(`package roots ${cwd}`);
    expect(error.message).toContain("found: sqlite, vector");
    expect(error.message).toContain("npm install");
  });

  it("PROVIDER_NOT_FOUND explains a provider refused by discovery", async () => {
    userPlugin("broken", { "plugin.yaml": "name: broken\nentry: ../../outside.js\n" });
    const error = await loadError("broken");
    expect(error.code).toBe("PROVIDER_NOT_FOUND");
    expect(error.message).toContain("found but refused");
  });

  it("PROVIDER_LOAD_FAILED carries the import error as cause", async () => {
    userPlugin("boom", { "plugin.yaml": "name: boom\n", "index.js": "throw new Error('kaboom');\n" });
    const error = await loadError("boom");
    expect(error.code).toBe("PROVIDER_LOAD_FAILED");
    expect(error.message).toContain("kaboom");
    expect((error.cause as Error).message).toBe("kaboom");
  });

  it("PROVIDER_LOAD_FAILED when nothing is exported, with register's own error", async () => {
    userPlugin("empty", { "plugin.yaml": "name: empty\n", "index.js": "export const x = 1;\n" });
    expect((await loadError("empty")).message).toContain("no provider instance");
    userPlugin("early", { "plugin.yaml": "name: early\n", "index.js": "export function register() { throw new Error('no config'); }\n" });
    const error = await loadError("early");
    expect(error.code).toBe("PROVIDER_LOAD_FAILED");
    expect(error.message).toContain("no config");
  });

  it("PROVIDER_NAME_MISMATCH when the instance name differs from the manifest name", async () => {
    userPlugin("declared", { "plugin.yaml": "name: declared\n", "index.js": providerSource("declared", { reportedName: "actual" }) });
    const error = await loadError("declared");
    expect(error.code).toBe("PROVIDER_NAME_MISMATCH");
    expect(error.message).toContain("'actual'");
  });

  it("PROVIDER_DISABLED for non-bundled providers in plugins.disabled (by name, folder or package)", async () => {
    userPlugin("folder-x", { "plugin.yaml": "name: userx\n", "index.js": providerSource("userx") });
    writeFiles(path.join(bundled, "shipped"), { "plugin.yaml": "name: shipped\n", "index.js": providerSource("shipped") });
    installPackage(cwd, "npm", { name: "pkg-y", hermesMemoryProvider: "pkgy", main: "i.js" }, { "i.js": providerSource("pkgy") });
    writeFiles(cwd, { "package.json": { name: "host", dependencies: { "pkg-y": "1" } } });
    for (const entry of ["userx", "folder-x"]) {
      fs.writeFileSync(path.join(home, "config.yaml"), `plugins:\n  disabled: [${entry}]\n`);
      const error = await loadError("userx");
      expect(error.code).toBe("PROVIDER_DISABLED");
      expect(error.message).toContain("plugins.disabled");
    }
    fs.writeFileSync(path.join(home, "config.yaml"), "plugins:\n  disabled: [pkg-y, shipped]\n");
    expect((await loadError("pkgy")).code).toBe("PROVIDER_DISABLED");
    // Still discoverable, and bundled providers ignore the list.
    expect((await discoverMemoryProviders(opts())).providers.map((p) => p.name)).toContain("pkgy");
    expect((await loadMemoryProvider("shipped", opts())).name).toBe("shipped");
  });

  it("refuses built-in sentinels", async () => {
    expect((await loadError("builtin")).code).toBe("INVALID_ARGUMENT");
  });

  it("reuses a discovery result without discovering again", async () => {
    userPlugin("reuse", { "plugin.yaml": "name: reuse\n", "index.js": providerSource("reuse") });
    const discovery = await discoverMemoryProviders(opts());
    fs.rmSync(path.join(home, "plugins", "reuse", "plugin.yaml"));
    expect((await loadMemoryProvider("reuse", opts({ discovery }))).name).toBe("reuse");
  });
});

describe("skills", () => {
  const skillProvider = (name: string) =>
    providerSource(name, {
      afterRegister: `ctx.registerSkill("recall-tips", "skills/recall", "How to recall"); ctx.registerSkill("bad name!", "x");`,
    });

  beforeEach(() => {
    userPlugin("skilled", {
      "plugin.yaml": "name: skilled\n",
      "index.js": skillProvider("skilled"),
      "skills/recall/SKILL.md": "# Recall tips\nAsk precisely.\n",
    });
    userPlugin("other", {
      "plugin.yaml": "name: other\n",
      "index.js": providerSource("other", { afterRegister: `ctx.registerSkill("o", "o.md");` }),
      "o.md": "other skill",
    });
  });

  it("registers provider:skill only for the active provider", async () => {
    await loadMemoryProvider("skilled", opts());
    expect(listSkills(home)).toEqual([]);
    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  provider: skilled\n");
    await loadMemoryProvider("skilled", opts());
    expect(listSkills(home)).toEqual([
      { name: "skilled:recall-tips", path: path.join(home, "plugins", "skilled", "skills", "recall"), description: "How to recall" },
    ]);
    expect(await skillView("skilled:recall-tips", home)).toBe("# Recall tips\nAsk precisely.\n");
    expect(warnings.join("\n")).toContain("invalid skill");
  });

  it("a skill file that is a FIFO, a device or too large is refused at once with STORAGE_FAILED, never read without end", async () => {
    const dir = path.join(home, "plugins", "skilled", "skills", "recall");
    fs.rmSync(path.join(dir, "SKILL.md"));
    execFileSync("mkfifo", [path.join(dir, "SKILL.md")]);
    await loadMemoryProvider("skilled", opts({ registerSkills: true }));
    // Without a writer a blocking open of a FIFO never returns; this one is refused at once.
    await expect(skillView("skilled:recall-tips", home)).rejects.toMatchObject({
      code: "STORAGE_FAILED",
      message: expect.stringMatching(/not a regular file/),
    });
    fs.rmSync(path.join(dir, "SKILL.md"));
    fs.symlinkSync("/dev/zero", path.join(dir, "SKILL.md"));
    await expect(skillView("skilled:recall-tips", home)).rejects.toMatchObject({ code: "STORAGE_FAILED" });
    fs.rmSync(path.join(dir, "SKILL.md"));
    fs.writeFileSync(path.join(dir, "SKILL.md"), "x".repeat(2 * 1024 * 1024));
    await expect(skillView("skilled:recall-tips", home)).rejects.toMatchObject({
      code: "STORAGE_FAILED",
      message: expect.stringMatching(/larger than/),
    });
  });

  it("registerSkills overrides the default; activating another provider retracts the old skills", async () => {
    await loadMemoryProvider("skilled", opts({ registerSkills: true }));
    expect(listSkills(home).map((s) => s.name)).toEqual(["skilled:recall-tips"]);
    await loadMemoryProvider("other", opts({ registerSkills: true }));
    expect(listSkills(home).map((s) => s.name)).toEqual(["other:o"]);
    expect(await skillView("other:o", home)).toBe("other skill");
    await expect(skillView("skilled:recall-tips", home)).rejects.toMatchObject({ code: "SKILL_NOT_FOUND" });
  });
});

describe("skills per profile", () => {
  it("a skill registered in one profile is invisible from another (skillView, listSkills)", async () => {
    const other = path.join(tmp.dir, "home2");
    fs.mkdirSync(other, { recursive: true });
    userPlugin("skilled", {
      "plugin.yaml": "name: skilled\n",
      "index.js": providerSource("skilled", { afterRegister: `ctx.registerSkill("tips", "tips.md");` }),
      "tips.md": "tips",
    });
    await loadMemoryProvider("skilled", opts({ registerSkills: true }));
    expect(await skillView("skilled:tips", home)).toBe("tips");
    expect(await runWithProfile(home, () => skillView("skilled:tips"))).toBe("tips");
    expect(listSkills(other)).toEqual([]);
    expect(runWithProfile(other, () => listSkills())).toEqual([]);
    await expect(skillView("skilled:tips", other)).rejects.toMatchObject({ code: "SKILL_NOT_FOUND" });
    await expect(runWithProfile(other, () => skillView("skilled:tips"))).rejects.toMatchObject({ code: "SKILL_NOT_FOUND" });
  });
});

describe("loadProviderCli", () => {
  it("imports only cli.js and returns registerCli", async () => {
    userPlugin("withcli", {
      "plugin.yaml": "name: withcli\n",
      "index.js": "throw new Error('entry must not be imported');\n",
      "cli.js": "export function registerCli(command, context) { command.added = context.providerName; }\n",
    });
    const registerCli = await loadProviderCli("withcli", opts());
    expect(registerCli).toBeTypeOf("function");
    const command: Record<string, unknown> = {};
    await registerCli!(command, { hermesHome: home, providerName: "withcli" });
    expect(command.added).toBe("withcli");
  });

  it("returns null without a CLI module or without registerCli; a failing CLI module is a typed error", async () => {
    userPlugin("nocli", { "plugin.yaml": "name: nocli\n", "index.js": "" });
    userPlugin("wrongcli", { "plugin.yaml": "name: wrongcli\n", "index.js": "", "cli.js": "export const x = 1;\n" });
    userPlugin("badcli", { "plugin.yaml": "name: badcli\n", "index.js": "", "cli.js": "throw new Error('cli broke');\n" });
    expect(await loadProviderCli("nocli", opts())).toBeNull();
    expect(await loadProviderCli("wrongcli", opts())).toBeNull();
    await expect(loadProviderCli("badcli", opts())).rejects.toMatchObject({ code: "PROVIDER_LOAD_FAILED" });
    await expect(loadProviderCli("missing", opts())).rejects.toMatchObject({ code: "PROVIDER_NOT_FOUND" });
  });

  it("uses the package manifest's cli path", async () => {
    installPackage(
      cwd,
      "npm",
      { name: "clipkg", hermesMemoryProvider: { name: "clipkg", cli: "./dist/cli.js" }, main: "./dist/index.js" },
      { "dist/index.js": "throw new Error('no');", "dist/cli.js": "export const registerCli = () => {};" },
    );
    writeFiles(cwd, { "package.json": { name: "host", dependencies: { clipkg: "1" } } });
    expect(await loadProviderCli("clipkg", opts())).toBeTypeOf("function");
  });
});
