import { createHash } from "node:crypto";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import {
  HermesMemoryError,
  MemoryProvider,
  allowsAutomaticWrites,
  describeError,
  silentLogger,
  type ChatMessage,
  type ConfigField,
  type ForgetScope,
  type MemoryUpdate,
  type SearchCapabilities,
  type InitContext,
  type Logger,
  type MemoryHit,
  type MemoryItem,
  type MemorySearchOptions,
  type MemoryStats,
  type MemoryWriteAction,
  type MemoryWriteMetadata,
  type MemoryWriteTarget,
  type PreCompressOptions,
  type PrefetchOptions,
  type RecallStatus,
  type SearchableMemory,
  type SessionSwitchOptions,
  type SyncTurnOptions,
  type ToolCallOptions,
  type ToolSchema,
} from "@hermes/memory-core";
import type { Embedder } from "./embedders/embedder.js";
import { HashingEmbedder } from "./embedders/hashing-embedder.js";
import { OnnxEmbedder, findOnnxModel, onnxRuntimeInstalled } from "./embedders/onnx-embedder.js";
import { OpenAIEmbedder } from "./embedders/openai-embedder.js";
import {
  notInitialisedError,
  VECTOR_DIR,
  type BackendHost,
  type CheckpointWrite,
  type StoredFact,
  type VectorBackend,
} from "./backends/backend.js";
import type { ExportedItem, ProgressCallback } from "./backends/maintenance.js";
import { RemoteBackend } from "./backends/remote-backend.js";
import { SidecarBackend } from "./backends/sidecar-backend.js";
import type { PineconeRemoteMemory } from "./pinecone/pinecone-remote-store.js";
import { nativeModuleProblem } from "./native-modules.js";
import {
  loadVectorConfig,
  loadVectorConfigSync,
  renderNamespace,
  resolveVectorConfig,
  VECTOR_CONFIG_FIELDS,
  type VectorConfig,
} from "./vector-config.js";
import { FORGET_TOOL, REMEMBER_TOOL, runVectorTool, SEARCH_TOOL, VECTOR_TOOL_SCHEMAS, type VectorToolBackend } from "./vector-tools.js";
import {
  checkpointItems,
  formatRecall,
  mirroredWrite,
  PrefetchCache,
  recallEntryCount,
  switchSessionAfterFlush,
  ToolUserScope,
  turnItem,
  type CheckpointItem,
} from "@hermes/memory-provider-kit";

/** Constructor options: any config value (overrides config.yaml), plus injectable parts for tests and hosts. */
export interface VectorMemoryProviderOptions extends Partial<VectorConfig> {
  /**
   * Profile home known before `initialize` (`register(ctx)` passes `ctx.hermesHome`): lets
   * `isAvailable()` see config.yaml and .env. `initialize` re-reads the home it is given.
   */
  hermesHome?: string;
  /** Use this embedder instead of building one from config. */
  embedderInstance?: Embedder;
  /** Environment to read secrets from (default `process.env`; `$HERMES_HOME/.env` wins over it). */
  env?: Record<string, string | undefined>;
  logger?: Logger;
}

export type { ExportedItem, PendingWrite, ProgressCallback } from "./backends/maintenance.js";
export { OUTBOX_FILE, REMOTE_OUTBOX_FILE, VECTOR_DIR } from "./backends/backend.js";

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

function withTimeout<T>(promise: Promise<T>, ms: number, fallback: T): Promise<T> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(fallback), ms);
    timer.unref?.();
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      () => {
        clearTimeout(timer);
        resolve(fallback);
      },
    );
  });
}

/**
 * The `vector` memory provider: semantic recall over past turns, facts and checkpoints. Where items
 * live is its backend's business, picked once when it opens (backends/backend.ts): the sidecar
 * layout (text, metadata and BM25 in a SQLite sidecar under `$HERMES_HOME/memory/vector/`, vectors
 * in the local usearch index or in Pinecone) or the remote layout (everything in Pinecone).
 * Searches fuse vector similarity and BM25 (hybrid, default on).
 *
 * Writes from `syncTurn`/`onMemoryWrite`/`remember` are queued and embedded in background batches;
 * `flush()` waits for them. `onPreCompress` (checkpoint API v2) writes synchronously and throws on
 * failure. Tools never throw: failures come back as `{"error": ...}` JSON strings.
 */
