/**
 * The remote layout (`pinecone_layout: remote`): every item lives in Pinecone as a sparse–dense
 * record; the only local state is the outbox of writes Pinecone has not acknowledged yet. Turns and
 * mirrored facts that the outbox cannot take are kept in memory (`RemoteHeldWrites`).
 */
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
import type { Embedder } from "../embedders/embedder.js";
import { storageWriteError } from "../local/store-files.js";
import { PineconeRemoteMemory } from "../pinecone/pinecone-remote-store.js";
import { itemIdPrefix } from "../pinecone/remote-records.js";
import { RemoteHeldWrites } from "../pinecone/remote-held-writes.js";
import { renderNamespace, type VectorConfig } from "../vector-config.js";
import {
  invalidArgument,
  notInitialisedError,
  REMOTE_OUTBOX_FILE,
  shutDownWhileStarting,
  type BackendHost,
  type CheckpointWrite,
  type StoredFact,
  type VectorBackend,
} from "./backend.js";
import type { ExportedItem, ProgressCallback } from "./maintenance.js";

/** The remote layout's store over the configured Pinecone index, in `namespace`. */
export function openRemoteMemory(
  config: VectorConfig,
  embedder: Embedder,
  namespace: string,
  outboxFile: string,
  inspectOnly: boolean,
): Promise<PineconeRemoteMemory> {
  const c = config;
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
    // The weight of meaning in a search (`hybrid: false` = meaning only, as pure vector search elsewhere).
    alpha: c.hybrid ? c.hybridAlpha : 1,
    inspectOnly,
  });
}

/**
 * The namespace of the remote layout: `pinecone_namespace`, else the agent identity. Every
 * machine sharing the memory must compute the same one, so a per-home generated id is never used.
 */
function remoteNamespace(config: VectorConfig, profile: string): string {
  const namespace = config.pineconeNamespace || profile;
  if (!namespace) {
    throw new HermesMemoryError({
      code: "INVALID_CONFIG",
      message:
        "memory.vector.pinecone_layout is remote, but no namespace is known: every machine sharing the memory must use the same Pinecone namespace. Set memory.vector.pinecone_namespace, or give the agent an identity (agentIdentity).",
    });
  }
  return renderNamespace("{profile}", namespace, "");
}

/** `INVALID_ARGUMENT` for a maintenance job that needs the sidecar layout. */
function sidecarOnly(): HermesMemoryError {
  return invalidArgument(
    "This operation works on the sidecar layout only; memory.vector.pinecone_layout is remote. Use `hermes-memory vector reindex --to remote` to move sidecar data, and search / stats / forget for the remote layout.",
  );
}

/** See the module comment. */
export class RemoteBackend implements VectorBackend {
  readonly storeLabel = "pinecone remote";
  /** Turns and mirrored facts its outbox could not take yet. */
  private readonly held: RemoteHeldWrites;
  /** Null once shut down. */
  private remote: PineconeRemoteMemory | null;

  private constructor(
    private readonly host: BackendHost,
    remote: PineconeRemoteMemory,
    readonly embedder: Embedder,
  ) {
    this.remote = remote;
    this.held = new RemoteHeldWrites(host.logger);
  }

  /** Open the remote layout in `dir`: the embedder and the outbox, nothing else local. */
  static async open(host: BackendHost, dir: string): Promise<RemoteBackend> {
    const inspecting = host.inspecting();
    const namespace = remoteNamespace(host.config(), host.profile());
    const outboxFile = path.join(dir, REMOTE_OUTBOX_FILE);
    try {
      if (!inspecting) fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    } catch (error) {
      if (!fs.existsSync(dir)) throw storageWriteError(`the vector memory directory ${dir} (it cannot be created)`, error);
    }
    const embedder = await host.createEmbedder();
    let remote: PineconeRemoteMemory;
    try {
      // An inspection reads an outbox that exists and otherwise holds an empty one in memory.
      remote = await openRemoteMemory(
        host.config(),
        embedder,
        namespace,
        inspecting && !fs.existsSync(outboxFile) ? ":memory:" : outboxFile,
        inspecting,
      );
    } catch (error) {
      await embedder.close?.();
      host.embedderClosed(embedder);
      throw error;
    }
    if (host.isClosed()) {
      // Shut down while the outbox open waited for another process's lock: nothing is left open.
      await remote.close();
      await embedder.close?.();
      host.embedderClosed(embedder);
      throw shutDownWhileStarting();
    }
    const waiting = remote.pendingWrites;
    if (waiting > 0)
      host.logger.info(`vector memory: re-sending ${waiting} writes Pinecone has not acknowledged yet (outbox ${remote.outbox.file}).`);
    return new RemoteBackend(host, remote, embedder);
  }

