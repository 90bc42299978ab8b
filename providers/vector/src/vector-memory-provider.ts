import { createHash, randomUUID } from "node:crypto";
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
  type MemoryKind,
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
import { isLexicalEmbedder, type Embedder } from "./embedder.js";
import { HashingEmbedder } from "./hashing-embedder.js";
import { dimensionMismatchError } from "./index-identity.js";
import { LocalVectorStore, storageWriteError } from "./local-vector-store.js";
import { Outbox, refusedWritesError } from "./outbox.js";
import type { VectorMetadata } from "./metadata-filter.js";
import { OnnxEmbedder, findOnnxModel, onnxRuntimeInstalled } from "./onnx-embedder.js";
import { OpenAIEmbedder } from "./openai-embedder.js";
import { PineconeVectorStore, flattenMetadata } from "./pinecone-vector-store.js";
import { itemIdPrefix, PineconeRemoteMemory } from "./pinecone-remote-store.js";
import { SPARSE_ENCODER_ID } from "./sparse-encoder.js";
import { hybridSearch, recordPasses, toMemoryHit } from "./hybrid-search.js";
import { isolateRefused } from "./retry-policy.js";
import { RemoteHeldWrites } from "./remote-held-writes.js";
import { namespaceUserReader, UserNamespaces } from "./user-namespaces.js";
import { WriteQueue } from "./write-queue.js";
import { copyToRemote, exportAll, importAll, reindexAll, type ExportedItem, type PendingWrite, type ProgressCallback } from "./maintenance.js";
import { Sidecar } from "./sidecar.js";
import { nativeModuleProblem } from "./native-modules.js";
import { loadVectorConfig, loadVectorConfigSync, renderNamespace, resolveVectorConfig, VECTOR_CONFIG_FIELDS, type VectorConfig } from "./vector-config.js";
import type { VectorStore } from "./vector-store.js";
import { FORGET_TOOL, REMEMBER_TOOL, runVectorTool, SEARCH_TOOL, VECTOR_TOOL_SCHEMAS, type VectorToolBackend } from "./vector-tools.js";
import {
  checkpointItems,
  checkWholeStoreErasure,
  formatRecall,
  isBusyError,
  MEMORY_ITEM_KINDS,
  mirroredWrite,
  parseForgetScope,
  parseMemoryFilter,
  parseMemoryItem,
  parseMemoryUpdate,
  parseSearchLimit,
  PrefetchCache,
  sqliteLockWaitMs,
  recallEntryCount,
  resolveExpiry,
  switchSessionAfterFlush,
  ToolUserScope,
  turnItem,
  type CheckpointItem,
  type ParsedForgetScope,
  type ParsedMemoryFilter,
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

export type { ExportedItem, PendingWrite, ProgressCallback } from "./maintenance.js";

/** Where the provider keeps its files, under `$HERMES_HOME`. */
export const VECTOR_DIR = path.join("memory", "vector");
/** The sidecar layout's writes Pinecone has not acknowledged yet (Pinecone store only). */
export const OUTBOX_FILE = "outbox.sqlite";
/** The remote layout's only local state: writes Pinecone has not acknowledged yet. */
export const REMOTE_OUTBOX_FILE = "remote-outbox.sqlite";
const RESERVED_KEYS = new Set(["text", "kind", "session_id", "user_id", "created_at", "tags", "digest", "extra", "text_truncated", "source", "role", "expires_at", "created_ms"]);
/** Delay before expired items found by a search are purged in the background. */
const LAZY_PURGE_DELAY_MS = 1000;
/**
 * How long a queued batch waits on the thread for another process's write lock on the sidecar
 * before it fails as busy and is tried again on a timer (ms): the agent's turn never stands still
 * for the lock.
 */
const QUEUED_WRITE_LOCK_WAIT_MS = 25;
/**
 * How long `flush()` (and `forget`, `update`, erasure, which first deliver the queue) keep trying
 * writes held by another process's lock on the sidecar (ms); the tries wait on timers.
 */
const FLUSH_LOCK_DEADLINE_MS = 60_000;

/** True for a failure caused by another connection holding the sidecar's write lock (SQLite busy or locked). */
function lockedByAnotherProcess(error: unknown): boolean {
  return isBusyError(error) || (HermesMemoryError.isInstance(error) && isBusyError(error.cause));
}

function invalidArgument(message: string): HermesMemoryError {
  return new HermesMemoryError({ code: "INVALID_ARGUMENT", message });
}

/** Whether this process may write `target` (also false on a read-only mount, even for root). */
function writableDirectory(target: string): boolean {
  try {
    fs.accessSync(target, fs.constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

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
 * The `vector` memory provider: semantic recall over past turns, facts and checkpoints. Text,
 * metadata and a BM25 index live in a SQLite sidecar under `$HERMES_HOME/memory/vector/`;
 * vectors live in the local usearch index (`store: local`, default) or in Pinecone
 * (`store: pinecone`). Searches fuse vector similarity and BM25 (hybrid, default on).
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
  private sidecar: Sidecar | null = null;
  /** The sidecar's namespaces as per-user boundaries (migrated from earlier versions at a writable open). */
  private namespaces: UserNamespaces | null = null;
  private store: VectorStore | null = null;
  /** The remote Pinecone layout (`pinecone_layout: remote`): every call goes to it; no sidecar or store is open. */
  private remote: PineconeRemoteMemory | null = null;
  private embedder: Embedder | null = null;
  private pending: PendingWrite[] = [];
  /** Accepted writes on their way to the store (outbox for stores that acknowledge remotely). */
  private readonly queue: WriteQueue;
  /** Remote layout: turns and mirrored facts its outbox could not take yet. */
  private readonly remoteHeld: RemoteHeldWrites;
  /** `$HERMES_HOME` is not writable: opened read-only, search works, writes throw. */
  private readOnly = false;
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
    const config = (): VectorConfig => this.config;
    this.queue = new WriteQueue({
      write: (batch) => this.writeNow(batch, { lockWaitMs: QUEUED_WRITE_LOCK_WAIT_MS }),
      writeUnembedded: (refused) => this.writeUnembedded(refused, QUEUED_WRITE_LOCK_WAIT_MS),
      // Read at each batch, so the profile's config (read at initialize) applies too.
      get batchSize(): number {
        return config().writeBatchSize;
      },
      logger: this.logger,
      isClosed: () => this.closed,
      isTransient: lockedByAnotherProcess,
    });
    this.remoteHeld = new RemoteHeldWrites(this.logger);
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
    return this.problem === "" && nativeModuleProblem(this.config.store) === null && this.missing() === "";
  }

  /** What is missing for `isAvailable()` (empty when available). */
  override unavailableReason(): string {
    return this.problem || nativeModuleProblem(this.config.store)?.message || this.missing();
  }

  private missing(): string {
    const c = this.config;
    const problems: string[] = [];
    if (c.store === "pinecone") {
      if (!c.pineconeApiKey) problems.push("PINECONE_API_KEY is not set (add it to $HERMES_HOME/.env or run `hermes-memory memory setup vector`)");
      if (!c.pineconeIndex) problems.push("memory.vector.pinecone_index is not set");
    }
    if (c.embedder === "openai" && !c.embeddingsBaseUrl) problems.push("memory.vector.embeddings_base_url is not set");
    if (c.embedder === "onnx") {
      if (!onnxRuntimeInstalled(createRequire(import.meta.url).resolve)) {
        problems.push("the onnx embedder needs onnxruntime-node (install with `ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node@1.30.0`)");
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
    if (!this.inspecting) this.warmRanker();
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
    const config = await loadVectorConfig(ctx.hermesHome, this.overrides(), this.options.env ?? process.env, (warning) => warnings.push(warning));
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
   * Keep the keyword ranker's row lengths in memory, 2,000 rows per step on a timer, until every
   * stored row's length is kept. Called after opening and after each written batch (then only the
   * new rows are read). Searches meanwhile read the lengths they need. Never throws.
   */
  private warmRanker(): void {
    const sidecar = this.sidecar;
    if (!sidecar || this.readOnly) return;
    sidecar.warmRankerInBackground(
      () => this.sidecar === sidecar && !this.closed,
      // Only an optimisation: searches read the lengths themselves.
      (error) => this.logger.warn(`vector memory: reading the keyword index's row lengths failed: ${describeError(error)}`),
    );
  }

  /**
   * Open storage for maintenance (CLI) without the embedder identity check. With
   * `allowReset: true` (reindex only) local vectors of another dimension are dropped so `reindex`
   * can rebuild them; otherwise such a mismatch still throws. `profile`/`user` pick the default
   * namespace.
   */
  async openForMaintenance(hermesHome: string, options: { profile?: string; user?: string; allowReset?: boolean; sidecarLayout?: boolean } = {}): Promise<void> {
    this.sessionId = "maintenance";
    this.profile = options.profile ?? "";
    this.userId = options.user ?? "local";
    await this.open(hermesHome, { verifyIdentity: false, allowReset: options.allowReset === true, sidecarLayout: options.sidecarLayout === true });
  }

  private async open(hermesHome: string, options: { verifyIdentity: boolean; allowReset?: boolean; sidecarLayout?: boolean }): Promise<void> {
    if (this.sidecar || this.remote) return;
    this.hermesHome = hermesHome;
    this.config = await loadVectorConfig(hermesHome, this.overrides(), this.options.env ?? process.env, (warning) => this.logger.warn(`vector memory: ${warning}`));
    this.problem = "";
    const native = nativeModuleProblem(this.config.store);
    if (native) throw native;
    const missing = this.missing();
    if (missing) {
      this.problem = missing;
      throw new HermesMemoryError({ code: "PROVIDER_UNAVAILABLE", message: `The vector memory provider is not configured: ${missing}.` });
    }
    const dir = path.join(hermesHome, VECTOR_DIR);
    if (this.isRemoteLayout && !options.sidecarLayout) return this.openRemote(dir);
    const sidecarFile = path.join(dir, "sidecar.sqlite");
    // A read-only home (read-only mount, a directory this user cannot write) still serves recall
    // from what is there; writes then fail with STORAGE_FAILED instead of initialise failing.
    try {
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    } catch (error) {
      if (!fs.existsSync(dir)) throw storageWriteError(`the vector memory directory ${dir} (it cannot be created)`, error);
    }
    this.readOnly = !writableDirectory(dir) || (fs.existsSync(sidecarFile) && !writableDirectory(sidecarFile));
    if (this.readOnly && !fs.existsSync(sidecarFile)) {
      throw new HermesMemoryError({
        code: "STORAGE_FAILED",
        message: `The vector memory directory ${dir} is read-only and holds no sidecar.sqlite yet, so there is nothing to recall and nothing can be saved. Make $HERMES_HOME writable.`,
      });
    }
    this.embedder = this.options.embedderInstance ?? (await this.createEmbedder());
    // The sidecar and the outbox share one wait for another process's lock, so a start-up stays
    // inside it (and inside the manager's bound on initialize).
    const lockWait = sqliteLockWaitMs();
    const opening = Date.now();
    const sidecar = await Sidecar.openAsync(sidecarFile, { readOnly: this.readOnly, ...(this.config.searchThread ? {} : { ranker: { helper: false } }) });
    if (this.closed) {
      // Shut down while the open waited for another process's lock: nothing is left open.
      sidecar.close();
      throw shutDownWhileStarting();
    }
    this.sidecar = sidecar;
    if (this.readOnly) this.logger.warn(`vector memory: ${dir} is read-only; recall works, new memories cannot be saved until it is writable.`);
    // Profiles share one Pinecone index, so each home needs its own namespace even when the host
    // does not name the profile. The first name seen (or a minted id) is kept in the sidecar, so
    // it survives moving the home and the CLI finds the same namespace.
    try {
      const known = this.sidecar.getMeta("profile_id");
      if (!known && !this.readOnly) this.sidecar.setMeta("profile_id", this.profile || `profile-${randomUUID().slice(0, 8)}`);
      if (!this.profile) this.profile = this.sidecar.getMeta("profile_id") ?? "profile-readonly";
      const namespaces = (this.namespaces = UserNamespaces.open(this.sidecar, this.config.pineconeNamespaceTemplate, { pinecone: this.config.store === "pinecone", logger: this.logger, inspect: this.inspecting }));
      if (options.verifyIdentity) this.verifyIdentity();
      const store = (this.store = await this.createStore(this.embedder, options.allowReset ? "reset" : "throw"));
      if (this.store.needsOutbox && !this.readOnly && !(this.inspecting && !fs.existsSync(path.join(dir, OUTBOX_FILE)))) {
        this.queue.attachOutbox(await Outbox.openAsync(path.join(dir, OUTBOX_FILE), { lockWaitMs: Math.max(0, lockWait - (Date.now() - opening)) }));
        namespaces.relocateQueued(this.queue.attachedOutbox!);
      }
      if (this.closed) throw shutDownWhileStarting();
      if (!this.inspecting) namespaces.moveVectors(store, () => !this.closed && this.store === store);
    } catch (error) {
      this.queue.attachedOutbox?.close();
      this.queue.attachOutbox(null);
      await this.namespaces?.settled();
      this.namespaces = null;
      this.sidecar.close();
      this.sidecar = null;
      await this.store?.close().catch(() => undefined);
      this.store = null;
      // Everything opened here is closed again, so a later initialize() starts over.
      throw String((error as { code?: unknown } | null)?.code ?? "").startsWith("SQLITE_") ? storageWriteError(`the vector sidecar ${sidecarFile} while starting`, error) : error;
    }
    const waiting = this.queue.inOutbox;
    if (waiting > 0 && !this.inspecting) {
      this.logger.info(`vector memory: re-sending ${waiting} writes Pinecone has not acknowledged yet (outbox ${this.queue.attachedOutbox!.file}).`);
      this.queue.resendOutbox().catch((error: unknown) => this.logger.warn(`vector memory: re-sending the outbox failed: ${describeError(error)}`));
    }
  }

  /** Whether the configuration selects the remote Pinecone layout. */
  private get isRemoteLayout(): boolean {
    return this.config.store === "pinecone" && this.config.pineconeLayout === "remote";
  }

  /**
   * The namespace of the remote layout: `pinecone_namespace`, else the agent identity. Every
   * machine sharing the memory must compute the same one, so a per-home generated id is never used.
   */
  private remoteNamespace(): string {
    const namespace = this.config.pineconeNamespace || this.profile;
    if (!namespace) {
      throw new HermesMemoryError({
        code: "INVALID_CONFIG",
        message:
          "memory.vector.pinecone_layout is remote, but no namespace is known: every machine sharing the memory must use the same Pinecone namespace. Set memory.vector.pinecone_namespace, or give the agent an identity (agentIdentity).",
      });
    }
    return renderNamespace("{profile}", namespace, "");
  }

  /** Open the remote layout: the embedder and the outbox, nothing else local. */
  private async openRemote(dir: string): Promise<void> {
    if (this.remote) return;
    const namespace = this.remoteNamespace();
    const outboxFile = path.join(dir, REMOTE_OUTBOX_FILE);
    try {
      if (!this.inspecting) fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    } catch (error) {
      if (!fs.existsSync(dir)) throw storageWriteError(`the vector memory directory ${dir} (it cannot be created)`, error);
    }
    const embedder = this.options.embedderInstance ?? (await this.createEmbedder());
    let remote: PineconeRemoteMemory;
    try {
      // An inspection reads an outbox that exists and otherwise holds an empty one in memory.
      remote = await this.remoteStore(embedder, namespace, this.inspecting && !fs.existsSync(outboxFile) ? ":memory:" : outboxFile);
    } catch (error) {
      await embedder.close?.();
      throw error;
    }
    if (this.closed) {
      // Shut down while the outbox open waited for another process's lock: nothing is left open.
      await remote.close();
      await embedder.close?.();
      throw shutDownWhileStarting();
    }
    this.remote = remote;
    this.embedder = embedder;
    const waiting = this.remote.pendingWrites;
    if (waiting > 0) this.logger.info(`vector memory: re-sending ${waiting} writes Pinecone has not acknowledged yet (outbox ${this.remote.outbox.file}).`);
  }

  /** Remote layout: the weight of meaning in a search (`hybrid: false` = meaning only, as pure vector search elsewhere). */
  private remoteAlpha(): number {
    return this.config.hybrid ? this.config.hybridAlpha : 1;
  }

  /** The open remote layout, or null in the sidecar layouts. */
  get remoteMemory(): PineconeRemoteMemory | null {
    return this.remote;
  }

  /** Whether the provider is initialised (either layout) and not shut down. */
  private get isOpen(): boolean {
    return (this.sidecar !== null || this.remote !== null) && !this.closed;
  }

  /** The remote layout when it is the one configured (throws `PROVIDER_UNAVAILABLE` once shut down); null in the sidecar layouts. */
  private remoteOrNull(): PineconeRemoteMemory | null {
    if (this.remote) {
      if (this.closed) throw new HermesMemoryError({ code: "PROVIDER_UNAVAILABLE", message: "The vector memory provider is shut down; initialise a new one." });
      return this.remote;
    }
    return null;
  }

  /** The remote-layout id of the initialised user's item with this kind and key (and session, when given). */
  private remoteId(kind: MemoryKind, key: string, sessionId?: string): string {
    return `${itemIdPrefix(this.userId, sessionId)}${kind}.${key}`;
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

  private async createStore(embedder: Embedder, onMismatch: "throw" | "reset"): Promise<VectorStore> {
    const c = this.config;
    const dimensions = embedder.dimensions;
    if (c.store === "pinecone") {
      return new PineconeVectorStore({
        apiKey: c.pineconeApiKey!,
        indexName: c.pineconeIndex,
        ...(c.pineconeHost ? { host: c.pineconeHost } : {}),
        ...(c.pineconeControllerUrl ? { controllerHostUrl: c.pineconeControllerUrl } : {}),
        dimensions,
        requestTimeoutMs: c.requestTimeoutMs,
        retry: { maxRetries: c.maxRetries },
        hidden: (namespace, ids) => this.namespaces?.hidden(namespace, ids) ?? new Set(),
      });
    }
    return LocalVectorStore.open({
      directory: path.join(this.hermesHome, VECTOR_DIR),
      sidecar: this.sidecar!,
      dimensions,
      ...(c.exactThreshold !== undefined ? { exactThreshold: c.exactThreshold } : {}),
      lexicalVectors: isLexicalEmbedder(embedder.id),
      onDimensionMismatch: onMismatch,
      // An inspection rebuilds a missing or stale index in memory only, as a read-only home does.
      readOnly: this.readOnly || this.inspecting,
      logger: this.logger,
    });
  }

  private identityKey(): string {
    return this.config.store === "pinecone" ? `embedder:pinecone:${this.config.pineconeIndex}` : "embedder:local";
  }

  private currentIdentity(): string {
    return `${this.embedder!.id}/${this.embedder!.dimensions}`;
  }

  private verifyIdentity(): void {
    const recorded = this.sidecar!.getMeta(this.identityKey());
    if (recorded && recorded !== this.currentIdentity()) {
      const [storedId, storedDims] = recorded.split("/");
      throw dimensionMismatchError({
        stored: `embedder ${storedId} (${storedDims} dimensions)`,
        configured: `embedder ${this.embedder!.id} (${this.embedder!.dimensions} dimensions)`,
        where: this.config.store === "pinecone" ? `pinecone:${this.config.pineconeIndex}` : path.join(this.hermesHome, VECTOR_DIR),
      });
    }
    if (!recorded) {
      const rows = Object.values(this.sidecar!.namespaceCounts()).reduce((a, b) => a + b, 0);
      if (rows > 0 && !(this.config.store === "local" && this.sidecar!.countVectors() === rows)) {
        this.logger.warn(`vector memory: ${rows} stored items have no vectors in the ${this.config.store} store yet; run \`hermes-memory vector reindex\` to index them.`);
      } else if (!this.readOnly) {
        this.sidecar!.setMeta(this.identityKey(), this.currentIdentity());
      }
    }
  }

  private requireOpen(): { sidecar: Sidecar; store: VectorStore; embedder: Embedder } {
    if (this.remote) {
      throw new HermesMemoryError({
        code: "INVALID_ARGUMENT",
        message: "This operation works on the sidecar layout only; memory.vector.pinecone_layout is remote. Use `hermes-memory vector reindex --to remote` to move sidecar data, and search / stats / forget for the remote layout.",
      });
    }
    if (!this.sidecar || !this.store || !this.embedder) {
      throw new HermesMemoryError({ code: "PROVIDER_UNAVAILABLE", message: "The vector memory provider is not initialised. Call initialize(sessionId, {hermesHome}) first." });
    }
    return { sidecar: this.sidecar, store: this.store, embedder: this.embedder };
  }

  /** Default namespace for a user (the initialised user when absent). */
  namespaceFor(userId?: string): string {
    return renderNamespace(this.config.pineconeNamespaceTemplate, this.profile, userId || this.userId);
  }

  // ---------------------------------------------------------------------------------------------
  // writes

  private buildWrite(item: MemoryItem, id: string, extra: VectorMetadata = {}): PendingWrite {
    const kind = item.kind ?? "fact";
    const userId = item.userId;
    const now = Date.now();
    const expiresAt = resolveExpiry(item, now);
    const metadata: Record<string, unknown> = {
      kind,
      created_at: new Date(now).toISOString(),
      ...(expiresAt !== null ? { expires_at: expiresAt } : {}),
      ...(item.sessionId ? { session_id: item.sessionId } : {}),
      ...(userId ? { user_id: userId } : {}),
      ...(item.tags && item.tags.length > 0 ? { tags: item.tags } : {}),
      ...extra,
    };
    const user: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(item.metadata ?? {})) if (!RESERVED_KEYS.has(k)) user[k] = v;
    if (Object.keys(user).length > 0) metadata.extra = JSON.stringify(user);
    return { id, namespace: this.namespaceFor(userId), text: item.content, metadata: flattenMetadata(metadata) };
  }

  private enqueue(writes: PendingWrite[]): void {
    this.queue.enqueue(writes);
  }

  /** Writes accepted but not acknowledged by their store (outbox and memory). */
  get undeliveredWrites(): number {
    return this.queue.undelivered;
  }

  private assertWritable(): void {
    if (this.readOnly) {
      throw new HermesMemoryError({
        code: "STORAGE_FAILED",
        message: `The vector memory at ${path.join(this.hermesHome, VECTOR_DIR)} is read-only ($HERMES_HOME is not writable): search works, nothing can be saved. Make the directory writable and restart.`,
      });
    }
  }

  /**
   * Embed and store now; throws on failure. Pinecone mode: background writes keep their text in
   * the sidecar even when Pinecone fails (BM25 still finds them; retry or reindex restores the
   * vectors); synchronous writes (`durable`) reach Pinecone first, so a caller told "failed" finds
   * nothing half-written. `lockWaitMs`: how long the sidecar write may wait on the thread for
   * another process's write lock (the usual busy timeout when absent).
   */
  private async writeNow(batch: PendingWrite[], options: { durable?: boolean; lockWaitMs?: number } = {}): Promise<void> {
    const { sidecar, store, embedder } = this.requireOpen();
    this.assertWritable();
    const vectors = await embedder.embed(batch.map((w) => w.text));
    const byNamespace = new Map<string, number[]>();
    batch.forEach((w, i) => byNamespace.set(w.namespace, [...(byNamespace.get(w.namespace) ?? []), i]));
    for (const [namespace, indexes] of byNamespace) {
      const records = indexes.map((i) => ({ id: batch[i]!.id, vector: vectors[i]!, metadata: { ...batch[i]!.metadata, text: batch[i]!.text } }));
      const rows = indexes.map((i) => ({ id: batch[i]!.id, text: batch[i]!.text, metadata: batch[i]!.metadata, vector: null }));
      await store.writeItems({ namespace, records, rows, durable: options.durable === true, ...(options.lockWaitMs === undefined ? {} : { lockWaitMs: options.lockWaitMs }) }, sidecar);
    }
    this.queue.noteAccepted();
    this.warmRanker();
    try {
      if (!sidecar.getMeta(this.identityKey())) {
        const record = () => sidecar.setMeta(this.identityKey(), this.currentIdentity());
        if (options.lockWaitMs === undefined) record();
        else sidecar.withBusyTimeout(options.lockWaitMs, record);
      }
    } catch {
      // The batch is stored; an unrecorded embedder identity is recorded by a later write.
    }
  }

  /**
   * A synchronous write (`durable`) of `batch` in which a text refused for its content (the
   * embedder's or Pinecone's HTTP 400/413/422, a local model's NaN) does not fail the others: the
   * refused writes are found by `isolateRefused` and stored without a vector (`writeUnembedded`),
   * as the background queue does. While nothing was stored in this process yet, a refusal may be a
   * misconfiguration instead, so it is thrown unless another write of the batch went through.
   * Returns the ids stored without a vector.
   */
  private async writeDurable(batch: PendingWrite[]): Promise<Set<string>> {
    const { refused } = await isolateRefused(batch, (part) => this.writeNow(part, { durable: true }), { accepted: this.queue.storeAccepted });
    if (refused.length > 0) await this.writeUnembedded(refused.map(({ item, error }) => ({ write: item, error })));
    return new Set(refused.map(({ item }) => item.id));
  }

  /**
   * Store writes whose text the embedder refused for its content without a vector: text, metadata
   * and keyword index are kept (keyword search finds them, `hermes-memory vector reindex` tries to
   * embed them again), and each is named in a warning with the refusal.
   */
  private async writeUnembedded(refused: Array<{ write: PendingWrite; error: unknown }>, lockWaitMs?: number): Promise<void> {
    const { sidecar, store } = this.requireOpen();
    this.assertWritable();
    const byNamespace = new Map<string, PendingWrite[]>();
    for (const { write } of refused) byNamespace.set(write.namespace, [...(byNamespace.get(write.namespace) ?? []), write]);
    for (const [namespace, writes] of byNamespace) {
      await store.writeUnembedded(namespace, writes.map((w) => ({ id: w.id, text: w.text, metadata: w.metadata, vector: null })), sidecar, lockWaitMs);
    }
    for (const { write, error } of refused) {
      this.logger.warn(
        `vector memory: item ${JSON.stringify(write.id.slice(0, 80))} is stored without a vector: the embedder refused its text (${describeError(error).slice(0, 300)}). Keyword search finds it; \`hermes-memory vector reindex\` tries to embed it again.`,
      );
    }
  }

  /**
   * Wait until every queued write (and mirrored built-in write) is stored and searchable, after
   * re-trying writes that failed before (outbox, memory). Rejects with `STORAGE_FAILED`, naming
   * how many writes are pending and why, while any accepted write is not acknowledged by its
   * store; a resolved flush() means everything accepted so far is on disk (or in Pinecone).
   */
  async flush(): Promise<void> {
    await this.drain();
    const remote = this.remoteOrNull();
    const outbox = this.queue.attachedOutbox;
    const refused = remote ? remote.refusedWrites() : outbox ? refusedWritesError(outbox) : null;
    if (refused) throw refused;
  }

  /**
   * `flush()` without the report of writes set aside because Pinecone refused their content: what
   * erasure, reindex and the remember tool wait for (a write set aside earlier must not stop them).
   */
  private async drain(): Promise<void> {
    await this.mirrorOps;
    const remote = this.remoteOrNull();
    if (remote) {
      this.remoteHeld.retry(remote);
      const held = this.remoteHeld.error();
      if (!held) return remote.drain();
      await remote.drain().catch(() => undefined);
      throw held;
    }
    await this.namespaces?.settled();
    this.queue.requeueHeld();
    await this.queue.deliverAll(FLUSH_LOCK_DEADLINE_MS, { resendOutbox: true });
    await this.store?.flush();
    if (this.queue.hasUndelivered || this.queue.dropped > 0) throw this.queue.undeliveredError();
  }

  /**
   * Queue a completed turn (the kit's `turnItem`; returns at once). The speaker is kept in the
   * item's metadata, where searches read it. Skipped for cron/subagent contexts.
   */
  override syncTurn(userContent: string, assistantContent: string, options: SyncTurnOptions = { sessionId: "" }): void {
    if (!this.writesAllowed || !this.isOpen) return;
    const turn = turnItem(userContent, assistantContent, options, { sessionId: this.sessionId, userId: this.userId });
    if (!turn) return;
    const item: MemoryItem = { content: turn.content, kind: "turn", sessionId: turn.sessionId ?? "", userId: this.userId, metadata: { ...turn.metadata, speaker: turn.speaker } };
    if (this.remote) {
      this.remoteHeld.add(this.remote, item);
      return;
    }
    // A read-only home queues the turn all the same: its write fails, the queue keeps it and warns
    // once, and flush() rejects, so a turn that cannot be stored is never acknowledged.
    this.enqueue([this.buildWrite(item, `turn-${randomUUID()}`)]);
  }

  /**
   * Mirror a built-in memory write (the kit's `mirroredWrite`) as facts with ids derived from
   * their target and content. Mirrored operations run in order on their own chain; `flush()`
   * waits for them.
   */
  override onMemoryWrite(action: MemoryWriteAction, target: MemoryWriteTarget, content: string, metadata: MemoryWriteMetadata): void {
    if (!this.writesAllowed || !this.isOpen) return;
    const idFor = (text: string): string => `mem-${sha256(`${target}\u0000${text}`).slice(0, 32)}`;
    const mirror = mirroredWrite(action, target, content, metadata, { userId: this.userId });
    const old = mirror.remove;
    const fact = mirror.store;
    const remote = this.remote;
    if (remote) {
      // Mirrored facts carry no session in the remote layout, so the id of a fact follows from its content alone.
      this.mirrorOps = this.mirrorOps
        .then(async () => {
          try {
            if (old !== undefined) await remote.forget(this.remoteId("fact", idFor(old)));
          } finally {
            if (fact) this.remoteHeld.add(remote, fact, { key: idFor(fact.content) });
          }
        })
        .catch((error: unknown) => this.logger.warn(`vector memory: mirroring a built-in ${action} failed: ${describeError(error)}`));
      return;
    }
    const sessionId = typeof metadata?.sessionId === "string" && metadata.sessionId ? metadata.sessionId : undefined;
    const write = fact ? this.buildWrite({ ...fact, ...(sessionId ? { sessionId } : {}) }, idFor(fact.content), { source: fact.metadata.source }) : null;
    this.mirrorOps = this.mirrorOps
      .then(async () => {
        try {
          if (old !== undefined) await this.forgetNow(idFor(old));
        } finally {
          // The new fact is queued even when removing the old one failed: then it is stored, or
          // flush() says it is not, instead of being skipped behind a warning.
          if (write) this.enqueue([write]);
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
    const remote = this.remoteOrNull();
    const items = checkpointItems(messages, { sessionId: this.sessionId, userId: this.userId });
    if (remote) {
      const stored = await Promise.all(items.map((item) => remote.get(this.remoteId("checkpoint", this.sessionCheckpointKey(item), this.sessionId))));
      items.forEach((item, i) => {
        if (stored[i]) return;
        remote.remember(
          { content: item.content, kind: "checkpoint", sessionId: this.sessionId, userId: this.userId, metadata: { digest: item.digest, role: item.role } },
          { key: `ckpt-${item.digest.slice(0, 32)}` },
        );
      });
      await remote.drain();
      return "";
    }
    const { sidecar } = this.requireOpen();
    const namespace = this.namespaceFor(this.userId);
    const earlier = new Set(sidecar.getByIds(null, items.map((item) => this.sessionCheckpointKey(item))).filter((row) => row.namespace === namespace).map((row) => row.id));
    const writes: PendingWrite[] = [];
    for (const item of items) {
      if (earlier.has(this.sessionCheckpointKey(item))) continue;
      writes.push(this.buildWrite({ content: item.content, kind: "checkpoint", sessionId: this.sessionId, userId: this.userId }, `ckpt-${item.digest.slice(0, 32)}`, { digest: item.digest, role: item.role }));
    }
    for (let i = 0; i < writes.length; i += 64) await this.writeDurable(writes.slice(i, i + 64));
    await this.store!.flush();
    return "";
  }

  /** The key of a message archived by (session, role, text), as a store may already hold it; such a message is not archived again. */
  private sessionCheckpointKey(item: CheckpointItem): string {
    return `ckpt-${sha256(`${this.sessionId}\u0000${item.role}\u0000${item.text}`).slice(0, 32)}`;
  }

  /** The remote layout's store over the configured Pinecone index, in `namespace`. */
  private remoteStore(embedder: Embedder, namespace: string, outboxFile: string): Promise<PineconeRemoteMemory> {
    const c = this.config;
    return PineconeRemoteMemory.openAsync({
      apiKey: c.pineconeApiKey!,
      indexName: c.pineconeIndex,
      ...(c.pineconeHost ? { host: c.pineconeHost } : {}),
      ...(c.pineconeControllerUrl ? { controllerHostUrl: c.pineconeControllerUrl } : {}),
      requestTimeoutMs: c.requestTimeoutMs,
      retry: { maxRetries: c.maxRetries },
      embedder,
      namespace,
      outboxFile,
      alpha: this.remoteAlpha(),
      inspectOnly: this.inspecting,
    });
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
    const remote = this.remoteOrNull();
    if (remote) return remote.remember(item !== null && typeof item === "object" && !Array.isArray(item) ? { ...item, userId: item.userId || this.userId } : item);
    this.requireOpen();
    this.assertWritable();
    // Validated before anything is queued: an item accepted here can always be embedded and stored,
    // so a malformed one never holds up the writes queued with it.
    const { content, kind, sessionId, userId: named, tags, metadata, expiresAt } = parseMemoryItem(item);
    // An item without a user belongs to the session's user: where a namespace stands for one user it carries their user_id too.
    const userId = named ?? (this.userInNamespace ? this.userId : undefined);
    const id = `${kind}-${randomUUID()}`;
    this.enqueue([this.buildWrite({ content, kind, sessionId, userId, tags, metadata, ...(expiresAt !== null ? { expiresAt } : {}) }, id)]);
    return id;
  }

  /** Whether namespaces hold one user each (the template names `{user}`; the sidecar's names are this version's), so a namespace stands for its user. */
  private get userInNamespace(): boolean {
    return this.config.pineconeNamespaceTemplate.includes("{user}") && this.namespaces?.current !== false;
  }

  /** The namespace a filter's user maps to, the filter left to check inside it (every namespace: `null`), and the user it stands for. */
  private scopeOf(filter: ParsedMemoryFilter): { namespace: string | null; filter: ParsedMemoryFilter; owner?: string } {
    if (filter.userId === undefined || !this.userInNamespace) return { namespace: null, filter };
    const { userId, ...rest } = filter;
    return { namespace: this.namespaceFor(userId), filter: rest, owner: userId };
  }

  /**
   * Hybrid (or pure vector) search, best first (see `hybridSearch`). Hits carry
   * `metadata.scores = {vector, bm25, fused}` (`null` = not found by that ranking).
   */
  async search(query: string, searchOptions: MemorySearchOptions & { budgetMs?: number } = {}): Promise<MemoryHit[]> {
    const options = searchOptions ?? {};
    const remote = this.remoteOrNull();
    if (remote) return remote.search(query, { ...options, userId: options.userId ?? this.userId });
    const { sidecar, store, embedder } = this.requireOpen();
    const parsed = parseMemoryFilter(options, { what: "search options", ignore: ["limit", "budgetMs"] });
    const limit = parseSearchLimit(options.limit);
    // The namespace holds the user's items (also those remembered without a userId while that user was active).
    const { userId: _user, ...inNamespace } = parsed;
    const filter = this.userInNamespace ? inNamespace : parsed;
    const now = Date.now();
    // One look-up answers both the search (no expired item anywhere: none in its namespace either)
    // and the background purge.
    const expiredAnywhere = sidecar.hasExpired(null, now);
    const hits = await hybridSearch({ sidecar, store, embedder, hybrid: this.config.hybrid }, query, {
      namespace: this.namespaceFor(options.userId),
      filter,
      now,
      ...(expiredAnywhere ? {} : { noneExpired: true }),
      userInNamespace: this.userInNamespace,
      limit,
      ...(options.budgetMs !== undefined ? { budgetMs: options.budgetMs } : {}),
    });
    if (expiredAnywhere) this.purgeLater(now);
    // The namespace stands for one user; an item carrying another's user_id (written by an earlier
    // version under a name it shared) is never theirs.
    const owner = options.userId ?? this.userId;
    return this.userInNamespace ? hits.filter((h) => !UserNamespaces.foreign(h.userId, owner)) : hits;
  }

  private purgeTimer: NodeJS.Timeout | null = null;
  private purging: Promise<number> | null = null;

  /** When items have expired, purge them in the background soon (never on the caller's time). */
  private purgeLater(now: number): void {
    if (this.purgeTimer || this.purging || this.readOnly || this.closed || !this.sidecar?.hasExpired(null, now)) return;
    this.purgeTimer = setTimeout(() => {
      this.purgeTimer = null;
      if (this.closed || !this.sidecar) return;
      this.purgeExpired().catch((error: unknown) => this.logger.warn(`vector memory: purging expired items failed: ${describeError(error)}`));
    }, LAZY_PURGE_DELAY_MS);
    this.purgeTimer.unref();
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
    const remote = this.remoteOrNull();
    if (remote) {
      await this.mirrorOps;
      return remote.forgetWhere(scope);
    }
    const parsed = parseForgetScope(scope);
    this.requireOpen();
    this.assertWritable();
    return this.eraseWhere(parsed);
  }

  /** How many stored items `forgetWhere(scope)` would erase now (after queued writes are stored). */
  async countWhere(scope: ForgetScope): Promise<number> {
    const remote = this.remoteOrNull();
    if (remote) {
      await this.mirrorOps;
      return remote.countWhere(scope);
    }
    const parsed = parseForgetScope(scope).filter;
    const { sidecar } = this.requireOpen();
    await this.mirrorOps;
    await this.queue.deliverAll(FLUSH_LOCK_DEADLINE_MS);
    const { namespace, filter, owner } = this.scopeOf(parsed);
    return sidecar.rowsWhere(namespace, UserNamespaces.ownedBy(sidecar.condition(filter, null), owner)).length;
  }

  private async eraseWhere(scope: ParsedForgetScope): Promise<number> {
    const parsed = scope.filter;
    const { sidecar, store } = this.requireOpen();
    const { namespace, filter, owner } = this.scopeOf(parsed);
    const ownedBy = (userId: unknown): boolean => owner === undefined || !UserNamespaces.foreign(userId, owner);
    // Deliver what is queued (a failing store holds it), then drop undelivered copies in scope.
    await this.mirrorOps;
    await this.queue.deliverAll(FLUSH_LOCK_DEADLINE_MS);
    await this.queue.settled();
    // The rows to erase and the size of the store are read from one snapshot of the sidecar, and
    // only those rows are deleted: a row another process writes meanwhile is never erased.
    const { rows, total } = sidecar.inOneRead(() => {
      const inFilter = sidecar.rowsWhere(namespace, UserNamespaces.ownedBy(sidecar.condition(filter, null), owner));
      // Erased turns take the checkpoint copies of their messages with them.
      const keys = new Set(inFilter.map((r) => r.key));
      const all = Object.values(sidecar.namespaceCounts()).reduce((sum, n) => sum + n, 0);
      return { rows: [...inFilter, ...sidecar.checkpointCopyRows([...keys]).filter((r) => !keys.has(r.key))], total: all };
    });
    checkWholeStoreErasure(scope, rows.length, total);
    const inScope = (w: PendingWrite): boolean =>
      (namespace === null || w.namespace === namespace) && ownedBy(w.metadata.user_id) && recordPasses(w.metadata, filter, Number.NEGATIVE_INFINITY, w.id);
    const discarded = this.queue.discard(inScope);
    const erased = new Set(rows.map((r) => `${r.namespace}\u0000${r.id}`));
    if (rows.length > 0) await store.eraseRows(rows, sidecar);
    // Ids only a remote store holds (another machine wrote them).
    if (parsed.ids) {
      const namespaces = namespace === null ? [...new Set([this.namespaceFor(), ...Object.keys(sidecar.namespaceCounts())])] : [namespace];
      for (const ns of namespaces) {
        for (const id of parsed.ids) {
          if (erased.has(`${ns}\u0000${id}`)) continue;
          const record = await store.fetchUnindexed(id, ns);
          if (!record || !ownedBy(record.metadata?.user_id) || !recordPasses(record.metadata ?? {}, filter, Number.NEGATIVE_INFINITY, id)) continue;
          await store.delete({ ids: [id] }, { namespace: ns });
          erased.add(`${ns}\u0000${id}`);
        }
      }
    }
    for (const w of discarded) erased.add(`${w.namespace}\u0000${w.id}`);
    this.prefetchCache.clear();
    return erased.size;
  }

  /** Delete the items that have expired from every copy; resolves to how many were deleted. */
  async purgeExpired(): Promise<number> {
    const remote = this.remoteOrNull();
    if (remote) return remote.purgeExpired();
    this.requireOpen();
    if (this.readOnly) return 0;
    this.purging ??= (async () => {
      try {
        const { sidecar, store } = this.requireOpen();
        const rows = sidecar.rowsWhere(null, { sql: "r.expires_at IS NOT NULL AND r.expires_at <= ?", params: [Date.now()] });
        if (rows.length > 0) await store.eraseRows(rows, sidecar);
        if (rows.length > 0) this.prefetchCache.clear();
        return rows.length;
      } finally {
        this.purging = null;
      }
    })();
    return this.purging;
  }

  /**
   * Change a stored item: new `content` is re-embedded and re-indexed (the old text is found by
   * neither keyword nor vector search), `tags` / `metadata` / `expiresAt` replace the old values
   * (`expiresAt: null` removes the expiry). False when no (unexpired) item has `id`.
   */
  async update(id: string, changes: MemoryUpdate): Promise<boolean> {
    const remote = this.remoteOrNull();
    if (remote) {
      await this.mirrorOps;
      return remote.update(id, changes);
    }
    if (typeof id !== "string" || id === "") throw invalidArgument("update: id must be non-empty text.");
    const parsed = parseMemoryUpdate(changes);
    const expiresAt = parsed.expiresAt;
    const { sidecar } = this.requireOpen();
    this.assertWritable();
    await this.mirrorOps;
    await this.queue.deliverAll(FLUSH_LOCK_DEADLINE_MS);
    const row = sidecar.getByIds(null, [id])[0];
    if (!row || !recordPasses(row.metadata, {}, Date.now())) return false;
    const { text: _text, ...metadata } = row.metadata;
    if (parsed.tags !== undefined) {
      if (parsed.tags.length > 0) metadata.tags = parsed.tags;
      else delete metadata.tags;
    }
    if (parsed.metadata !== undefined) {
      const user: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(parsed.metadata)) if (!RESERVED_KEYS.has(k)) user[k] = v;
      if (Object.keys(user).length > 0) metadata.extra = JSON.stringify(user);
      else delete metadata.extra;
    }
    if (expiresAt === null) delete metadata.expires_at;
    else if (expiresAt !== undefined) metadata.expires_at = expiresAt;
    const text = parsed.content ?? row.text;
    await this.writeDurable([{ id, namespace: row.namespace, text, metadata: flattenMetadata(metadata) }]);
    await this.store!.flush();
    this.prefetchCache.clear();
    return true;
  }



  /** One item by id (from the sidecar; Pinecone-only items from the default namespace). */
  async get(id: string): Promise<MemoryHit | null> {
    const remote = this.remoteOrNull();
    if (remote) return remote.get(id);
    const { sidecar, store } = this.requireOpen();
    if (typeof id !== "string" || id === "") return null;
    const now = Date.now();
    const row = sidecar.getByIds(null, [id])[0];
    if (row) return recordPasses(row.metadata, {}, now) ? toMemoryHit(row.id, row.metadata, 1, {}) : null;
    const record = await store.fetchUnindexed(id, this.namespaceFor());
    return record && recordPasses(record.metadata ?? {}, {}, now) ? toMemoryHit(id, record.metadata ?? {}, 1, {}) : null;
  }

  /** Delete an item everywhere. Returns false when no such id exists. Waits for queued writes first. */
  async forget(id: string): Promise<boolean> {
    const remote = this.remoteOrNull();
    if (remote) {
      await this.mirrorOps;
      return remote.forget(id);
    }
    this.requireOpen();
    if (typeof id !== "string" || id === "") return false;
    this.assertWritable();
    await this.drain();
    return this.forgetNow(id);
  }

  private async forgetNow(id: string): Promise<boolean> {
    const { sidecar, store } = this.requireOpen();
    await this.queue.deliverAll(FLUSH_LOCK_DEADLINE_MS);
    await store.flush();
    const rows = sidecar.getByIds(null, [id]);
    if (rows.length === 0) {
      const namespace = this.namespaceFor();
      if (!(await store.fetchUnindexed(id, namespace))) return false;
      await store.delete({ ids: [id] }, { namespace });
      return true;
    }
    // A turn takes the checkpoint copies of its messages with it (as forgetWhere does).
    const copies = sidecar.checkpointCopyRows(rows.map((r) => r.key));
    for (const row of rows) await store.removeItem(id, row.namespace, sidecar);
    for (const copy of copies) await store.removeItem(copy.id, copy.namespace, sidecar);
    if (copies.length > 0) this.prefetchCache.clear();
    return true;
  }

  /** Item counts (from the sidecar), the store and its location. */
  async stats(): Promise<MemoryStats> {
    if (this.nothingStoredAt !== null && !this.isOpen) {
      const c = this.config;
      return { items: 0, byKind: { turn: 0, fact: 0, checkpoint: 0 }, sessions: 0, location: this.nothingStoredAt, sizeBytes: 0, store: c.store, embedder: c.embedder, dimensions: c.dimensions, hybrid: c.hybrid };
    }
    const remote = this.remoteOrNull();
    if (remote) {
      const stats = await remote.stats();
      return { ...stats, store: "pinecone", dimensions: this.embedder!.dimensions, hybrid: this.config.hybrid, namespaces: { [remote.namespace]: stats.items } };
    }
    const { sidecar, store } = this.requireOpen();
    const byKind: Record<MemoryKind, number> = { turn: 0, fact: 0, checkpoint: 0 };
    for (const [kind, n] of Object.entries(sidecar.kindCounts())) {
      if (MEMORY_ITEM_KINDS.includes(kind as MemoryKind)) byKind[kind as MemoryKind] = n;
    }
    const sessions = sidecar.sessionCount();
    const namespaces = sidecar.namespaceCounts();
    return {
      items: Object.values(namespaces).reduce((a, b) => a + b, 0),
      byKind,
      sessions,
      location: store.locationLabel,
      sizeBytes: sidecar.sizeBytes(),
      store: store.kind,
      embedder: this.embedder!.id,
      dimensions: this.embedder!.dimensions,
      hybrid: this.config.hybrid,
      namespaces,
      pendingWrites: this.undeliveredWrites,
      ...(this.queue.attachedOutbox ? { refusedWrites: this.queue.attachedOutbox.refusedCount() } : {}),
      ...(this.readOnly ? { readOnly: true } : {}),
      ...store.statsDetails(),
    };
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
    const block = formatRecall(hits, { header: "## Vector memory (relevant past context)", maxChars: this.config.prefetchMaxChars, label: vectorRecallLabel });
    this.lastRecallCount = recallEntryCount(block);
    return block;
  }

  override recallStatus(): RecallStatus | null {
    return this.lastRecallCount > 0 ? { providerLabel: "vector", count: this.lastRecallCount } : null;
  }

  override systemPromptBlock(): string {
    if (!this.isOpen) return "";
    return (
      `Long-term vector memory is active (${this.remote ? "pinecone remote" : this.config.store} store, ${this.embedder?.id ?? this.config.embedder} embeddings). ` +
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
      assertOpen: () => {
        if (!this.remoteOrNull()) this.requireOpen();
      },
      sessionId: () => this.sessionId,
      search: (query, options) => this.search(query, { ...options, budgetMs: this.config.requestTimeoutMs }),
      rememberFact: (content, tags) => this.rememberFactNow(content, tags),
      forget: async (scope) => (await this.forgetWhere(scope)) > 0,
    };
    return runVectorTool(toolName, args, backend, new ToolUserScope(this.userId));
  }

  /** The remember tool: store a fact of the session's user and wait until its store has it. */
  private async rememberFactNow(content: string, tags: string[]): Promise<{ id: string; status: "stored"; warning?: string }> {
    const remote = this.remoteOrNull();
    if (remote) {
      const remoteId = remote.remember({ content, kind: "fact", tags, sessionId: this.sessionId, userId: this.userId, metadata: { source: "tool" } });
      await remote.drain();
      const refused = remote.outbox.refused().find((e) => e.id === remoteId);
      if (refused) throw new HermesMemoryError({ code: "STORAGE_FAILED", message: `Pinecone refused this memory for its content (${refused.reason.slice(0, 300)}); it was not stored.` });
      return { id: remoteId, status: "stored" };
    }
    this.requireOpen();
    const id = `fact-${randomUUID()}`;
    const unembedded = await this.writeDurable([this.buildWrite({ content, kind: "fact", tags, sessionId: this.sessionId, userId: this.userId }, id, { source: "tool" })]);
    if (unembedded.has(id)) return { id, status: "stored", warning: "The embedder refused this text, so it is stored without a vector: keyword search finds it, meaning-based search does not." };
    return { id, status: "stored" };
  }

  // ---------------------------------------------------------------------------------------------
  // maintenance (CLI)

  /**
   * Re-embed every stored item with the configured embedder into the configured store (repairs
   * `EMBEDDING_DIMENSION_MISMATCH`; moves everything after switching `store`). Text comes from
   * the sidecar, so nothing is lost. Items whose text is still refused for its content stay
   * without a vector (keyword search finds them). Returns the number of items indexed and of
   * those left without a vector (`unembedded`).
   */
  async reindex(onProgress?: ProgressCallback): Promise<{ items: number; namespaces: number; unembedded: number }> {
    const { sidecar, store, embedder } = this.requireOpen();
    this.assertWritable();
    await this.drain();
    return reindexAll({ sidecar, store, embedder }, () => sidecar.setMeta(this.identityKey(), this.currentIdentity()), onProgress);
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
    const { sidecar, embedder } = this.requireOpen();
    this.assertWritable();
    if (this.config.store !== "pinecone") {
      throw invalidArgument("reindex --to remote needs memory.vector.store: pinecone (and the Pinecone index settings); the local store has no remote layout.");
    }
    if (typeof namespace !== "string" || namespace === "") {
      throw invalidArgument("reindex --to remote needs the namespace every machine will share: set memory.vector.pinecone_namespace or pass --profile <name>.");
    }
    await this.drain();
    const remote = await this.remoteStore(embedder, namespace, path.join(this.hermesHome, VECTOR_DIR, REMOTE_OUTBOX_FILE));
    try {
      const items = await copyToRemote(sidecar, remote, namespaceUserReader(sidecar, this.config.pineconeNamespaceTemplate, this.profile), onProgress);
      sidecar.setMeta("pinecone_layout", "remote");
      sidecar.setMeta(`index:pinecone-remote:${this.config.pineconeIndex}/${namespace}`, `${embedder.id}/${embedder.dimensions}/${SPARSE_ENCODER_ID}`);
      return { items, namespace };
    } finally {
      await remote.close();
    }
  }

  /** Every stored item, for `hermes-memory vector export` (JSON Lines). */
  *exportItems(): Generator<ExportedItem> {
    yield* exportAll(this.requireOpen().sidecar);
  }

  /** Import exported items, re-embedded with the configured embedder. Ids are kept; namespaces follow this profile. */
  async importItems(items: Iterable<ExportedItem> | AsyncIterable<ExportedItem>, onProgress?: ProgressCallback, total = 0): Promise<number> {
    this.requireOpen();
    this.assertWritable();
    const done = await importAll(
      items,
      {
        // Namespaces are re-derived for this profile: an export moved to another home lands in that
        // home's namespaces (per user), not in the exporting profile's.
        namespaceFor: (userId) => this.namespaceFor(userId),
        write: async (batch) => void (await this.writeDurable(batch)),
      },
      onProgress,
      total,
    );
    await this.store!.flush();
    return done;
  }

  /**
   * Flush queued writes, save the index, close files. Idempotent. Throws `STORAGE_FAILED` (after
   * closing everything) when accepted writes could not be stored: how many, and whether they are
   * kept in the outbox (re-sent on the next start) or lost with the process.
   */
  override async shutdown(): Promise<void> {
    if (this.closed) return;
    if (this.remote) return this.shutdownRemote(this.remote);
    let failure: unknown = null;
    // Writes dropped past the bound and not reported by a flush() yet are lost with the rest.
    const dropped = this.queue.dropped;
    try {
      if (!this.inspecting) await this.flush();
    } catch (error) {
      failure = error;
    }
    const lost = this.queue.inMemory + dropped;
    const kept = this.queue.inOutbox;
    const outbox = this.queue.attachedOutbox;
    const refused = outbox ? refusedWritesError(outbox) : null;
    this.closed = true;
    this.queue.stop();
    if (this.purgeTimer) clearTimeout(this.purgeTimer);
    this.purgeTimer = null;
    await this.purging?.catch(() => undefined);
    await this.namespaces?.settled();
    try {
      await this.store?.close();
    } catch (error) {
      failure ??= error;
    }
    this.sidecar?.close();
    this.queue.attachedOutbox?.close();
    await this.embedder?.close?.();
    this.store = null;
    this.sidecar = null;
    this.namespaces = null;
    this.queue.attachOutbox(null);
    if (!failure) return;
    // Writes set aside because their store refused their content: flush() named them.
    if (lost === 0 && kept === 0 && refused) throw refused;
    if (lost === 0 && kept === 0) {
      // Only the index file failed to save: the sidecar holds everything and the next start rebuilds it.
      throw new HermesMemoryError({
        code: "STORAGE_FAILED",
        message: `vector memory shutdown: the index file was not saved (${describeError(failure)}). Nothing is lost: the next start rebuilds it from the sidecar.`,
        cause: failure,
      });
    }
    const parts = [
      kept > 0 ? `${kept} writes not acknowledged by Pinecone are kept in the outbox ${path.join(this.hermesHome, VECTOR_DIR, OUTBOX_FILE)} and re-sent on the next start` : "",
      lost > 0 ? `${lost} accepted writes could not be stored and are lost` : "",
    ].filter(Boolean);
    throw new HermesMemoryError({ code: "STORAGE_FAILED", message: `vector memory shutdown: ${parts.join("; ")} (${describeError(this.queue.lastFailure ?? failure)}).`, cause: failure });
  }

  /**
   * Remote layout: wait for mirrored writes, send the outbox once more and close it. Throws
   * `STORAGE_FAILED` (after closing) naming how many writes Pinecone did not acknowledge; they
   * stay in the outbox and are re-sent on the next start.
   */
  private async shutdownRemote(remote: PineconeRemoteMemory): Promise<void> {
    await this.mirrorOps;
    this.remoteHeld.retry(remote);
    const count = this.remoteHeld.count + this.remoteHeld.dropped;
    const lost = this.remoteHeld.error();
    this.closed = true;
    // An inspection accepted no write: what the outbox holds is the next start's to send and report.
    const left = await remote.close().then((waiting) => (this.inspecting ? 0 : waiting));
    await this.embedder?.close?.();
    this.remote = null;
    if (left > 0 || lost) {
      const parts = [
        left > 0 ? `${left} writes not acknowledged by Pinecone are kept in the outbox ${remote.outbox.file} and re-sent on the next start` : "",
        lost ? `${count} accepted writes the outbox could not take are lost (${describeError(lost.cause)})` : "",
      ].filter(Boolean);
      throw new HermesMemoryError({ code: "STORAGE_FAILED", message: `vector memory shutdown: ${parts.join("; ")}.`, ...(lost ? { cause: lost.cause } : {}) });
    }
    const refused = remote.refusedWrites();
    if (refused && !this.inspecting) throw refused;
  }
}

/** Recall entry label of this provider: `kind, YYYY-MM-DD`. */
function vectorRecallLabel(hit: MemoryHit): string {
  const date = hit.createdAt.slice(0, 10);
  return `${hit.kind}${date ? `, ${date}` : ""}`;
}

/** `initialize` found the provider shut down after waiting (for a lock, the embedder, the store). */
function shutDownWhileStarting(): HermesMemoryError {
  return new HermesMemoryError({ code: "PROVIDER_UNAVAILABLE", message: "The vector memory provider was shut down while it was starting; initialise a new one." });
}