export class VectorMemoryProvider extends MemoryProvider implements SearchableMemory {
  readonly name = "vector";
  override readonly preCompressCheckpointApiVersion = 2 as const;

  private readonly options: VectorMemoryProviderOptions;
  private readonly logger: Logger;
  private config: VectorConfig;
  private hermesHome = "";
  private sessionId = "";
  /** Profile part of namespaces: `agentIdentity`, else an id minted once per home (kept in the sidecar). */
  private profile = "";
  private userId = "local";
  private writesAllowed = true;
  /** The storage layout, chosen when the provider opens; kept after shutdown (it then reports itself closed). */
  private backend: VectorBackend | null = null;
  /** The embedder a backend's open created, closed at shutdown when no backend took it. */
  private embedder: Embedder | null = null;
  private mirrorOps: Promise<void> = Promise.resolve();
  private readonly prefetchCache = new PrefetchCache<Promise<MemoryHit[]>>();
  private lastRecallCount = 0;
  private problem = "";
  private closed = false;
  /** Set by an inspection of a home without a sidecar: nothing is stored there yet. */
  private nothingStoredAt: string | null = null;
  /** Opened by `initializeForInspection`: what exists is read, nothing is created, sent or moved. */
  private inspecting = false;

  constructor(options: VectorMemoryProviderOptions = {}) {
    super();
    this.options = options;
    this.logger = options.logger ?? silentLogger;
    this.config = resolveVectorConfig({}, options.env ?? process.env, this.overrides());
    if (options.hermesHome) {
      try {
        this.config = loadVectorConfigSync(options.hermesHome, this.overrides(), options.env ?? process.env);
      } catch (error) {
        this.problem = describeError(error);
      }
    }
  }

  private overrides(): Partial<VectorConfig> {
    const { embedderInstance: _e, env: _env, logger: _l, hermesHome: _h, ...overrides } = this.options;
    return overrides;
  }

  // ---------------------------------------------------------------------------------------------
  // availability and configuration

  /**
   * Config and installed optional dependencies only, never the network. Before `initialize` it
   * sees constructor options and the process environment; afterwards the profile's config too.
   */
  isAvailable(): boolean {
    return this.problem === "" && nativeModuleProblem(this.config.store) === null && this.missingSettingsProblem() === "";
  }

  /** What is missing for `isAvailable()` (empty when available). */
  override unavailableReason(): string {
    return this.problem || nativeModuleProblem(this.config.store)?.message || this.missingSettingsProblem();
  }

  /** The settings and optional dependencies the configuration needs but lacks, joined with "; " (empty when none). */
  private missingSettingsProblem(): string {
    const c = this.config;
    const problems: string[] = [];
    if (c.store === "pinecone") {
      if (!c.pineconeApiKey)
        problems.push("PINECONE_API_KEY is not set (add it to $HERMES_HOME/.env or run `hermes-memory memory setup vector`)");
      if (!c.pineconeIndex) problems.push("memory.vector.pinecone_index is not set");
    }
    if (c.embedder === "openai" && !c.embeddingsBaseUrl) problems.push("memory.vector.embeddings_base_url is not set");
    if (c.embedder === "onnx") {
      if (!onnxRuntimeInstalled(createRequire(import.meta.url).resolve)) {
        problems.push(
          "the onnx embedder needs onnxruntime-node (install with `ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node@1.30.0`)",
        );
      }
      if (!c.onnxModelDir) problems.push("memory.vector.onnx_model_dir is not set");
      else if (!findOnnxModel(c.onnxModelDir)) problems.push(`no ONNX model found in ${c.onnxModelDir}`);
    }
    return problems.join("; ");
  }

  /** The resolved configuration (after `initialize`, including config.yaml and .env). */
  get resolvedConfig(): Readonly<VectorConfig> {
    return this.config;
  }

  /** Setup fields (`hermes-memory memory setup vector`). */
  getConfigSchema(): ConfigField[] {
    return VECTOR_CONFIG_FIELDS.map((f) => ({ ...f }));
  }

  // ---------------------------------------------------------------------------------------------
  // lifecycle

