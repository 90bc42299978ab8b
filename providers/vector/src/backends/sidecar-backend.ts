/**
 * The sidecar layouts: text, metadata and the keyword index live in the SQLite sidecar under
 * `$HERMES_HOME/memory/vector/`; vectors live in the local usearch index (`store: local`) or in
 * Pinecone (`store: pinecone`, with an outbox of writes Pinecone has not acknowledged). Background
 * writes go through the write queue, which hands each batch to `storeBatch`.
 */
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import {
  HermesMemoryError,
  describeError,
  type ForgetScope,
  type MemoryHit,
  type MemoryItem,
  type MemoryKind,
  type MemorySearchOptions,
  type MemoryStats,
  type MemoryUpdate,
} from "@hermes/memory-core";
import {
  checkWholeStoreErasure,
  MEMORY_ITEM_KINDS,
  parseForgetScope,
  parseMemoryFilter,
  parseMemoryItem,
  parseMemoryUpdate,
  parseSearchLimit,
  type ParsedForgetScope,
  type ParsedMemoryFilter,
} from "@hermes/memory-provider-kit";
import { isBusyError, sqliteLockWaitMs } from "@hermes/memory-provider-kit/sqlite";
import { isLexicalEmbedder, type Embedder } from "../embedders/embedder.js";
import { LocalVectorStore } from "../local/local-vector-store.js";
import { prepareVectorDirectory, storageWriteError } from "../local/store-files.js";
import { Sidecar } from "../local/sidecar.js";
import { UserNamespaces } from "../local/user-namespaces.js";
import type { VectorMetadata } from "../metadata-filter.js";
import { Outbox, refusedWritesError } from "../pinecone/outbox.js";
import { PineconeVectorStore } from "../pinecone/pinecone-vector-store.js";
import { isolateRefused } from "../retry-policy.js";
import { hybridSearch, recordPasses, toMemoryHit } from "../search/hybrid-search.js";
import {
  invalidArgument,
  notInitialisedError,
  OUTBOX_FILE,
  REMOTE_OUTBOX_FILE,
  shutDownWhileStarting,
  VECTOR_DIR,
  type BackendHost,
  type CheckpointWrite,
  type StoredFact,
  type VectorBackend,
} from "./backend.js";
import { embedderIdentity, embedderIdentityKey, verifyEmbedderIdentity } from "./index-identity.js";
import { eraseRowsInSteps, selectRowsInSteps } from "./stepped-erasure.js";
import {
  checkRemoteMigration,
  exportAll,
  importAll,
  migrateToRemoteLayout,
  reindexAll,
  type ExportedItem,
  type PendingWrite,
  type ProgressCallback,
} from "./maintenance.js";
import type { VectorStore } from "./vector-store.js";
import { pendingWrite, updatedMetadata } from "./pending-writes.js";
import { shutdownFailureError, WriteQueue, type BatchWriter } from "./write-queue.js";

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

/** How a sidecar layout is opened. */
export interface SidecarOpenRequest {
  /** Check that the recorded embedder is the configured one (`EMBEDDING_DIMENSION_MISMATCH` otherwise). */
  verifyIdentity: boolean;
  /** Drop local vectors of another dimension (reindex rebuilds them) instead of throwing. */
  allowReset?: boolean;
}

/** See the module comment. */
export class SidecarBackend implements VectorBackend, BatchWriter {
  /** Accepted writes on their way to the store (outbox for stores that acknowledge remotely). */
  private readonly queue: WriteQueue;
  /** The sidecar's namespaces as per-user boundaries (migrated from earlier versions at a writable open). */
  private namespaces: UserNamespaces | null = null;
  private sidecar: Sidecar | null = null;
  private store: VectorStore | null = null;
  private purgeTimer: NodeJS.Timeout | null = null;
  private purging: Promise<number> | null = null;

  /**
   * @param readOnly `$HERMES_HOME` is not writable: opened read-only, search works, writes throw.
   */
  private constructor(
    private readonly host: BackendHost,
    readonly embedder: Embedder,
    private readonly readOnly: boolean,
  ) {
    this.queue = new WriteQueue({
      writer: this,
      logger: host.logger,
      isClosed: () => host.isClosed(),
      isTransient: lockedByAnotherProcess,
    });
  }

