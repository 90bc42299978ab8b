import path from "node:path";
import { HermesMemoryError, describeError, silentLogger, type Logger } from "@hermes/memory-core";
import { matchesMetadataFilter, type VectorMetadata } from "../metadata-filter.js";
import { Sidecar } from "./sidecar.js";
import type { KeywordHit, SidecarRow, SidecarWrite } from "./sidecar-rows.js";
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
import { dimensionMismatchError } from "../backends/index-identity.js";
import { MAX_DIMENSIONS } from "../vector-config.js";
import { loadUsearch, type Usearch } from "../native-modules.js";
import { ExactNamespace, TWO_PASS_MIN_VECTORS } from "./exact-namespace.js";
import {
  COMPACT_TOMBSTONE_SHARE,
  indexFileFreedSlots,
  indexFileMismatch,
  removeOrphanTempFiles,
  tombstoneLoadRefusal,
  tombstonesUnsafe,
} from "./index-file.js";
import { IndexSaves } from "./index-saves.js";
import { storageWriteError } from "./store-files.js";

type UsearchIndex = InstanceType<Usearch["Index"]>;

/**
 * Threads usearch inserts a batch with. It starts its threads anew on every call and the caller
 * waits for the last one to finish, so a small batch on a busy machine waits on the scheduler for
 * tens of milliseconds for microseconds of work: batches below `PARALLEL_ADD_MIN` vectors are
 * inserted on the calling thread, larger ones (a rebuild, a reindex) on every core.
 */
const PARALLEL_ADD_MIN = 256;
function addThreads(vectors: number): number {
  return vectors < PARALLEL_ADD_MIN ? 1 : 0;
}

/** Namespaces up to this size are searched exactly by default (a semantic embedder's vectors). */
export const DEFAULT_EXACT_THRESHOLD = 10_000;

/**
 * Namespaces up to this size are searched exactly by default when a lexical embedder (`hashing`)
 * wrote the vectors. An HNSW graph over such vectors finds few of the true nearest neighbours
 * (recall@10 0.16 at 20,000 vectors and 0.09 at 99,000, where a semantic-like distribution keeps
 * 0.99 at 100,000), so exact search is kept far past the semantic default: from
 * `TWO_PASS_MIN_VECTORS` on it scans int8 codes and scores the best candidates in float32 (about a
 * third of a float32 scan's time), and it holds the namespace's vectors in memory twice (float32
 * and int8: about 1.9 KB per 384-dimensional vector, 190 MB at 100,000 and 960 MB at 500,000).
 */
export const LEXICAL_EXACT_THRESHOLD = 500_000;

/** Default HNSW search beam width of {@link LocalVectorStore} (see `LocalVectorStoreOptions.expansionSearch`). */
export const DEFAULT_EXPANSION_SEARCH = 128;

/** Options of {@link LocalVectorStore.open}. */
export interface LocalVectorStoreOptions {
  /** Vector length. Every upserted vector must have it. */
  dimensions: number;
  /**
   * Directory holding `sidecar.sqlite` and `index.usearch`. Omit for a purely in-memory store
   * (tests, benchmarks).
   */
  directory?: string;
  /** Use an already-open sidecar instead of opening `<directory>/sidecar.sqlite` (the provider shares one). */
  sidecar?: Sidecar;
  /**
   * Namespaces with at most this many vectors are searched exactly (brute force over the sidecar);
   * larger ones through the HNSW index. Default `DEFAULT_EXACT_THRESHOLD` (10000; exact search is
   * usearch SIMD brute force, ~1 ms at 10k × 384), or `LEXICAL_EXACT_THRESHOLD` (500000) with
   * `lexicalVectors`. `0` forces ANN, `Infinity` forces exact.
   */
  exactThreshold?: number;
  /**
   * The vectors come from a lexical embedder (`isLexicalEmbedder`, e.g. `hashing`), over which an
   * HNSW graph finds few true neighbours: the default `exactThreshold` is `LEXICAL_EXACT_THRESHOLD`,
   * and the first graph search of each larger namespace logs a warning naming the remedies.
   */
  lexicalVectors?: boolean;
  /** HNSW graph degree (default 16). */
  connectivity?: number;
  /** HNSW build beam width (default 128). */
  expansionAdd?: number;
  /**
   * HNSW search beam width (default 128: recall@10 0.986 at 100 k vectors for 2 % of brute-force
   * time, where 64 gave 0.947). Higher: better recall, slower queries.
   */
  expansionSearch?: number;
  /** Delay before a dirty index is written to disk (default 2000 ms). */
  saveDelayMs?: number;
  /**
   * What to do when the sidecar holds vectors of another length: `throw` (default,
   * `EMBEDDING_DIMENSION_MISMATCH`) or `reset` (drop every vector, keep text; used by reindex).
   */
  onDimensionMismatch?: "throw" | "reset";
  /** Open without writing anything (read-only `$HERMES_HOME`): a bad index is rebuilt in memory only, writes throw `STORAGE_FAILED`. */
  readOnly?: boolean;
  /** Where a rebuild of a damaged index file is reported (warning). */
  logger?: Logger;
}

