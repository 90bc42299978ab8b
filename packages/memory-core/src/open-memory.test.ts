import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Logger } from "./logger.js";
import type { MemoryManager } from "./manager.js";
import { openMemory } from "./open-memory.js";
import { listSkills, clearProviderSkills } from "./skills.js";
import { makeTempDir, providerSource, writeFiles } from "./test-support/temp-tree.js";

let tmp: ReturnType<typeof makeTempDir>;
let home: string;
let cwd: string;
let warnings: string[];
let logger: Logger;
const managers: MemoryManager[] = [];

beforeEach(() => {
  tmp = makeTempDir("hermes-open-");
  home = path.join(tmp.dir, "home");
  cwd = path.join(tmp.dir, "work");
  writeFiles(cwd, { "package.json": { name: "host" } });
  fs.mkdirSync(home, { recursive: true });
  warnings = [];
  logger = { debug() {}, info() {}, warn: (m: string) => warnings.push(m), error: (m: string) => warnings.push(m) };
  clearProviderSkills();
});
afterEach(async () => {
  for (const m of managers.splice(0)) await m.shutdownAll();
  tmp.cleanup();
});

async function open(extra: Record<string, unknown> = {}): Promise<MemoryManager> {
  const manager = await openMemory({ sessionId: "s1", hermesHome: home, cwd, logger, ...extra });
  managers.push(manager);
  return manager;
}
const config = (text: string) => fs.writeFileSync(path.join(home, "config.yaml"), text);
const userPlugin = (name: string, files: Record<string, string | object>) => writeFiles(path.join(home, "plugins", name), files);

describe("openMemory", () => {
  it("without configuration: built-in memory only, initialised under the home", async () => {
    const manager = await open();
    expect(manager.providers.map((p) => p.name)).toEqual(["builtin"]);
    expect(warnings).toEqual([]);
    const result = JSON.parse(await manager.handleToolCall("memory", { action: "add", target: "user", content: "Prefers tea" }));
    expect(result.success).toBe(true);
    expect(fs.readFileSync(path.join(home, "memories", "USER.md"), "utf8")).toContain("Prefers tea");
  });

  it("loads and initialises memory.provider with the InitContext", async () => {
    userPlugin("alpha", {
      "plugin.yaml": "name: alpha\n",
      "index.js": providerSource("alpha", { afterRegister: `ctx.registerSkill("tips", "SKILL.md");` }),
      "SKILL.md": "tips",
    });
    config("memory:\n  provider: alpha\n");
    const manager = await open({ userId: "u-7", platform: "telegram", agentContext: "primary" });
    expect(manager.providers.map((p) => p.name)).toEqual(["builtin", "alpha"]);
    const alpha = manager.providers[1] as unknown as { sessionId: string; ctx: Record<string, unknown> };
    expect(alpha.sessionId).toBe("s1");
    expect(alpha.ctx).toMatchObject({ hermesHome: home, userId: "u-7", platform: "telegram", agentContext: "primary", cwd });
    expect(alpha.ctx).not.toHaveProperty("logger");
    expect(alpha.ctx).not.toHaveProperty("sessionId");
    expect(listSkills(home).map((s) => s.name)).toEqual(["alpha:tips"]);
  });

  it.each(["", "builtin", "none", "default"])("memory.provider %j never discovers or imports anything", async (value) => {
    userPlugin("trap", { "plugin.yaml": "name: trap\n", "index.js": "throw new Error('must not import');" });
    config(`memory:\n  provider: ${JSON.stringify(value)}\n`);
    const manager = await open();
    expect(manager.providers.map((p) => p.name)).toEqual(["builtin"]);
    expect(warnings).toEqual([]);
  });

  it("the provider option overrides memory.provider", async () => {
    userPlugin("alpha", { "plugin.yaml": "name: alpha\n", "index.js": providerSource("alpha") });
    config("memory:\n  provider: missing\n");
    expect((await open({ provider: "alpha" })).providers.map((p) => p.name)).toEqual(["builtin", "alpha"]);
    expect((await open({ provider: "none" })).providers.map((p) => p.name)).toEqual(["builtin"]);
  });

  it("an unavailable provider is reported with its reason and built-in memory continues", async () => {
    userPlugin("cloudy", {
      "plugin.yaml": "name: cloudy\n",
      "index.js": providerSource("cloudy", { available: false, unavailableReason: "set CLOUDY_API_KEY" }),
    });
    config("memory:\n  provider: cloudy\n");
    const manager = await open();
    expect(manager.providers.map((p) => p.name)).toEqual(["builtin"]);
    expect(warnings.join("\n")).toMatch(/'cloudy' is not available: set CLOUDY_API_KEY.*built-in memory only/);
    await expect(open({ strict: true })).rejects.toMatchObject({ code: "PROVIDER_UNAVAILABLE" });
  });

  it("a missing or broken provider is a warning, or the typed error with strict", async () => {
    config("memory:\n  provider: ghost\n");
    expect((await open()).providers.map((p) => p.name)).toEqual(["builtin"]);
    expect(warnings.join("\n")).toContain("Memory provider 'ghost' not found");
    await expect(open({ strict: true })).rejects.toMatchObject({ code: "PROVIDER_NOT_FOUND" });
    userPlugin("broken", { "plugin.yaml": "name: broken\n", "index.js": "throw new Error('syntax!')" });
    config("memory:\n  provider: broken\n");
    await expect(open({ strict: true })).rejects.toMatchObject({ code: "PROVIDER_LOAD_FAILED" });
  });

  it("warns at start when compression.checkpoint_required is on without a v2 provider", async () => {
    userPlugin("v1", { "plugin.yaml": "name: v1\n", "index.js": providerSource("v1") });
    userPlugin("v2", { "plugin.yaml": "name: v2\n", "index.js": providerSource("v2", { body: "preCompressCheckpointApiVersion = 2;" }) });
    config("memory:\n  provider: v1\ncompression:\n  checkpoint_required: true\n");
    await open();
    expect(warnings.some((w) => w.includes("compression.checkpoint_required") && w.includes("v1"))).toBe(true);
    warnings.length = 0;
    config("memory:\n  provider: v2\ncompression:\n  checkpoint_required: true\n");
    await open();
    expect(warnings).toEqual([]);
    config("memory:\n  provider: v1\n");
    await open();
    expect(warnings).toEqual([]);
  });

  it("passes the configured char limits to the built-in memory", async () => {
    config("memory:\n  memory_char_limit: 30\n");
    const manager = await open();
    const result = JSON.parse(await manager.handleToolCall("memory", { action: "add", target: "memory", content: "x".repeat(40) }));
    expect(result.success).toBe(false);
    expect(JSON.stringify(result)).toContain("/30");
  });

  it("logs each known setting of the wrong type that runs on its default, naming the file", async () => {
    config("memory:\n  provider: [sqlite]\n  memory_char_limit: lots\n");
    const manager = await open();
    expect(manager.providers.map((p) => p.name)).toEqual(["builtin"]);
    expect(warnings).toEqual([
      `${path.join(home, "config.yaml")}: memory.provider must be a provider name (got ["sqlite"]); built-in memory only.`,
      `${path.join(home, "config.yaml")}: memory.memory_char_limit must be a whole number of characters above 0 (got "lots"); 2200 is used.`,
    ]);
  });

  it("requires a sessionId", async () => {
    await expect(openMemory({} as never)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  });
});
