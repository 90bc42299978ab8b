/**
 * Loads the packages under test through their public entry points (built `dist`). A package that is
 * not built, or lacks an export a suite needs, yields a "skipped: <reason>" instead of numbers.
 */
import type { MemoryHit, MemoryItem, MemorySearchOptions, MemoryStats } from "@hermes/memory-core";

/** The `SearchableMemory` surface the bench drives (sync or async methods). */
export interface SearchableTarget {
  readonly name: string;
  initialize(sessionId: string, ctx: { hermesHome: string; [key: string]: unknown }): unknown;
  remember(item: MemoryItem): unknown;
  search(query: string, options?: MemorySearchOptions): MemoryHit[] | Promise<MemoryHit[]>;
  stats(): MemoryStats | Promise<MemoryStats>;
  flush(): unknown;
  syncTurn?(user: string, assistant: string, options: { sessionId: string }): unknown;
  shutdown?(): unknown;
}

/** The `MemoryManager` surface the bench drives. */
export interface ManagerTarget {
  addProvider(provider: unknown): unknown;
  initializeAll(sessionId: string, ctx: { hermesHome: string; [key: string]: unknown }): unknown;
  syncAll(user: string, assistant: string, options: { sessionId: string }): unknown;
  flushPending(timeoutMs?: number): unknown;
  prefetchAll(query: string, options: { sessionId: string }): string | Promise<string>;
  shutdownAll(): unknown;
}

/** A loaded module or the reason it could not be used. */
export type Loaded<T> = { ok: true; value: T } | { ok: false; reason: string };

async function importPackage(name: string): Promise<Loaded<Record<string, unknown>>> {
  try {
    return { ok: true, value: (await import(name)) as Record<string, unknown> };
  } catch (error) {
    const message = error instanceof Error ? error.message.split("\n")[0] : String(error);
    return { ok: false, reason: `${name} could not be imported (${message}); build it with \`pnpm --filter ${name} build\`` };
  }
}

function requireExports(pkg: string, mod: Record<string, unknown>, names: string[]): string | null {
  const missing = names.filter((n) => typeof mod[n] !== "function");
  return missing.length === 0 ? null : `${pkg} does not export ${missing.join(", ")} yet`;
}

/** Core exports used by the sync, prefetch and discovery suites. */
export interface CoreModule {
  MemoryManager: new (options: { hermesHome: string; [key: string]: unknown }) => ManagerTarget;
  discoverMemoryProviders?: (options: { packageRoots?: string[]; hermesHome?: string; cwd?: string; [key: string]: unknown }) => unknown;
}

/** Provider-kit exports the prefetch suite uses. */
export interface ProviderKitModule {
  /** The safe FTS5 query builder both reference providers use. */
  buildFtsQuery: (text: string) => string | null;
}

/** Loads `@hermes/memory-provider-kit/sqlite` (the FTS5 query builder the providers share). */
export async function loadProviderKit(): Promise<Loaded<ProviderKitModule>> {
  const mod = await importPackage("@hermes/memory-provider-kit/sqlite");
  if (!mod.ok) return mod;
  const missing = requireExports("@hermes/memory-provider-kit/sqlite", mod.value, ["buildFtsQuery"]);
  return missing ? { ok: false, reason: missing } : { ok: true, value: mod.value as unknown as ProviderKitModule };
}

/** Loads `@hermes/memory-core` and checks that the named exports exist. */
export async function loadCore(needed: Array<keyof CoreModule>): Promise<Loaded<CoreModule>> {
  const mod = await importPackage("@hermes/memory-core");
  if (!mod.ok) return mod;
  const missing = requireExports("@hermes/memory-core", mod.value, needed as string[]);
  return missing ? { ok: false, reason: missing } : { ok: true, value: mod.value as unknown as CoreModule };
}

/** The sqlite provider's constructor. */
export type SqliteProviderClass = new (options: { path?: string; [key: string]: unknown }) => SearchableTarget;

/** Loads `SqliteMemoryProvider` from `@hermes/memory-sqlite`. */
export async function loadSqliteProvider(): Promise<Loaded<SqliteProviderClass>> {
  const mod = await loadSqliteModule();
  return mod.ok ? { ok: true, value: mod.value.SqliteMemoryProvider } : mod;
}

/** The parts of `@hermes/memory-sqlite` the bench uses. */
export interface SqliteModule {
  SqliteMemoryProvider: SqliteProviderClass;
  SCHEMA_VERSION?: number;
}

/** Loads `@hermes/memory-sqlite`. */
export async function loadSqliteModule(): Promise<Loaded<SqliteModule>> {
  const mod = await importPackage("@hermes/memory-sqlite");
  if (!mod.ok) return mod;
  const missing = requireExports("@hermes/memory-sqlite", mod.value, ["SqliteMemoryProvider"]);
  return missing ? { ok: false, reason: missing } : { ok: true, value: mod.value as unknown as SqliteModule };
}

/** Everything of `@hermes/memory-vector` the bench may use; each export is checked where it is used. */
export type VectorModule = Record<string, unknown>;

/** Loads `@hermes/memory-vector` and checks the named exports. */
export async function loadVector(needed: string[]): Promise<Loaded<VectorModule>> {
  const mod = await importPackage("@hermes/memory-vector");
  if (!mod.ok) return mod;
  const missing = requireExports("@hermes/memory-vector", mod.value, needed);
  return missing ? { ok: false, reason: missing } : mod;
}

/**
 * Loads `@hermes/memory-vector/internal` (the parts the bench drives directly, e.g. `LocalVectorStore`;
 * not the package's public API) and checks the named exports.
 */
export async function loadVectorInternal(needed: string[]): Promise<Loaded<VectorModule>> {
  const mod = await importPackage("@hermes/memory-vector/internal");
  if (!mod.ok) return mod;
  const missing = requireExports("@hermes/memory-vector/internal", mod.value, needed);
  return missing ? { ok: false, reason: missing } : mod;
}

/** Resolves a value that may or may not be a promise (provider hooks may be sync or async). */
export async function settle<T>(value: T | Promise<T>): Promise<T> {
  return await value;
}
