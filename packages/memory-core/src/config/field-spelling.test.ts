import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HermesMemoryError } from "../errors.js";
import { openMemory } from "../open-memory.js";
import { MemoryProvider, type ConfigField } from "../provider.js";
import { makeTempDir, providerSource, writeFiles } from "../test-support/temp-tree.js";
import { readEnvFile } from "./env-file.js";
import { resolveProviderConfig } from "./resolve-config.js";
import { applySetup, planSetup } from "./setup.js";

// A schema as a provider ported from the original declares it: snake_case keys.
const PORTED = [
  { key: "api_key", secret: true, required: true, env_var: "PORT_TOKEN" },
  { key: "region", choices: ["us", "eu"], default: "us" },
  {
    key: "endpoint",
    default_from: { field: "region", map: { us: "https://us.example", eu: "https://eu.example" } },
    default: "https://x.example",
  },
  { key: "limit", type: "integer", minimum: 1, maximum: 9, step: 1, default: 3 },
] as const satisfies readonly ConfigField[];

class SchemaProvider extends MemoryProvider {
  constructor(
    readonly name: string,
    private readonly schema: readonly object[],
  ) {
    super();
  }
  isAvailable() {
    return true;
  }
  initialize() {}
  getToolSchemas() {
    return [];
  }
  getConfigSchema() {
    return this.schema as ConfigField[];
  }
}

let tmp: ReturnType<typeof makeTempDir>;
let home: string;
beforeEach(() => {
  tmp = makeTempDir("hermes-field-spelling-");
  home = path.join(tmp.dir, "home");
  fs.mkdirSync(home);
  delete process.env.PORT_TOKEN;
});
afterEach(() => tmp.cleanup());

function refusal(run: () => unknown): HermesMemoryError {
  let caught: unknown;
  try {
    run();
  } catch (error) {
    caught = error;
  }
  expect(HermesMemoryError.isInstance(caught)).toBe(true);
  return caught as HermesMemoryError;
}

describe("config fields written with the original's keys", () => {
  it("resolveProviderConfig reads env_var and applies default_from", () => {
    const eu = resolveProviderConfig(PORTED, { provider: "port", section: { region: "eu" }, env: { PORT_TOKEN: "tok" } });
    expect(eu.config).toEqual({ apiKey: "tok", region: "eu", endpoint: "https://eu.example", limit: 3 });
    expect(eu.sources.api_key).toBe("env");
    const unmapped = resolveProviderConfig(PORTED, { provider: "port", env: { PORT_TOKEN: "tok" } });
    expect(unmapped.config.endpoint).toBe("https://us.example");
    // A missing required secret names the variable the provider declared.
    expect(() => resolveProviderConfig(PORTED, { provider: "port", env: {} })).toThrow(/set PORT_TOKEN in/);
  });

  it("setup stores the secret under env_var (no generated name) and the default_from default in config.yaml", async () => {
    const provider = new SchemaProvider("port", PORTED);
    const plan = planSetup(provider, { answers: { region: "eu" } });
    expect(plan.fields.find((f) => f.key === "api_key")?.envVar).toBe("PORT_TOKEN");
    expect(plan.fields.find((f) => f.key === "endpoint")?.effectiveDefault).toBe("https://eu.example");
    const result = await applySetup(provider, { api_key: "tok-1", region: "eu" }, { hermesHome: home });
    expect(result.envKeys).toEqual(["PORT_TOKEN"]);
    expect(await readEnvFile(home)).toEqual({ PORT_TOKEN: "tok-1" });
    expect(result.savedValues).toMatchObject({ region: "eu", endpoint: "https://eu.example" });
  });

  it.each([
    [{ key: "api_key", secret: true, env_key: "PORT_TOKEN" }, "'env_key'"],
    [{ key: "api_key", secret: true, envVar: "A_TOKEN", env_var: "B_TOKEN" }, "both envVar and env_var"],
    [{ key: "endpoint", default_from: "region" }, "defaultFrom"],
    [{ key: "endpoint", when: "cloud" }, "`when`"],
  ])("refuses %j loudly everywhere, naming the field and the key", async (field, named) => {
    const provider = new SchemaProvider("port", [field]);
    for (const run of [() => planSetup(provider), () => resolveProviderConfig([field as ConfigField], { provider: "port", env: {} })]) {
      const error = refusal(run);
      expect(error.code).toBe("INVALID_PROVIDER");
      expect(error.message).toContain(`'${field.key}'`);
      expect(error.message).toContain(named);
    }
    await expect(applySetup(provider, { [field.key]: "v" }, { hermesHome: home })).rejects.toMatchObject({ code: "INVALID_PROVIDER" });
    expect(fs.existsSync(path.join(home, ".env"))).toBe(false);
  });

  it("a field whose keys cannot be read is refused as INVALID_PROVIDER, not a raw throw", () => {
    const hostile = new Proxy(
      { key: "x" },
      {
        ownKeys: () => {
          throw new Error("no keys for you");
        },
      },
    );
    const error = refusal(() => planSetup(new SchemaProvider("port", [hostile])));
    expect(error.code).toBe("INVALID_PROVIDER");
    expect(error.message).toContain("no keys for you");
  });

  it("accepts both spellings when they agree", () => {
    const field = { key: "api_key", secret: true, envVar: "PORT_TOKEN", env_var: "PORT_TOKEN" } as ConfigField;
    expect(resolveProviderConfig([field], { provider: "port", env: { PORT_TOKEN: "t" } }).config).toEqual({ apiKey: "t" });
  });
});