const INDEX_FILE = "index.usearch";
const SIDECAR_FILE = "sidecar.sqlite";

/**
 * The embedded store: a usearch HNSW index (cosine) plus a SQLite sidecar holding text, metadata,
 * vectors and an FTS5 index. The sidecar is the source of truth: a missing, stale (crash before
 * the last save) or unreadable index file is rebuilt from it on open. Small namespaces are searched
 * exactly; large ones through the ANN index.
 *
 * Build one directly from vectors for benchmarks:
 * `const s = await LocalVectorStore.open({dimensions: 384, exactThreshold: 0}); await s.upsert(records); await s.query(v, {topK: 10})`.
 */
export class LocalVectorStore implements VectorStore {
  readonly kind = "local" as const;
  /** Writes are acknowledged by the local transaction; no outbox. */
  readonly needsOutbox = false;
  readonly dimensions: number;
  readonly sidecar: Sidecar;
  /** True when open found the index file missing, stale or unreadable and rebuilt it from the sidecar's vectors. */
  rebuiltOnOpen = false;
  exactThreshold: number;
  private index: UsearchIndex;
  private readonly indexPath: string | null;
  private readonly ownsSidecar: boolean;
  private readonly options: LocalVectorStoreOptions;
  /** Vectors per namespace (invalidated by writes): keeps the per-query routing decision O(1). */
  private readonly counts = new Map<string, number>();
  /** In-memory copies of small namespaces for exact search, updated in place on upsert. */
  private readonly exactCache = new Map<string, ExactNamespace>();
  private readonly saves: IndexSaves;
  /** Namespaces whose lexical vectors were searched through the graph (warned once each). */
  private readonly warnedGraphSearch = new Set<string>();
  /** Tombstones in the graph: removals since it was built from scratch (saved with the file). */
  private freedSlots = 0;
  private reportedStuckKeys = false;
  private closed = false;
  /** True when opened with `readOnly`: nothing is ever written. */
  readonly readOnly: boolean;
  private readonly logger: Logger;

  private constructor(options: LocalVectorStoreOptions, sidecar: Sidecar, ownsSidecar: boolean, indexPath: string | null) {
    this.options = options;
    this.dimensions = options.dimensions;
    this.exactThreshold = options.exactThreshold ?? (options.lexicalVectors ? LEXICAL_EXACT_THRESHOLD : DEFAULT_EXACT_THRESHOLD);
    this.sidecar = sidecar;
    this.ownsSidecar = ownsSidecar;
    this.indexPath = indexPath;
    this.readOnly = options.readOnly === true;
    this.logger = options.logger ?? silentLogger;
    this.index = this.newIndex();
    this.saves = new IndexSaves({
      indexPath,
      sidecar,
      logger: this.logger,
      delayMs: options.saveDelayMs ?? 2000,
      canSave: () => !this.closed && !this.readOnly,
      // An index whose entries were all removed holds only tombstones: a fresh empty one is saved instead.
      indexToSave: () => {
        if (this.index.size() === 0) {
          this.index = this.newIndex();
          this.freedSlots = 0;
        } else if (tombstonesUnsafe(this.freedSlots, this.index.size(), COMPACT_TOMBSTONE_SHARE)) this.buildFromSidecar();
        return this.index;
      },
      freedSlots: () => this.freedSlots,
    });
  }

