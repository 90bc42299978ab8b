import { HermesMemoryError } from "@hermes/memory-core";
import { cosineSimilarity } from "../embedders/embedder.js";
import { storageWriteError } from "../local/store-files.js";
import type { Sidecar } from "../local/sidecar.js";
import type { SidecarRow, SidecarWrite } from "../local/sidecar-rows.js";
import { matchesMetadataFilter, type VectorMetadata } from "../metadata-filter.js";
import { pineconeRecordMetadata } from "./pinecone-metadata.js";
import { checkPineconeMatches, PineconeCaller, type PineconeConnectionOptions } from "./pinecone-caller.js";
import {
  DEFAULT_NAMESPACE,
  type ItemWrite,
  type NamespaceOptions,
  type VectorDeleteTarget,
  type VectorMatch,
  type VectorQueryOptions,
  type VectorRecord,
  type VectorStore,
  type VectorStoreStats,
} from "../backends/vector-store.js";

/**
 * Options of {@link PineconeVectorStore}. The index must exist: create it in the Pinecone console
 * with the embedder's dimension and metric `cosine`.
 */
export interface PineconeVectorStoreOptions extends PineconeConnectionOptions {
  /** Vectors per upsert request (default 100, Pinecone's recommended batch; requests also stay under 2 MB). */
  upsertBatchSize?: number;
  /** How long recent writes are served from memory while Pinecone's index catches up (default 60000 ms). */
  readYourWritesMs?: number;
  /** Of `ids` in `namespace`, the records queries and `fetchUnindexed` leave out (their items moved to another namespace). */
  hidden?: (namespace: string, ids: readonly string[]) => Set<string>;
}

/** Pinecone limits metadata to 40 KB per record; keep the text below that with room for the rest. */
const MAX_TEXT_BYTES = 30_000;
const CACHE_LIMIT = 5000;

/**
 * Make any metadata acceptable to Pinecone: strings, finite numbers, booleans and string lists
 * stay; nulls are dropped; other values become JSON strings; `text` is truncated to fit 40 KB.
 */
export function flattenMetadata(metadata: Record<string, unknown> | undefined): VectorMetadata {
  const out: VectorMetadata = {};
  for (const [key, value] of Object.entries(metadata ?? {})) {
    if (value === null || value === undefined) continue;
    if (typeof value === "string" || typeof value === "boolean") out[key] = value;
    else if (typeof value === "number") {
      if (Number.isFinite(value)) out[key] = value;
    } else if (Array.isArray(value) && value.every((v) => typeof v === "string")) out[key] = value as string[];
    else out[key] = JSON.stringify(value);
  }
  const text = out.text;
  if (typeof text === "string" && Buffer.byteLength(text) > MAX_TEXT_BYTES) {
    let cut = text.slice(0, MAX_TEXT_BYTES);
    while (Buffer.byteLength(cut) > MAX_TEXT_BYTES) cut = cut.slice(0, -100);
    out.text = cut;
    out.text_truncated = true;
  }
  return out;
}

interface CachedWrite {
  record: VectorRecord | null; // null = deleted
  at: number;
}

/**
 * Vectors in a Pinecone index through the official SDK (8.x). Adds what the SDK leaves to callers:
 * per-request timeouts, bounded retries with exponential backoff and jitter on 429/5xx/timeouts
 * (never past a call's `budgetMs`), batching within request limits, flat metadata, and a
 * read-your-writes cache so a just-written record is found before Pinecone's index catches up.
 * A 401 becomes `PROVIDER_UNAVAILABLE` with setup instructions; it is never retried.
 */
export class PineconeVectorStore implements VectorStore {
  readonly kind = "pinecone" as const;
  /** Pinecone acknowledges writes over the network: accepted writes wait in an outbox until it does. */
  readonly needsOutbox = true;
  readonly dimensions: number;
  readonly indexName: string;
  private readonly caller: PineconeCaller;
  private readonly batchSize: number;
  private readonly rywMs: number;
  private readonly recent = new Map<string, Map<string, CachedWrite>>();
  private readonly hidden: PineconeVectorStoreOptions["hidden"];
  /** Set after a 401: further calls fail fast with the same message. */
  get authError(): HermesMemoryError | null {
    return this.caller.fatal;
  }

  constructor(options: PineconeVectorStoreOptions) {
    this.dimensions = options.dimensions;
    this.indexName = options.indexName;
    this.batchSize = options.upsertBatchSize ?? 100;
    this.rywMs = options.readYourWritesMs ?? 60_000;
    this.hidden = options.hidden;
    this.caller = new PineconeCaller({
      ...options,
      indexAdvice: `Check that the index exists and has the embedder's dimension (${options.dimensions}) and metric cosine.`,
      authAdvice:
        "Set a valid PINECONE_API_KEY in $HERMES_HOME/.env (or run `hermes-memory memory setup vector`), or switch back with memory.vector.store: local.",
    });
  }