describe("a provider reading process.env for a key setup saved in .env", () => {
  function writeProvider(): void {
    const body = `
  isAvailable() { return Boolean(process.env.PORT_TOKEN); }
  getConfigSchema() { return [{ key: "api_key", secret: true, required: true, env_var: "PORT_TOKEN" }]; }`;
    writeFiles(path.join(home, "plugins", "port"), { "plugin.yaml": "name: port\n", "index.js": providerSource("port", { body }) });
    writeFiles(home, { ".env": "PORT_TOKEN=tok-1\n", "config.yaml": "memory:\n  provider: port\n" });
    writeFiles(path.join(tmp.dir, "work"), { "package.json": { name: "host" } });
  }

  it("openMemory's warning and strict error say the key is only in .env and name getEnv", async () => {
    writeProvider();
    const warnings: string[] = [];
    const logger = { debug() {}, info() {}, warn: (m: string) => warnings.push(m), error: (m: string) => warnings.push(m) };
    const manager = await openMemory({ sessionId: "s", hermesHome: home, cwd: path.join(tmp.dir, "work"), logger });
    await manager.shutdownAll();
    const warning = warnings.find((w) => w.includes("'port' is not available"));
    expect(warning).toContain("PORT_TOKEN is set in");
    expect(warning).toContain('getEnv("PORT_TOKEN") from @hermes/memory-core');
    const strict = await openMemory({ sessionId: "s", hermesHome: home, cwd: path.join(tmp.dir, "work"), strict: true }).catch(
      (e: unknown) => e,
    );
    expect(strict).toMatchObject({ code: "PROVIDER_UNAVAILABLE", message: expect.stringContaining("getEnv") });
  });

  it("says nothing about .env when the key is exported in the process environment too", async () => {
    writeProvider();
    const body = `isAvailable() { return false; }`;
    writeFiles(path.join(home, "plugins", "port"), {
      "index.js": providerSource("port", {
        body: `${body} getConfigSchema() { return [{ key: "k", secret: true, env_var: "PORT_TOKEN" }]; }`,
      }),
    });
    process.env.PORT_TOKEN = "tok-1";
    try {
      const warnings: string[] = [];
      const logger = { debug() {}, info() {}, warn: (m: string) => warnings.push(m), error: (m: string) => warnings.push(m) };
      const manager = await openMemory({ sessionId: "s", hermesHome: home, cwd: path.join(tmp.dir, "work"), logger });
      await manager.shutdownAll();
      const warning = warnings.find((w) => w.includes("'port' is not available")) ?? "";
      expect(warning).not.toBe("");
      expect(warning).not.toContain("getEnv");
    } finally {
      delete process.env.PORT_TOKEN;
    }
  });
});
