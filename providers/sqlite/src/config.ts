import path from "node:path";
import { HermesMemoryError, expandHome, readConfig, type ConfigField } from "@hermes/memory-core";

/** Constructor options of `SqliteMemoryProvider` (camelCase twins of the `memory.sqlite.*` keys). */
export interface SqliteProviderOptions {
  /** Database file. `$HERMES_HOME`/`${HERMES_HOME}` and `~` expand; relative paths are under the home. */
  path?: string;
  /** Hits injected by `prefetch` (default 5). */
  prefetchLimit?: number;
  /** Size cap of the `prefetch` block in characters (default 2000). */
  prefetchMaxChars?: number;
  /** Half-life of the recency boost in days (default 90; 0 disables it). */
  recencyHalfLifeDays?: number;
  /** Longest time a queued turn waits before it is written (default 10 ms). */
  flushIntervalMs?: number;
  /** Queued items that trigger an immediate write, and the largest transaction (default 256). */
  batchSize?: number;
}

/** Fully resolved settings. */
export interface ResolvedSqliteConfig {
  path: string;
  prefetchLimit: number;
  prefetchMaxChars: number;
  recencyHalfLifeDays: number;
  flushIntervalMs: number;
  batchSize: number;
}

/** Default database location, relative to `$HERMES_HOME`. */
export const DEFAULT_DB_PATH = "$HERMES_HOME/memory/sqlite.db";

export const DEFAULTS = {
  prefetchLimit: 5,
  prefetchMaxChars: 2000,
  recencyHalfLifeDays: 90,
  flushIntervalMs: 10,
  batchSize: 256,
} as const;

/** The setup form: no secrets, every field optional. */
export const CONFIG_SCHEMA: ConfigField[] = [
  { key: "path", description: "SQLite database file", default: DEFAULT_DB_PATH, type: "text" },
  { key: "prefetch_limit", description: "Memories recalled before each turn", default: DEFAULTS.prefetchLimit, type: "integer", minimum: 1, maximum: 50 },
  { key: "prefetch_max_chars", description: "Character budget of the recalled block", default: DEFAULTS.prefetchMaxChars, type: "integer", minimum: 200, maximum: 100000 },
  { key: "recency_half_life_days", description: "Half-life of the recency boost in days (0 = off)", default: DEFAULTS.recencyHalfLifeDays, type: "number", minimum: 0 },
];

/** True when any option was given explicitly (then config.yaml is not read). */
export function hasExplicitOptions(options: SqliteProviderOptions): boolean {
  return Object.values(options).some((v) => v !== undefined);
}

/** Map snake_case `memory.sqlite.*` values to options; unknown keys are ignored. */
export function optionsFromConfigValues(values: Record<string, unknown>): SqliteProviderOptions {
  const out: SqliteProviderOptions = {};
  const str = (v: unknown) => (typeof v === "string" && v.trim() !== "" ? v.trim() : undefined);
  const num = (v: unknown) => {
    const n = typeof v === "number" ? v : typeof v === "string" && v.trim() !== "" ? Number(v) : NaN;
    return Number.isFinite(n) ? n : undefined;
  };
  const p = str(values.path);
  if (p !== undefined) out.path = p;
  const pairs: Array<[keyof SqliteProviderOptions, string]> = [
    ["prefetchLimit", "prefetch_limit"],
    ["prefetchMaxChars", "prefetch_max_chars"],
    ["recencyHalfLifeDays", "recency_half_life_days"],
    ["flushIntervalMs", "flush_interval_ms"],
    ["batchSize", "batch_size"],
  ];
  for (const [key, snake] of pairs) {
    const v = num(values[snake] ?? values[key]);
    if (v !== undefined) (out as Record<string, unknown>)[key] = v;
  }
  return out;
}

/**
 * Read `memory.sqlite.*` from `$HERMES_HOME/config.yaml` through core's `readConfig` (the only
 * config.yaml reader). Returns `{}` when the file or the section is absent.
 */
export async function readProviderConfigValues(hermesHome: string, providerName = "sqlite"): Promise<Record<string, unknown>> {
  const config = await readConfig(hermesHome);
  return config.memory.providerConfig(providerName);
}

/** Expand `$HERMES_HOME`, `${HERMES_HOME}` and `~`, and resolve relative paths against the home. */
export function resolveDbPath(configured: string | undefined, hermesHome: string): string {
  const raw = (configured ?? DEFAULT_DB_PATH).replace(/\$\{HERMES_HOME\}|\$HERMES_HOME/g, hermesHome);
  const expanded = expandHome(raw);
  return path.resolve(hermesHome, expanded);
}

/** Validate and complete options. Throws `INVALID_CONFIG` naming the bad key. */
export function resolveConfig(options: SqliteProviderOptions, hermesHome: string): ResolvedSqliteConfig {
  const int = (key: string, value: number | undefined, fallback: number, min: number, max: number) => {
    if (value === undefined) return fallback;
    if (!Number.isFinite(value) || value < min || value > max) {
      throw new HermesMemoryError({
        code: "INVALID_CONFIG",
        message: `memory.sqlite.${key} must be a number from ${min} to ${max} (got ${String(value)}). Fix it in config.yaml or remove it to use the default ${fallback}.`,
      });
    }
    return value;
  };
  return {
    path: resolveDbPath(options.path, hermesHome),
    prefetchLimit: Math.floor(int("prefetch_limit", options.prefetchLimit, DEFAULTS.prefetchLimit, 1, 50)),
    prefetchMaxChars: Math.floor(int("prefetch_max_chars", options.prefetchMaxChars, DEFAULTS.prefetchMaxChars, 50, 1_000_000)),
    recencyHalfLifeDays: int("recency_half_life_days", options.recencyHalfLifeDays, DEFAULTS.recencyHalfLifeDays, 0, 1e6),
    flushIntervalMs: int("flush_interval_ms", options.flushIntervalMs, DEFAULTS.flushIntervalMs, 0, 60_000),
    batchSize: Math.floor(int("batch_size", options.batchSize, DEFAULTS.batchSize, 1, 100_000)),
  };
}