  /**
   * Open the sidecar, the store, and (Pinecone store) the outbox in `dir`; re-send what the outbox
   * holds. Throws `EMBEDDING_DIMENSION_MISMATCH` when the index was built by another embedder.
   */
  static async open(host: BackendHost, dir: string, request: SidecarOpenRequest): Promise<SidecarBackend> {
    const sidecarFile = path.join(dir, "sidecar.sqlite");
    const { readOnly } = prepareVectorDirectory(dir, sidecarFile);
    const backend = new SidecarBackend(host, await host.createEmbedder(), readOnly);
    await backend.openStorage(dir, sidecarFile, request);
    return backend;
  }

  private async openStorage(dir: string, sidecarFile: string, request: SidecarOpenRequest): Promise<void> {
    const { host } = this;
    const config = host.config();
    const inspecting = host.inspecting();
    // The sidecar and the outbox share one wait for another process's lock, so a start-up stays
    // inside it (and inside the manager's bound on initialize).
    const lockWait = sqliteLockWaitMs();
    const opening = Date.now();
    const sidecar = await Sidecar.openAsync(sidecarFile, {
      readOnly: this.readOnly,
      ...(config.searchThread ? {} : { ranker: { helper: false } }),
    });
    if (host.isClosed()) {
      // Shut down while the open waited for another process's lock: nothing is left open.
      sidecar.close();
      throw shutDownWhileStarting();
    }
    this.sidecar = sidecar;
    if (this.readOnly)
      host.logger.warn(`vector memory: ${dir} is read-only; recall works, new memories cannot be saved until it is writable.`);
    // Profiles share one Pinecone index, so each home needs its own namespace even when the host
    // does not name the profile. The first name seen (or a minted id) is kept in the sidecar, so
    // it survives moving the home and the CLI finds the same namespace.
    try {
      const known = sidecar.getMeta("profile_id");
      if (!known && !this.readOnly) sidecar.setMeta("profile_id", host.profile() || `profile-${randomUUID().slice(0, 8)}`);
      if (!host.profile()) host.setProfile(sidecar.getMeta("profile_id") ?? "profile-readonly");
      const namespaces = (this.namespaces = UserNamespaces.open(sidecar, config.pineconeNamespaceTemplate, {
        pinecone: config.store === "pinecone",
        logger: host.logger,
        inspect: inspecting,
      }));
      if (request.verifyIdentity) {
        const localDirectory = path.join(host.hermesHome(), VECTOR_DIR);
        verifyEmbedderIdentity(sidecar, config, this.embedder, { localDirectory, readOnly: this.readOnly, logger: host.logger });
      }
      const store = (this.store = await this.createStore(request.allowReset ? "reset" : "throw"));
      if (store.needsOutbox && !this.readOnly && !(inspecting && !fs.existsSync(path.join(dir, OUTBOX_FILE)))) {
        this.queue.attachOutbox(
          await Outbox.openAsync(path.join(dir, OUTBOX_FILE), { lockWaitMs: Math.max(0, lockWait - (Date.now() - opening)) }),
        );
        namespaces.relocateQueued(this.queue.attachedOutbox!);
      }
      if (host.isClosed()) throw shutDownWhileStarting();
      if (!inspecting) namespaces.moveVectors(store, () => !host.isClosed() && this.store === store);
    } catch (error) {
      this.queue.attachedOutbox?.close();
      this.queue.attachOutbox(null);
      await this.namespaces?.settled();
      this.namespaces = null;
      sidecar.close();
      this.sidecar = null;
      await this.store?.close().catch(() => undefined);
      this.store = null;
      // Everything opened here is closed again, so a later initialize() starts over.
      throw String((error as { code?: unknown } | null)?.code ?? "").startsWith("SQLITE_")
        ? storageWriteError(`the vector sidecar ${sidecarFile} while starting`, error)
        : error;
    }
    const waiting = this.queue.inOutbox;
    if (waiting > 0 && !inspecting) {
      host.logger.info(
        `vector memory: re-sending ${waiting} writes Pinecone has not acknowledged yet (outbox ${this.queue.attachedOutbox!.file}).`,
      );
      this.queue
        .resendOutbox()
        .catch((error: unknown) => host.logger.warn(`vector memory: re-sending the outbox failed: ${describeError(error)}`));
    }
  }

