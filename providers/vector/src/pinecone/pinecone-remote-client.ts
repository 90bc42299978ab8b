/**
 * The Pinecone calls of the remote (no local memory) layout, through the official SDK: sparse–dense
 * upserts and queries on a `dotproduct` index, fetch, delete by ids, list by id prefix and
 * namespace counts. Every call goes through `PineconeCaller` (timeouts, bounded retries, typed
 * errors); an index refusing sparse values (not dotproduct) becomes `PROVIDER_UNAVAILABLE`.
 */
import { HermesMemoryError, describeError } from "@hermes/memory-core";
import type { VectorMetadata } from "../metadata-filter.js";
import { checkPineconeMatches, PineconeCaller, type PineconeConnectionOptions } from "./pinecone-caller.js";
import type { SparseVector } from "../embedders/sparse-encoder.js";

/**
 * Connection options of {@link PineconeRemoteClient}. The index must exist with metric
 * `dotproduct` and the embedder's dimension; without `host`, the control-plane lookup also checks
 * the metric and dimension.
 */
export type PineconeRemoteClientOptions = PineconeConnectionOptions;

/** One sparse–dense record. */
export interface RemoteRecord {
  id: string;
  values: number[];
  sparseValues?: SparseVector;
  metadata: VectorMetadata;
}

/** One query match. */
export interface RemoteMatch {
  id: string;
  score: number;
  metadata: VectorMetadata;
}

/** Records per upsert request (Pinecone allows 1000 and 2 MB; sparse–dense records with text are large). */
const UPSERT_BATCH = 100;

/** The Pinecone data and control plane calls of the remote layout. */
export class PineconeRemoteClient {
  readonly indexName: string;
  readonly dimensions: number;
  private readonly caller: PineconeCaller;

  constructor(options: PineconeRemoteClientOptions) {
    this.indexName = options.indexName;
    this.dimensions = options.dimensions;
    this.caller = new PineconeCaller({
      ...options,
      indexAdvice: `Check that the index exists with metric dotproduct and dimension ${options.dimensions}.`,
      authAdvice: "Set a valid PINECONE_API_KEY in $HERMES_HOME/.env (or run `hermes-memory memory setup vector`).",
      fatalError: (error) =>
        /does not support sparse values/.test(describeError(error))
          ? new HermesMemoryError({
              code: "PROVIDER_UNAVAILABLE",
              message: `Pinecone index "${options.indexName}" refused sparse values: its metric is not dotproduct. The remote layout needs an index with metric dotproduct and dimension ${options.dimensions}.`,
              cause: error,
            })
          : null,
      // The control-plane lookup (no host configured) also checks the metric and dimension.
      checkIndex: (model) => {
        if (model.metric !== "dotproduct") {
          return new HermesMemoryError({
            code: "PROVIDER_UNAVAILABLE",
            message: `Pinecone index "${options.indexName}" has metric ${model.metric}; the remote layout stores sparse–dense vectors, which Pinecone accepts only on an index with metric dotproduct. Create a dotproduct index with dimension ${options.dimensions} and point memory.vector.pinecone_index at it.`,
          });
        }
        if (model.dimension !== undefined && model.dimension !== options.dimensions) {
          return new HermesMemoryError({
            code: "PROVIDER_UNAVAILABLE",
            message: `Pinecone index "${options.indexName}" has dimension ${model.dimension} but the embedder produces ${options.dimensions}. Use an index of dimension ${options.dimensions}, or the embedder the index was built with.`,
          });
        }
        return null;
      },
    });
  }

  /** Set after a 401 or a wrongly configured index: further calls fail fast with the same error. */
  get fatal(): HermesMemoryError | null {
    return this.caller.fatal;
  }

  /** Upsert records, in requests of at most 100 records and under 2 MB. */
  async upsert(namespace: string, records: RemoteRecord[], budgetMs?: number): Promise<void> {
    const sdkRecords = records.map((r) => ({
      id: r.id,
      values: r.values,
      ...(r.sparseValues && r.sparseValues.indices.length > 0 ? { sparseValues: r.sparseValues } : {}),
      metadata: r.metadata,
    }));
    await this.caller.upsertRecords(namespace, sdkRecords, UPSERT_BATCH, budgetMs);
  }

  /** A sparse–dense query: the best `topK` records passing `filter`, with metadata. */
  async query(
    namespace: string,
    query: { vector: number[]; sparseVector?: SparseVector; topK: number; filter?: object },
    budgetMs?: number,
  ): Promise<RemoteMatch[]> {
    const idx = await this.caller.namespace(namespace, budgetMs);
    const response = await this.caller.call("query", budgetMs, () =>
      idx.query({
        vector: query.vector,
        ...(query.sparseVector && query.sparseVector.indices.length > 0 ? { sparseVector: query.sparseVector } : {}),
        topK: query.topK,
        includeMetadata: true,
        ...(query.filter ? { filter: query.filter } : {}),
      }),
    );
    return checkPineconeMatches(this.indexName, response.matches);
  }

  /** Records by id, with their vectors and metadata (missing ids are left out); 100 ids per request. */
  async fetch(namespace: string, ids: string[], budgetMs?: number): Promise<Map<string, RemoteRecord>> {
    const out = new Map<string, RemoteRecord>();
    for (const rec of await this.caller.fetchRecords(namespace, ids, this.dimensions, budgetMs)) out.set(rec.id, rec);
    return out;
  }

  /** Delete records by id, 1000 per request. */
  async deleteIds(namespace: string, ids: string[], budgetMs?: number): Promise<void> {
    await this.caller.deleteIds(namespace, ids, budgetMs);
  }

  /** Every id starting with `prefix`, page by page (100 per request). */
  listIds(namespace: string, prefix: string): AsyncGenerator<string[]> {
    return this.caller.listIdPages(namespace, prefix);
  }

  /** Records in `namespace` (`describe_index_stats`). */
  async count(namespace: string, budgetMs?: number): Promise<number> {
    const stats = await this.caller.indexStats(budgetMs);
    return stats.namespaces[namespace === "" ? "__default__" : namespace] ?? 0;
  }
}
