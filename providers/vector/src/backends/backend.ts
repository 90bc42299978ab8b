/**
 * What the vector provider needs from storage, whichever layout holds it. The provider picks one
 * implementation when it opens and talks only to this interface afterwards:
 *
 * - `SidecarBackend` (sidecar-backend.ts): text, metadata and the keyword index in the SQLite
 *   sidecar; vectors in the local usearch index or in Pinecone (`pinecone_layout: sidecar`).
 * - `RemoteBackend` (remote-backend.ts): everything in Pinecone as sparse–dense records
 *   (`pinecone_layout: remote`); the only local state is the outbox of unacknowledged writes.
 */
import path from "node:path";
import {
  HermesMemoryError,
  type ForgetScope,
  type Logger,
  type MemoryHit,
  type MemoryItem,
  type MemorySearchOptions,
  type MemoryStats,
  type MemoryUpdate,
} from "@hermes/memory-core";
import type { Embedder } from "../embedders/embedder.js";
import type { VectorMetadata } from "../metadata-filter.js";
import type { PineconeRemoteMemory } from "../pinecone/pinecone-remote-store.js";
import type { VectorConfig } from "../vector-config.js";
import type { ExportedItem, ProgressCallback } from "./maintenance.js";

/** What a backend reads from (and tells) the provider that opened it. */
export interface BackendHost {
  config(): VectorConfig;
  readonly logger: Logger;
  hermesHome(): string;
  /** The user the session writes and recalls as. */
  userId(): string;
  sessionId(): string;
  /** Profile part of namespaces (the sidecar layout fills it from the sidecar when the host names none). */
  profile(): string;
  setProfile(profile: string): void;
  /** Opened by `initializeForInspection`: what exists is read, nothing is created, sent or moved. */
  inspecting(): boolean;
  /** True once `shutdown()` began. */
  isClosed(): boolean;
  markClosed(): void;
  /** The configured embedder (or the injected one); the provider closes it if no backend takes it. */
  createEmbedder(): Promise<Embedder>;
  /** The backend closed `embedder` itself (its open failed). */
  embedderClosed(embedder: Embedder): void;
  /** Default namespace for a user (the session's user when absent). */
  namespaceFor(userId?: string): string;
  /** Resolves once the built-in memory writes mirrored so far are done. */
  mirrored(): Promise<void>;
  /** Drop cached recall (an erasure or update changed what a search finds). */
  clearRecall(): void;
}

/** A checkpoint message to store durably: the item, the key its id is made from, and its metadata. */
export interface CheckpointWrite {
  item: MemoryItem;
  key: string;
  /** The message's key under the earlier (session, role, text) digest: when the store holds it, the message is not archived again. */
  sessionKey?: string;
  metadata: VectorMetadata;
}

/** What the remember tool reports. */
export interface StoredFact {
  id: string;
  status: "stored";
  warning?: string;
}

/** One storage layout of the vector provider; see the module comment. */
export interface VectorBackend {
  /** How the system prompt names the store (`local`, `pinecone`, `pinecone remote`). */
  readonly storeLabel: string;
  readonly embedder: Embedder;
  /** The remote layout's store; null in the sidecar layout. */
  readonly remoteMemory: PineconeRemoteMemory | null;
  /** Writes accepted but not acknowledged by their store (queue and outbox). */
  readonly undeliveredWrites: number;
  /** True until `shutdown()` closed the storage. */
  readonly isOpen: boolean;
  /** Throws `PROVIDER_UNAVAILABLE` when the storage is not open. */
  assertOpen(): void;
  /** Start background work that makes the first searches fast (nothing in the remote layout). */
  warmUp(): void;

  /** Queue a turn (returns at once). */
  queueTurn(item: MemoryItem): void;
  /** Prepare a mirrored built-in fact now; the returned function queues it (after the old one is forgotten). */
  prepareMirroredFact(item: MemoryItem, key: string): () => void;
  /** Forget the mirrored built-in fact with this key. */
  forgetMirroredFact(key: string): Promise<unknown>;
  /** Store checkpoint evidence durably; throws on failure. */
  storeCheckpoints(checkpoints: CheckpointWrite[]): Promise<void>;
  /** `SearchableMemory.remember`: queue an item, return its id. */
  remember(item: MemoryItem): string;
  /** The remember tool: store a fact of the session's user and wait until its store has it. */
  rememberFact(content: string, tags: string[]): Promise<StoredFact>;

  search(query: string, options: MemorySearchOptions & { budgetMs?: number }): Promise<MemoryHit[]>;
  get(id: string): Promise<MemoryHit | null>;
  forget(id: string): Promise<boolean>;
  forgetWhere(scope: ForgetScope): Promise<number>;
  countWhere(scope: ForgetScope): Promise<number>;
  update(id: string, changes: MemoryUpdate): Promise<boolean>;
  purgeExpired(): Promise<number>;
  stats(): Promise<MemoryStats>;

  /** Deliver every accepted write; throws `STORAGE_FAILED` while any is undelivered. */
  drain(): Promise<void>;
  /** The report of writes set aside because their store refused their content, if any. */
  refusedWrites(): HermesMemoryError | null;
  /** Deliver what is left, close everything; throws `STORAGE_FAILED` (after closing) naming what was not stored. */
  shutdown(): Promise<void>;

  /** Maintenance (CLI); the remote layout refuses the sidecar-only ones with `INVALID_ARGUMENT`. */
  reindex(onProgress?: ProgressCallback): Promise<{ items: number; namespaces: number; unembedded: number }>;
  migrateToRemote(namespace: string, onProgress?: ProgressCallback): Promise<{ items: number; namespace: string }>;
  exportItems(): Generator<ExportedItem>;
  importItems(items: Iterable<ExportedItem> | AsyncIterable<ExportedItem>, onProgress?: ProgressCallback, total?: number): Promise<number>;
}

/** Where the provider keeps its files, under `$HERMES_HOME`. */
export const VECTOR_DIR = path.join("memory", "vector");
/** The sidecar layout's writes Pinecone has not acknowledged yet (Pinecone store only). */
export const OUTBOX_FILE = "outbox.sqlite";
/** The remote layout's only local state: writes Pinecone has not acknowledged yet. */
export const REMOTE_OUTBOX_FILE = "remote-outbox.sqlite";

/** `PROVIDER_UNAVAILABLE`: nothing is open yet (or any more). */
export function notInitialisedError(): HermesMemoryError {
  return new HermesMemoryError({
    code: "PROVIDER_UNAVAILABLE",
    message: "The vector memory provider is not initialised. Call initialize(sessionId, {hermesHome}) first.",
  });
}

/** `initialize` found the provider shut down after waiting (for a lock, the embedder, the store). */
export function shutDownWhileStarting(): HermesMemoryError {
  return new HermesMemoryError({
    code: "PROVIDER_UNAVAILABLE",
    message: "The vector memory provider was shut down while it was starting; initialise a new one.",
  });
}

/** `INVALID_ARGUMENT` with `message`. */
export function invalidArgument(message: string): HermesMemoryError {
  return new HermesMemoryError({ code: "INVALID_ARGUMENT", message });
}