  private cacheFor(namespace: string): Map<string, CachedWrite> {
    let map = this.recent.get(namespace);
    if (!map) {
      map = new Map();
      this.recent.set(namespace, map);
    }
    const cutoff = Date.now() - this.rywMs;
    for (const [id, entry] of map) {
      if (entry.at >= cutoff) break; // insertion order = time order
      map.delete(id);
    }
    return map;
  }

  private remember(namespace: string, id: string, record: VectorRecord | null): void {
    const map = this.cacheFor(namespace);
    map.delete(id);
    map.set(id, { record, at: Date.now() });
    if (map.size > CACHE_LIMIT) map.delete(map.keys().next().value as string);
  }

  /** Upsert in batches of ≤ `upsertBatchSize` records and < 2 MB per request. */
  async upsert(records: VectorRecord[], options: NamespaceOptions = {}): Promise<void> {
    const namespace = options.namespace ?? DEFAULT_NAMESPACE;
    const items = records.map((record) => {
      if (record.vector.length !== this.dimensions) {
        throw new HermesMemoryError({
          code: "EMBEDDING_DIMENSION_MISMATCH",
          message: `Vector ${record.id} has ${record.vector.length} dimensions but the Pinecone store is configured for ${this.dimensions}. Run \`hermes-memory vector reindex\` after changing the embedder.`,
        });
      }
      return { id: record.id, values: Array.from(record.vector), metadata: pineconeRecordMetadata(flattenMetadata(record.metadata)) };
    });
    await this.caller.upsertRecords(namespace, items, this.batchSize, options.budgetMs);
    for (const record of records)
      this.remember(namespace, record.id, { ...record, metadata: pineconeRecordMetadata(flattenMetadata(record.metadata)) });
  }

  /** Query Pinecone and merge in recent writes (and hide recent deletes) from the cache. */
  async query(vector: Float32Array, options: VectorQueryOptions): Promise<VectorMatch[]> {
    const namespace = options.namespace ?? DEFAULT_NAMESPACE;
    const topK = Math.max(0, Math.floor(options.topK));
    if (topK === 0) return [];
    const idx = await this.caller.namespace(namespace, options.budgetMs);
    const response = await this.caller.call("query", options.budgetMs, () =>
      idx.query({
        vector: Array.from(vector),
        topK,
        includeMetadata: true,
        ...(options.filter ? { filter: options.filter } : {}),
      }),
    );
    const cache = this.cacheFor(namespace);
    const byId = new Map<string, VectorMatch>();
    for (const m of checkPineconeMatches(this.indexName, response.matches)) {
      if (cache.has(m.id)) continue; // the cached version is newer (or deleted)
      byId.set(m.id, { id: m.id, score: m.score, metadata: m.metadata });
    }
    for (const [id, entry] of cache) {
      if (!entry.record || !matchesMetadataFilter(entry.record.metadata ?? {}, options.filter)) continue;
      byId.set(id, { id, score: cosineSimilarity(vector, entry.record.vector), metadata: entry.record.metadata ?? {} });
    }
    const hidden = this.hidden?.(namespace, [...byId.keys()]);
    return [...byId.values()]
      .filter((m) => !hidden?.has(m.id))
      .sort((a, b) => b.score - a.score)
      .slice(0, topK);
  }

  /** Fetch by ids (in chunks of 100, to keep URLs short). */
  async fetch(ids: string[], options: NamespaceOptions = {}): Promise<Map<string, VectorRecord>> {
    const namespace = options.namespace ?? DEFAULT_NAMESPACE;
    const out = new Map<string, VectorRecord>();
    for (const rec of await this.caller.fetchRecords(namespace, ids, this.dimensions, options.budgetMs)) {
      out.set(rec.id, { id: rec.id, vector: Float32Array.from(rec.values), metadata: rec.metadata });
    }
    const cache = this.cacheFor(namespace);
    for (const id of ids) {
      const entry = cache.get(id);
      if (!entry) continue;
      if (entry.record) out.set(id, entry.record);
      else out.delete(id);
    }
    return out;
  }

  /** Delete by ids (chunks of 1000), by filter, or the whole namespace. */
  async delete(target: VectorDeleteTarget, options: NamespaceOptions = {}): Promise<void> {
    const namespace = options.namespace ?? DEFAULT_NAMESPACE;
    if ("ids" in target) {
      await this.caller.deleteIds(namespace, target.ids, options.budgetMs);
      for (const id of target.ids) this.remember(namespace, id, null);
    } else if ("filter" in target) {
      const idx = await this.caller.namespace(namespace, options.budgetMs);
      await this.caller.call("delete", options.budgetMs, () => idx.deleteMany({ filter: target.filter }));
      for (const [id, entry] of this.cacheFor(namespace)) {
        if (entry.record && matchesMetadataFilter(entry.record.metadata ?? {}, target.filter)) this.remember(namespace, id, null);
      }
    } else {
      const idx = await this.caller.namespace(namespace, options.budgetMs);
      await this.caller.call("delete", options.budgetMs, () => idx.deleteAll());
      this.recent.delete(namespace);
    }
  }

