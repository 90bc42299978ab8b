import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MemoryProvider, type ConfigField } from "../provider.js";
import { makeTempDir } from "../test-support/temp-tree.js";
import { readConfig } from "./config-file.js";
import { readEnvFile } from "./env-file.js";
import { applySetup, defaultEnvVarName, planSetup } from "./setup.js";
import { getEnv } from "./secrets.js";

class SchemaProvider extends MemoryProvider {
  constructor(
    readonly name: string,
    private readonly schema: ConfigField[],
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
    return this.schema;
  }
}

class SavingProvider extends SchemaProvider {
  saved: Array<{ values: Record<string, unknown>; home: string }> = [];
  override saveConfig(values: Record<string, unknown>, hermesHome: string) {
    this.saved.push({ values, home: hermesHome });
  }
}

const cloudSchema: ConfigField[] = [
  { key: "mode", description: "Where to store", choices: ["local", "cloud"], default: "local" },
  {
    key: "api_key",
    description: "API key",
    secret: true,
    required: true,
    envVar: "ACME_API_KEY",
    url: "https://acme.example/keys",
    when: { mode: "cloud" },
  },
  { key: "region", description: "Region", when: { mode: "cloud" }, default: "us" },
  {
    key: "endpoint",
    description: "Endpoint",
    defaultFrom: { field: "region", map: { us: "https://us.acme", eu: "https://eu.acme" } },
    default: "http://localhost",
  },
  { key: "path", description: "Database path" },
  { key: "limit", type: "integer", minimum: 1, maximum: 50, default: 10 },
  { key: "token", secret: true },
];

let tmp: ReturnType<typeof makeTempDir>;
let home: string;
beforeEach(() => {
  tmp = makeTempDir("hermes-setup-");
  home = tmp.dir;
});
afterEach(() => tmp.cleanup());

describe("planSetup", () => {
  it("filters fields by when, applies defaultFrom and generates env names for secrets", () => {
    const provider = new SchemaProvider("acme", cloudSchema);
    const local = planSetup(provider);
    expect(local.provider).toBe("acme");
    expect(local.fields.map((f) => f.key)).toEqual(["mode", "endpoint", "path", "limit", "token"]);
    expect(local.fields.find((f) => f.key === "endpoint")!.effectiveDefault).toBe("http://localhost");
    expect(local.fields.find((f) => f.key === "token")).toMatchObject({ envVar: "ACME_TOKEN", isSet: false });

    const cloud = planSetup(provider, { answers: { mode: "cloud" } });
    expect(cloud.fields.map((f) => f.key)).toEqual(["mode", "api_key", "region", "endpoint", "path", "limit", "token"]);
    expect(cloud.fields.find((f) => f.key === "endpoint")!.effectiveDefault).toBe("https://us.acme");
    const eu = planSetup(provider, { answers: { mode: "cloud", region: "eu" } });
    expect(eu.fields.find((f) => f.key === "endpoint")!.effectiveDefault).toBe("https://eu.acme");
    // Unmapped reference value: the static default.
    const mars = planSetup(provider, { answers: { mode: "cloud", region: "mars" } });
    expect(mars.fields.find((f) => f.key === "endpoint")!.effectiveDefault).toBe("http://localhost");
  });

  it("reports current values from config.yaml and .env", async () => {
    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  acme:\n    mode: cloud\n    path: /data\n");
    const config = await readConfig(home);
    const plan = planSetup(new SchemaProvider("acme", cloudSchema), { config, env: { ACME_API_KEY: "sk-1234" } });
    expect(plan.fields.find((f) => f.key === "api_key")).toMatchObject({ isSet: true, currentValue: "sk-1234", envVar: "ACME_API_KEY" });
    expect(plan.fields.find((f) => f.key === "path")).toMatchObject({ isSet: true, currentValue: "/data" });
    expect(plan.fields.find((f) => f.key === "region")).toMatchObject({ isSet: false, effectiveDefault: "us" });
  });

  it("generates <PROVIDER>_<KEY> names", () => {
    expect(defaultEnvVarName("my-mem.v2", "api key")).toBe("MY_MEM_V2_API_KEY");
    expect(defaultEnvVarName("9lives", "k")).toBe("_9LIVES_K");
  });
});

