import fs from "node:fs";
import path from "node:path";
import {
  HermesMemoryError,
  MemoryProvider,
  allowsAutomaticWrites,
  describeError,
  getHermesHome,
  silentLogger,
  type ChatMessage,
  type ConfigField,
  type ForgetScope,
  type InitContext,
  type Logger,
  type MemoryHit,
  type MemoryItem,
  type MemoryKind,
  type MemorySearchOptions,
  type MemoryStats,
  type MemoryUpdate,
  type SearchCapabilities,
  type MemoryWriteAction,
  type MemoryWriteMetadata,
  type MemoryWriteTarget,
  type PrefetchOptions,
  type PreCompressOptions,
  type RecallStatus,
  type SearchableMemory,
  type SessionSwitchOptions,
  type SyncTurnOptions,
  type ToolCallOptions,
  type ToolSchema,
} from "@hermes/memory-core";
import { CONFIG_SCHEMA, loadSqliteConfig, resolveDbPath, type ResolvedSqliteConfig, type SqliteProviderOptions } from "./config.js";
import {
  closeDatabase,
  isBusyError,
  isUnwritableError,
  loadDriver,
  driverLoadError,
  openDatabaseAsync,
  storageError,
  type Db,
} from "./database.js";
import { MemoryStore, type NewItem, type StoredItem } from "./memory-store.js";
import { factDigest } from "./item-digest.js";
import { runTool, TOOL_NAMES, TOOL_SCHEMAS } from "./tools.js";
import {
  BatchingWriter,
  checkpointItems,
  formatRecall as formatRecallBlock,
  mirroredWrite,
  NATIVE_MODULE_MISSING,
  parseForgetScope,
  parseMemoryFilter,
  parseMemoryItem,
  parseMemoryUpdate,
  parseSearchLimit,
  PrefetchCache,
  switchSessionAfterFlush,
  ToolUserScope,
  turnItem,
} from "@hermes/memory-provider-kit";

// Work units (about three per stored turn) from which opening the database logs that it is migrating.
const LARGE_MIGRATION = 300_000;

/** Options of the provider class: the config values plus host plumbing. */
export interface SqliteMemoryProviderOptions extends SqliteProviderOptions {
  /** Where background failures are reported (default: silent). */
  logger?: Logger;
}

/** Expired items are purged in the background at most this often (and once after opening). */
const PURGE_INTERVAL_MS = 5 * 60_000;
/**
 * Expired items one background purge deletes at most: one short transaction (a deleted turn also
 * refreshes the context of the turns after it, about 1 ms each at 100,000 items), so a write tick
 * never stalls turns for long. When more are left, the next tick purges again.
 */
const BACKGROUND_PURGE_ITEMS = 64;
/**
 * How long a queued batch written in the background (or by `flush()`) waits on the thread for
 * another process's write lock before it is left for a timer to retry (ms).
 */
const RETRIED_WRITE_BUSY_MS = 25;

/** How long `flush()` keeps retrying a busy database before giving up. */
const FLUSH_BUSY_DEADLINE_MS = 60_000;

const SYSTEM_PROMPT_BLOCK = [
  "## SQLite Memory",
  "Past conversation turns, saved facts and compression checkpoints are kept in a local long-term memory. " +
    `Use ${TOOL_NAMES.search} to look something up, ${TOOL_NAMES.remember} to save a durable fact, ` +
    `${TOOL_NAMES.list} to browse recent items and ${TOOL_NAMES.forget} to delete one by id.`,
].join("\n");

/**
 * The `sqlite` memory provider: one SQLite database per profile (better-sqlite3, WAL, FTS5/BM25).
 * `syncTurn` only queues (`enqueue`); a timer writes the queue in one transaction per tick
 * (`writeQueuedBatch`, which calls `MemoryStore.insertMany`). Also implements
 * `SearchableMemory` for the CLI, the contract kit and the benchmarks.
 */
