import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HermesMemoryError } from "./errors.js";
import type { Logger } from "./logger.js";
import type { MemoryManager } from "./manager.js";
import { openMemory, type OpenMemoryOptions } from "./open-memory.js";
import { makeTempDir, providerSource, writeFiles, type FixtureProviderOptions } from "./test-support/temp-tree.js";

// Bounds are small so a hang costs little; each test checks the call waited for the bound (not
// less) and returned within a tight multiple of it.
const BOUND_MS = 150;
const SLACK_MS = 1500;

let tmp: ReturnType<typeof makeTempDir>;
let home: string;
let cwd: string;
let warnings: string[];
let logger: Logger;
const managers: MemoryManager[] = [];

beforeEach(() => {
  tmp = makeTempDir("hermes-open-bounds-");
  home = path.join(tmp.dir, "home");
  cwd = path.join(tmp.dir, "work");
  writeFiles(cwd, { "package.json": { name: "host" } });
  fs.mkdirSync(home, { recursive: true });
  warnings = [];
  logger = { debug() {}, info() {}, warn: (m: string) => warnings.push(m), error: (m: string) => warnings.push(m) };
});
afterEach(async () => {
  for (const m of managers.splice(0)) await m.shutdownAll();
  tmp.cleanup();
});

function plugin(name: string, options: FixtureProviderOptions): void {
  writeFiles(path.join(home, "plugins", name), { "plugin.yaml": `name: ${name}\n`, "index.js": providerSource(name, options) });
  fs.writeFileSync(path.join(home, "config.yaml"), `memory:\n  provider: ${name}\n`);
}

async function open(extra: Partial<OpenMemoryOptions> = {}): Promise<MemoryManager> {
  const manager = await openMemory({
    sessionId: "s1",
    hermesHome: home,
    cwd,
    logger,
    hookTimeoutMs: BOUND_MS,
    importTimeoutMs: BOUND_MS,
    ...extra,
  });
  managers.push(manager);
  return manager;
}

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - started };
}

async function strictError(): Promise<unknown> {
  try {
    await open({ strict: true });
  } catch (error) {
    return error;
  }
  throw new Error("openMemory({strict: true}) resolved");
}

const NEVER = "new Promise(() => {})";

describe("openMemory bounds every call into the external provider", () => {
  it("a module whose top-level await never settles: built-in only after the import bound", async () => {
    plugin("hung-import", { topLevel: `await ${NEVER};` });
    const { value: manager, ms } = await timed(() => open());
    expect(ms).toBeGreaterThanOrEqual(BOUND_MS - 5);
    expect(ms).toBeLessThan(BOUND_MS + SLACK_MS);
    expect(manager.providers.map((p) => p.name)).toEqual(["builtin"]);
    expect(warnings.join("\n")).toMatch(
      /Memory provider 'hung-import': importing the entry from .* did not finish within 0\.15s.*Continuing with built-in memory only/,
    );
  });

  it("strict: a hung import is PROVIDER_TIMEOUT", async () => {
    plugin("hung-import-strict", { topLevel: `await ${NEVER};` });
    expect(HermesMemoryError.hasCode(await strictError(), "PROVIDER_TIMEOUT")).toBe(true);
  });

  it("a register(ctx) that never settles is bounded too", async () => {
    writeFiles(path.join(home, "plugins", "hung-register"), {
      "plugin.yaml": "name: hung-register\n",
      "index.js": `export function register() { return ${NEVER}; }\n`,
    });
    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  provider: hung-register\n");
    const { value: manager, ms } = await timed(() => open());
    expect(ms).toBeLessThan(BOUND_MS + SLACK_MS);
    expect(manager.providers.map((p) => p.name)).toEqual(["builtin"]);
    expect(warnings.join("\n")).toContain("Memory provider 'hung-register': register(ctx)");
  });

  it("an initialize() that never settles: dropped after hookTimeoutMs, its tools not offered", async () => {
    plugin("hung-init", {
      body: `initialize() { return ${NEVER}; }\n  getToolSchemas() { return [{ name: "hung_search", description: "d", parameters: { type: "object", properties: {} } }]; }`,
    });
    const { value: manager, ms } = await timed(() => open());
    expect(ms).toBeGreaterThanOrEqual(BOUND_MS - 5);
    expect(ms).toBeLessThan(BOUND_MS + SLACK_MS);
    expect(manager.providers.map((p) => p.name)).toEqual(["builtin"]);
    expect(manager.hasTool("hung_search")).toBe(false);
    const text = warnings.join("\n");
    expect(text).toContain("Memory provider 'hung-init' initialize timed out after 0.15s");
    expect(text).toContain("Continuing with built-in memory only");
  });

  it("strict: a hung initialize() is PROVIDER_TIMEOUT", async () => {
    plugin("hung-init-strict", { body: `initialize() { return ${NEVER}; }` });
    const error = await strictError();
    expect(HermesMemoryError.hasCode(error, "PROVIDER_TIMEOUT")).toBe(true);
    expect((error as Error).message).toContain("'hung-init-strict' initialize timed out");
  });

  it("an initialize() that throws: dropped with a warning; strict gives PROVIDER_UNAVAILABLE", async () => {
    plugin("bad-init", {
      body: `initialize() { throw new Error("no API key"); }\n  getToolSchemas() { return [{ name: "bad_search", description: "d", parameters: { type: "object", properties: {} } }]; }`,
    });
    const manager = await open();
    expect(manager.providers.map((p) => p.name)).toEqual(["builtin"]);
    expect(manager.hasTool("bad_search")).toBe(false);
    expect(warnings.join("\n")).toContain("Memory provider 'bad-init' initialize failed: no API key");
    const error = await strictError();
    expect(HermesMemoryError.hasCode(error, "PROVIDER_UNAVAILABLE")).toBe(true);
  });

  it("a throwing getToolSchemas(): built-in only; strict gives PROVIDER_UNAVAILABLE", async () => {
    plugin("bad-schemas", { body: `getToolSchemas() { throw new Error("schemas exploded"); }` });
    const manager = await open();
    expect(manager.providers.map((p) => p.name)).toEqual(["builtin"]);
    expect(warnings.join("\n")).toContain("Memory provider 'bad-schemas' getToolSchemas() failed: schemas exploded");
    expect(HermesMemoryError.hasCode(await strictError(), "PROVIDER_UNAVAILABLE")).toBe(true);
  });

  it("a shutdown() that never settles: shutdownAll returns at the bound and names the provider", async () => {
    plugin("hung-shutdown", { body: `shutdown() { return ${NEVER}; }` });
    const manager = await open();
    expect(manager.providers.map((p) => p.name)).toEqual(["builtin", "hung-shutdown"]);
    const { value: state, ms } = await timed(() => manager.shutdownAll());
    expect(ms).toBeGreaterThanOrEqual(BOUND_MS - 5);
    expect(ms).toBeLessThan(BOUND_MS + SLACK_MS);
    expect(state.stuckProviders.map((r) => [r.name, r.hook])).toEqual([["hung-shutdown", "shutdown"]]);
  });
});

