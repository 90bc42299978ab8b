import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadMemoryProvider } from "../loader.js";
import type { MemoryManager } from "../manager.js";
import { openMemory } from "../open-memory.js";
import { makeTempDir, providerSource, writeFiles } from "../test-support/temp-tree.js";
import { applySetup } from "./setup.js";

const SECRETS_URL = pathToFileURL(path.resolve(import.meta.dirname, "secrets.ts")).href;
const KEY = "KEYED_API_KEY";

let tmp: ReturnType<typeof makeTempDir>;
const managers: MemoryManager[] = [];
beforeEach(() => {
  tmp = makeTempDir("hermes-secrets-open-");
  delete process.env[KEY];
});
afterEach(async () => {
  for (const m of managers.splice(0)) await m.shutdownAll();
  delete process.env[KEY];
  tmp.cleanup();
});

/** A home with the guide-style provider `keyed` in plugins/ (key checked with getEnv). */
function makeHome(name: string): string {
  const home = path.join(tmp.dir, name);
  const body = `
  isAvailable() { return Boolean(getEnv(${JSON.stringify(KEY)})); }
  initialize(sessionId, ctx) { this.keySeen = getEnv(${JSON.stringify(KEY)}); }
  getConfigSchema() { return [{ key: "api_key", secret: true, required: true, envVar: ${JSON.stringify(KEY)} }]; }`;
  // Methods in `body` come later in the class, so they replace the fixture's defaults.
  const source = `import { getEnv } from ${JSON.stringify(SECRETS_URL)};\n${providerSource("keyed", { body })}`;
  writeFiles(path.join(home, "plugins", "keyed"), { "plugin.yaml": "name: keyed\n", "index.js": source });
  writeFiles(path.join(tmp.dir, "work"), { "package.json": { name: "host" } });
  return home;
}

async function open(home: string, sessionId = "s1"): Promise<MemoryManager> {
  const manager = await openMemory({ sessionId, hermesHome: home, cwd: path.join(tmp.dir, "work"), provider: "keyed" });
  managers.push(manager);
  return manager;
}
const external = (m: MemoryManager) => m.providers.find((p) => p.name === "keyed") as (object & { keySeen?: string }) | undefined;

describe("secrets written by setup reach the provider", () => {
  it("applySetup writes the key to .env; openMemory in the same process then activates the provider, which sees the key", async () => {
    const home = makeHome("a");
    expect(external(await open(home))).toBeUndefined();
    const provider = await loadMemoryProvider("keyed", { hermesHome: home, cwd: path.join(tmp.dir, "work") });
    await applySetup(provider, { api_key: "sk-a" }, { hermesHome: home });
    expect(process.env[KEY]).toBeUndefined();
    expect(external(await open(home, "s2"))?.keySeen).toBe("sk-a");
  });

  it(".env beats process.env; two profiles opened concurrently see their own key", async () => {
    const a = makeHome("a");
    const b = makeHome("b");
    fs.writeFileSync(path.join(a, ".env"), `${KEY}=sk-a\n`);
    fs.writeFileSync(path.join(b, ".env"), `${KEY}=sk-b\n`);
    process.env[KEY] = "sk-from-process";
    const [ma, mb] = await Promise.all([open(a), open(b)]);
    expect(external(ma)?.keySeen).toBe("sk-a");
    expect(external(mb)?.keySeen).toBe("sk-b");
  });
});
