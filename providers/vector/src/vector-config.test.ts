import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { fileURLToPath } from "node:url";
import { HermesMemoryError, applySetup, planSetup } from "@hermes/memory-core";
import {
  DEFAULT_VECTOR_CONFIG,
  MAX_DIMENSIONS,
  VECTOR_CONFIG_FIELDS,
  loadVectorConfig,
  loadVectorConfigSync,
  renderNamespace,
  resolveVectorConfig,
} from "./vector-config.js";
import { VectorMemoryProvider } from "./vector-memory-provider.js";
import { register } from "./index.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});
function home(configYaml: string, dotenv = ""): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-vector-config-"));
  dirs.push(d);
  fs.writeFileSync(path.join(d, "config.yaml"), configYaml);
  if (dotenv) fs.writeFileSync(path.join(d, ".env"), dotenv, { mode: 0o600 });
  return d;
}

describe("vector config", () => {
  it("reads memory.vector from config.yaml and secrets from .env (over the process env), options win", async () => {
    const h = home(
      [
        "memory:",
        "  provider: vector",
        "  vector:",
        "    store: pinecone",
        "    pinecone_index: team-mem",
        "    dimensions: 256",
        "    hybrid: false",
        "    exact_threshold: 100",
      ].join("\n"),
      "PINECONE_API_KEY=from-dotenv\n",
    );
    const config = await loadVectorConfig(h, {}, { PINECONE_API_KEY: "from-env", EMBEDDINGS_API_KEY: "emb" });
    expect(config).toMatchObject({
      store: "pinecone",
      pineconeIndex: "team-mem",
      dimensions: 256,
      hybrid: false,
      exactThreshold: 100,
      pineconeApiKey: "from-dotenv",
      embeddingsApiKey: "emb",
    });
    expect(loadVectorConfigSync(h, {}, {})).toEqual(await loadVectorConfig(h, {}, {}));
    expect((await loadVectorConfig(h, { store: "local", dimensions: 64 }, {})).store).toBe("local");
  });

  it("applies defaults and rejects invalid values with a fix", () => {
    expect(resolveVectorConfig({}, {})).toEqual(DEFAULT_VECTOR_CONFIG);
    const bad = (() => {
      try {
        resolveVectorConfig({ store: "redis" }, {});
      } catch (e) {
        return e;
      }
    })();
    expect(HermesMemoryError.hasCode(bad, "INVALID_CONFIG")).toBe(true);
    expect((bad as Error).message).toMatch(/store must be one of local, pinecone/);
    expect(() => resolveVectorConfig({ dimensions: "lots" }, {})).toThrow(/dimensions must be an integer/);
  });

  it("renders namespaces per profile and user", () => {
    expect(renderNamespace("{profile}:{user}", "work", "alice@example.com")).toBe("work:alice@example.com");
    // Other characters are escaped, so "a b/c" and "a_b_c" keep namespaces of their own.
    expect(renderNamespace("hermes-{user}", "p", "a b/c")).toBe("hermes-a~20b~2Fc");
    expect(renderNamespace("hermes-{user}", "p", "a_b_c")).toBe("hermes-a_b_c");
    expect(renderNamespace("{profile}:{user}", "my profile", "u")).toBe("my_profile:u");
  });

  it("lets isAvailable() see the profile's config before initialize (register passes hermesHome)", () => {
    const h = home(["memory:", "  vector:", "    store: pinecone"].join("\n"));
    const registered: VectorMemoryProvider[] = [];
    register({ hermesHome: h, registerMemoryProvider: (p) => registered.push(p as VectorMemoryProvider) }, { env: {} });
    expect(registered[0]!.isAvailable()).toBe(false);
    expect(registered[0]!.unavailableReason()).toMatch(/PINECONE_API_KEY is not set/);
    fs.writeFileSync(path.join(h, ".env"), "PINECONE_API_KEY=abc\n");
    expect(new VectorMemoryProvider({ hermesHome: h, env: {} }).isAvailable()).toBe(true);
    const broken = home("memory:\n  vector:\n    embedder: gpt\n");
    const p = new VectorMemoryProvider({ hermesHome: broken, env: {} });
    expect(p.isAvailable()).toBe(false);
    expect(p.unavailableReason()).toMatch(/embedder must be one of/);
  });

  it("setup with store=pinecone requires PINECONE_API_KEY (even with --yes); a key setup saved is seen by the next provider", async () => {
    const h = home("");
    const provider = new VectorMemoryProvider({ env: {} });
    await expect(applySetup(provider, { store: "pinecone" }, { hermesHome: h, acceptDefaults: true })).rejects.toMatchObject({
      code: "SETUP_INCOMPLETE",
      message: expect.stringContaining("PINECONE_API_KEY"),
    });
    await applySetup(provider, { store: "pinecone", pinecone_api_key: "pc-key" }, { hermesHome: h, acceptDefaults: true });
    expect(fs.readFileSync(path.join(h, ".env"), "utf8")).toContain("PINECONE_API_KEY=pc-key");
    expect(new VectorMemoryProvider({ hermesHome: h, env: {} }).isAvailable()).toBe(true);
  });

  it("declares its defaults once; the prefetch settings are the kit's (prefetch_limit 5, prefetch_max_chars 2000)", () => {
    expect(DEFAULT_VECTOR_CONFIG).toEqual({
      store: "local",
      embedder: "hashing",
      dimensions: 384,
      pineconeIndex: "hermes-memory",
      pineconeLayout: "sidecar",
      hybridAlpha: 0.5,
      pineconeNamespaceTemplate: "{profile}:{user}",
      embeddingsBaseUrl: "https://api.openai.com/v1",
      embeddingsModel: "text-embedding-3-small",
      hybrid: true,
      prefetchLimit: 5,
      prefetchMaxChars: 2000,
      prefetchTimeoutMs: 2000,
      requestTimeoutMs: 10_000,
      maxRetries: 4,
      searchThread: true,
      writeBatchSize: 32,
    });
  });

  it("reads prefetch_chars (config.yaml) and prefetchChars (options) as prefetch_max_chars, and refuses both names at once", async () => {
    const warnings: string[] = [];
    expect(resolveVectorConfig({ prefetch_chars: 900 }, {}, {}, (w) => warnings.push(w)).prefetchMaxChars).toBe(900);
    expect(warnings).toEqual([
      "memory.vector: prefetch_chars is the old name of prefetch_max_chars and is read as prefetch_max_chars; rename it to prefetch_max_chars.",
    ]);
    expect(resolveVectorConfig({}, {}, { prefetchChars: 400 } as never).prefetchMaxChars).toBe(400);
    const h = home("memory:\n  vector:\n    prefetch_chars: 900\n    prefetch_max_chars: 1000\n");
    await expect(loadVectorConfig(h, {}, {})).rejects.toMatchObject({
      code: "INVALID_CONFIG",
      message: expect.stringContaining(`memory.vector in ${path.join(h, "config.yaml")} sets both prefetch_chars and prefetch_max_chars`),
    });
  });

  it("names the config.yaml path in errors, ignores secrets and unknown keys in config.yaml with a warning", async () => {
    const h = home("memory:\n  vector:\n    max_retries: -1\n");
    const error = await loadVectorConfig(h, {}, {}).catch((e: unknown) => e);
    expect(HermesMemoryError.hasCode(error, "INVALID_CONFIG")).toBe(true);
    expect((error as Error).message).toContain(
      `memory.vector.max_retries must be between 0 and 10 (got -1 from memory.vector.max_retries in ${path.join(h, "config.yaml")})`,
    );
    const warnings: string[] = [];
    const config = resolveVectorConfig({ pinecone_api_key: "leaked", store: "PINECONE", shiny: 1 }, {}, {}, (w) => warnings.push(w));
    expect(config.store).toBe("pinecone");
    expect(config.pineconeApiKey).toBeUndefined();
    expect(warnings.join("\n")).toMatch(/does not know: shiny/);
    expect(warnings.join("\n")).toMatch(/pinecone_api_key .* ignored: secrets are read only from the environment.*PINECONE_API_KEY/);
    expect(() => resolveVectorConfig({ hybrid: "sometimes" }, {})).toThrow(/hybrid must be true or false/);
  });

  it("refuses dimensions past Pinecone's limit and endpoint URLs that are not http(s) at initialize, before anything is allocated or requested", async () => {
    expect(resolveVectorConfig({ dimensions: MAX_DIMENSIONS }, {}).dimensions).toBe(20_000);
    expect(() => resolveVectorConfig({ dimensions: MAX_DIMENSIONS + 1 }, {})).toThrow(/dimensions must be between 1 and 20000/);
    expect(() => resolveVectorConfig({}, {}, { dimensions: 1e9 })).toThrow(
      /dimensions must be between 1 and 20000 \(got 1000000000 from the option `dimensions`\)/,
    );
    expect(resolveVectorConfig({ embedder: "openai", embeddings_base_url: "http://127.0.0.1:11434/v1" }, {}).embeddingsBaseUrl).toBe(
      "http://127.0.0.1:11434/v1",
    );
    for (const [key, value] of [
      ["embeddings_base_url", "file:///etc/passwd"],
      ["embeddings_base_url", "localhost:11434/v1"],
      ["pinecone_controller_url", "ftp://controller.example"],
    ] as const) {
      const h = home(`memory:\n  provider: vector\n  vector:\n    embedder: openai\n    ${key}: ${JSON.stringify(value)}\n`);
      const p = new VectorMemoryProvider({});
      const error = await p.initialize("s1", { hermesHome: h }).catch((e: unknown) => e);
      expect(HermesMemoryError.hasCode(error, "INVALID_CONFIG")).toBe(true);
      expect((error as Error).message).toContain(`memory.vector.${key} must be an http:// or https:// URL with a host`);
      await p.shutdown();
      // Nothing was created for a configuration that cannot work.
      expect(fs.existsSync(path.join(h, "memory"))).toBe(false);
    }
  });

  it("reads the Pinecone layout keys and refuses a layout or alpha out of range", () => {
    expect(resolveVectorConfig({ pinecone_layout: "remote", pinecone_namespace: "team", hybrid_alpha: 0.3 }, {})).toMatchObject({
      pineconeLayout: "remote",
      pineconeNamespace: "team",
      hybridAlpha: 0.3,
    });
    expect(() => resolveVectorConfig({ pinecone_layout: "cloud" }, {})).toThrow(/pinecone_layout/);
    expect(() => resolveVectorConfig({ hybrid_alpha: 1.5 }, {})).toThrow(/hybrid_alpha/);
  });

  it("the provider logs unknown memory.vector keys as a warning when it opens", async () => {
    const h = home("memory:\n  vector:\n    hybird: false\n");
    const warnings: string[] = [];
    const logger = { debug() {}, info() {}, error() {}, warn: (message: string) => warnings.push(message) };
    const provider = new VectorMemoryProvider({ env: {}, logger });
    await provider.initialize("s", { hermesHome: h });
    await provider.shutdown();
    expect(warnings.join("\n")).toMatch(/memory\.vector .* does not know: hybird/);
  });

  it("setup asks the declared fields except the advanced tunables", () => {
    const asked = planSetup(new VectorMemoryProvider({ env: {} }), { answers: { store: "pinecone", embedder: "openai" } }).fields.map(
      (f) => f.key,
    );
    expect(asked).toEqual(
      VECTOR_CONFIG_FIELDS.filter((f) => !("advanced" in f && f.advanced) && f.key !== "onnx_model_dir").map((f) => f.key),
    );
    expect(asked).not.toContain("max_retries");
  });

  it("every numeric setting declares a range, is refused outside it naming the key, the range and the value, and the README states the range", () => {
    const readme = fs.readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "README.md"), "utf8");
    const rows = new Map([...readme.matchAll(/^\| `([a-z_]+)` \| [^|]* \| ([^|]*) \|/gm)].map((m) => [m[1]!, m[2]!.replace(/,/g, "")]));
    const numeric = VECTOR_CONFIG_FIELDS.filter((f) => "type" in f && (f.type === "integer" || f.type === "number"));
    expect(numeric.length).toBeGreaterThan(5);
    for (const field of numeric) {
      const { minimum: min, maximum: max } = field as { minimum?: number; maximum?: number };
      expect([field.key, typeof min, typeof max]).toEqual([field.key, "number", "number"]);
      expect([field.key, rows.get(field.key)]).toEqual([field.key, expect.stringMatching(new RegExp(`\\b${min}(–| to )${max}\\b`))]);
      for (const value of [min! - 1, max! + 1]) {
        expect(() => resolveVectorConfig({ [field.key]: value }, {})).toThrow(
          `memory.vector.${field.key} must be between ${min} and ${max} (got ${value}`,
        );
      }
    }
    let error: unknown;
    try {
      resolveVectorConfig({ max_retries: 1_000_000 }, {});
    } catch (e) {
      error = e;
    }
    expect(HermesMemoryError.hasCode(error, "INVALID_CONFIG")).toBe(true);
    expect((error as Error).message).toMatch(
      /^memory\.vector\.max_retries must be between 0 and \d+ \(got 1000000 from memory\.vector\.max_retries in config\.yaml\)/,
    );
  });

  it("the write batch size is a setting with a range too: the constructor option is checked like config.yaml", async () => {
    for (const writeBatchSize of [0, -1, 1_000_000, 2.5]) {
      let error: unknown;
      try {
        new VectorMemoryProvider({ env: {}, dimensions: 64, writeBatchSize });
      } catch (e) {
        error = e;
      }
      expect(HermesMemoryError.hasCode(error, "INVALID_CONFIG"), String(writeBatchSize)).toBe(true);
      expect((error as Error).message).toContain("memory.vector.write_batch_size must be");
    }
    const h = home("memory:\n  vector:\n    write_batch_size: 1\n");
    const p = new VectorMemoryProvider({ env: {}, dimensions: 64 });
    await p.initialize("s1", { hermesHome: h });
    for (const n of [1, 2, 3]) p.remember({ content: `batched item ${n}` });
    await p.flush();
    expect((await p.stats()).items).toBe(3);
    await p.shutdown();
    expect(() => resolveVectorConfig({ write_batch_size: 5000 }, {})).toThrow(
      "memory.vector.write_batch_size must be between 1 and 1000 (got 5000",
    );
  });

  it("the README's config table lists every non-secret field with its declared default", () => {
    const readme = fs.readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "README.md"), "utf8");
    const rows = new Map([...readme.matchAll(/^\| `([a-z_]+)` \| ([^|]*) \|/gm)].map((m) => [m[1]!, m[2]!.trim()]));
    for (const field of VECTOR_CONFIG_FIELDS) {
      if ("secret" in field && field.secret) continue;
      const expected = "default" in field ? `\`${String(field.default)}\`` : "no default";
      const cell = rows.get(field.key);
      expect([field.key, "default" in field ? cell : cell !== undefined && !cell.startsWith("`") ? "no default" : cell]).toEqual([
        field.key,
        expected,
      ]);
    }
  });
});