export class SqliteMemoryProvider extends MemoryProvider implements SearchableMemory {
  readonly name = "sqlite";
  override readonly preCompressCheckpointApiVersion = 2 as const;

  private readonly options: SqliteProviderOptions;
  private readonly logger: Logger;
  private config: ResolvedSqliteConfig | undefined;
  private store: MemoryStore | undefined;
  /** Set by an inspection that found no database file: nothing is stored there yet. */
  private nothingStoredAt: string | undefined;
  private hermesHome: string | undefined;
  private sessionId = "";
  private ctx: InitContext | undefined;
  private readonly writer = new BatchingWriter<NewItem>({
    write: (batch, { retried }) => this.writeQueuedBatch(batch, retried),
    canWrite: () => this.store !== undefined,
    batchSize: () => this.config?.writeBatchSize ?? 256,
    flushIntervalMs: () => this.config?.flushIntervalMs ?? 10,
    // At most the kit's DEFAULT_MAX_QUEUE items wait while the database refuses writes (the vector
    // provider keeps the same bound); older ones are dropped and logged.
    isTransient: isBusyError,
    flushDeadlineMs: FLUSH_BUSY_DEADLINE_MS,
    onBackgroundError: (event) => {
      if (event.kind === "dropped") this.logger.error(`sqlite memory: the database refuses writes; dropped ${event.count} queued turns`);
      else this.logger.error("sqlite memory: writing queued turns failed; will retry", event.error);
    },
    // The items stay queued (retried in the background and by the next flush()).
    flushError: (queued, cause) =>
      storageError(
        `sqlite memory could not write ${queued} queued item(s)`,
        cause,
        "check free disk space and write permission on the database directory",
      ),
  });
  private readonly prefetchCache = new PrefetchCache<MemoryHit[]>();
  private lastRecallCount = 0;
  /** When expired items were last purged in the background (0: not since opening). */
  private lastPurge = 0;
  private closed = false;
  /** Erasures running in steps: `shutdown` waits for them before closing the database. */
  private readonly erasures = new Set<Promise<number>>();
  /** Counts `open` calls and shutdowns: an open that finds it changed after waiting was overtaken. */
  private openings = 0;

  /** Construct with explicit settings, or none to read `memory.sqlite.*` from config.yaml at `initialize`. */
  constructor(options: SqliteMemoryProviderOptions = {}) {
    super();
    const { logger, ...rest } = options;
    this.logger = logger ?? silentLogger;
    this.options = rest;
  }

  /** True when better-sqlite3 loads. Opens no database, touches no network. */
  isAvailable(): boolean {
    return loadDriver() !== undefined;
  }

  override unavailableReason(): string {
    if (this.isAvailable()) return "";
    const error = driverLoadError();
    // A native addon that was never built: its message already names the commands that build it.
    if (HermesMemoryError.hasCode(error, NATIVE_MODULE_MISSING)) return error.message;
    return `better-sqlite3 failed to load (${describeError(error)}); reinstall @hermes/memory-sqlite so its native addon is built`;
  }

  /**
   * Open (creating and migrating) the database. Throws `SCHEMA_TOO_NEW` for a database written by a
   * newer version (left untouched), `INVALID_CONFIG` for bad settings, `STORAGE_FAILED` when the
   * file can be neither written nor read. When only reading works, opens read-only and logs why.
   */
  async initialize(sessionId: string, ctx: InitContext): Promise<void> {
    await this.open(sessionId, ctx, false);
  }

  /**
   * Open the existing database read-only (no file is created, no schema is changed). Without a
   * database file there is nothing stored yet: `stats()` then reports no items at the path the
   * database will have.
   */
  override async initializeForInspection(sessionId: string, ctx: InitContext): Promise<void> {
    await this.open(sessionId, ctx, true);
  }