  get remoteMemory(): PineconeRemoteMemory | null {
    return this.remote;
  }

  /** The remote layout keeps no write queue of its own. */
  get undeliveredWrites(): number {
    return 0;
  }

  get isOpen(): boolean {
    return this.remote !== null;
  }

  /** The open store (throws `PROVIDER_UNAVAILABLE` once shut down). */
  private live(): PineconeRemoteMemory {
    if (!this.remote) throw notInitialisedError();
    if (this.host.isClosed())
      throw new HermesMemoryError({
        code: "PROVIDER_UNAVAILABLE",
        message: "The vector memory provider is shut down; initialise a new one.",
      });
    return this.remote;
  }

  /** The id of the session user's item with this kind and key (and session, when given). */
  private remoteId(kind: MemoryKind, key: string, sessionId?: string): string {
    return `${itemIdPrefix(this.host.userId(), sessionId)}${kind}.${key}`;
  }

  assertOpen(): void {
    this.live();
  }

  warmUp(): void {}

  queueTurn(item: MemoryItem): void {
    this.held.add(this.live(), item);
  }

  /** Mirrored facts carry no session in the remote layout, so the id of a fact follows from its content alone. */
  prepareMirroredFact(item: MemoryItem, key: string): () => void {
    const remote = this.live();
    const { sessionId: _session, ...fact } = item;
    return () => this.held.add(remote, { ...fact, metadata: { ...fact.metadata, source: "builtin" } }, { key });
  }

  forgetMirroredFact(key: string): Promise<boolean> {
    if (!this.remote) throw notInitialisedError();
    return this.remote.forget(this.remoteId("fact", key));
  }

  async storeCheckpoints(checkpoints: CheckpointWrite[]): Promise<void> {
    const remote = this.live();
    const earlier = await Promise.all(
      checkpoints.map((c) => (c.sessionKey ? remote.get(this.remoteId("checkpoint", c.sessionKey, c.item.sessionId)) : null)),
    );
    checkpoints.forEach(({ item, key, metadata }, i) => {
      if (!earlier[i]) remote.remember({ ...item, metadata }, { key });
    });
    await remote.drain();
  }

  remember(item: MemoryItem): string {
    return this.live().remember(
      item !== null && typeof item === "object" && !Array.isArray(item) ? { ...item, userId: item.userId || this.host.userId() } : item,
    );
  }

  async rememberFact(content: string, tags: string[]): Promise<StoredFact> {
    const remote = this.live();
    const remoteId = remote.remember({
      content,
      kind: "fact",
      tags,
      sessionId: this.host.sessionId(),
      userId: this.host.userId(),
      metadata: { source: "tool" },
    });
    await remote.drain();
    const refused = remote.outbox.refused().find((e) => e.id === remoteId);
    if (refused)
      throw new HermesMemoryError({
        code: "STORAGE_FAILED",
        message: `Pinecone refused this memory for its content (${refused.reason.slice(0, 300)}); it was not stored.`,
      });
    return { id: remoteId, status: "stored" };
  }

  search(query: string, options: MemorySearchOptions & { budgetMs?: number }): Promise<MemoryHit[]> {
    return this.live().search(query, { ...options, userId: options.userId ?? this.host.userId() });
  }

