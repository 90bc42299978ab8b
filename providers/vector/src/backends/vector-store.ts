import type { MetadataFilter, VectorMetadata } from "../metadata-filter.js";
import type { Sidecar } from "../local/sidecar.js";
import type { SidecarRow, SidecarWrite } from "../local/sidecar-rows.js";

/** One vector with its id and flat metadata. */
export interface VectorRecord {
  id: string;
  vector: Float32Array;
  metadata?: VectorMetadata;
}

/** A query result. `score` is cosine similarity (higher is closer). */
export interface VectorMatch {
  id: string;
  score: number;
  metadata: VectorMetadata;
  /** The record's sidecar key, when the store's records live in the sidecar (given with `idsOnly`). */
  key?: number;
}

/** Options of `VectorStore.query`. */
export interface VectorQueryOptions {
  topK: number;
  filter?: MetadataFilter;
  /** Namespace to search (default: the store's default namespace `""`). */
  namespace?: string;
  /** Time budget in ms for the whole call including retries (remote stores); unbounded when absent. */
  budgetMs?: number;
  /**
   * The caller needs only ids and scores of records the sidecar holds (it reads their metadata
   * there): a store may then return `metadata: {}` for them. Records only a remote store holds
   * still carry their metadata.
   */
  idsOnly?: boolean;
  /**
   * Stores that keep their vectors in the sidecar (local): score exactly these sidecar keys, and
   * only them (a selective filter's passing items). `filter` is then not used.
   */
  candidateKeys?: readonly number[];
  /** Stores that keep their vectors in the sidecar (local): return only keys this accepts (a broad filter). `filter` is then not used. */
  acceptKey?: (key: number) => boolean;
}

/** What `VectorStore.delete` removes: listed ids, every record matching a filter, or a whole namespace. */
export type VectorDeleteTarget = { ids: string[] } | { filter: MetadataFilter } | { all: true };

/** Namespace option shared by the write/read calls. */
export interface NamespaceOptions {
  namespace?: string;
  /** Time budget in ms for the whole call including retries (remote stores). */
  budgetMs?: number;
}

/** Store statistics. */
export interface VectorStoreStats {
  dimensions: number;
  totalRecords: number;
  namespaces: Record<string, number>;
  /** Where the data lives: a directory or `pinecone:<index>`. */
  location: string;
}

/** One namespace's share of a write batch: the vectors and the sidecar rows (text, metadata). */
export interface ItemWrite {
  namespace: string;
  records: VectorRecord[];
  rows: SidecarWrite[];
  /**
   * A caller waits for this write and is told when it fails: nothing may be left half-written.
   * Otherwise the text is kept in the sidecar even when the vectors cannot be stored.
   */
  durable: boolean;
  /**
   * How long the sidecar write may wait on the thread for another process's write lock before it
   * fails as busy (ms); the connection's busy timeout when absent.
   */
  lockWaitMs?: number;
}

/**
 * Where vectors live. Both implementations (`LocalVectorStore`, `PineconeVectorStore`) speak this
 * interface, so the provider can switch stores with one config value.
 */
export interface VectorStore {
  readonly kind: "local" | "pinecone";
  readonly dimensions: number;
  /** Insert or replace records (same id in the same namespace = replace). */
  upsert(records: VectorRecord[], options?: NamespaceOptions): Promise<void>;
  /** Nearest neighbours of `vector` in one namespace, best first. */
  query(vector: Float32Array, options: VectorQueryOptions): Promise<VectorMatch[]>;
  /** Records by id (missing ids are left out). */
  fetch(ids: string[], options?: NamespaceOptions): Promise<Map<string, VectorRecord>>;
  /** Delete by ids, by filter, or everything in the namespace. */
  delete(target: VectorDeleteTarget, options?: NamespaceOptions): Promise<void>;
  stats(): Promise<VectorStoreStats>;
  /** Persist anything buffered (index files); no-op for remote stores. */
  flush(): Promise<void>;
  /** Flush and release files/sockets. Idempotent. */
  close(): Promise<void>;

  // The write policy: how items reach this store and the sidecar. The provider calls only these,
  // never asks which store it has.

  /** True when accepted writes must wait in a durable outbox until the store acknowledges them. */
  readonly needsOutbox: boolean;
  /** Where the data lives, for stats: a directory, or `pinecone:<index>`. */
  readonly locationLabel: string;
  /** Store items: their vectors here and their text in `sidecar`, in the order `write.durable` needs. */
  writeItems(write: ItemWrite, sidecar: Sidecar): Promise<void>;
  /**
   * Store items whose text the embedder refused for its content: their sidecar rows (text,
   * metadata, keyword index) with no vector, so keyword search still finds them; a vector an
   * earlier version of the same id left here is removed (it belongs to another text).
   * `lockWaitMs` as in `ItemWrite`.
   */
  storeWithoutVectors(namespace: string, rows: SidecarWrite[], sidecar: Sidecar, lockWaitMs?: number): Promise<void>;
  /** An item the sidecar does not know but this store holds (another machine wrote it); local stores hold none. */
  fetchUnindexed(id: string, namespace: string): Promise<VectorRecord | null>;
  /** Delete an item from this store and from the sidecar. */
  removeItem(id: string, namespace: string, sidecar: Sidecar): Promise<void>;
  /**
   * Erase sidecar rows (key, namespace, id) from this store and from the sidecar (rows, FTS entries,
   * the stored context of later turns): vectors first, then the rows. Throws when the store cannot
   * delete them (the rows are then kept, so the erasure can be repeated).
   */
  eraseRows(rows: ReadonlyArray<{ key: number; namespace: string; id: string }>, sidecar: Sidecar): Promise<void>;
  /** Before re-embedding every item: drop what a reindex replaces (local: every vector and the index). */
  beginReindex(sidecar: Sidecar): void;
  /** Store re-embedded vectors of existing sidecar rows. */
  reindexRows(rows: SidecarRow[], vectors: Float32Array[], namespace: string): Promise<void>;
  /** Store-specific numbers for stats (e.g. `indexedVectors`). */
  statsDetails(): Record<string, unknown>;
  /**
   * Run `work`, a write in many steps (an erasure, an import), with the store's periodic saves held
   * until it ends: a file saved between steps is already stale when the next step lands.
   */
  holdingSaves?<T>(work: () => Promise<T>): Promise<T>;
}

/** The namespace a store uses when none is given (Pinecone's `__default__` is the same one). */
export const DEFAULT_NAMESPACE = "";