  /**
   * Read the profile's config, open the sidecar, the store and the embedder. Throws
   * `EMBEDDING_DIMENSION_MISMATCH` when the index was built by another embedder (fix: reindex).
   */
  async initialize(sessionId: string, ctx: InitContext): Promise<void> {
    this.sessionId = sessionId;
    this.profile = typeof ctx.agentIdentity === "string" ? ctx.agentIdentity : "";
    this.userId = (typeof ctx.userId === "string" && ctx.userId) || "local";
    this.writesAllowed = allowsAutomaticWrites(ctx);
    await this.open(ctx.hermesHome, { verifyIdentity: true });
    if (!this.inspecting) this.backend?.warmUp();
  }

  /**
   * Inspection (status screens) creates nothing: a home whose sidecar does not exist yet has
   * nothing stored, and `stats()` then reports no items at the directory the store will use.
   * Otherwise (and for the remote layout, whose items live in Pinecone) it opens what exists like
   * `initialize`, without creating a missing outbox, index file or directory, sending what an
   * outbox holds, or starting background work; `shutdown()` then only closes.
   */
  override async initializeForInspection(sessionId: string, ctx: InitContext): Promise<void> {
    const warnings: string[] = [];
    const config = await loadVectorConfig(ctx.hermesHome, this.overrides(), this.options.env ?? process.env, (warning) =>
      warnings.push(warning),
    );
    const dir = path.join(ctx.hermesHome, VECTOR_DIR);
    const remote = config.store === "pinecone" && config.pineconeLayout === "remote";
    this.inspecting = true;
    if (remote || fs.existsSync(path.join(dir, "sidecar.sqlite"))) return this.initialize(sessionId, ctx);
    for (const warning of warnings) this.logger.warn(`vector memory: ${warning}`);
    this.config = config;
    this.hermesHome = ctx.hermesHome;
    this.nothingStoredAt = dir;
  }

  /**
   * Open storage for maintenance (CLI) without the embedder identity check. With
   * `allowReset: true` (reindex only) local vectors of another dimension are dropped so `reindex`
   * can rebuild them; otherwise such a mismatch still throws. `profile`/`user` pick the default
   * namespace.
   */
  async openForMaintenance(
    hermesHome: string,
    options: { profile?: string; user?: string; allowReset?: boolean; sidecarLayout?: boolean } = {},
  ): Promise<void> {
    this.sessionId = "maintenance";
    this.profile = options.profile ?? "";
    this.userId = options.user ?? "local";
    await this.open(hermesHome, {
      verifyIdentity: false,
      allowReset: options.allowReset === true,
      sidecarLayout: options.sidecarLayout === true,
    });
  }

  /**
   * Read the profile's config and open its backend, chosen here once: the remote layout when
   * `store: pinecone` with `pinecone_layout: remote` (unless `sidecarLayout` asks for the sidecar,
   * as `reindex --to remote` does), the sidecar layout otherwise.
   */
  private async open(
    hermesHome: string,
    options: { verifyIdentity: boolean; allowReset?: boolean; sidecarLayout?: boolean },
  ): Promise<void> {
    if (this.backend?.isOpen) return;
    this.hermesHome = hermesHome;
    this.config = await loadVectorConfig(hermesHome, this.overrides(), this.options.env ?? process.env, (warning) =>
      this.logger.warn(`vector memory: ${warning}`),
    );
    this.problem = "";
    const native = nativeModuleProblem(this.config.store);
    if (native) throw native;
    const missing = this.missingSettingsProblem();
    if (missing) {
      this.problem = missing;
      throw new HermesMemoryError({ code: "PROVIDER_UNAVAILABLE", message: `The vector memory provider is not configured: ${missing}.` });
    }
    const dir = path.join(hermesHome, VECTOR_DIR);
    const remoteLayout = this.config.store === "pinecone" && this.config.pineconeLayout === "remote" && !options.sidecarLayout;
    const host = this.backendHost();
    this.backend = remoteLayout ? await RemoteBackend.open(host, dir) : await SidecarBackend.open(host, dir, options);
  }