  private async open(sessionId: string, ctx: InitContext, inspection: boolean): Promise<void> {
    this.closeStore();
    this.closed = false;
    const opening = ++this.openings;
    this.sessionId = sessionId;
    this.ctx = ctx;
    this.hermesHome = ctx.hermesHome;
    const { config, warnings } = await loadSqliteConfig(this.options, ctx.hermesHome, this.name);
    for (const warning of warnings) this.logger.warn(warning);
    this.config = config;
    let db: Db;
    /** Why the writable open failed, when the database was opened read-only instead. */
    let writeFailure: unknown;
    if (inspection) {
      if (!fs.existsSync(config.path)) {
        this.nothingStoredAt = config.path;
        return;
      }
      db = await openDatabaseAsync(config.path, { readonly: true });
    } else {
      try {
        db = await openDatabaseAsync(config.path, {
          onMigrationProgress: (done, total) => {
            if (done === 0 && total >= LARGE_MIGRATION) {
              this.logger.info(
                `sqlite memory: migrating ${config.path} to the current schema (about a minute per million items; \`hermes-memory sqlite migrate\` does it ahead of time)`,
              );
            }
          },
        });
      } catch (error) {
        // Only a file or directory this process cannot write (permissions, a read-only mount) is
        // opened read-only: serve recall from what is there; writes will fail loudly. Anything
        // else is the report: a file another process kept locked (the open already waited for
        // it), a newer schema, a damaged file. When the file cannot be read either, the first
        // failure is the report.
        if (!isUnwritableError(error) || !fs.existsSync(config.path)) throw error;
        writeFailure = error;
        try {
          db = await openDatabaseAsync(config.path, { readonly: true });
        } catch {
          throw error;
        }
        this.logger.warn(`sqlite memory: ${config.path} is read-only; recall works, new memories cannot be saved`, error);
      }
    }
    if (opening !== this.openings) {
      // Shut down (or opened again) while this open waited for another process's lock: the
      // connection belongs to no one, so it is closed rather than left open behind the provider.
      closeDatabase(db);
      return;
    }
    try {
      this.store = new MemoryStore(db, config.path, {
        recencyHalfLifeDays: config.recencyHalfLifeDays,
        ...(config.searchThread ? {} : { ranker: { helper: false } }),
      });
    } catch (error) {
      // Preparing the statements reads the schema: a damaged file is reported, never used or wiped.
      try {
        closeDatabase(db);
      } catch {
        // The connection is unusable anyway.
      }
      if (writeFailure !== undefined) throw writeFailure;
      if (HermesMemoryError.isInstance(error)) throw error;
      throw storageError(
        `cannot open the SQLite memory database at ${config.path}`,
        error,
        "the file is damaged: run `hermes-memory sqlite doctor`, restore it from a backup, or move it away to start fresh (it was not modified)",
      );
    }
    this.lastPurge = 0;
    // Expired items are purged soon after opening, outside initialize (a large purge must not delay start-up).
    if (!inspection && !db.readonly) setImmediate(() => this.purgeIfDue()).unref();
    if (!inspection) this.warmRanker();
  }

  /**
   * Keep the layered ranker's row lengths in memory, 2,000 rows per step on a timer (a step takes
   * about a millisecond; a million rows take 500 steps), until every stored row's length is kept.
   * Called after opening and after each written batch (then only the new rows are read). Searches
   * meanwhile read the lengths they need. Never throws.
   */
  private warmRanker(): void {
    const store = this.store;
    if (!store) return;
    store.warmRankerInBackground(
      () => this.store === store && !this.closed,
      // Only an optimisation: searches read the lengths themselves.
      (error) => this.logger.warn("sqlite memory: reading the index's row lengths failed", error),
    );
  }