  private async createStore(onMismatch: "throw" | "reset"): Promise<VectorStore> {
    const c = this.host.config();
    const dimensions = this.embedder.dimensions;
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
      directory: path.join(this.host.hermesHome(), VECTOR_DIR),
      sidecar: this.sidecar!,
      dimensions,
      ...(c.exactThreshold !== undefined ? { exactThreshold: c.exactThreshold } : {}),
      lexicalVectors: isLexicalEmbedder(this.embedder.id),
      onDimensionMismatch: onMismatch,
      // An inspection rebuilds a missing or stale index in memory only, as a read-only home does.
      readOnly: this.readOnly || this.host.inspecting(),
      logger: this.host.logger,
    });
  }

  get storeLabel(): string {
    return this.host.config().store;
  }

  get remoteMemory(): null {
    return null;
  }

  get undeliveredWrites(): number {
    return this.queue.undelivered;
  }

  get isOpen(): boolean {
    return this.sidecar !== null;
  }

  /** Items per background batch, read at each batch (BatchWriter). */
  get batchSize(): number {
    return this.host.config().writeBatchSize;
  }

  private requireOpen(): { sidecar: Sidecar; store: VectorStore; embedder: Embedder } {
    if (!this.sidecar || !this.store) throw notInitialisedError();
    return { sidecar: this.sidecar, store: this.store, embedder: this.embedder };
  }

  assertOpen(): void {
    this.requireOpen();
  }

  private assertWritable(): void {
    if (this.readOnly) {
      throw new HermesMemoryError({
        code: "STORAGE_FAILED",
        message: `The vector memory at ${path.join(this.host.hermesHome(), VECTOR_DIR)} is read-only ($HERMES_HOME is not writable): search works, nothing can be saved. Make the directory writable and restart.`,
      });
    }
  }

  /**
   * Keep the keyword ranker's row lengths in memory, 2,000 rows per step on a timer, until every
   * stored row's length is kept. Called after opening and after each written batch (then only the
   * new rows are read). Searches meanwhile read the lengths they need. Never throws.
   */
  warmUp(): void {
    const sidecar = this.sidecar;
    if (!sidecar || this.readOnly) return;
    sidecar.warmRankerInBackground(
      () => this.sidecar === sidecar && !this.host.isClosed(),
      // Only an optimisation: searches read the lengths themselves.
      (error) => this.host.logger.warn(`vector memory: reading the keyword index's row lengths failed: ${describeError(error)}`),
    );
  }

  // ---------------------------------------------------------------------------------------------
  // writes

  /** Whether namespaces hold one user each (the template names `{user}`; the sidecar's names are this version's), so a namespace stands for its user. */
  private get userInNamespace(): boolean {
    return this.host.config().pineconeNamespaceTemplate.includes("{user}") && this.namespaces?.current !== false;
  }

  private buildWrite(item: MemoryItem, id: string, extra: VectorMetadata = {}): PendingWrite {
    return pendingWrite(item, id, this.host.namespaceFor(item.userId), extra);
  }

  /** A read-only home queues the turn all the same: its write fails, the queue keeps it and warns once, and flush() rejects, so a turn that cannot be stored is never acknowledged. */
  queueTurn(item: MemoryItem): void {
    this.queue.enqueue([this.buildWrite(item, `turn-${randomUUID()}`)]);
  }

  prepareMirroredFact(item: MemoryItem, key: string): () => void {
    const write = this.buildWrite(item, key, { source: "builtin" });
    // The new fact is queued even when removing the old one failed: then it is stored, or flush()
    // says it is not, instead of being skipped behind a warning.
    return () => this.queue.enqueue([write]);
  }

  forgetMirroredFact(key: string): Promise<boolean> {
    return this.forgetNow(key);
  }

  async storeCheckpoints(checkpoints: CheckpointWrite[]): Promise<void> {
    const { sidecar } = this.requireOpen();
    const namespace = this.host.namespaceFor(this.host.userId());
    const sessionKeys = checkpoints.flatMap((c) => (c.sessionKey ? [c.sessionKey] : []));
    const earlier = new Set(
      sidecar
        .getByIds(null, sessionKeys)
        .filter((row) => row.namespace === namespace)
        .map((row) => row.id),
    );
    const writes = checkpoints
      .filter((c) => !c.sessionKey || !earlier.has(c.sessionKey))
      .map(({ item, key, metadata }) => this.buildWrite(item, key, metadata));
    for (let i = 0; i < writes.length; i += 64) await this.writeDurable(writes.slice(i, i + 64));
    await this.store!.flush();
  }

  remember(item: MemoryItem): string {
    this.requireOpen();
    this.assertWritable();
    // Validated before anything is queued: an item accepted here can always be embedded and stored,
    // so a malformed one never holds up the writes queued with it.
    const { content, kind, sessionId, userId: named, tags, metadata, expiresAt } = parseMemoryItem(item);
    // An item without a user belongs to the session's user: where a namespace stands for one user it carries their user_id too.
    const userId = named ?? (this.userInNamespace ? this.host.userId() : undefined);
    const id = `${kind}-${randomUUID()}`;
    this.queue.enqueue([
      this.buildWrite({ content, kind, sessionId, userId, tags, metadata, ...(expiresAt !== null ? { expiresAt } : {}) }, id),
    ]);
    return id;
  }

  async rememberFact(content: string, tags: string[]): Promise<StoredFact> {
    this.requireOpen();
    const id = `fact-${randomUUID()}`;
    const unembedded = await this.writeDurable([
      this.buildWrite({ content, kind: "fact", tags, sessionId: this.host.sessionId(), userId: this.host.userId() }, id, {
        source: "tool",
      }),
    ]);
    if (unembedded.has(id))
      return {
        id,
        status: "stored",
        warning:
          "The embedder refused this text, so it is stored without a vector: keyword search finds it, meaning-based search does not.",
      };
    return { id, status: "stored" };
  }

  /** A queued batch (BatchWriter): stored now, waiting only briefly on the thread for another process's lock. */
  storeBatch(batch: PendingWrite[]): Promise<void> {
    return this.writeNow(batch, { lockWaitMs: QUEUED_WRITE_LOCK_WAIT_MS });
  }

  /** Queued writes whose text the embedder refused (BatchWriter): stored without vectors. */
  storeWithoutVectors(refused: Array<{ write: PendingWrite; error: unknown }>): Promise<void> {
    return this.writeWithoutVectors(refused, QUEUED_WRITE_LOCK_WAIT_MS);
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
      const records = indexes.map((i) => ({
        id: batch[i]!.id,
        vector: vectors[i]!,
        metadata: { ...batch[i]!.metadata, text: batch[i]!.text },
      }));
      const rows = indexes.map((i) => ({ id: batch[i]!.id, text: batch[i]!.text, metadata: batch[i]!.metadata, vector: null }));
      await store.writeItems(
        {
          namespace,
          records,
          rows,
          durable: options.durable === true,
          ...(options.lockWaitMs === undefined ? {} : { lockWaitMs: options.lockWaitMs }),
        },
        sidecar,
      );
    }
    this.queue.noteAccepted();
    this.warmUp();
    try {
      const identityKey = embedderIdentityKey(this.host.config());
      if (!sidecar.getMeta(identityKey)) {
        const record = () => sidecar.setMeta(identityKey, embedderIdentity(embedder));
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
   * refused writes are found by `isolateRefused` and stored without a vector, as the background
   * queue does. While nothing was stored in this process yet, a refusal may be a
   * misconfiguration instead, so it is thrown unless another write of the batch went through.
   * Returns the ids stored without a vector.
   */
  private async writeDurable(batch: PendingWrite[]): Promise<Set<string>> {
    const { refused } = await isolateRefused(batch, (part) => this.writeNow(part, { durable: true }), {
      accepted: this.queue.storeAccepted,
    });
    if (refused.length > 0) await this.writeWithoutVectors(refused.map(({ item, error }) => ({ write: item, error })));
    return new Set(refused.map(({ item }) => item.id));
  }

  /**
   * Store writes whose text the embedder refused for its content without a vector: text, metadata
   * and keyword index are kept (keyword search finds them, `hermes-memory vector reindex` tries to
   * embed them again), and each is named in a warning with the refusal.
   */
  private async writeWithoutVectors(refused: Array<{ write: PendingWrite; error: unknown }>, lockWaitMs?: number): Promise<void> {
    const { sidecar, store } = this.requireOpen();
    this.assertWritable();
    const byNamespace = new Map<string, PendingWrite[]>();
    for (const { write } of refused) byNamespace.set(write.namespace, [...(byNamespace.get(write.namespace) ?? []), write]);
    for (const [namespace, writes] of byNamespace) {
      await store.storeWithoutVectors(
        namespace,
        writes.map((w) => ({ id: w.id, text: w.text, metadata: w.metadata, vector: null })),
        sidecar,
        lockWaitMs,
      );
    }
    for (const { write, error } of refused) {
      this.host.logger.warn(
        `vector memory: item ${JSON.stringify(write.id.slice(0, 80))} is stored without a vector: the embedder refused its text (${describeError(error).slice(0, 300)}). Keyword search finds it; \`hermes-memory vector reindex\` tries to embed it again.`,
      );
    }
  }

  /**
   * Deliver what is queued, re-trying writes that failed before (outbox, memory). Throws
   * `STORAGE_FAILED`, naming how many writes are pending and why, while any accepted write is not
   * acknowledged by its store.
   */
  async drain(): Promise<void> {
    await this.host.mirrored();
    await this.namespaces?.settled();
    this.queue.requeueHeld();
    await this.queue.deliverAll(FLUSH_LOCK_DEADLINE_MS, { resendOutbox: true });
    await this.store?.flush();
    if (this.queue.hasUndelivered || this.queue.dropped > 0) throw this.queue.undeliveredError();
  }

  refusedWrites(): HermesMemoryError | null {
    const outbox = this.queue.attachedOutbox;
    return outbox ? refusedWritesError(outbox) : null;
  }

  // ---------------------------------------------------------------------------------------------
  // reads

  /** The namespace a filter's user maps to, the filter left to check inside it (every namespace: `null`), and the user it stands for. */
  private scopeOf(filter: ParsedMemoryFilter): { namespace: string | null; filter: ParsedMemoryFilter; owner?: string } {
    if (filter.userId === undefined || !this.userInNamespace) return { namespace: null, filter };
    const { userId, ...rest } = filter;
    return { namespace: this.host.namespaceFor(userId), filter: rest, owner: userId };
  }

  /**
   * Hybrid (or pure vector) search, best first (see `hybridSearch`). Hits carry
   * `metadata.scores = {vector, bm25, fused}` (`null` = not found by that ranking).
   */
  async search(query: string, options: MemorySearchOptions & { budgetMs?: number }): Promise<MemoryHit[]> {
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
    const hits = await hybridSearch({ sidecar, store, embedder, hybrid: this.host.config().hybrid }, query, {
      namespace: this.host.namespaceFor(options.userId),
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
    const owner = options.userId ?? this.host.userId();
    return this.userInNamespace ? hits.filter((h) => !UserNamespaces.foreign(h.userId, owner)) : hits;
  }

  /** When items have expired, purge them in the background soon (never on the caller's time). */
  private purgeLater(now: number): void {
    if (this.purgeTimer || this.purging || this.readOnly || this.host.isClosed() || !this.sidecar?.hasExpired(null, now)) return;
    this.purgeTimer = setTimeout(() => {
      this.purgeTimer = null;
      if (this.host.isClosed() || !this.sidecar) return;
      this.purgeExpired().catch((error: unknown) =>
        this.host.logger.warn(`vector memory: purging expired items failed: ${describeError(error)}`),
      );
    }, LAZY_PURGE_DELAY_MS);
    this.purgeTimer.unref();
  }

  /** One item by id (from the sidecar; Pinecone-only items from the default namespace). */
  async get(id: string): Promise<MemoryHit | null> {
    const { sidecar, store } = this.requireOpen();
    if (typeof id !== "string" || id === "") return null;
    const now = Date.now();
    const row = sidecar.getByIds(null, [id])[0];
    if (row) return recordPasses(row.metadata, {}, now) ? toMemoryHit(row.id, row.metadata, 1, {}) : null;
    const record = await store.fetchUnindexed(id, this.host.namespaceFor());
    return record && recordPasses(record.metadata ?? {}, {}, now) ? toMemoryHit(id, record.metadata ?? {}, 1, {}) : null;
  }

  async stats(): Promise<MemoryStats> {
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
      embedder: this.embedder.id,
      dimensions: this.embedder.dimensions,
      hybrid: this.host.config().hybrid,
      namespaces,
      pendingWrites: this.undeliveredWrites,
      ...(this.queue.attachedOutbox ? { refusedWrites: this.queue.attachedOutbox.refusedCount() } : {}),
      ...(this.readOnly ? { readOnly: true } : {}),
      ...store.statsDetails(),
    };
  }

  // ---------------------------------------------------------------------------------------------
  // erasure and update

  async forgetWhere(scope: ForgetScope): Promise<number> {
    const parsed = parseForgetScope(scope);
    this.requireOpen();
    this.assertWritable();
    return this.eraseWhere(parsed);
  }

  async countWhere(scope: ForgetScope): Promise<number> {
    const parsed = parseForgetScope(scope).filter;
    const { sidecar } = this.requireOpen();
    await this.host.mirrored();
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
    await this.host.mirrored();
    await this.queue.deliverAll(FLUSH_LOCK_DEADLINE_MS);
    await this.queue.settled();
    // The rows to erase and the size of the store are read a range of keys at a time (each range
    // in one snapshot), and only those rows are deleted: a row another process writes meanwhile is
    // never erased. Erased turns take the checkpoint copies of their messages with them.
    const { rows, total } = await selectRowsInSteps(sidecar, namespace, UserNamespaces.ownedBy(sidecar.condition(filter, null), owner));
    const keys = new Set(rows.map((r) => r.key));
    const copies = scope.confirmAll || parsed.ids ? 0 : sidecar.checkpointCopyRows([...keys]).filter((r) => !keys.has(r.key)).length;
    checkWholeStoreErasure(scope, rows.length + copies, total);
    const inScope = (w: PendingWrite): boolean =>
      (namespace === null || w.namespace === namespace) &&
      ownedBy(w.metadata.user_id) &&
      recordPasses(w.metadata, filter, Number.NEGATIVE_INFINITY, w.id);
    const discarded = this.queue.discard(inScope);
    // In steps, each with the checkpoint copies of its turns: the event loop runs between them.
    const erased = new Set((await eraseRowsInSteps(store, sidecar, rows, true)).map((r) => `${r.namespace}\u0000${r.id}`));
    // Ids only a remote store holds (another machine wrote them).
    if (parsed.ids) {
      const namespaces =
        namespace === null ? [...new Set([this.host.namespaceFor(), ...Object.keys(sidecar.namespaceCounts())])] : [namespace];
      for (const ns of namespaces) {
        for (const id of parsed.ids) {
          if (erased.has(`${ns}\u0000${id}`)) continue;
          const record = await store.fetchUnindexed(id, ns);
          if (!record || !ownedBy(record.metadata?.user_id) || !recordPasses(record.metadata ?? {}, filter, Number.NEGATIVE_INFINITY, id))
            continue;
          await store.delete({ ids: [id] }, { namespace: ns });
          erased.add(`${ns}\u0000${id}`);
        }
      }
    }
    for (const w of discarded) erased.add(`${w.namespace}\u0000${w.id}`);
    this.host.clearRecall();
    return erased.size;
  }

  async purgeExpired(): Promise<number> {
    this.requireOpen();
    if (this.readOnly) return 0;
    this.purging ??= (async () => {
      try {
        const { sidecar, store } = this.requireOpen();
        const expired = sidecar.rowsWhere(null, { sql: "r.expires_at IS NOT NULL AND r.expires_at <= ?", params: [Date.now()] });
        const rows = expired.length > 0 ? await eraseRowsInSteps(store, sidecar, expired, false) : [];
        if (rows.length > 0) this.host.clearRecall();
        return rows.length;
      } finally {
        this.purging = null;
      }
    })();
    return this.purging;
  }

  async update(id: string, changes: MemoryUpdate): Promise<boolean> {
    if (typeof id !== "string" || id === "") throw invalidArgument("update: id must be non-empty text.");
    const parsed = parseMemoryUpdate(changes);
    const { sidecar } = this.requireOpen();
    this.assertWritable();
    await this.host.mirrored();
    await this.queue.deliverAll(FLUSH_LOCK_DEADLINE_MS);
    const row = sidecar.getByIds(null, [id])[0];
    if (!row || !recordPasses(row.metadata, {}, Date.now())) return false;
    const text = parsed.content ?? row.text;
    await this.writeDurable([{ id, namespace: row.namespace, text, metadata: updatedMetadata(row.metadata, parsed) }]);
    await this.store!.flush();
    this.host.clearRecall();
    return true;
  }

  async forget(id: string): Promise<boolean> {
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
      const namespace = this.host.namespaceFor();
      if (!(await store.fetchUnindexed(id, namespace))) return false;
      await store.delete({ ids: [id] }, { namespace });
      return true;
    }
    // A turn takes the checkpoint copies of its messages with it (as forgetWhere does).
    const copies = sidecar.checkpointCopyRows(rows.map((r) => r.key));
    for (const row of rows) await store.removeItem(id, row.namespace, sidecar);
    for (const copy of copies) await store.removeItem(copy.id, copy.namespace, sidecar);
    if (copies.length > 0) this.host.clearRecall();
    return true;
  }

  // ---------------------------------------------------------------------------------------------
  // maintenance (CLI)

  async reindex(onProgress?: ProgressCallback): Promise<{ items: number; namespaces: number; unembedded: number }> {
    const { sidecar, store, embedder } = this.requireOpen();
    this.assertWritable();
    await this.drain();
    const recordIdentity = () => sidecar.setMeta(embedderIdentityKey(this.host.config()), embedderIdentity(embedder));
    return reindexAll({ sidecar, store, embedder }, recordIdentity, onProgress);
  }

  async migrateToRemote(namespace: string, onProgress?: ProgressCallback): Promise<{ items: number; namespace: string }> {
    const { sidecar, embedder } = this.requireOpen();
    this.assertWritable();
    const config = this.host.config();
    checkRemoteMigration(config, namespace);
    await this.drain();
    const outboxFile = path.join(this.host.hermesHome(), VECTOR_DIR, REMOTE_OUTBOX_FILE);
    const target = { namespace, outboxFile, inspecting: this.host.inspecting(), profile: this.host.profile() };
    return migrateToRemoteLayout(sidecar, config, embedder, target, onProgress);
  }

  *exportItems(): Generator<ExportedItem> {
    yield* exportAll(this.requireOpen().sidecar);
  }

  async importItems(
    items: Iterable<ExportedItem> | AsyncIterable<ExportedItem>,
    onProgress?: ProgressCallback,
    total = 0,
  ): Promise<number> {
    this.requireOpen();
    this.assertWritable();
    const store = this.store!;
    const importing = (): Promise<number> =>
      importAll(
        items,
        {
          // Namespaces are re-derived for this profile: an export moved to another home lands in that
          // home's namespaces (per user), not in the exporting profile's.
          namespaceFor: (userId) => this.host.namespaceFor(userId),
          write: async (batch) => void (await this.writeDurable(batch)),
        },
        onProgress,
        total,
      );
    const done = await (store.holdingSaves ? store.holdingSaves(importing) : importing());
    await store.flush();
    return done;
  }

  // ---------------------------------------------------------------------------------------------
  // shutdown

  /**
   * Flush queued writes, save the index, close files. Throws `STORAGE_FAILED` (after closing
   * everything) when accepted writes could not be stored: how many, and whether they are kept in
   * the outbox (re-sent on the next start) or lost with the process.
   */
  async shutdown(): Promise<void> {
    let failure: unknown = null;
    // Writes dropped past the bound and not reported by a flush() yet are lost with the rest.
    const dropped = this.queue.dropped;
    try {
      if (!this.host.inspecting()) {
        await this.drain();
        const refused = this.refusedWrites();
        if (refused) throw refused;
      }
    } catch (error) {
      failure = error;
    }
    const lost = this.queue.inMemory + dropped;
    const kept = this.queue.inOutbox;
    const outbox = this.queue.attachedOutbox;
    const refused = outbox ? refusedWritesError(outbox) : null;
    this.host.markClosed();
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
    await this.embedder.close?.();
    this.store = null;
    this.sidecar = null;
    this.namespaces = null;
    this.queue.attachOutbox(null);
    if (!failure) return;
    const outboxFile = path.join(this.host.hermesHome(), VECTOR_DIR, OUTBOX_FILE);
    throw shutdownFailureError(failure, { lost, kept, refused, outboxFile, lastFailure: this.queue.lastFailure });
  }
}
