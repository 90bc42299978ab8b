/**
 * @hermes/memory-sqlite — the local SQLite (better-sqlite3, FTS5) memory provider `sqlite`.
 * Hosts load it through discovery (`hermesMemoryProvider` in package.json) and `register(ctx)`.
 */
import type { MemoryProvider } from "@hermes/memory-core";
import { SqliteMemoryProvider } from "./sqlite-memory-provider.js";

export { SqliteMemoryProvider, formatRecall, messageText, type SqliteMemoryProviderOptions } from "./sqlite-memory-provider.js";
export { CONFIG_SCHEMA, DEFAULT_DB_PATH, type SqliteProviderOptions, type ResolvedSqliteConfig } from "./config.js";
export { SCHEMA_VERSION } from "./database.js";
export { TOOL_NAMES, TOOL_SCHEMAS } from "./tools.js";
export type { ExportRecord, DoctorReport, StoredItem } from "./memory-store.js";

/** What the loader hands to `register`. Only `registerMemoryProvider` is used. */
export interface RegisterContext {
  registerMemoryProvider(provider: MemoryProvider): void;
  registerSkill?(name: string, path: string, description?: string): void;
  providerName?: string;
  hermesHome?: string;
  [key: string]: unknown;
}

/**
 * Entry point called by the loader: registers one `SqliteMemoryProvider` that reads its settings
 * from `memory.sqlite.*` in config.yaml at `initialize`. Opens nothing by itself.
 */
export function register(ctx: RegisterContext): void {
  ctx.registerMemoryProvider(new SqliteMemoryProvider());
}
