import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { HermesMemoryError, applySetup } from "@hermes/memory-core";
import { DEFAULT_VECTOR_CONFIG, loadVectorConfig, loadVectorConfigSync, renderNamespace, resolveVectorConfig } from "./vector-config.js";
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
      ["memory:", "  provider: vector", "  vector:", "    store: pinecone", "    pinecone_index: team-mem", "    dimensions: 256", "    hybrid: false", "    exact_threshold: 100"].join("\n"),
      "PINECONE_API_KEY=from-dotenv\n",
    );
    const config = await loadVectorConfig(h, {}, { PINECONE_API_KEY: "from-env", EMBEDDINGS_API_KEY: "emb" });
    expect(config).toMatchObject({ store: "pinecone", pineconeIndex: "team-mem", dimensions: 256, hybrid: false, exactThreshold: 100, pineconeApiKey: "from-dotenv", embeddingsApiKey: "emb" });
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
    expect(renderNamespace("hermes-{user}", "p", "a b/c")).toBe("hermes-a_b_c");
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
    await expect(applySetup(provider, { store: "pinecone" }, { hermesHome: h, acceptDefaults: true })).rejects.toMatchObject({ code: "SETUP_INCOMPLETE", message: expect.stringContaining("PINECONE_API_KEY") });
    await applySetup(provider, { store: "pinecone", pinecone_api_key: "pc-key" }, { hermesHome: h, acceptDefaults: true });
    expect(fs.readFileSync(path.join(h, ".env"), "utf8")).toContain("PINECONE_API_KEY=pc-key");
    expect(new VectorMemoryProvider({ hermesHome: h, env: {} }).isAvailable()).toBe(true);
  });
});