describe("openMemory with a hostile or malformed config.yaml", () => {
  const configPath = () => path.join(home, "config.yaml");
  const cases: Array<[string, () => string, RegExp]> = [
    ["malformed YAML", () => "memory: [unclosed\n", /is not valid YAML/],
    [
      "an alias bomb",
      () => {
        const lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
        for (let i = 1; i < 9; i++) {
          const prev = String.fromCharCode(96 + i);
          const cur = String.fromCharCode(97 + i);
          lines.push(`${cur}: &${cur} [${Array(9).fill(`*${prev}`).join(",")}]`);
        }
        return lines.join("\n") + "\n";
      },
      /too many YAML aliases/,
    ],
    ["a file over 1 MiB", () => `memory:\n  provider: ""\n# ${"x".repeat(1024 * 1024)}\n`, /larger than the 1048576-byte limit/],
    ["too many keys", () => Array.from({ length: 10_001 }, (_, i) => `k${i}: ${i}`).join("\n") + "\n", /more than 10000 keys/],
    [
      "too deep nesting",
      () => "a:\n" + Array.from({ length: 70 }, (_, i) => `${"  ".repeat(i + 1)}k${i}:`).join("\n") + " 1\n",
      /deeper than 64 levels/,
    ],
  ];

  it.each(cases)("%s: built-in memory with defaults and an INVALID_CONFIG warning naming the file", async (_label, text, problem) => {
    fs.writeFileSync(configPath(), text());
    const manager = await open();
    expect(manager.providers.map((p) => p.name)).toEqual(["builtin"]);
    const warning = warnings.find((w) => w.includes(configPath()));
    expect(warning).toBeDefined();
    expect(warning).toMatch(problem);
    expect(warning).toContain("Continuing with built-in memory only, default settings");
    // Built-in memory works with default settings.
    expect(JSON.parse(await manager.handleToolCall("memory", { action: "add", target: "user", content: "Prefers tea" })).success).toBe(
      true,
    );
  });

  it.each(cases)("%s: strict throws INVALID_CONFIG", async (_label, text) => {
    fs.writeFileSync(configPath(), text());
    const error = await strictError();
    expect(HermesMemoryError.hasCode(error, "INVALID_CONFIG")).toBe(true);
    expect((error as Error).message).toContain(configPath());
  });
});
