import fs from "node:fs";
import path from "node:path";
import { describe, expect, expectTypeOf, it } from "vitest";
import { HermesMemoryError } from "../errors.js";
import { MemoryProvider, type ConfigField } from "../provider.js";
import { makeTempDir } from "../test-support/temp-tree.js";
import { loadProviderConfig, resolveProviderConfig } from "./resolve-config.js";
import { applySetup, planSetup } from "./setup.js";

const FIELDS = [
  { key: "mode", choices: ["local", "cloud"], default: "local" },
  { key: "batch_size", type: "integer", default: 256, minimum: 1, maximum: 1000 },
  { key: "ratio", type: "number", default: 0.5, minimum: 0, maximum: 1, advanced: true },
  { key: "verbose", type: "boolean", default: false, envVar: "ACME_VERBOSE" },
  { key: "api_key", secret: true, required: true, envVar: "ACME_API_KEY", when: { mode: "cloud" } },
  { key: "region", defaultFrom: { field: "mode", map: { cloud: "eu-west-1" } } },
] as const satisfies readonly ConfigField[];

function catchError(run: () => unknown): HermesMemoryError {
  try {
    run();
  } catch (error) {
    if (HermesMemoryError.isInstance(error)) return error;
    throw error;
  }
  throw new Error("expected a throw");
}