  /** What a backend reads from this provider and tells it. */
  private backendHost(): BackendHost {
    return {
      config: () => this.config,
      logger: this.logger,
      hermesHome: () => this.hermesHome,
      userId: () => this.userId,
      sessionId: () => this.sessionId,
      profile: () => this.profile,
      setProfile: (profile) => void (this.profile = profile),
      inspecting: () => this.inspecting,
      isClosed: () => this.closed,
      markClosed: () => void (this.closed = true),
      createEmbedder: async () => (this.embedder = this.options.embedderInstance ?? (await this.createEmbedder())),
      embedderClosed: (embedder) => {
        if (this.embedder === embedder) this.embedder = null;
      },
      namespaceFor: (userId) => this.namespaceFor(userId),
      mirrored: () => this.mirrorOps,
      clearRecall: () => this.prefetchCache.clear(),
    };
  }

  /** The open remote layout, or null in the sidecar layouts. */
  get remoteMemory(): PineconeRemoteMemory | null {
    return this.backend?.remoteMemory ?? null;
  }

  /** Whether the provider is initialised (either layout) and not shut down. */
  private get isOpen(): boolean {
    return this.backend?.isOpen === true && !this.closed;
  }

  /** The backend (throws `PROVIDER_UNAVAILABLE` before `initialize`); each of its calls checks it is still open. */
  private storage(): VectorBackend {
    if (!this.backend) throw notInitialisedError();
    return this.backend;
  }

  private async createEmbedder(): Promise<Embedder> {
    const c = this.config;
    if (c.embedder === "openai") {
      return new OpenAIEmbedder({
        baseUrl: c.embeddingsBaseUrl,
        model: c.embeddingsModel,
        ...(c.embeddingsApiKey ? { apiKey: c.embeddingsApiKey } : {}),
        dimensions: c.dimensions,
        timeoutMs: c.requestTimeoutMs,
        retry: { maxRetries: c.maxRetries },
      });
    }
    if (c.embedder === "onnx") return OnnxEmbedder.load({ modelDir: c.onnxModelDir!, dimensions: c.dimensions });
    return new HashingEmbedder({ dimensions: c.dimensions });
  }

  /** Default namespace for a user (the initialised user when absent). */
  namespaceFor(userId?: string): string {
    return renderNamespace(this.config.pineconeNamespaceTemplate, this.profile, userId || this.userId);
  }

  // ---------------------------------------------------------------------------------------------
  // writes

  /** Writes accepted but not acknowledged by their store (outbox and memory). */
  get undeliveredWrites(): number {
    return this.backend?.undeliveredWrites ?? 0;
  }

  /**
   * Wait until every queued write (and mirrored built-in write) is stored and searchable, after
   * re-trying writes that failed before (outbox, memory). Rejects with `STORAGE_FAILED`, naming
   * how many writes are pending and why, while any accepted write is not acknowledged by its
   * store; a resolved flush() means everything accepted so far is on disk (or in Pinecone).
   */
  async flush(): Promise<void> {
    await this.drain();
    const refused = this.backend?.refusedWrites() ?? null;
    if (refused) throw refused;
  }

  /**
   * `flush()` without the report of writes set aside because Pinecone refused their content: what
   * erasure, reindex and the remember tool wait for (a write set aside earlier must not stop them).
   */
  private async drain(): Promise<void> {
    if (this.backend) return this.backend.drain();
    await this.mirrorOps;
  }

  /**
   * Queue a completed turn (the kit's `turnItem`; returns at once). The speaker is kept in the
   * item's metadata, where searches read it. Skipped for cron/subagent contexts.
   */
  override syncTurn(userContent: string, assistantContent: string, options: SyncTurnOptions = { sessionId: "" }): void {
    if (!this.writesAllowed || !this.isOpen) return;
    const turn = turnItem(userContent, assistantContent, options, { sessionId: this.sessionId, userId: this.userId });
    if (!turn) return;
    // A read-only home queues the turn all the same: its write fails, the queue keeps it and warns
    // once, and flush() rejects, so a turn that cannot be stored is never acknowledged.
    this.backend!.queueTurn({
      content: turn.content,
      kind: "turn",
      sessionId: turn.sessionId ?? "",
      userId: this.userId,
      metadata: { ...turn.metadata, speaker: turn.speaker },
    });
  }