  /**
   * Open or create a store. Loads the index file when it matches the sidecar's write generation,
   * otherwise rebuilds it from the sidecar's vectors (minutes at 100k × 384 on 2 cores).
   * Throws `EMBEDDING_DIMENSION_MISMATCH` when the sidecar holds vectors of another length.
   */
  static async open(options: LocalVectorStoreOptions): Promise<LocalVectorStore> {
    if (!Number.isInteger(options.dimensions) || options.dimensions <= 0 || options.dimensions > MAX_DIMENSIONS) {
      throw new HermesMemoryError({
        code: "INVALID_CONFIG",
        message: `LocalVectorStore needs an integer 'dimensions' from 1 to ${MAX_DIMENSIONS} (got ${String(options.dimensions)}).`,
      });
    }
    loadUsearch(); // an addon that was never built fails here, before any file is opened
    const dir = options.directory;
    const sidecar =
      options.sidecar ?? Sidecar.open(dir ? path.join(dir, SIDECAR_FILE) : ":memory:", { readOnly: options.readOnly === true });
    const indexPath = dir ? path.join(dir, INDEX_FILE) : null;
    const store = new LocalVectorStore(
      { ...options, readOnly: options.readOnly === true || sidecar.readOnly },
      sidecar,
      !options.sidecar,
      indexPath,
    );
    try {
      store.checkDimensions();
      if (indexPath && !store.readOnly) removeOrphanTempFiles(indexPath);
      store.loadOrRebuild();
    } catch (error) {
      if (store.ownsSidecar) sidecar.close();
      throw error;
    }
    return store;
  }

  private newIndex(): UsearchIndex {
    const usearch = loadUsearch();
    return new usearch.Index({
      dimensions: this.dimensions,
      metric: usearch.MetricKind.Cos,
      quantization: usearch.ScalarKind.F32,
      connectivity: this.options.connectivity ?? 16,
      expansion_add: this.options.expansionAdd ?? 128,
      expansion_search: this.options.expansionSearch ?? DEFAULT_EXPANSION_SEARCH,
      multi: false,
    });
  }

  private checkDimensions(): void {
    const recorded = Number(this.sidecar.getMeta("vector_dimensions") ?? "0");
    if (recorded && recorded !== this.dimensions && this.sidecar.countVectors() > 0) {
      if (this.options.onDimensionMismatch === "reset" && !this.readOnly) {
        this.sidecar.clearVectors();
      } else {
        throw dimensionMismatchError({
          stored: `${recorded} dimensions`,
          configured: `${this.dimensions} dimensions`,
          where: this.sidecar.file,
        });
      }
    }
    if (!this.readOnly && this.sidecar.getMeta("vector_dimensions") !== String(this.dimensions))
      this.sidecar.setMeta("vector_dimensions", String(this.dimensions));
  }

  /**
   * Never hand an unverified file to the native loader (a damaged file can abort the process):
   * load only when the sidecar's record of the last save (generation, length, SHA-256) matches the
   * file byte for byte; otherwise rebuild from the sidecar, which holds every vector.
   */
  private loadOrRebuild(): void {
    const reason =
      (this.indexPath ? indexFileMismatch(this.indexPath, this.sidecar) : "in-memory store") || tombstoneLoadRefusal(this.sidecar);
    // No vectors: a fresh index, never a loaded one (usearch can crash on a file whose entries were all removed).
    if (reason === "" && this.sidecar.countVectors() > 0) {
      try {
        const index = this.newIndex();
        index.load(this.indexPath!);
        if (index.size() === this.sidecar.countVectors() && index.dimensions() === this.dimensions) {
          this.index = index;
          this.freedSlots = indexFileFreedSlots(this.sidecar);
          return;
        }
      } catch {
        // Verified bytes the loader still rejects (another usearch version): rebuild.
      }
    }
    const vectors = this.sidecar.countVectors();
    this.rebuiltOnOpen = vectors > 0;
    if (this.rebuiltOnOpen && this.indexPath) {
      this.logger.warn(
        `vector memory: the index file ${this.indexPath} was not loaded (${reason || "rejected by the loader"}); rebuilding it from the sidecar's ${vectors} vectors.`,
      );
    }
    this.rebuild();
  }

  /** Rebuild the ANN index from the sidecar's vectors (also used after a reindex). */
  rebuild(): void {
    this.buildFromSidecar();
    this.saves.dirty = true;
    try {
      this.saveNow();
    } catch (error) {
      // The rebuilt index serves this process; a later flush() retries the save (and reports it).
      this.logger.warn(`vector memory: ${describeError(error)}`);
    }
  }

