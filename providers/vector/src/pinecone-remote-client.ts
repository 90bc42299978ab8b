/**
 * The Pinecone calls of the remote (no local memory) layout, through the official SDK: sparse–dense
 * upserts and queries on a `dotproduct` index, fetch, delete by ids, list by id prefix and
 * namespace counts. Every call goes through `PineconeCaller` (timeouts, bounded retries, typed
 * errors); an index refusing sparse values (not dotproduct) becomes `PROVIDER_UNAVAILABLE`.
 */
import type { Index, RecordMetadata } from "@pinecone-database/pinecone";
import { HermesMemoryError, describeError } from "@hermes/memory-core";
import type { VectorMetadata } from "./metadata-filter.js";
import { checkPineconeFetched, checkPineconeListPage, checkPineconeMatches, checkPineconeStats, PineconeCaller, type PineconeConnectionOptions } from "./pinecone-caller.js";
import type { SparseVector } from "./sparse-encoder.js";

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
const MAX_REQUEST_BYTES = 2 * 1024 * 1024 - 64 * 1024;

/** The Pinecone data and control plane calls of the remote layout. */
export class PineconeRemoteClient {
  readonly indexName: string;
  readonly dimensions: number;
  private readonly caller: PineconeCaller;
  private index: Index<RecordMetadata> | null = null;
  private lookup: Promise<Index<RecordMetadata>> | null = null;
  private readonly namespaces = new Map<string, Index<RecordMetadata>>();

  constructor(options: PineconeRemoteClientOptions) {
    this.indexName = options.indexName;
    this.dimensions = options.dimensions;
    this.caller = new PineconeCaller({
      apiKey: options.apiKey,
      indexName: options.indexName,
      ...(options.controllerHostUrl ? { controllerHostUrl: options.controllerHostUrl } : {}),
      ...(options.requestTimeoutMs !== undefined ? { requestTimeoutMs: options.requestTimeoutMs } : {}),
      ...(options.retry ? { retry: options.retry } : {}),
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
    });
    if (options.host) this.index = this.caller.client.index({ name: options.indexName, host: options.host });
  }

  /** Set after a 401 or a wrongly configured index: further calls fail fast with the same error. */
  get fatal(): HermesMemoryError | null {
    return this.caller.fatal;
  }

  private misconfigured(message: string): HermesMemoryError {
    return this.caller.markFatal(new HermesMemoryError({ code: "PROVIDER_UNAVAILABLE", message }));
  }

  /** The index handle; without a configured host, looked up once, checking metric and dimension. */
  private async base(budgetMs: number | undefined): Promise<Index<RecordMetadata>> {
    if (this.index) return this.index;
    this.lookup ??= this.call("describe_index", budgetMs, () => this.caller.client.describeIndex(this.indexName))
      .then((model) => {
        if (model.metric !== "dotproduct") {
          throw this.misconfigured(
            `Pinecone index "${this.indexName}" has metric ${model.metric}; the remote layout stores sparse–dense vectors, which Pinecone accepts only on an index with metric dotproduct. Create a dotproduct index with dimension ${this.dimensions} and point memory.vector.pinecone_index at it.`,
          );
        }
        if (model.dimension !== undefined && model.dimension !== this.dimensions) {
          throw this.misconfigured(
            `Pinecone index "${this.indexName}" has dimension ${model.dimension} but the embedder produces ${this.dimensions}. Use an index of dimension ${this.dimensions}, or the embedder the index was built with.`,
          );
        }
        const host = /^https?:\/\//.test(model.host) ? model.host : `https://${model.host}`;
        this.index = this.caller.client.index({ name: this.indexName, host });
        return this.index;
      })
      .finally(() => {
        this.lookup = null;
      });
    return this.lookup;
  }

  private async ns(namespace: string, budgetMs?: number): Promise<Index<RecordMetadata>> {
    const base = await this.base(budgetMs);
    let idx = this.namespaces.get(namespace);
    if (!idx) {
      idx = namespace === "" ? base : base.namespace(namespace);
      this.namespaces.set(namespace, idx);
    }
    return idx;
  }

  private call<T>(what: string, budgetMs: number | undefined, fn: () => Promise<T>): Promise<T> {
    return this.caller.call(what, budgetMs, fn);
  }

  /** Upsert records, in requests of at most 100 records and under 2 MB. */
  async upsert(namespace: string, records: RemoteRecord[], budgetMs?: number): Promise<void> {
    const idx = await this.ns(namespace, budgetMs);
    let batch: RemoteRecord[] = [];
    let bytes = 0;
    const send = async (): Promise<void> => {
      if (batch.length === 0) return;
      const payload = batch;
      batch = [];
      bytes = 0;
      await this.call("upsert", budgetMs, () =>
        idx.upsert({
          records: payload.map((r) => ({
            id: r.id,
            values: r.values,
            ...(r.sparseValues && r.sparseValues.indices.length > 0 ? { sparseValues: r.sparseValues } : {}),
            metadata: r.metadata,
          })),
        }),
      );
    };
    for (const record of records) {
      const size = JSON.stringify(record).length;
      if (batch.length >= UPSERT_BATCH || bytes + size > MAX_REQUEST_BYTES) await send();
      batch.push(record);
      bytes += size;
    }
    await send();
  }

  /** A sparse–dense query: the best `topK` records passing `filter`, with metadata. */
  async query(namespace: string, query: { vector: number[]; sparseVector?: SparseVector; topK: number; filter?: object }, budgetMs?: number): Promise<RemoteMatch[]> {
    const idx = await this.ns(namespace, budgetMs);
    const response = await this.call("query", budgetMs, () =>
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
    const idx = await this.ns(namespace, budgetMs);
    for (let i = 0; i < ids.length; i += 100) {
      const chunk = ids.slice(i, i + 100);
      const response = await this.call("fetch", budgetMs, () => idx.fetch({ ids: chunk }));
      for (const rec of checkPineconeFetched(this.indexName, response.records, this.dimensions)) out.set(rec.id, rec);
    }
    return out;
  }

  /** Delete records by id, 1000 per request. */
  async deleteIds(namespace: string, ids: string[], budgetMs?: number): Promise<void> {
    const idx = await this.ns(namespace, budgetMs);
    for (let i = 0; i < ids.length; i += 1000) {
      const chunk = ids.slice(i, i + 1000);
      await this.call("delete", budgetMs, () => idx.deleteMany({ ids: chunk }));
    }
  }

  /** Every id starting with `prefix`, page by page (100 per request). */
  async *listIds(namespace: string, prefix: string): AsyncGenerator<string[]> {
    const idx = await this.ns(namespace);
    let token: string | undefined;
    const seen = new Set<string>();
    do {
      const page = await this.call("list", undefined, () => idx.listPaginated({ ...(prefix ? { prefix } : {}), limit: 100, ...(token ? { paginationToken: token } : {}) }));
      const { ids, next } = checkPineconeListPage(this.indexName, page, seen);
      if (ids.length > 0) yield ids;
      token = next;
    } while (token);
  }

  /** Records in `namespace` (`describe_index_stats`). */
  async count(namespace: string, budgetMs?: number): Promise<number> {
    const idx = await this.base(budgetMs);
    const stats = checkPineconeStats(this.indexName, await this.call("describe_index_stats", budgetMs, () => idx.describeIndexStats()));
    return stats.namespaces[namespace === "" ? "__default__" : namespace] ?? 0;
  }
}