  /**
   * Purge expired items when the last background purge is older than `PURGE_INTERVAL_MS` (or left
   * items behind): one short transaction of at most `BACKGROUND_PURGE_ITEMS`, skipped when the
   * database is busy or while an erasure or purge runs in steps (its count stays exact). Expired
   * items are never returned meanwhile; purging only frees their space. Never throws.
   */
  private purgeIfDue(): void {
    const store = this.store;
    if (!store || store.db.readonly || this.closed || this.erasures.size > 0) return;
    const now = Date.now();
    if (this.lastPurge !== 0 && now - this.lastPurge < PURGE_INTERVAL_MS) return;
    this.lastPurge = now;
    try {
      store.checkFile();
      const purged = store.purgeExpired(now, 1, BACKGROUND_PURGE_ITEMS);
      if (purged > 0) this.prefetchCache.clear();
      // A full batch: more may be left; the next write tick or queued prefetch purges again.
      if (purged === BACKGROUND_PURGE_ITEMS) this.lastPurge = 0;
    } catch (error) {
      if (!isBusyError(error)) this.logger.warn("sqlite memory: purging expired items failed; will retry", error);
    }
  }

  getToolSchemas(): ToolSchema[] {
    return TOOL_SCHEMAS.map((s) => ({ ...s }));
  }

  getConfigSchema(): ConfigField[] {
    return CONFIG_SCHEMA.map((f) => ({ ...f }));
  }

  override systemPromptBlock(): string {
    return SYSTEM_PROMPT_BLOCK;
  }

  /**
   * Runs a tool; always returns a JSON string (errors as `{"error": ...}`). The model speaks for
   * the session's user (the host's `userId`): every tool acts within that user's items, and
   * without one (a single-user profile) on every item.
   */
  override handleToolCall(toolName: string, args: Record<string, unknown>, _options: ToolCallOptions = {}): string {
    const store = this.store;
    const scope = new ToolUserScope(this.ctx?.userId);
    if (!store) return runTool(toolName, args, undefined, scope);
    store.checkFile();
    return runTool(
      toolName,
      args,
      {
        search: (query, o) => this.search(query, o),
        rememberFact: (content, tags) => this.remember({ content, kind: "fact", tags, ...this.identity() }),
        forget: (item) => this.forgetNamed(item),
        list: (o) => {
          this.drainQueueSafely();
          return readFailure("list the items", () => store.list(o));
        },
      },
      scope,
    );
  }

  // ---- recall ---------------------------------------------------------------------------------

  /**
   * The top matches for `query` as a block within `prefetch_max_chars`, served from the
   * `queuePrefetch` cache when it holds this query. `""` when nothing matches. Never throws.
   */
  override prefetch(query: string, options: PrefetchOptions = { sessionId: "" }): string {
    this.lastRecallCount = 0;
    if (!this.store || !this.config || typeof query !== "string" || query.trim() === "") return "";
    try {
      const now = Date.now();
      // A cached recall may hold an item that has expired since it was computed.
      let hits = this.prefetchCache
        .get(options.sessionId, query)
        ?.filter((h) => h.expiresAt === undefined || Date.parse(h.expiresAt) > now);
      if (!hits) hits = this.recall(query, options.sessionId);
      this.lastRecallCount = hits.length;
      return formatRecall(hits, this.config.prefetchMaxChars);
    } catch (error) {
      this.logger.warn("sqlite memory: prefetch failed", error);
      return "";
    }
  }

  /** Compute the next turn's recall in the background and cache it by session and query text. */
  override queuePrefetch(query: string, options: PrefetchOptions = { sessionId: "" }): void {
    if (!this.store || typeof query !== "string" || query.trim() === "") return;
    setImmediate(() => {
      try {
        if (!this.store) return;
        const hits = this.recall(query, options.sessionId);
        this.prefetchCache.set(options.sessionId, query, hits);
        this.purgeIfDue();
      } catch (error) {
        this.logger.warn("sqlite memory: queued prefetch failed", error);
      }
    }).unref();
  }

  override recallStatus(): RecallStatus | null {
    return this.lastRecallCount > 0 ? { providerLabel: "SQLite memory", count: this.lastRecallCount } : null;
  }