describe("applySetup", () => {
  it("never drops a non-secret answer: stores it in config.yaml memory.<name> when saveConfig is not overridden", async () => {
    fs.writeFileSync(path.join(home, "config.yaml"), "# mine\nmemory:\n  provider: builtin\nother: 1\n");
    const provider = new SchemaProvider("acme", cloudSchema);
    const result = await applySetup(
      provider,
      { mode: "cloud", api_key: "sk-secret-value", region: "eu", path: "/data/acme", limit: "7", token: "tok" },
      { hermesHome: home },
    );
    expect(result).toEqual({
      provider: "acme",
      configPath: path.join(home, "config.yaml"),
      envPath: path.join(home, ".env"),
      envKeys: ["ACME_API_KEY", "ACME_TOKEN"],
      savedBy: "config.yaml",
      savedValues: { mode: "cloud", region: "eu", endpoint: "https://eu.acme", path: "/data/acme", limit: 7 },
      postSetupRan: false,
    });
    const config = await readConfig(home);
    expect(config.memory.provider).toBe("acme");
    expect(config.memory.providerConfig("acme")).toEqual(result.savedValues);
    expect(config.raw.other).toBe(1);
    const yamlText = fs.readFileSync(path.join(home, "config.yaml"), "utf8");
    expect(yamlText.startsWith("# mine\n")).toBe(true);
    // Secrets only in .env, 0600.
    expect(yamlText).not.toContain("sk-secret-value");
    expect(yamlText).not.toContain("tok");
    expect(await readEnvFile(home)).toEqual({ ACME_API_KEY: "sk-secret-value", ACME_TOKEN: "tok" });
    expect(fs.statSync(path.join(home, ".env")).mode & 0o777).toBe(0o600);
  });

  it("leaves only lock files that say what they are (0600, kept: deleting a lock file is how two writers get in)", async () => {
    await applySetup(new SchemaProvider("acme", cloudSchema), { mode: "cloud", api_key: "sk-1", token: "tok" }, { hermesHome: home });
    expect(fs.readdirSync(home).sort()).toEqual([".env", ".env.lock", "config.yaml", "config.yaml.lock"]);
    for (const [lock, target] of [
      [".env.lock", ".env"],
      ["config.yaml.lock", "config.yaml"],
    ] as const) {
      expect(fs.statSync(path.join(home, lock)).mode & 0o777).toBe(0o600);
      const note = fs.readFileSync(path.join(home, lock), "utf8");
      expect(note).toMatch(new RegExp(`^Lock file of ${target.replace(".", "\\.")}: .*holds no data.*Leave it in place`));
    }
  });

  it("hands non-secret values to an overriding saveConfig (full form) and never passes secrets", async () => {
    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  acme:\n    path: /stored\n");
    const provider = new SavingProvider("acme", cloudSchema);
    const result = await applySetup(provider, { limit: 3, token: "t0k3n" }, { hermesHome: home });
    expect(result.savedBy).toBe("provider");
    expect(provider.saved).toEqual([{ values: { mode: "local", endpoint: "http://localhost", path: "/stored", limit: 3 }, home }]);
    expect(JSON.stringify(provider.saved)).not.toContain("t0k3n");
    const config = await readConfig(home);
    expect(config.memory.provider).toBe("acme");
    expect(config.memory.providerConfig("acme")).toEqual({ path: "/stored" });
  });

  it("enforces required fields (also hidden secrets that became visible) and writes nothing", async () => {
    const provider = new SchemaProvider("acme", cloudSchema);
    const error = await applySetup(provider, { mode: "cloud", path: "/x" }, { hermesHome: home }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "SETUP_INCOMPLETE" });
    expect((error as Error).message).toContain("api_key");
    expect((error as Error).message).toContain("ACME_API_KEY");
    expect(fs.readdirSync(home)).toEqual([]);
  });

  it("a required secret already in .env is satisfied; blank answers keep it", async () => {
    fs.writeFileSync(path.join(home, ".env"), "ACME_API_KEY=existing\n", { mode: 0o600 });
    const result = await applySetup(new SchemaProvider("acme", cloudSchema), { mode: "cloud", api_key: "" }, { hermesHome: home });
    expect(result.envKeys).toEqual([]);
    expect(result.envPath).toBeNull();
    expect(await readEnvFile(home)).toEqual({ ACME_API_KEY: "existing" });
  });

  it("a secret exported in the given environment satisfies a required field without being copied", async () => {
    const result = await applySetup(
      new SchemaProvider("acme", cloudSchema),
      { mode: "cloud" },
      { hermesHome: home, env: { ACME_API_KEY: "from-shell" } },
    );
    expect(result.envKeys).toEqual([]);
    expect(fs.existsSync(path.join(home, ".env"))).toBe(false);
  });

  it("a non-secret field with envVar is stored in config.yaml and .env", async () => {
    const schema: ConfigField[] = [{ key: "base_url", envVar: "ACME_BASE_URL" }];
    const result = await applySetup(new SchemaProvider("acme", schema), { base_url: "http://127.0.0.1:9" }, { hermesHome: home });
    expect(result).toMatchObject({ envKeys: ["ACME_BASE_URL"], savedValues: { base_url: "http://127.0.0.1:9" } });
    expect(await readEnvFile(home)).toEqual({ ACME_BASE_URL: "http://127.0.0.1:9" });
    expect((await readConfig(home)).memory.providerConfig("acme")).toEqual({ base_url: "http://127.0.0.1:9" });
  });

  it("required non-secret fields: defaults count only with acceptDefaults", async () => {
    const schema: ConfigField[] = [{ key: "url", required: true, default: "http://localhost:8080" }];
    await expect(applySetup(new SchemaProvider("svc", schema), {}, { hermesHome: home })).rejects.toMatchObject({
      code: "SETUP_INCOMPLETE",
    });
    const result = await applySetup(new SchemaProvider("svc", schema), {}, { hermesHome: home, acceptDefaults: true });
    expect(result.savedValues).toEqual({ url: "http://localhost:8080" });
  });

  it("rejects unknown keys and invalid values before writing anything", async () => {
    const provider = new SchemaProvider("acme", cloudSchema);
    await expect(applySetup(provider, { nope: 1 }, { hermesHome: home })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    const error = await applySetup(provider, { mode: "moon", limit: "99" }, { hermesHome: home }).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/'mode' must be one of .*'limit' must be between 1 and 50/);
    expect(fs.readdirSync(home)).toEqual([]);
  });

  it("refuses a secret envVar on the deny-list without writing anything", async () => {
    const provider = new SchemaProvider("evil", [{ key: "k", secret: true, envVar: "LD_PRELOAD" }]);
    await expect(applySetup(provider, { k: "/x.so" }, { hermesHome: home })).rejects.toMatchObject({ code: "INVALID_ENV_NAME" });
    expect(fs.readdirSync(home)).toEqual([]);
  });

  it("a provider without settings is just activated", async () => {
    const result = await applySetup(new SchemaProvider("plain", []), {}, { hermesHome: home });
    expect(result).toMatchObject({ savedValues: {}, envKeys: [], envPath: null, savedBy: "config.yaml" });
    expect((await readConfig(home)).memory.provider).toBe("plain");
  });
});

