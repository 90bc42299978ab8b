import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { HermesMemoryError, configOptionName, planSetup } from "@hermes/memory-core";
import { SQLITE_CONFIG_FIELDS, loadSqliteConfig, resolveConfig } from "./config.js";
import { SqliteMemoryProvider } from "./sqlite-memory-provider.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});
function tempHome(configYaml?: string): string {
  const d = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "hermes-sqlite-config-")));
  dirs.push(d);
  if (configYaml !== undefined) fs.writeFileSync(path.join(d, "config.yaml"), configYaml);
  return d;
}
function thrown(run: () => unknown): HermesMemoryError {
  try {
    run();
  } catch (error) {
    if (HermesMemoryError.isInstance(error)) return error;
    throw error;
  }
  throw new Error("expected a throw");
}

describe("sqlite config", () => {
  it("applies the declared defaults, with the database under the home", () => {
    const home = tempHome();
    expect(resolveConfig({}, home)).toEqual({
      path: path.join(home, "memory", "sqlite.db"),
      prefetchLimit: 5,
      prefetchMaxChars: 2000,
      recencyHalfLifeDays: 90,
      flushIntervalMs: 10,
      writeBatchSize: 256,
      searchThread: true,
    });
  });

  it("reads memory.sqlite.* (strings coerced), warns about unknown keys, and ignores config.yaml when options are given", async () => {
    const home = tempHome(
      "memory:\n  sqlite:\n    prefetch_limit: '3'\n    write_batch_size: 512\n    prefetchLimit: 9\n    search_thread: 'off'\n",
    );
    const loaded = await loadSqliteConfig({}, home);
    expect(loaded.config).toMatchObject({ prefetchLimit: 3, writeBatchSize: 512, searchThread: false });
    expect(loaded.warnings.join("\n")).toContain("prefetchLimit (did you mean prefetch_limit?)");
    expect((await loadSqliteConfig({ flushIntervalMs: 1 }, home)).config).toMatchObject({
      prefetchLimit: 5,
      writeBatchSize: 256,
      flushIntervalMs: 1,
    });
  });

  it("rejects bad values with INVALID_CONFIG naming key, value, origin and fix", async () => {
    const home = tempHome("memory:\n  sqlite:\n    write_batch_size: lots\n");
    const error = await loadSqliteConfig({}, home).catch((e: unknown) => e);
    expect(HermesMemoryError.hasCode(error, "INVALID_CONFIG")).toBe(true);
    expect((error as Error).message).toContain(
      `memory.sqlite.write_batch_size must be an integer (got "lots" from memory.sqlite.write_batch_size in ${path.join(home, "config.yaml")})`,
    );
    expect(thrown(() => resolveConfig({ prefetchLimit: 51 }, home)).message).toContain(
      "memory.sqlite.prefetch_limit must be between 1 and 50 (got 51 from the option `prefetchLimit`)",
    );
    expect(thrown(() => resolveConfig({ recencyHalfLifeDays: -1 }, home)).message).toContain(
      "recency_half_life_days must be between 0 and 1000000",
    );
    expect(thrown(() => resolveConfig({ flushIntervalMs: 60_001 }, home)).code).toBe("INVALID_CONFIG");
  });

  it("the provider logs unknown memory.sqlite keys as a warning and still opens", async () => {
    const home = tempHome("memory:\n  sqlite:\n    prefetch_limt: 3\n");
    const warnings: string[] = [];
    const logger = { debug() {}, info() {}, error() {}, warn: (message: string) => warnings.push(message) };
    const provider = new SqliteMemoryProvider({ logger });
    await provider.initialize("s", { hermesHome: home });
    await provider.shutdown();
    expect(warnings.join("\n")).toContain("prefetch_limt");
  });

  it("setup asks the same fields without the advanced ones", () => {
    const asked = planSetup(new SqliteMemoryProvider()).fields.map((f) => [f.key, f.effectiveDefault]);
    expect(asked).toEqual(SQLITE_CONFIG_FIELDS.filter((f) => !("advanced" in f && f.advanced)).map((f) => [f.key, f.default]));
  });

  it("every numeric setting declares a range, is refused outside it naming the key, the range and the value, and the README states the range", () => {
    const readme = fs.readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "README.md"), "utf8");
    const rows = new Map([...readme.matchAll(/^\| `([a-z_]+)` \| [^|]* \| ([^|]*) \|/gm)].map((m) => [m[1]!, m[2]!.replace(/,/g, "")]));
    const home = tempHome();
    const numeric = SQLITE_CONFIG_FIELDS.filter((f) => "type" in f && (f.type === "integer" || f.type === "number"));
    expect(numeric.length).toBeGreaterThan(3);
    for (const field of numeric) {
      const { minimum: min, maximum: max } = field as { minimum?: number; maximum?: number };
      expect([field.key, typeof min, typeof max]).toEqual([field.key, "number", "number"]);
      expect([field.key, rows.get(field.key)]).toEqual([field.key, expect.stringMatching(new RegExp(`\\b${min}(–| to )${max}\\b`))]);
      for (const value of [min! - 1, max! + 1]) {
        expect(thrown(() => resolveConfig({ [configOptionName(field.key)]: value }, home)).message).toContain(
          `memory.sqlite.${field.key} must be between ${min} and ${max} (got ${value}`,
        );
      }
    }
  });

  it("the README's config table lists every field with its declared default", () => {
    const readme = fs.readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "README.md"), "utf8");
    const rows = new Map([...readme.matchAll(/^\| `([a-z_]+)` \| `([^`]*)` \|/gm)].map((m) => [m[1]!, m[2]!]));
    for (const field of SQLITE_CONFIG_FIELDS) expect([field.key, rows.get(field.key)]).toEqual([field.key, String(field.default)]);
  });
});