  /** A fresh graph of the sidecar's vectors, without tombstones. */
  private buildFromSidecar(): void {
    this.invalidate(null);
    this.index = this.newIndex();
    this.freedSlots = 0;
    const rows = this.sidecar.vectorRows();
    const batch = 4096;
    for (let i = 0; i < rows.length; i += batch) {
      const chunk = rows.slice(i, i + batch);
      const keys = new BigUint64Array(chunk.length);
      const flat = new Float32Array(chunk.length * this.dimensions);
      chunk.forEach((r, j) => {
        keys[j] = BigInt(r.key);
        flat.set(r.vector, j * this.dimensions);
      });
      this.index.add(keys, flat, 0);
    }
  }

  /** Remove keys from the graph (usearch answers a count per key); each leaves a tombstone slot until a rebuild. */
  private removeFromIndex(keys: readonly number[]): void {
    if (keys.length === 0) return;
    const removed: unknown = this.index.remove(BigUint64Array.from(keys.map((k) => BigInt(k))));
    for (const n of typeof removed === "object" ? Array.from(removed as ArrayLike<number>) : [removed]) this.freedSlots += Number(n) || 0;
  }

  private markDirty(): void {
    this.saves.markDirty();
  }

  private saveNow(): void {
    this.saves.saveNow();
  }

  /** Run `work` (writes in steps) with periodic saves held until it ends (see `IndexSaves.holding`). */
  holdingSaves<T>(work: () => Promise<T>): Promise<T> {
    return this.saves.holding(work);
  }

  private assertWritable(): void {
    if (this.readOnly) {
      throw new HermesMemoryError({
        code: "STORAGE_FAILED",
        message: `The vector store at ${this.options.directory ?? ":memory:"} is open read-only ($HERMES_HOME is not writable): search works, new memories cannot be saved. Make the directory writable and restart.`,
      });
    }
  }

  private assertDimensions(vector: Float32Array, what: string): void {
    if (vector.length !== this.dimensions) {
      throw dimensionMismatchError({
        stored: `${this.dimensions} dimensions`,
        configured: `${vector.length} dimensions (${what})`,
        where: this.sidecar.file,
      });
    }
  }

  /** Insert or replace records; text goes in `metadata.text`. Writes the sidecar first, then the index. */
  async upsert(records: VectorRecord[], options: NamespaceOptions = {}): Promise<void> {
    this.upsertSync(records, options.namespace ?? DEFAULT_NAMESPACE);
  }

  /**
   * Synchronous upsert (the provider and benchmarks call it directly). `lockWaitMs`: how long the
   * sidecar write may wait for another process's write lock (the connection's busy timeout when absent).
   */
  upsertSync(records: VectorRecord[], namespace: string = DEFAULT_NAMESPACE, lockWaitMs?: number): void {
    if (records.length === 0) return;
    this.assertWritable();
    for (const r of records) this.assertDimensions(r.vector, `record ${r.id}`);
    let keys: number[];
    try {
      keys = this.sidecar.upsert(
        namespace,
        records.map((r) => {
          const text = typeof r.metadata?.text === "string" ? r.metadata.text : "";
          return { id: r.id, text, metadata: r.metadata ?? {}, vector: r.vector };
        }),
        lockWaitMs,
      );
    } catch (error) {
      throw storageWriteError(`the vector sidecar ${this.sidecar.file}`, error);
    }
    this.addToIndex(
      keys,
      records.map((r) => r.vector),
    );
    // Counts may have grown; a cached matrix is updated in place (re-upserts keep their key).
    this.counts.delete(namespace);
    const cached = this.exactCache.get(namespace);
    if (cached) {
      if (this.countIn(namespace) > this.exactThreshold) this.exactCache.delete(namespace);
      else keys.forEach((key, i) => cached.set(key, records[i]!.id, records[i]!.vector));
    }
  }

  private addToIndex(keys: number[], vectors: Float32Array[]): void {
    // One batch may carry a row twice (written, then changed): its last vector is the current one.
    const latest = new Map<number, Float32Array>();
    keys.forEach((key, i) => latest.set(key, vectors[i]!));
    const present = [...latest.keys()].filter((k) => this.index.contains(BigInt(k)) === true);
    this.removeFromIndex(present);
    // usearch can fail to remove a key (its remove reports 0 and the key stays). The row is stored
    // in the sidecar already, and exact searches read vectors from there, so the write stands; the
    // graph keeps the key's previous vector until a reindex rather than failing the write.
    const stuck = present.filter((k) => this.index.contains(BigInt(k)) === true);
    for (const key of stuck) latest.delete(key);
    if (stuck.length > 0 && !this.reportedStuckKeys) {
      this.reportedStuckKeys = true;
      this.logger.warn(
        `vector memory: the index kept the previous vector of ${stuck.length} updated row(s) because it could not remove them; searches above the exact-search threshold rank them by that vector until \`hermes-memory vector reindex\` rebuilds the index.`,
      );
    }
    if (latest.size > 0) {
      const flat = new Float32Array(latest.size * this.dimensions);
      [...latest.values()].forEach((v, j) => flat.set(v, j * this.dimensions));
      this.index.add(BigUint64Array.from([...latest.keys()].map((k) => BigInt(k))), flat, addThreads(latest.size));
    }
    this.markDirty();
  }