describe("conditional required fields", () => {
  it("--yes (acceptDefaults) does not satisfy a required secret whose `when` applies", async () => {
    const provider = new SchemaProvider("acme", cloudSchema);
    await expect(applySetup(provider, { mode: "cloud" }, { hermesHome: home, acceptDefaults: true })).rejects.toMatchObject({
      code: "SETUP_INCOMPLETE",
      message: expect.stringContaining("ACME_API_KEY"),
    });
    expect(fs.existsSync(path.join(home, "config.yaml"))).toBe(false);
    // Not asked (and not required) when the condition does not hold.
    await expect(applySetup(provider, { mode: "local" }, { hermesHome: home, acceptDefaults: true })).resolves.toMatchObject({
      envKeys: [],
    });
    // Satisfied by .env, or by the environment the caller passes.
    fs.writeFileSync(path.join(home, ".env"), "ACME_API_KEY=sk-from-dotenv\n");
    await expect(applySetup(provider, { mode: "cloud" }, { hermesHome: home, acceptDefaults: true })).resolves.toMatchObject({
      provider: "acme",
    });
  });
});

describe("postSetup", () => {
  class PostSetupProvider extends SchemaProvider {
    calls: Array<{ home: string; values: Record<string, unknown>; keySeen: string | undefined; provider: string }> = [];
    constructor(private readonly step: (self: PostSetupProvider, home: string, values: Record<string, unknown>) => unknown) {
      super("acme", cloudSchema);
    }
    override postSetup(hermesHome: string, values: Record<string, unknown>): Promise<void> {
      return Promise.resolve(this.step(this, hermesHome, values)).then(() => undefined);
    }
  }

  it("runs after answers are saved, in the profile scope (getEnv sees the new secret)", async () => {
    const provider = new PostSetupProvider(async (self, h, values) => {
      const config = await readConfig(h);
      self.calls.push({ home: h, values, keySeen: getEnv("ACME_API_KEY"), provider: config.memory.provider });
    });
    const result = await applySetup(provider, { mode: "cloud", api_key: "sk-post-setup" }, { hermesHome: home });
    expect(result.postSetupRan).toBe(true);
    expect(provider.calls).toEqual([
      { home, values: expect.objectContaining({ mode: "cloud", region: "us" }), keySeen: "sk-post-setup", provider: "acme" },
    ]);
  });

  it("a failing or hanging postSetup is POST_SETUP_FAILED; the saved settings stay", async () => {
    const failing = new PostSetupProvider(() => {
      throw new Error("oauth refused");
    });
    await expect(applySetup(failing, { mode: "local" }, { hermesHome: home })).rejects.toMatchObject({
      code: "POST_SETUP_FAILED",
      message: expect.stringContaining("oauth refused"),
    });
    expect((await readConfig(home)).memory.provider).toBe("acme");
    const hanging = new PostSetupProvider(() => new Promise(() => {}));
    await expect(applySetup(hanging, { mode: "local" }, { hermesHome: home, postSetupTimeoutMs: 20 })).rejects.toMatchObject({
      code: "POST_SETUP_FAILED",
      message: expect.stringContaining("within 20 ms"),
    });
  });

  it("providers without postSetup report postSetupRan: false", async () => {
    expect((await applySetup(new SchemaProvider("acme", cloudSchema), { mode: "local" }, { hermesHome: home })).postSetupRan).toBe(false);
  });
});
