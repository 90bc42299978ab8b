import path from "node:path";

/** The environment variable naming the folder of providers shipped with the host. */
export const BUNDLED_DIR_ENV = "HERMES_MEMORY_BUNDLED_DIR";

/**
 * The default `bundledDir`, the one rule every host and the `hermes-memory` CLI share so they pick
 * the same provider for a name: `HERMES_MEMORY_BUNDLED_DIR` from `env` (default `process.env`),
 * resolved to an absolute path; `undefined` when unset or blank. An explicit `bundledDir` option
 * wins. Discovery applies it, so `discoverMemoryProviders`, `loadMemoryProvider`, `openMemory` and
 * the CLI all use it.
 */
export function defaultBundledDir(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const value = env[BUNDLED_DIR_ENV];
  return typeof value === "string" && value.trim() !== "" ? path.resolve(value.trim()) : undefined;
}