  /** Store vectors for rows that exist in the sidecar (reindex). */
  setVectors(updates: Array<{ key: number; vector: Float32Array }>): void {
    this.assertWritable();
    for (const u of updates) this.assertDimensions(u.vector, `row ${u.key}`);
    this.sidecar.setVectors(updates);
    this.invalidate(null);
    this.addToIndex(
      updates.map((u) => u.key),
      updates.map((u) => u.vector),
    );
  }

  /** Nearest neighbours in one namespace: exact below `exactThreshold`, HNSW above. */
  async query(vector: Float32Array, options: VectorQueryOptions): Promise<VectorMatch[]> {
    return this.querySync(vector, options);
  }

  /** Synchronous query. */
  querySync(query: Float32Array, options: VectorQueryOptions): VectorMatch[] {
    this.assertDimensions(query, "query");
    // usearch's exact search reads a vector from the start of its buffer: a view at an offset is copied.
    const vector = query.byteOffset === 0 ? query : query.slice();
    const namespace = options.namespace ?? DEFAULT_NAMESPACE;
    const topK = Math.max(0, Math.floor(options.topK));
    if (topK === 0) return [];
    const inNamespace = this.countIn(namespace);
    if (inNamespace === 0) return [];
    const idsOnly = options.idsOnly === true;
    if (options.candidateKeys) return this.candidateQuery(vector, namespace, topK, options.candidateKeys, inNamespace);
    if (options.acceptKey) {
      return inNamespace <= this.exactThreshold
        ? this.exactAcceptQuery(vector, namespace, topK, options.acceptKey)
        : this.annQuery(vector, namespace, topK, undefined, inNamespace, true, options.acceptKey);
    }
    if (inNamespace <= this.exactThreshold) return this.exactQuery(vector, namespace, topK, options.filter, idsOnly);
    return this.annQuery(vector, namespace, topK, options.filter, inNamespace, idsOnly);
  }

  /** Exact cosine scores of the given keys' vectors only (a selective filter's passing items), best first; ids only. */
  private candidateQuery(
    vector: Float32Array,
    namespace: string,
    topK: number,
    keys: readonly number[],
    inNamespace: number,
  ): VectorMatch[] {
    const qn = Math.sqrt(vector.reduce((a, v) => a + v * v, 0));
    const scored: VectorMatch[] = [];
    const score = (v: Float32Array | ArrayLike<number>, base: number, norm: number): number => {
      if (norm === 0 || qn === 0) return 0;
      let dot = 0;
      for (let j = 0; j < this.dimensions; j++) dot += vector[j]! * (v[base + j] as number);
      return dot / (qn * norm);
    };
    if (inNamespace <= this.exactThreshold) {
      // The namespace's matrix is in memory (or about to be): score the keys' slots.
      const cache = this.exactVectors(namespace, inNamespace);
      for (const key of keys) {
        const slot = cache.slotOf(key);
        if (slot === undefined) continue;
        scored.push({ id: cache.ids[slot]!, score: score(cache.data, slot * this.dimensions, cache.norms[slot]!), metadata: {}, key });
      }
    } else {
      for (let i = 0; i < keys.length; i += 500) {
        for (const row of this.sidecar.vectorsByKeys(keys.slice(i, i + 500))) {
          const norm = Math.sqrt(row.vector.reduce((a, v) => a + v * v, 0));
          scored.push({ id: row.id, score: score(row.vector, 0, norm), metadata: {}, key: row.key });
        }
      }
    }
    return scored.sort((a, b) => b.score - a.score || a.key! - b.key!).slice(0, topK);
  }