  /**
   * Mirror a built-in memory write (the kit's `mirroredWrite`) as facts with ids derived from
   * their target and content. Mirrored operations run in order on their own chain; `flush()`
   * waits for them.
   */
  override onMemoryWrite(action: MemoryWriteAction, target: MemoryWriteTarget, content: string, metadata: MemoryWriteMetadata): void {
    if (!this.writesAllowed || !this.isOpen) return;
    const idFor = (text: string): string => `mem-${sha256(`${target}\u0000${text}`).slice(0, 32)}`;
    const { remove: old, store: fact } = mirroredWrite(action, target, content, metadata, { userId: this.userId });
    const backend = this.backend!;
    const storeNew = fact ? backend.prepareMirroredFact({ ...fact, userId: this.userId }, idFor(fact.content)) : null;
    this.mirrorOps = this.mirrorOps
      .then(async () => {
        try {
          if (old !== undefined) await backend.forgetMirroredFact(idFor(old));
        } finally {
          storeNew?.();
        }
      })
      .catch((error: unknown) => this.logger.warn(`vector memory: mirroring a built-in ${action} failed: ${describeError(error)}`));
  }

  /**
   * Checkpoint API v2: archive the user/assistant evidence durably before compression (the kit's
   * `checkpointItems`). Each message is keyed by its `checkpointDigest` (user, role, text), so
   * retries, overlapping evidence and later sessions repeating it never duplicate; a message this
   * session archived under the earlier key (session, role, text) is not archived again. Throws on
   * any failure.
   */
  override async onPreCompress(messages: ChatMessage[], _options: PreCompressOptions): Promise<string> {
    const backend = this.storage();
    backend.assertOpen();
    const checkpoints: CheckpointWrite[] = checkpointItems(messages, { sessionId: this.sessionId, userId: this.userId }).map((item) => ({
      item: { content: item.content, kind: "checkpoint", sessionId: this.sessionId, userId: this.userId },
      key: `ckpt-${item.digest.slice(0, 32)}`,
      sessionKey: this.sessionCheckpointKey(item),
      metadata: { digest: item.digest, role: item.role },
    }));
    await backend.storeCheckpoints(checkpoints);
    return "";
  }

  /** The key of a message archived by (session, role, text), as a store may already hold it; such a message is not archived again. */
  private sessionCheckpointKey(item: CheckpointItem): string {
    return `ckpt-${sha256(`${this.sessionId}\u0000${item.role}\u0000${item.text}`).slice(0, 32)}`;
  }

  /**
   * Store what the old session queued, then switch to `newSessionId` and drop cached recall (the
   * kit's `switchSessionAfterFlush`). When the queued writes cannot be stored, they stay queued
   * (outbox or memory, retried) and the switch throws `STORAGE_FAILED` after switching, so the
   * host retries it. Writes set aside earlier because Pinecone refused their content were reported
   * by `flush()` and do not fail the switch.
   */
  override async onSessionSwitch(newSessionId: string, _options: SessionSwitchOptions): Promise<boolean> {
    return switchSessionAfterFlush(
      () => this.drain(),
      () => {
        this.prefetchCache.clear();
        this.sessionId = newSessionId;
      },
    );
  }

  override async onSessionEnd(_messages: ChatMessage[]): Promise<void> {
    await this.flush();
  }

  // ---------------------------------------------------------------------------------------------
  // reads

  /** SearchableMemory: queue an item; `flush()` makes it searchable. Returns its id. */
  remember(item: MemoryItem): string {
    return this.storage().remember(item);
  }

  /**
   * Hybrid (or pure vector) search, best first (see `hybridSearch`). Hits carry
   * `metadata.scores = {vector, bm25, fused}` (`null` = not found by that ranking).
   */
  async search(query: string, searchOptions: MemorySearchOptions & { budgetMs?: number } = {}): Promise<MemoryHit[]> {
    return this.storage().search(query, searchOptions ?? {});
  }

  /** Which optional parts of `SearchableMemory` this provider implements: all of them. */
  capabilities(): SearchCapabilities {
    return { filters: true, expiry: true, erasure: true, update: true };
  }