  get(id: string): Promise<MemoryHit | null> {
    return this.live().get(id);
  }

  async forget(id: string): Promise<boolean> {
    const remote = this.live();
    await this.host.mirrored();
    return remote.forget(id);
  }

  async forgetWhere(scope: ForgetScope): Promise<number> {
    const remote = this.live();
    await this.host.mirrored();
    return remote.forgetWhere(scope);
  }

  async countWhere(scope: ForgetScope): Promise<number> {
    const remote = this.live();
    await this.host.mirrored();
    return remote.countWhere(scope);
  }

  async update(id: string, changes: MemoryUpdate): Promise<boolean> {
    const remote = this.live();
    await this.host.mirrored();
    return remote.update(id, changes);
  }

  purgeExpired(): Promise<number> {
    return this.live().purgeExpired();
  }

  async stats(): Promise<MemoryStats> {
    const remote = this.live();
    const stats = await remote.stats();
    return {
      ...stats,
      store: "pinecone",
      dimensions: this.embedder.dimensions,
      hybrid: this.host.config().hybrid,
      namespaces: { [remote.namespace]: stats.items },
    };
  }

  /** Offer held writes to the outbox again and wait until Pinecone acknowledged the outbox. */
  async drain(): Promise<void> {
    await this.host.mirrored();
    // Shut down: nothing is left to deliver.
    if (!this.remote) return;
    const remote = this.live();
    this.held.retry(remote);
    const held = this.held.error();
    if (!held) return remote.drain();
    await remote.drain().catch(() => undefined);
    throw held;
  }

  refusedWrites(): HermesMemoryError | null {
    return this.remote ? this.live().refusedWrites() : null;
  }

  /**
   * Wait for mirrored writes, send the outbox once more and close it. Throws `STORAGE_FAILED`
   * (after closing) naming how many writes Pinecone did not acknowledge; they stay in the outbox
   * and are re-sent on the next start.
   */
  async shutdown(): Promise<void> {
    const remote = this.remote;
    if (!remote) return;
    const inspecting = this.host.inspecting();
    await this.host.mirrored();
    this.held.retry(remote);
    const count = this.held.count + this.held.dropped;
    const lost = this.held.error();
    this.host.markClosed();
    // An inspection accepted no write: what the outbox holds is the next start's to send and report.
    const left = await remote.close().then((waiting) => (inspecting ? 0 : waiting));
    await this.embedder.close?.();
    this.remote = null;
    if (left > 0 || lost) {
      const parts = [
        left > 0
          ? `${left} writes not acknowledged by Pinecone are kept in the outbox ${remote.outbox.file} and re-sent on the next start`
          : "",
        lost ? `${count} accepted writes the outbox could not take are lost (${describeError(lost.cause)})` : "",
      ].filter(Boolean);
      throw new HermesMemoryError({
        code: "STORAGE_FAILED",
        message: `vector memory shutdown: ${parts.join("; ")}.`,
        ...(lost ? { cause: lost.cause } : {}),
      });
    }
    const refused = remote.refusedWrites();
    if (refused && !inspecting) throw refused;
  }

  /** The sidecar layout's maintenance jobs are refused (once shut down: not initialised). */
  private sidecarOnlyJob(): HermesMemoryError {
    return this.remote ? sidecarOnly() : notInitialisedError();
  }

  reindex(_onProgress?: ProgressCallback): Promise<{ items: number; namespaces: number; unembedded: number }> {
    return Promise.reject(this.sidecarOnlyJob());
  }

  migrateToRemote(_namespace: string, _onProgress?: ProgressCallback): Promise<{ items: number; namespace: string }> {
    return Promise.reject(this.sidecarOnlyJob());
  }

  exportItems(): Generator<ExportedItem> {
    throw this.sidecarOnlyJob();
  }

  importItems(
    _items: Iterable<ExportedItem> | AsyncIterable<ExportedItem>,
    _onProgress?: ProgressCallback,
    _total?: number,
  ): Promise<number> {
    return Promise.reject(this.sidecarOnlyJob());
  }
}