  /** Exact search of a small namespace keeping only accepted keys (widening until `topK` pass or all are seen); ids only. */
  private exactAcceptQuery(vector: Float32Array, namespace: string, topK: number, accept: (key: number) => boolean): VectorMatch[] {
    const cache = this.exactVectors(namespace, this.countIn(namespace));
    const d = this.dimensions;
    const n = cache.keys.length;
    let qn = 0;
    for (let i = 0; i < vector.length; i++) qn += vector[i]! * vector[i]!;
    for (let k = Math.min(n, topK * 4); ; k = Math.min(n, k * 4)) {
      const result = loadUsearch().exactSearch(cache.data.subarray(0, n * d), vector, d, k, loadUsearch().MetricKind.Cos, 1) as {
        keys: BigUint64Array;
        distances: Float32Array;
      };
      const out: VectorMatch[] = [];
      for (let i = 0; i < result.keys.length && out.length < topK; i++) {
        const slot = Number(result.keys[i]!);
        if (slot >= n || !Number.isFinite(result.distances[i]!)) continue;
        const key = cache.keys[slot]!;
        if (!accept(key)) continue;
        out.push({ id: cache.ids[slot]!, score: cache.norms[slot] === 0 || qn === 0 ? 0 : 1 - result.distances[i]!, metadata: {}, key });
      }
      if (out.length >= topK || k >= n) return out;
    }
  }

  /** The sidecar rows of index keys: id, namespace and metadata, or only id and namespace (`metadata: {}`). */
  private matchRows(keys: number[], idsOnly: boolean): Map<number, { id: string; namespace: string; metadata: VectorMetadata }> {
    return idsOnly ? this.sidecar.idsByKeys(keys) : this.sidecar.getByKeys(keys);
  }

  private countIn(namespace: string): number {
    let n = this.counts.get(namespace);
    if (n === undefined) {
      n = this.sidecar.countVectors(namespace);
      this.counts.set(namespace, n);
    }
    return n;
  }

  private exactVectors(namespace: string, expected: number): ExactNamespace {
    let cached = this.exactCache.get(namespace);
    if (!cached || cached.keys.length !== expected) {
      cached = new ExactNamespace(this.dimensions, expected);
      const matrix = cached;
      this.sidecar.eachVector(namespace, (key, id, bytes) => matrix.append(key, id, bytes));
      this.exactCache.set(namespace, cached);
    }
    return cached;
  }

  private invalidate(namespace: string | null): void {
    if (namespace === null) {
      this.counts.clear();
      this.exactCache.clear();
    } else {
      this.counts.delete(namespace);
      this.exactCache.delete(namespace);
    }
  }

  private exactQuery(
    vector: Float32Array,
    namespace: string,
    topK: number,
    filter: VectorQueryOptions["filter"],
    idsOnly: boolean,
  ): VectorMatch[] {
    let qn = 0;
    for (let i = 0; i < vector.length; i++) qn += vector[i]! * vector[i]!;
    qn = Math.sqrt(qn);
    const cache = this.exactVectors(namespace, this.countIn(namespace));
    const d = this.dimensions;
    const n = cache.keys.length;
    let order: number[];
    let scores: Float32Array;
    if (!filter && n >= TWO_PASS_MIN_VECTORS && qn > 0) {
      order = [];
      scores = new Float32Array(n);
      for (const { slot, score } of cache.nearest(vector, Math.min(topK, n))) {
        order.push(slot);
        scores[slot] = score;
      }
    } else if (!filter) {
      // usearch's SIMD brute force: exact, and several times faster than a JS loop.
      const k = Math.min(topK, n);
      const result = loadUsearch().exactSearch(cache.data.subarray(0, n * d), vector, d, k, loadUsearch().MetricKind.Cos, 1) as {
        keys: BigUint64Array;
        distances: Float32Array;
      };
      order = [];
      scores = new Float32Array(n);
      for (let i = 0; i < result.keys.length; i++) {
        const row = Number(result.keys[i]!);
        if (row >= n || !Number.isFinite(result.distances[i]!)) continue;
        order.push(row);
        scores[row] = cache.norms[row] === 0 || qn === 0 ? 0 : 1 - result.distances[i]!;
      }
    } else {
      scores = new Float32Array(n);
      const data = cache.data;
      const norms = cache.norms;
      for (let i = 0; i < n; i++) {
        let dot = 0;
        const base = i * d;
        for (let j = 0; j < d; j++) dot += vector[j]! * data[base + j]!;
        const norm = norms[i]!;
        scores[i] = norm === 0 || qn === 0 ? 0 : dot / (qn * norm);
      }
      order = Array.from({ length: n }, (_, i) => i).sort((a, b) => scores[b]! - scores[a]!);
    }
    if (idsOnly && !filter) {
      // The cached matrix knows each key's id: nothing to read from the sidecar.
      return order.slice(0, topK).map((i) => ({ id: cache.ids[i]!, score: scores[i]!, metadata: {}, key: cache.keys[i]! }));
    }
    const candidates = order.map((i) => ({ key: cache.keys[i]!, score: scores[i]! }));
    const out: VectorMatch[] = [];
    for (let i = 0; i < candidates.length && out.length < topK; i += 256) {
      const page = candidates.slice(i, i + 256);
      const rowsByKey = this.matchRows(
        page.map((c) => c.key),
        idsOnly && !filter,
      );
      for (const c of page) {
        const row = rowsByKey.get(c.key);
        if (!row || (filter && !matchesMetadataFilter(row.metadata, filter))) continue;
        out.push({ id: row.id, score: c.score, metadata: row.metadata });
        if (out.length >= topK) break;
      }
    }
    return out;
  }