  /** Every id in a namespace, page by page (`listPaginated`). */
  async *listIds(namespace: string = DEFAULT_NAMESPACE, options: { prefix?: string; pageSize?: number } = {}): AsyncGenerator<string> {
    for await (const ids of this.caller.listIdPages(namespace, options.prefix ?? "", options.pageSize)) yield* ids;
  }

  /** `describe_index_stats`; the default namespace is reported as `""`. */
  async stats(options: { budgetMs?: number } = {}): Promise<VectorStoreStats> {
    const s = await this.caller.indexStats(options.budgetMs);
    const namespaces: Record<string, number> = {};
    for (const [name, count] of Object.entries(s.namespaces)) namespaces[name === "__default__" ? "" : name] = count;
    return {
      dimensions: s.dimension ?? this.dimensions,
      totalRecords: s.totalRecordCount ?? Object.values(namespaces).reduce((a, b) => a + b, 0),
      namespaces,
      location: `pinecone:${this.indexName}`,
    };
  }

  /** Nothing is buffered locally. */
  async flush(): Promise<void> {}

  /** `pinecone:<index>`. */
  get locationLabel(): string {
    return `pinecone:${this.indexName}`;
  }

  /**
   * Text to the sidecar and vectors to Pinecone. A background write keeps the text in the sidecar
   * even when Pinecone fails (BM25 still finds it; a retry or reindex restores the vectors); a
   * durable one reaches Pinecone first, so a caller told "failed" finds nothing half-written.
   */
  async writeItems(write: ItemWrite, sidecar: Sidecar): Promise<void> {
    const toSidecar = (): void => {
      try {
        sidecar.upsert(write.namespace, write.rows, write.lockWaitMs);
      } catch (error) {
        throw storageWriteError(`the vector sidecar ${sidecar.file}`, error);
      }
    };
    if (!write.durable) toSidecar();
    await this.upsert(write.records, { namespace: write.namespace });
    if (write.durable) toSidecar();
  }

  /** Delete the ids' records from Pinecone (they hold an earlier text), then write the sidecar rows. */
  async storeWithoutVectors(namespace: string, rows: SidecarWrite[], sidecar: Sidecar, lockWaitMs?: number): Promise<void> {
    if (rows.length === 0) return;
    await this.delete({ ids: rows.map((r) => r.id) }, { namespace });
    try {
      sidecar.upsert(
        namespace,
        rows.map((r) => ({ ...r, vector: null })),
        lockWaitMs,
      );
    } catch (error) {
      throw storageWriteError(`the vector sidecar ${sidecar.file}`, error);
    }
  }

  /** An item another machine wrote to the index. */
  async fetchUnindexed(id: string, namespace: string): Promise<VectorRecord | null> {
    if (this.hidden?.(namespace, [id]).has(id)) return null;
    return (await this.fetch([id], { namespace })).get(id) ?? null;
  }

  /** Delete from Pinecone, then the sidecar row. */
  async removeItem(id: string, namespace: string, sidecar: Sidecar): Promise<void> {
    await this.delete({ ids: [id] }, { namespace });
    sidecar.delete(namespace, { ids: [id] });
  }

  /** Delete the rows' records from Pinecone (per namespace), then the sidecar rows. */
  async eraseRows(rows: ReadonlyArray<{ key: number; namespace: string; id: string }>, sidecar: Sidecar): Promise<void> {
    const byNamespace = new Map<string, string[]>();
    for (const row of rows) byNamespace.set(row.namespace, [...(byNamespace.get(row.namespace) ?? []), row.id]);
    for (const [namespace, ids] of byNamespace) await this.delete({ ids }, { namespace });
    sidecar.deleteKeys(rows.map((r) => r.key));
  }

  /** Upserts overwrite by id, and a namespace may hold other machines' items: nothing is deleted. Records get the current metadata layout. */
  beginReindex(_sidecar: Sidecar): void {}

  /** Upsert the new vectors. */
  async reindexRows(rows: SidecarRow[], vectors: Float32Array[], namespace: string): Promise<void> {
    await this.upsert(
      rows.map((r, i) => ({ id: r.id, vector: vectors[i]!, metadata: r.metadata })),
      { namespace },
    );
  }

  /** No store-specific numbers (Pinecone's own stats cost a request). */
  statsDetails(): Record<string, unknown> {
    return {};
  }

  /** Drops the read-your-writes cache. */
  async close(): Promise<void> {
    this.recent.clear();
  }
}
