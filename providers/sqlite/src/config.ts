import path from "node:path";
import {
  configFilePath,
  expandHome,
  readConfig,
  resolveProviderConfig,
  type ConfigField,
  type ProviderConfigOf,
} from "@hermes/memory-core";
import { applyRenamedSettings, PREFETCH_CONFIG_FIELDS, type RenamedSetting } from "@hermes/memory-provider-kit";

/** Default database location, relative to `$HERMES_HOME`. */
export const DEFAULT_DB_PATH = "$HERMES_HOME/memory/sqlite.db";

/**
 * Every `memory.sqlite.*` setting, declared once: the setup form (`getConfigSchema()`) and the
 * runtime config (`resolveConfig`/`loadSqliteConfig`) both come from this list, so each default,
 * bound and type exists only here. `advanced` fields are not asked by setup but are read,
 * defaulted and validated at runtime. No secrets.
 */
export const SQLITE_CONFIG_FIELDS = [
  { key: "path", description: "SQLite database file", default: DEFAULT_DB_PATH, type: "text" },
  ...PREFETCH_CONFIG_FIELDS,
  {
    key: "recency_half_life_days",
    description: "Half-life of the recency boost in days (0 = off)",
    default: 90,
    type: "number",
    minimum: 0,
    maximum: 1_000_000,
  },
  {
    key: "flush_interval_ms",
    description: "Longest time a queued turn waits before it is written (ms)",
    default: 10,
    type: "number",
    minimum: 0,
    maximum: 60_000,
    advanced: true,
  },
  {
    key: "write_batch_size",
    description: "Queued items that trigger an immediate write; largest transaction",
    default: 256,
    type: "integer",
    minimum: 1,
    maximum: 100_000,
    advanced: true,
  },
  {
    key: "search_thread",
    description: "Read part of a large store's searches on a second thread (stores of 200,000 items or more)",
    default: true,
    type: "boolean",
    advanced: true,
  },
] as const satisfies readonly ConfigField[];

/**
 * Keys read under their current name: `batch_size` is `write_batch_size` (the vector provider's
 * name for the same idea). An old key is read with a warning; both at once are refused.
 */
export const RENAMED_SQLITE_SETTINGS: readonly RenamedSetting[] = [{ from: "batch_size", to: "write_batch_size" }];

/** The setup form: `SQLITE_CONFIG_FIELDS` as plain `ConfigField`s (advanced ones flagged). */
export const CONFIG_SCHEMA: ConfigField[] = SQLITE_CONFIG_FIELDS.map((f) => ({ ...f }));

/** Fully resolved settings (`path` already expanded and absolute). */
export type ResolvedSqliteConfig = ProviderConfigOf<typeof SQLITE_CONFIG_FIELDS>;

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
  writeBatchSize?: number;
  /** Read part of a large store's searches on a second thread (default true; see `LayeredRanker`'s pool helper). */
  searchThread?: boolean;
}

/** True when any option was given explicitly (then config.yaml is not read). */
export function hasExplicitOptions(options: SqliteProviderOptions): boolean {
  return Object.values(options).some((v) => v !== undefined);
}

/** Expand `$HERMES_HOME`, `${HERMES_HOME}` and `~`, and resolve relative paths against the home. */
export function resolveDbPath(configured: string | undefined, hermesHome: string): string {
  const raw = (configured ?? DEFAULT_DB_PATH).replace(/\$\{HERMES_HOME\}|\$HERMES_HOME/g, hermesHome);
  const expanded = expandHome(raw);
  return path.resolve(hermesHome, expanded);
}

function withDbPath(config: ResolvedSqliteConfig, hermesHome: string): ResolvedSqliteConfig {
  return { ...config, path: resolveDbPath(config.path, hermesHome) };
}

/**
 * Validate and complete settings from explicit options and a `memory.sqlite` section (both
 * optional). Throws `INVALID_CONFIG` naming the bad key, its value, where it came from and the fix.
 */
export function resolveConfig(
  options: SqliteProviderOptions,
  hermesHome: string,
  section: Record<string, unknown> = {},
  providerName = "sqlite",
): ResolvedSqliteConfig {
  const { config } = resolveProviderConfig(SQLITE_CONFIG_FIELDS, {
    provider: providerName,
    options: currentOptions(options, providerName),
    section: applyRenamedSettings(section, RENAMED_SQLITE_SETTINGS, { where: `memory.${providerName}`, keys: "snake" }),
    env: {},
  });
  return withDbPath(config, hermesHome);
}

/** `options` with renamed option names read as their current ones (`batchSize` → `writeBatchSize`). */
function currentOptions(options: SqliteProviderOptions, providerName: string, warn?: (message: string) => void): SqliteProviderOptions {
  return applyRenamedSettings(options, RENAMED_SQLITE_SETTINGS, { where: `the ${providerName} provider's options`, keys: "camel", warn });
}

/**
 * The settings for a profile: explicit options when any is given (config.yaml is then not read,
 * so tests and embedders stay hermetic), else `memory.<providerName>` of `$HERMES_HOME/config.yaml`
 * through core's `readConfig`, then the declared defaults. `warnings` lists ignored unknown keys
 * and old key names read as their current ones (`RENAMED_SQLITE_SETTINGS`).
 */
export async function loadSqliteConfig(
  options: SqliteProviderOptions,
  hermesHome: string,
  providerName = "sqlite",
): Promise<{ config: ResolvedSqliteConfig; warnings: string[] }> {
  const renamed: string[] = [];
  if (hasExplicitOptions(options)) {
    const current = currentOptions(options, providerName, (warning) => renamed.push(warning));
    return { config: resolveConfig(current, hermesHome, {}, providerName), warnings: renamed };
  }
  const configPath = configFilePath(hermesHome);
  const read = (await readConfig(hermesHome)).memory.providerConfig(providerName);
  const section = applyRenamedSettings(read, RENAMED_SQLITE_SETTINGS, {
    where: `memory.${providerName} in ${configPath}`,
    keys: "snake",
    warn: (warning) => renamed.push(warning),
  });
  const { config, warnings } = resolveProviderConfig(SQLITE_CONFIG_FIELDS, {
    provider: providerName,
    hermesHome,
    section,
    configPath,
    env: {},
  });
  return { config: withDbPath(config, hermesHome), warnings: [...renamed, ...warnings] };
}
