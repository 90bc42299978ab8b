import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HermesMemoryError } from "./errors.js";
import type { Logger } from "./logger.js";
import type { MemoryManager } from "./manager.js";
import { openMemory, type OpenMemoryOptions } from "./open-memory.js";
import { BUILTIN_PROVIDER_NAME } from "./provider.js";
import { makeTempDir, providerSource, writeFiles, type FixtureProviderOptions } from "./test-support/temp-tree.js";

// A hostile plugin on disk never makes openMemory() reject (without strict) and never leaves a
// half-registered provider behind: the host continues with the built-in memory.

let tmp: ReturnType<typeof makeTempDir>;
let home: string;
let warnings: string[];
let logger: Logger;
const managers: MemoryManager[] = [];

beforeEach(() => {
  tmp = makeTempDir("hermes-open-hostile-");
  home = path.join(tmp.dir, "home");
  fs.mkdirSync(home, { recursive: true });
  warnings = [];
  logger = { debug() {}, info() {}, warn: (m: string) => warnings.push(m), error: (m: string) => warnings.push(m) };
});
afterEach(async () => {
  for (const m of managers.splice(0)) await m.shutdownAll();
  tmp.cleanup();
});

function plugin(name: string, options: FixtureProviderOptions, replace: [string, string] = ["", ""]): void {
  writeFiles(path.join(home, "plugins", name), {
    "plugin.yaml": `name: ${name}\n`,
    "index.js": providerSource(name, options).replace(...replace),
  });
  fs.writeFileSync(path.join(home, "config.yaml"), `memory:\n  provider: ${name}\n`);
}

async function open(extra: Partial<OpenMemoryOptions> = {}): Promise<MemoryManager> {
  const manager = await openMemory({
    sessionId: "s1",
    hermesHome: home,
    cwd: tmp.dir,
    packageRoots: [],
    logger,
    hookTimeoutMs: 500,
    importTimeoutMs: 2000,
    ...extra,
  });
  managers.push(manager);
  return manager;
}

const ARRAY_TRAP = `new Proxy([], { get() { throw new Error("schema list trap"); } })`;

describe("openMemory with hostile providers", () => {
  it("a tool-schema list whose iteration throws: built-in only, the provider is not left registered", async () => {
    plugin("trap-schemas", { body: `getToolSchemas() { return ${ARRAY_TRAP}; }` });
    const manager = await open();
    expect(manager.providers).toHaveLength(1);
    expect(manager.getProvider(BUILTIN_PROVIDER_NAME)).toBeDefined();
    expect(manager.getProvider("trap-schemas")).toBeUndefined();
    expect(() => manager.getToolSchemas()).not.toThrow();
    expect(warnings.join("\n")).toContain("Memory provider 'trap-schemas' getToolSchemas() failed: schema list trap");
  });

  it("a name getter that starts throwing once the provider is initialised does not make openMemory reject", async () => {
    plugin(
      "flaky-name",
      {
        body: `get name() { if (this.ready) throw new Error("name getter"); return "flaky-name"; }\n  initialize() { this.ready = true; }`,
      },
      ['name = "flaky-name";', ""],
    );
    const manager = await open();
    expect(manager.providers).toHaveLength(2);
    expect(manager.getProvider("flaky-name")).toBeDefined();
    expect(await manager.buildSystemPrompt()).toBe("");
  });

  it("the same provider failing initialize(): dropped by its registered name, strict gives PROVIDER_UNAVAILABLE", async () => {
    plugin(
      "flaky-fail",
      {
        body: `get name() { if (this.ready) throw new Error("name getter"); return "flaky-fail"; }\n  initialize() { this.ready = true; throw new Error("no key"); }`,
      },
      ['name = "flaky-fail";', ""],
    );
    const manager = await open();
    expect(manager.providers).toHaveLength(1);
    expect(warnings.join("\n")).toContain("Memory provider 'flaky-fail' initialize failed: no key");
    const error = await open({ strict: true }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(HermesMemoryError.hasCode(error, "PROVIDER_UNAVAILABLE")).toBe(true);
  });

  it("an unavailableReason() that returns an object whose toString throws: built-in only, no rejection", async () => {
    plugin("odd-reason", { available: false, body: `unavailableReason() { return { toString() { throw new Error("toString"); } }; }` }, [
      'unavailableReason() { return "";',
      'unavailableReasonUnused() { return "";',
    ]);
    const manager = await open();
    expect(manager.providers).toHaveLength(1);
    expect(warnings.join("\n")).toContain("Memory provider 'odd-reason' is not available");
  });
});