  /**
   * Recall for a session: only the items of the session's user, which is the host's `userId`, or
   * else the user of the session's stored items (several users may share one provider).
   */
  private recall(query: string, sessionId: string | undefined): MemoryHit[] {
    this.store!.checkFile();
    this.drainQueueSafely();
    const session = sessionId || this.sessionId;
    const userId = this.ctx?.userId || (session ? this.store!.sessionUser(session) : undefined);
    return this.store!.search(query, { limit: this.config!.prefetchLimit, ...(userId ? { userId } : {}) });
  }

  // ---- writes ---------------------------------------------------------------------------------

  /** Queue the completed turn and return; skipped for `cron` and `subagent` agents. */
  override syncTurn(userContent: string, assistantContent: string, options: SyncTurnOptions = { sessionId: "" }): void {
    if (!this.store || this.closed || !allowsAutomaticWrites(this.ctx)) return;
    const turn = turnItem(userContent, assistantContent, options, { sessionId: this.sessionId, userId: this.ctx?.userId });
    if (turn) this.enqueue(turn);
  }

  private enqueue(item: NewItem): void {
    item.createdAt ??= Date.now();
    this.writer.push(item);
  }

  /**
   * The batching writer's write: store one batch of queued items in one transaction
   * (`MemoryStore.insertMany`), then purge expired items when due and warm the ranker. `retried`:
   * the writer runs it on a timer or in `flush()`, and retries it when it fails as busy.
   */
  private writeQueuedBatch(batch: readonly NewItem[], retried: boolean): void {
    const store = this.store!;
    store.checkFile();
    const write = () => {
      store.insertMany(batch);
      this.purgeIfDue();
      this.warmRanker();
    };
    // A batch the writer retries on a timer does not wait on the thread for another process's
    // lock (the agent's turn would stand still): it fails fast as busy and is tried again.
    if (retried) store.withBusyTimeout(RETRIED_WRITE_BUSY_MS, write);
    else write();
  }

  /** Write everything queued, one transaction per `batchSize` items. Throws on failure (queue kept). */
  private drainQueue(): void {
    this.writer.drain();
  }

  private drainQueueSafely(): void {
    this.writer.drainQuietly((error) => {
      if (!isBusyError(error)) this.logger.warn("sqlite memory: could not write queued turns before reading", error);
    });
  }

  /**
   * Wait until every queued item is stored and searchable. Retries a busy database (other
   * processes writing) for up to a minute; throws `STORAGE_FAILED` on any other failure.
   */
  async flush(): Promise<void> {
    await this.writer.flush();
  }

  /**
   * Checkpoint API v2: archive the user/assistant evidence (the kit's `checkpointItems`, unique by
   * `checkpointDigest` of user, role and text, so retries, overlapping transcripts and later
   * sessions repeating a message add nothing twice) and flush queued turns, in durable
   * transactions. Returns a short note for the summary prompt. Throws on any failure.
   */
  override async onPreCompress(messages: ChatMessage[], _options: PreCompressOptions = { requireCheckpoint: false }): Promise<string> {
    const store = this.store;
    if (!store) {
      throw storageError(
        "sqlite memory checkpoint failed",
        undefined,
        "the database is not open; check the agent log for why initialize() failed",
      );
    }
    await this.flush();
    const items: NewItem[] = checkpointItems(messages, { sessionId: this.sessionId, userId: this.ctx?.userId }).map(
      ({ kind, content, sessionId, userId, speaker, metadata, digest }) => ({
        kind,
        content,
        sessionId,
        userId,
        speaker,
        metadata,
        digest,
      }),
    );
    if (items.length === 0) return "";
    let added = 0;
    try {
      const fresh = items.filter((i) => !store.hasDigest(i.digest!));
      store.insertMany(items);
      added = fresh.length;
    } catch (error) {
      throw storageError("sqlite memory checkpoint failed", error, "check free disk space and write permission on the database directory");
    }
    return `SQLite memory archived ${items.length} message(s) before compression (${added} new); search them with ${TOOL_NAMES.search}.`;
  }