describe("resolveProviderConfig", () => {
  it("infers the typed config from an `as const` field list", () => {
    const { config } = resolveProviderConfig(FIELDS, { provider: "acme", env: {} });
    expectTypeOf(config.mode).toEqualTypeOf<"local" | "cloud">();
    expectTypeOf(config.batchSize).toEqualTypeOf<number>();
    expectTypeOf(config.verbose).toEqualTypeOf<boolean>();
    expectTypeOf(config.apiKey).toEqualTypeOf<string | undefined>();
    expectTypeOf(config.region).toEqualTypeOf<string | number | boolean | undefined>();
    expect(config).toEqual({ mode: "local", batchSize: 256, ratio: 0.5, verbose: false });
  });

  it("takes options over config.yaml over env over defaults, and coerces each like setup", () => {
    const env = { ACME_VERBOSE: "yes", ACME_API_KEY: "k-1" };
    const fromYaml = resolveProviderConfig(FIELDS, { provider: "acme", section: { mode: "Cloud", batch_size: "12", verbose: "off" }, env });
    expect(fromYaml.config).toEqual({ mode: "cloud", batchSize: 12, ratio: 0.5, verbose: false, apiKey: "k-1", region: "eu-west-1" });
    expect(fromYaml.sources).toMatchObject({
      mode: "config.yaml",
      batch_size: "config.yaml",
      verbose: "config.yaml",
      api_key: "env",
      region: "default",
    });
    const fromEnv = resolveProviderConfig(FIELDS, { provider: "acme", section: {}, env });
    expect(fromEnv.config.verbose).toBe(true);
    const withOptions = resolveProviderConfig(FIELDS, {
      provider: "acme",
      section: { batch_size: 12 },
      options: { batchSize: 7, mode: undefined },
      env,
    });
    expect(withOptions.config.batchSize).toBe(7);
    expect(withOptions.config.mode).toBe("local");
  });

  it("names key, value, origin and fix in INVALID_CONFIG errors", () => {
    const yaml = catchError(() =>
      resolveProviderConfig(FIELDS, { provider: "acme", section: { batch_size: "lots" }, configPath: "/h/config.yaml", env: {} }),
    );
    expect(yaml.code).toBe("INVALID_CONFIG");
    expect(yaml.message).toContain('memory.acme.batch_size must be an integer (got "lots" from memory.acme.batch_size in /h/config.yaml)');
    expect(yaml.message).toContain("hermes-memory memory setup acme");
    const range = catchError(() => resolveProviderConfig(FIELDS, { provider: "acme", options: { ratio: 2 }, env: {} }));
    expect(range.message).toContain("memory.acme.ratio must be between 0 and 1 (got 2 from the option `ratio`)");
    // One bound declared: the message names that bound.
    const LOW = [{ key: "count", type: "integer", minimum: 1 }] as const satisfies readonly ConfigField[];
    expect(catchError(() => resolveProviderConfig(LOW, { provider: "acme", section: { count: 0 }, env: {} })).message).toContain(
      "memory.acme.count must be at least 1 (got 0",
    );
    const fromEnv = catchError(() => resolveProviderConfig(FIELDS, { provider: "acme", env: { ACME_VERBOSE: "maybe" } }));
    expect(fromEnv.message).toContain("must be true or false");
    expect(fromEnv.message).toContain("the environment variable ACME_VERBOSE");
    // An integer past 2^53 would be stored as another number (1e+23): refused, not rounded.
    const FREE = [{ key: "count", type: "integer", default: 1 }] as const satisfies readonly ConfigField[];
    const huge = catchError(() =>
      resolveProviderConfig(FREE, { provider: "acme", section: { count: "99999999999999999999999" }, env: {} }),
    );
    expect(huge.message).toContain("memory.acme.count must be an integer between -9007199254740991 and 9007199254740991");
    expect(
      resolveProviderConfig(FREE, { provider: "acme", section: { count: String(Number.MAX_SAFE_INTEGER) }, env: {} }).config.count,
    ).toBe(Number.MAX_SAFE_INTEGER);
    const choice = catchError(() => resolveProviderConfig(FIELDS, { provider: "acme", section: { mode: "redis" }, env: {} }));
    expect(choice.message).toContain("memory.acme.mode must be one of local, cloud");
  });

  it("a `url` field takes an absolute http(s) URL with a host and refuses anything else, naming the key", () => {
    const URLS = [{ key: "endpoint", type: "url", default: "https://api.example.com/v1" }] as const satisfies readonly ConfigField[];
    const { config } = resolveProviderConfig(URLS, { provider: "acme", env: {} });
    expectTypeOf(config.endpoint).toEqualTypeOf<string>();
    expect(config.endpoint).toBe("https://api.example.com/v1");
    for (const good of [
      "http://127.0.0.1:11434/v1",
      " https://host.example/ ",
      "http://[::1]:8080",
      "https://user@host.example/base?x=1",
    ]) {
      expect(resolveProviderConfig(URLS, { provider: "acme", section: { endpoint: good }, env: {} }).config.endpoint).toBe(good.trim());
    }
    for (const bad of [
      "file:///etc/passwd",
      "not a url",
      "ftp://host.example",
      "javascript:alert(1)",
      "http://",
      "data:text/plain,hi",
      "api.example.com/v1",
      443,
      ["https://a.example"],
      { url: "https://a.example" },
    ]) {
      const error = catchError(() =>
        resolveProviderConfig(URLS, { provider: "acme", section: { endpoint: bad }, configPath: "/h/config.yaml", env: {} }),
      );
      expect(error.code).toBe("INVALID_CONFIG");
      expect(error.message).toContain("memory.acme.endpoint must be an http:// or https:// URL with a host");
    }
  });

  it("requires a required field only while its `when` matches, unless told not to", () => {
    expect(resolveProviderConfig(FIELDS, { provider: "acme", env: {} }).config.apiKey).toBeUndefined();
    const missing = catchError(() => resolveProviderConfig(FIELDS, { provider: "acme", section: { mode: "cloud" }, env: {} }));
    expect(missing.code).toBe("INVALID_CONFIG");
    expect(missing.message).toContain("api_key (set ACME_API_KEY in $HERMES_HOME/.env)");
    expect(
      resolveProviderConfig(FIELDS, { provider: "acme", section: { mode: "cloud" }, env: {}, enforceRequired: false }).config.apiKey,
    ).toBeUndefined();
  });

  it("warns about unknown keys (or throws when asked) and never reads secrets from config.yaml", () => {
    const result = resolveProviderConfig(FIELDS, {
      provider: "acme",
      section: { batchSize: 3, future_key: 1, api_key: "leaked" },
      env: {},
    });
    expect(result.config.batchSize).toBe(256);
    expect(result.config.apiKey).toBeUndefined();
    expect(result.warnings.join("\n")).toMatch(/batchSize \(did you mean batch_size\?\), future_key/);
    expect(result.warnings.join("\n")).toMatch(/api_key .* is ignored: secrets are read only from the environment/);
    expect(
      catchError(() => resolveProviderConfig(FIELDS, { provider: "acme", section: { future_key: 1 }, env: {}, unknownKeys: "error" })).code,
    ).toBe("INVALID_CONFIG");
  });

  it("loadProviderConfig reads config.yaml and the profile .env over process.env", async () => {
    const { dir: home, cleanup } = makeTempDir("hermes-resolve-");
    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  acme:\n    mode: cloud\n");
    fs.writeFileSync(path.join(home, ".env"), "ACME_API_KEY=from-dotenv\n");
    process.env.ACME_API_KEY = "from-process";
    try {
      const { config } = await loadProviderConfig(FIELDS, { provider: "acme", hermesHome: home });
      expect(config).toMatchObject({ mode: "cloud", apiKey: "from-dotenv" });
    } finally {
      delete process.env.ACME_API_KEY;
      cleanup();
    }
  });
});

class AcmeProvider extends MemoryProvider {
  readonly name = "acme";
  isAvailable() {
    return true;
  }
  initialize() {}
  getToolSchemas() {
    return [];
  }
  getConfigSchema(): ConfigField[] {
    return FIELDS.map((f) => ({ ...f }));
  }
}

describe("setup with the same declarations", () => {
  it("does not ask advanced fields but validates and saves them when given", async () => {
    const { dir: home, cleanup } = makeTempDir("hermes-resolve-");
    const provider = new AcmeProvider();
    expect(planSetup(provider).fields.map((f) => f.key)).not.toContain("ratio");
    expect(planSetup(provider, { answers: { ratio: "0.25" } }).fields.map((f) => f.key)).toContain("ratio");
    await expect(applySetup(provider, { ratio: "3" }, { hermesHome: home })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: expect.stringContaining("'ratio' must be between 0 and 1"),
    });
    const result = await applySetup(provider, { ratio: "0.25" }, { hermesHome: home });
    expect(result.savedValues.ratio).toBe(0.25);
    const { config: resolved } = await loadProviderConfig(FIELDS, { provider: "acme", hermesHome: home, env: {} });
    expect(resolved.ratio).toBe(0.25);
    cleanup();
  });
});