  private annQuery(
    vector: Float32Array,
    namespace: string,
    topK: number,
    filter: VectorQueryOptions["filter"],
    inNamespace: number,
    idsOnly: boolean,
    accept?: (key: number) => boolean,
  ): VectorMatch[] {
    if (this.options.lexicalVectors && !this.warnedGraphSearch.has(namespace)) {
      this.warnedGraphSearch.add(namespace);
      this.logger.warn(
        `vector memory: namespace ${namespace} holds ${inNamespace} vectors, more than exact_threshold (${this.exactThreshold}), so it is searched through the HNSW graph, which finds few of the true nearest neighbours of the hashing embedder's vectors. Use a semantic embedder (memory.vector.embedder: openai or onnx), keep hybrid search on (BM25 still finds keyword matches), or raise memory.vector.exact_threshold (exact search costs about 1 ms and 15 MB per 10,000 vectors of 384 dimensions).`,
      );
    }
    const total = this.index.size();
    // Other namespaces and filters share the graph: over-fetch, and widen until enough survive.
    const selective = Boolean(filter) || Boolean(accept) || inNamespace < total;
    let k = Math.min(total, selective ? topK * 4 : topK);
    for (;;) {
      // One thread: a single query gains nothing from the pool and pays its dispatch cost.
      const result = this.index.search(vector, k, 1);
      const keys: number[] = [];
      const distances: number[] = [];
      for (let i = 0; i < result.keys.length; i++) {
        const d = result.distances[i]!;
        if (!Number.isFinite(d)) continue;
        keys.push(Number(result.keys[i]!));
        distances.push(d);
      }
      const rows = this.matchRows(keys, idsOnly && !filter);
      const out: VectorMatch[] = [];
      keys.forEach((key, i) => {
        const row = rows.get(key);
        if (!row || row.namespace !== namespace) return;
        if (filter && !matchesMetadataFilter(row.metadata, filter)) return;
        if (accept && !accept(key)) return;
        out.push({ id: row.id, score: 1 - distances[i]!, metadata: row.metadata, ...(accept ? { key } : {}) });
      });
      if (out.length >= topK || k >= total) return out.slice(0, topK);
      k = Math.min(total, k * 4);
    }
  }

  /** Records by id in one namespace, with vectors. */
  async fetch(ids: string[], options: NamespaceOptions = {}): Promise<Map<string, VectorRecord>> {
    const rows = this.sidecar.getByIds(options.namespace ?? DEFAULT_NAMESPACE, ids);
    const keyed = this.sidecar.getByKeys(
      rows.map((r) => r.key),
      true,
    );
    const out = new Map<string, VectorRecord>();
    for (const row of keyed.values()) {
      if (row.vector) out.set(row.id, { id: row.id, vector: row.vector, metadata: row.metadata });
    }
    return out;
  }

  /** Delete by ids, filter or the whole namespace (sidecar first, then the index). */
  async delete(target: VectorDeleteTarget, options: NamespaceOptions = {}): Promise<void> {
    this.assertWritable();
    let keys: number[];
    try {
      keys = this.sidecar.delete(options.namespace ?? DEFAULT_NAMESPACE, target);
    } catch (error) {
      throw storageWriteError(`the vector sidecar ${this.sidecar.file}`, error);
    }
    this.invalidate(options.namespace ?? DEFAULT_NAMESPACE);
    const present = keys.filter((k) => this.index.contains(BigInt(k)) === true);
    this.removeFromIndex(present);
    this.markDirty();
  }