  /**
   * Mirror built-in memory writes as facts (the kit's `mirroredWrite`): `add`/`replace` store the
   * entry, `replace`/`remove` delete the fact of the earlier entry (facts are found by content).
   */
  override onMemoryWrite(action: MemoryWriteAction, target: MemoryWriteTarget, content: string, metadata: MemoryWriteMetadata = {}): void {
    if (!this.store) return;
    try {
      this.store.checkFile();
      const userId = this.ctx?.userId || undefined;
      const mirror = mirroredWrite(action, target, content, metadata, { sessionId: this.sessionId, userId });
      // A cached recall may quote the old text: it must not be served after the fact is gone.
      if (mirror.remove !== undefined && this.store.forgetDigest(factDigest(mirror.remove, userId))) this.prefetchCache.clear();
      if (mirror.store) this.remember(mirror.store);
    } catch (error) {
      this.logger.warn("sqlite memory: mirroring a built-in memory write failed", error);
    }
  }

  /**
   * Store what the old session queued, then switch to `newSessionId` and drop cached recall (the
   * kit's `switchSessionAfterFlush`). When the queued writes cannot be stored, they stay queued and
   * the switch throws `STORAGE_FAILED` after switching, so the host retries it.
   */
  override async onSessionSwitch(newSessionId: string, _options: SessionSwitchOptions): Promise<boolean> {
    return switchSessionAfterFlush(
      () => this.flush(),
      () => {
        this.sessionId = newSessionId;
        this.prefetchCache.clear();
      },
    );
  }

  override async onSessionEnd(_messages: ChatMessage[]): Promise<void> {
    await this.flush();
  }

  /** The database path when it lies outside `$HERMES_HOME`. Callable before `initialize`. */
  override backupPaths(): string[] {
    const home = path.resolve(this.hermesHome ?? getHermesHome());
    const file = this.config?.path ?? resolveDbPath(this.options.path, home);
    const rel = path.relative(home, file);
    return rel.startsWith("..") || path.isAbsolute(rel) ? [file] : [];
  }

  /**
   * Flush the queue and close the database. Idempotent. When queued items cannot be written (disk
   * full, read-only) it still closes, then throws `STORAGE_FAILED` naming how many were lost, so
   * the host's shutdown report shows it instead of a clean exit.
   */
  override async shutdown(): Promise<void> {
    if (this.closed) return;
    this.openings++;
    let failure: unknown = null;
    await Promise.allSettled([...this.erasures]);
    try {
      await this.flush();
    } catch (error) {
      failure = error;
    }
    const lost = this.writer.length;
    this.closeStore();
    this.closed = true;
    if (failure) {
      this.logger.error(`sqlite memory: ${lost} queued item(s) could not be written at shutdown`, failure);
      throw storageError(
        `sqlite memory shutdown: ${lost} queued item(s) could not be written and are lost`,
        (failure as { cause?: unknown }).cause ?? failure,
        "check free disk space and write permission on the database directory",
      );
    }
  }

  private closeStore(): void {
    this.writer.stop();
    try {
      this.store?.close();
    } catch {
      // Closing twice or after a failed open is harmless.
    }
    this.store = undefined;
    this.nothingStoredAt = undefined;
    this.prefetchCache.clear();
  }

  // ---- SearchableMemory -----------------------------------------------------------------------

  /**
   * Store one item now and return its id (queued turns are written first, so order holds). Facts
   * and checkpoints with the same content return the existing id.
   */
  remember(item: MemoryItem): string {
    const store = this.requireStore();
    const { content, kind, sessionId, userId, tags, metadata, expiresAt } = parseMemoryItem(item);
    const speaker = typeof metadata.speaker === "string" ? metadata.speaker : undefined;
    return writeFailure("store the item", () => {
      this.drainQueue();
      return store.insertMany([{ kind, content, sessionId, userId, speaker, tags, metadata, expiresAt }])[0]!;
    });
  }