  /**
   * Erase every item in `scope` (ids and/or a filter; an empty scope is refused with
   * `INVALID_ARGUMENT`) from every copy: sidecar rows and their FTS entries (and the context later
   * turns hold of them), local index entries or Pinecone records, queued and outbox writes not yet
   * delivered, and cached recall. A scope without ids that would erase every stored item is
   * refused unless `confirmAll` is true (`INVALID_ARGUMENT` naming the count; nothing erased).
   * Resolves to the number of items erased.
   */
  async forgetWhere(scope: ForgetScope): Promise<number> {
    return this.storage().forgetWhere(scope);
  }

  /** How many stored items `forgetWhere(scope)` would erase now (after queued writes are stored). */
  async countWhere(scope: ForgetScope): Promise<number> {
    return this.storage().countWhere(scope);
  }

  /** Delete the items that have expired from every copy; resolves to how many were deleted. */
  async purgeExpired(): Promise<number> {
    return this.storage().purgeExpired();
  }

  /**
   * Change a stored item: new `content` is re-embedded and re-indexed (the old text is found by
   * neither keyword nor vector search), `tags` / `metadata` / `expiresAt` replace the old values
   * (`expiresAt: null` removes the expiry). False when no (unexpired) item has `id`.
   */
  async update(id: string, changes: MemoryUpdate): Promise<boolean> {
    return this.storage().update(id, changes);
  }

  /** One item by id (from the sidecar; Pinecone-only items from the default namespace). */
  async get(id: string): Promise<MemoryHit | null> {
    return this.storage().get(id);
  }

  /** Delete an item everywhere. Returns false when no such id exists. Waits for queued writes first. */
  async forget(id: string): Promise<boolean> {
    return this.storage().forget(id);
  }

  /** Item counts, the store and its location. */
  async stats(): Promise<MemoryStats> {
    if (this.nothingStoredAt !== null && !this.isOpen) {
      const c = this.config;
      return {
        items: 0,
        byKind: { turn: 0, fact: 0, checkpoint: 0 },
        sessions: 0,
        location: this.nothingStoredAt,
        sizeBytes: 0,
        store: c.store,
        embedder: c.embedder,
        dimensions: c.dimensions,
        hybrid: c.hybrid,
      };
    }
    return this.storage().stats();
  }

  /** Start a search for the next turn in the background (served by `prefetch`). */
  override queuePrefetch(query: string, options: PrefetchOptions): void {
    if (!this.isOpen || !query.trim()) return;
    const promise = this.search(query, { limit: this.config.prefetchLimit, userId: this.userId, budgetMs: this.config.prefetchTimeoutMs });
    promise.catch(() => undefined);
    this.prefetchCache.set(options.sessionId, query, promise);
  }

  /**
   * Recall for the upcoming turn (`prefetch_limit` memories within `prefetch_max_chars`), served from `queuePrefetch` when it ran
   * for this query; never takes longer than `prefetch_timeout_ms` and never throws.
   */
  override async prefetch(query: string, options: PrefetchOptions): Promise<string> {
    this.lastRecallCount = 0;
    if (!this.isOpen || !query.trim()) return "";
    const queued = this.prefetchCache.take(options.sessionId, query);
    const budget = this.config.prefetchTimeoutMs;
    // The session's user's items only, also where namespaces hold several users.
    const search = queued ?? this.search(query, { limit: this.config.prefetchLimit, userId: this.userId, budgetMs: budget });
    const hits = await withTimeout(search, budget, [] as MemoryHit[]);
    const block = formatRecall(hits, {
      header: "## Vector memory (relevant past context)",
      maxChars: this.config.prefetchMaxChars,
      label: vectorRecallLabel,
    });
    this.lastRecallCount = recallEntryCount(block);
    return block;
  }

  override recallStatus(): RecallStatus | null {
    return this.lastRecallCount > 0 ? { providerLabel: "vector", count: this.lastRecallCount } : null;
  }

  override systemPromptBlock(): string {
    if (!this.isOpen) return "";
    return (
      `Long-term vector memory is active (${this.backend!.storeLabel} store, ${this.backend!.embedder.id} embeddings). ` +
      `Relevant past context is recalled automatically; use ${SEARCH_TOOL} to look further, ${REMEMBER_TOOL} to store a durable fact, ${FORGET_TOOL} to delete one.`
    );
  }

