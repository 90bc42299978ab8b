/**
 * @hermes/memory-sqlite — the local SQLite (better-sqlite3, FTS5) memory provider `sqlite`.
 * Hosts load it through discovery (`hermesMemoryProvider` in package.json) and `register(ctx)`.
 */
import type { MemoryProviderRegistrationContext } from "@hermes/memory-core";
import { SqliteMemoryProvider } from "./sqlite-memory-provider.js";

export { SqliteMemoryProvider, type SqliteMemoryProviderOptions } from "./sqlite-memory-provider.js";
export type { SqliteProviderOptions, ResolvedSqliteConfig } from "./config.js";
export type { ExportRecord, DoctorReport, StoredItem } from "./memory-store.js";

/**
 * The part of core's `MemoryProviderRegistrationContext` that `register` accepts: only
 * `registerMemoryProvider` is used, so a test or another host may pass just that (the loader
 * passes the full context).
 */
export type RegisterContext = Pick<MemoryProviderRegistrationContext, "registerMemoryProvider"> &
  Partial<Pick<MemoryProviderRegistrationContext, "registerSkill" | "providerName" | "hermesHome" | "logger">>;

/**
 * Entry point called by the loader: registers one `SqliteMemoryProvider` that reads its settings
 * from `memory.sqlite.*` in config.yaml at `initialize` and reports background failures to the
 * host's logger (`ctx.logger`). Opens nothing by itself.
 */
export function register(ctx: RegisterContext): void {
  ctx.registerMemoryProvider(new SqliteMemoryProvider(ctx.logger ? { logger: ctx.logger } : {}));
}