  /** Score-ordered hits (ids stable); any query text is safe. */
  search(query: string, options: MemorySearchOptions = {}): MemoryHit[] {
    const store = this.requireStore();
    this.drainQueueSafely();
    const filter = parseMemoryFilter(options, { what: "search options", ignore: ["limit"] });
    const limit = parseSearchLimit(options?.limit);
    return readFailure("search", () => store.search(typeof query === "string" ? query : String(query ?? ""), { limit, filter }));
  }

  /** The item with `id`, or `null`. */
  get(id: string): MemoryHit | null {
    const store = this.requireStore();
    const item = readFailure("read the item", () => store.get(id));
    return item ? storedToHit(item) : null;
  }

  /** Delete one item; true when it existed. */
  forget(id: string): boolean {
    const store = this.requireStore();
    const removed = writeFailure("forget the item", () => store.forget(id));
    if (removed) this.prefetchCache.clear();
    return removed;
  }

  /** Erase the items a tool's scope names by id (one item and its checkpoint copies), in one transaction. */
  private forgetNamed(scope: ForgetScope): boolean {
    const store = this.requireStore();
    const parsed = parseForgetScope(scope);
    try {
      return writeFailure("erase the items", () => {
        this.drainQueue();
        return store.forgetWhere(parsed) > 0;
      });
    } finally {
      this.prefetchCache.clear();
    }
  }

  /** Filters, expiry, erasure and update are all implemented. */
  capabilities(): SearchCapabilities {
    return { filters: true, expiry: true, erasure: true, update: true };
  }

  /**
   * Erase every item in `scope` (ids and/or any filter key; at least one condition unless
   * `confirmAll`, else `INVALID_ARGUMENT`) and resolve to how many were erased. A scope without
   * ids that would erase every item of the database is refused unless `confirmAll: true`
   * (`INVALID_ARGUMENT` naming the count; nothing erased). Queued turns are written first, so they
   * are erased too. Runs in short steps with the event loop served between them
   * (`MemoryStore.forgetWhereInSteps`), each erasing whole items: the items table, the FTS index,
   * the stored context of later turns, checkpoint copies of erased turns; then the prefetch cache
   * and the cached last turns. A process killed meanwhile leaves each item erased or intact; the
   * same call erases the rest. Freed pages are zeroed; `hermes-memory sqlite forget --compact`
   * also removes the text from FTS segments and the WAL.
   */
  async forgetWhere(scope: ForgetScope): Promise<number> {
    const store = this.requireStore();
    const parsed = parseForgetScope(scope);
    return this.erasure("erase the items", () => {
      this.drainQueue();
      return store.forgetWhereInSteps(parsed);
    });
  }

  /**
   * Change a stored item and re-index it; false when no (unexpired) item has `id`. Keys left out
   * keep their value; `expiresAt: null` removes the expiry. A fact's new content may not equal
   * another fact's (facts are unique by content): that is refused with `INVALID_ARGUMENT`.
   */
  update(id: string, changes: MemoryUpdate): boolean {
    const store = this.requireStore();
    const parsed = parseMemoryUpdate(changes);
    try {
      return writeFailure("update the item", () => {
        this.drainQueue();
        return store.update(String(id), parsed);
      });
    } finally {
      this.prefetchCache.clear();
    }
  }

  /** How many items `forgetWhere(scope)` would erase now (same validation). */
  countWhere(scope: ForgetScope): number {
    const store = this.requireStore();
    const { filter } = parseForgetScope(scope);
    this.drainQueueSafely();
    return readFailure("count the items", () => store.countWhere(filter));
  }