  // ---------------------------------------------------------------------------------------------
  // tools

  getToolSchemas(): ToolSchema[] {
    return VECTOR_TOOL_SCHEMAS;
  }

  /**
   * Validate and run a tool; always returns a JSON string (errors as `{"error": ...}`). The model
   * speaks for the session's user (the host's `userId`, else `local`, the user this session writes
   * and recalls as): every tool acts within that user's items.
   */
  override async handleToolCall(toolName: string, args: Record<string, unknown>, _options: ToolCallOptions = {}): Promise<string> {
    const backend: VectorToolBackend = {
      assertOpen: () => this.storage().assertOpen(),
      sessionId: () => this.sessionId,
      search: (query, options) => this.search(query, { ...options, budgetMs: this.config.requestTimeoutMs }),
      rememberFact: (content, tags) => this.rememberFactNow(content, tags),
      forget: async (scope) => (await this.forgetWhere(scope)) > 0,
    };
    return runVectorTool(toolName, args, backend, new ToolUserScope(this.userId));
  }

  /** The remember tool: store a fact of the session's user and wait until its store has it. */
  private async rememberFactNow(content: string, tags: string[]): Promise<StoredFact> {
    return this.storage().rememberFact(content, tags);
  }

  // ---------------------------------------------------------------------------------------------
  // maintenance (CLI)

  /**
   * Re-embed every stored item with the configured embedder into the configured store (repairs
   * `EMBEDDING_DIMENSION_MISMATCH`; moves everything after switching `store`). Text comes from
   * the sidecar, so nothing is lost. Items whose text is still refused for its content stay
   * without a vector (keyword search finds them). Returns the number of items indexed and of
   * those left without a vector (`unembedded`). Sidecar layout only.
   */
  async reindex(onProgress?: ProgressCallback): Promise<{ items: number; namespaces: number; unembedded: number }> {
    return this.storage().reindex(onProgress);
  }

  /**
   * Move the sidecar layout's items into the remote layout (`hermes-memory vector reindex --to
   * remote`): every item of the sidecar is re-embedded and stored in Pinecone as a sparse–dense
   * record in `namespace`, keeping kind, time, session, user, tags, metadata and expiry. An item
   * without a user gets the user its sidecar namespace stands for. The old id is the key of the new
   * one, so running it again stores each item once. The sidecar is left as it was; the layout and
   * the identity of the remote index (embedder, sparse encoder) are recorded in it. Needs the
   * provider opened with `openForMaintenance(home, {sidecarLayout: true})`.
   */
  async migrateToRemote(namespace: string, onProgress?: ProgressCallback): Promise<{ items: number; namespace: string }> {
    return this.storage().migrateToRemote(namespace, onProgress);
  }

  /** Every stored item, for `hermes-memory vector export` (JSON Lines). Sidecar layout only. */
  *exportItems(): Generator<ExportedItem> {
    yield* this.storage().exportItems();
  }

  /** Import exported items, re-embedded with the configured embedder. Ids are kept; namespaces follow this profile. Sidecar layout only. */
  async importItems(
    items: Iterable<ExportedItem> | AsyncIterable<ExportedItem>,
    onProgress?: ProgressCallback,
    total = 0,
  ): Promise<number> {
    return this.storage().importItems(items, onProgress, total);
  }

  /**
   * Flush queued writes, save the index, close files. Idempotent. Throws `STORAGE_FAILED` (after
   * closing everything) when accepted writes could not be stored: how many, and whether they are
   * kept in the outbox (re-sent on the next start) or lost with the process.
   */
  override async shutdown(): Promise<void> {
    if (this.closed) return;
    if (this.backend?.isOpen) return this.backend.shutdown();
    // Nothing open: wait for mirrored writes, close an embedder a failed open left.
    await this.mirrorOps;
    this.closed = true;
    await this.embedder?.close?.();
  }
}

/** Recall entry label of this provider: `kind, YYYY-MM-DD`. */
function vectorRecallLabel(hit: MemoryHit): string {
  const date = hit.createdAt.slice(0, 10);
  return `${hit.kind}${date ? `, ${date}` : ""}`;
}