  /** BM25 keyword search over the sidecar's FTS5 index (hybrid mode). */
  keywordSearch(query: string, options: VectorQueryOptions): KeywordHit[] {
    return this.sidecar.keywordSearch(options.namespace ?? DEFAULT_NAMESPACE, query, options.topK, options.filter);
  }

  /** Every row of a namespace (or all), for export and reindex. */
  rows(namespace: string | null = null): Generator<SidecarRow> {
    return this.sidecar.iterate(namespace);
  }

  /** Records per namespace and the location on disk. */
  async stats(): Promise<VectorStoreStats> {
    const namespaces = this.sidecar.namespaceCounts();
    return {
      dimensions: this.dimensions,
      totalRecords: Object.values(namespaces).reduce((a, b) => a + b, 0),
      namespaces,
      location: this.options.directory ?? ":memory:",
    };
  }

  /** Number of vectors in the ANN index. */
  indexSize(): number {
    return this.index.size();
  }

  /** Write the index file now if anything changed. */
  async flush(): Promise<void> {
    await this.saves.flush();
  }

  /** Where the data lives: the store's directory (`:memory:` without one). */
  get locationLabel(): string {
    return this.indexPath ? path.dirname(this.indexPath) : ":memory:";
  }

  /** Vectors and text go into the sidecar in one transaction (the index follows). */
  async writeItems(write: ItemWrite, _sidecar: Sidecar): Promise<void> {
    this.upsertSync(write.records, write.namespace, write.lockWaitMs);
  }

  /** Sidecar rows with `vector = NULL`; an earlier vector of the same ids leaves the index. */
  async storeWithoutVectors(namespace: string, rows: SidecarWrite[], _sidecar: Sidecar, lockWaitMs?: number): Promise<void> {
    if (rows.length === 0) return;
    this.assertWritable();
    let keys: number[];
    try {
      keys = this.sidecar.upsert(
        namespace,
        rows.map((r) => ({ ...r, vector: null })),
        lockWaitMs,
      );
    } catch (error) {
      throw storageWriteError(`the vector sidecar ${this.sidecar.file}`, error);
    }
    this.invalidate(namespace);
    const present = keys.filter((k) => this.index.contains(BigInt(k)) === true);
    this.removeFromIndex(present);
    this.markDirty();
  }

  /** The sidecar holds every local item. */
  async fetchUnindexed(_id: string, _namespace: string): Promise<VectorRecord | null> {
    return null;
  }

  /** Deleting from the local store deletes the sidecar row too. */
  async removeItem(id: string, namespace: string, _sidecar: Sidecar): Promise<void> {
    await this.delete({ ids: [id] }, { namespace });
  }

  /** Delete the rows (sidecar rows and FTS entries) and their index entries. */
  async eraseRows(rows: ReadonlyArray<{ key: number; namespace: string; id: string }>, sidecar: Sidecar): Promise<void> {
    this.assertWritable();
    let removed: ReturnType<Sidecar["deleteKeys"]>;
    try {
      removed = sidecar.deleteKeys(rows.map((r) => r.key));
    } catch (error) {
      throw storageWriteError(`the vector sidecar ${sidecar.file}`, error);
    }
    for (const [namespace, keys] of removed) {
      this.invalidate(namespace);
      const present = keys.filter((k) => this.index.contains(BigInt(k)) === true);
      this.removeFromIndex(present);
    }
    this.markDirty();
  }

  /** Drop every vector and start an empty index. */
  beginReindex(sidecar: Sidecar): void {
    sidecar.clearVectors();
    this.rebuild();
  }

  /** Set the new vectors of existing rows. */
  async reindexRows(rows: SidecarRow[], vectors: Float32Array[], _namespace: string): Promise<void> {
    this.setVectors(rows.map((r, i) => ({ key: r.key, vector: vectors[i]! })));
  }

  /** `indexedVectors`: vectors in the ANN index; `unembeddedItems`: stored items without a vector (their text was refused by the embedder). */
  statsDetails(): Record<string, unknown> {
    const rows = Object.values(this.sidecar.namespaceCounts()).reduce((a, b) => a + b, 0);
    return { indexedVectors: this.indexSize(), unembeddedItems: rows - this.sidecar.countVectors() };
  }

  /** Save the index and close the sidecar (when this store opened it). Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    try {
      await this.flush();
    } finally {
      // A failed save is not retried here: the sidecar holds every vector and the next open
      // rebuilds the index (its recorded checksum no longer matches).
      this.closed = true;
      if (this.ownsSidecar) this.sidecar.close();
    }
  }
}