  /** Delete every expired item now, in steps like `forgetWhere`; resolves to how many were deleted. */
  async purgeExpired(): Promise<number> {
    const store = this.requireStore();
    return this.erasure("purge expired items", () => store.purgeExpiredInSteps());
  }

  /** Run an erasure in steps (`shutdown` waits for it); SQLite's failures become `STORAGE_FAILED`. */
  private async erasure(what: string, run: () => Promise<number>): Promise<number> {
    // A step's failure and a synchronous one (writing the queue first) alike reject `running`.
    const running = (async () => run())();
    this.erasures.add(running);
    try {
      return await running;
    } catch (error) {
      return writeFailure(what, () => {
        throw error;
      });
    } finally {
      this.erasures.delete(running);
      this.prefetchCache.clear();
    }
  }

  /**
   * Counts, database path (`location`), size, plus `pending` (queued, not yet written). After an
   * inspection that found no database: no items, at the path the database will have.
   */
  stats(): MemoryStats {
    if (!this.store && this.nothingStoredAt !== undefined) {
      return {
        items: 0,
        byKind: { turn: 0, fact: 0, checkpoint: 0 },
        sessions: 0,
        location: this.nothingStoredAt,
        sizeBytes: 0,
        pending: this.writer.length,
      };
    }
    return { ...this.requireStore().stats(), pending: this.writer.length };
  }

  /** List stored items, newest first, optionally of one kind, session or user (CLI and tools). */
  list(options: { limit?: number; offset?: number; kind?: MemoryKind; sessionId?: string; userId?: string } = {}): StoredItem[] {
    this.drainQueueSafely();
    const store = this.requireStore();
    return readFailure("list the items", () => store.list(options));
  }

  /** The open store (CLI commands use it for export, import, vacuum and doctor). */
  get memoryStore(): MemoryStore | undefined {
    return this.store;
  }

  private requireStore(): MemoryStore {
    this.store?.checkFile();
    if (!this.store) {
      throw new HermesMemoryError({
        code: "PROVIDER_UNAVAILABLE",
        message:
          "The sqlite memory provider is not initialised. Call initialize(sessionId, { hermesHome }) first (or check why it failed).",
      });
    }
    return this.store;
  }

  private identity(): { sessionId?: string; userId?: string } {
    const out: { sessionId?: string; userId?: string } = {};
    if (this.sessionId) out.sessionId = this.sessionId;
    if (this.ctx?.userId) out.userId = this.ctx.userId;
    return out;
  }
}

/** Run the write `fn`; SQLite's own failures become `STORAGE_FAILED` saying to check disk space and permissions. */
function writeFailure<T>(what: string, fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (HermesMemoryError.isInstance(error)) throw error;
    throw storageError(`sqlite memory could not ${what}`, error, "check free disk space and write permission on the database directory");
  }
}

/** Run the read `fn`; SQLite's own failures become `STORAGE_FAILED` saying how to check the database. */
function readFailure<T>(what: string, fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (HermesMemoryError.isInstance(error)) throw error;
    throw storageError(`sqlite memory could not ${what}`, error, "run `hermes-memory sqlite doctor` to check the database");
  }
}

/** Render hits as the recall block, within `maxChars` (entries are shortened, never split mid-list). */
export function formatRecall(hits: readonly MemoryHit[], maxChars: number): string {
  return formatRecallBlock(hits, { header: "## Recalled from SQLite memory", maxChars });
}

function storedToHit(item: StoredItem): MemoryHit {
  const hit: MemoryHit = {
    id: item.id,
    content: item.content,
    kind: item.kind,
    score: 0,
    createdAt: item.createdAt,
    metadata: item.metadata,
  };
  if (item.sessionId !== undefined) hit.sessionId = item.sessionId;
  if (item.userId !== undefined) hit.userId = item.userId;
  if (item.tags.length > 0) hit.tags = item.tags;
  if (item.expiresAt !== undefined) hit.expiresAt = item.expiresAt;
  return hit;
}
