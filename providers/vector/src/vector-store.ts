import type { MetadataFilter, VectorMetadata } from "./metadata-filter.js";

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
}

/** Options of `VectorStore.query`. */
export interface VectorQueryOptions {
  topK: number;
  filter?: MetadataFilter;
  /** Namespace to search (default: the store's default namespace `""`). */
  namespace?: string;
  /** Time budget in ms for the whole call including retries (remote stores); unbounded when absent. */
  budgetMs?: number;
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
}

/** The namespace a store uses when none is given (Pinecone's `__default__` is the same one). */
export const DEFAULT_NAMESPACE = "";
