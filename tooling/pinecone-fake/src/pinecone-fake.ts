/**
 * A loopback HTTP server speaking the Pinecone 8.2.0 REST protocol (control plane: create,
 * describe and list indexes; data plane: upsert, query, fetch, delete, describe_index_stats, list)
 * so the real SDK can be tested unchanged. Used by the vector provider's tests (its contract run
 * included) and by pnpm test:chaos. Metadata filters are evaluated by the fake's own
 * `pineconeFilterMatches`.
 *
 * Indexes: the index named in the options exists from the start and is served at `url`; an index
 * created through the control plane (`POST /indexes`) is served at its own host,
 * `${url}/hosts/<name>`, with its own records.
 *
 * Sparse–dense records, as Pinecone has them: a record may carry `sparseValues: {indices, values}`
 * next to its dense `values`, and a query may carry `sparseVector`, only on an index with metric
 * `dotproduct` (any other index answers HTTP 400 "Index configuration does not support sparse
 * values"). On a dotproduct index a match scores dense·dense + sparse·sparse; on a cosine index
 * the cosine of the dense vectors; on a euclidean index the squared distance (smaller is closer).
 * Sparse indices are unsigned 32-bit integers, unique within a vector, at most 1000 of them, with
 * as many values as indices.
 *
 * Limits Pinecone enforces and the fake answers with HTTP 400: at most 1000 records per upsert
 * and per delete by ids; 40 KB of metadata per record; `topK` from 1 to 10000, and at most 1000
 * when metadata or values are included; `list` pages of 1 to 100 ids (ids in sorted order, the
 * pagination token being opaque to callers).
 *
 * Fault injection: `failNext(status, times, pathPrefix, message, headers)`, `refuseRecords(predicate)`, `delayNext(ms, times)`, and `lagQueries` (upserts
 * become visible to `query` only after `catchUp()`, like Pinecone's eventual consistency).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { pineconeFilterMatches, type FakeMetadata } from "./filter.js";

/** A sparse vector: parallel lists of unsigned 32-bit indices and their values. */
export interface FakeSparseValues {
  indices: number[];
  values: number[];
}

/** One stored record. */
export interface StoredVector {
  id: string;
  values: number[];
  sparseValues?: FakeSparseValues;
  metadata?: FakeMetadata;
}

/** The similarity an index ranks by. */
export type FakeMetric = "cosine" | "dotproduct" | "euclidean";

/** One index the fake holds: its settings and records (namespace → id → record). */
export interface FakeIndex {
  readonly name: string;
  readonly dimension: number;
  readonly metric: FakeMetric;
  readonly host: string;
  readonly namespaces: Map<string, Map<string, StoredVector>>;
  /** Ids upserted while `lagQueries` was on, hidden from `query` until `catchUp()`. */
  readonly pending: Map<string, Set<string>>;
}

/** One request the fake received (for assertions). */
export interface FakeRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  body: Record<string, unknown> | null;
  headers: http.IncomingHttpHeaders;
}

export interface PineconeFakeOptions {
  apiKey?: string;
  /** Name of the index that exists from the start (default `hermes`). */
  indexName?: string;
  /** Its dimension (default 384). */
  dimension?: number;
  /** Its metric (default `cosine`, Pinecone's default). */
  metric?: FakeMetric;
}

interface Fault {
  status: number;
  remaining: number;
  pathPrefix?: string;
  message?: string;
  headers?: Record<string, string>;
}

/** A request the fake refuses: answered with `status` and Pinecone's error body. */
class FakeHttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const badRequest = (message: string): FakeHttpError => new FakeHttpError(400, "INVALID_ARGUMENT", message);

const METRICS: readonly FakeMetric[] = ["cosine", "dotproduct", "euclidean"];
const MAX_SPARSE_VALUES = 1000;
const MAX_UINT32 = 4_294_967_295;
const MAX_BATCH = 1000;
const MAX_TOP_K = 10_000;
const MAX_TOP_K_WITH_DATA = 1000;
const MAX_DIMENSION = 20_000;
const MAX_METADATA_BYTES = 40_960;
/** Pinecone refuses an upsert request larger than 2 MB. */
const MAX_UPSERT_REQUEST_BYTES = 2 * 1024 * 1024;
const SPARSE_UNSUPPORTED = "Index configuration does not support sparse values";

function normalizeNamespace(ns: unknown): string {
  return ns === undefined || ns === null || ns === "__default__" ? "" : String(ns);
}

function cosine(a: number[], b: number[]): number {
  let dot = 0,
    na = 0,
    nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * (b[i] ?? 0);
    na += a[i]! * a[i]!;
    nb += (b[i] ?? 0) * (b[i] ?? 0);
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

function dot(a: number[], b: number[]): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i]! * (b[i] ?? 0);
  return sum;
}

function squaredDistance(a: number[], b: number[]): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += (a[i]! - (b[i] ?? 0)) ** 2;
  return sum;
}

function sparseDot(a: FakeSparseValues | undefined, b: FakeSparseValues | undefined): number {
  if (!a || !b) return 0;
  const byIndex = new Map<number, number>();
  a.indices.forEach((index, i) => byIndex.set(index, a.values[i]!));
  let sum = 0;
  b.indices.forEach((index, i) => (sum += (byIndex.get(index) ?? 0) * b.values[i]!));
  return sum;
}

/** Validate a sparse vector the way Pinecone does; `what` names it in the message. */
function checkSparse(raw: unknown, what: string): FakeSparseValues {
  const sparse = raw as Partial<FakeSparseValues> | null;
  if (!sparse || !Array.isArray(sparse.indices) || !Array.isArray(sparse.values))
    throw badRequest(`${what}: sparse values need the lists indices and values`);
  if (sparse.indices.length !== sparse.values.length) {
    throw badRequest(`${what}: sparse vector has ${sparse.indices.length} indices but ${sparse.values.length} values`);
  }
  if (sparse.indices.length > MAX_SPARSE_VALUES)
    throw badRequest(`${what}: sparse vector has ${sparse.indices.length} non-zero values; the maximum is ${MAX_SPARSE_VALUES}`);
  const seen = new Set<number>();
  for (const index of sparse.indices) {
    if (typeof index !== "number" || !Number.isInteger(index) || index < 0 || index > MAX_UINT32) {
      throw badRequest(`${what}: sparse vector index ${String(index)} is not an unsigned 32-bit integer`);
    }
    if (seen.has(index)) throw badRequest(`${what}: sparse vector contains duplicate index ${index}`);
    seen.add(index);
  }
  for (const value of sparse.values) {
    if (typeof value !== "number" || !Number.isFinite(value))
      throw badRequest(`${what}: sparse vector value ${String(value)} is not a finite number`);
  }
  return { indices: [...sparse.indices], values: [...sparse.values] };
}

export class PineconeFake {
  apiKey: string;
  readonly indexName: string;
  readonly dimension: number;
  readonly metric: FakeMetric;
  /** The records of the index named in the options (namespace → id → record). */
  readonly namespaces = new Map<string, Map<string, StoredVector>>();
  readonly requests: FakeRequest[] = [];
  /** When true, upserts are stored but hidden from `query` until `catchUp()`. */
  lagQueries = false;
  private readonly indexes = new Map<string, FakeIndex>();
  private faults: Fault[] = [];
  private refusal: { refuse: (record: { id: string; metadata?: Record<string, unknown> }) => boolean; message: string } | null = null;
  private delays: Array<{ ms: number; remaining: number }> = [];
  private server: http.Server | null = null;
  url = "";

  private constructor(options: PineconeFakeOptions) {
    this.apiKey = options.apiKey ?? "test-key";
    this.indexName = options.indexName ?? "hermes";
    this.dimension = options.dimension ?? 384;
    this.metric = options.metric ?? "cosine";
  }

  /** Start on 127.0.0.1, port 0. */
  static async start(options: PineconeFakeOptions = {}): Promise<PineconeFake> {
    const fake = new PineconeFake(options);
    fake.server = http.createServer((req, res) => void fake.handle(req, res));
    await new Promise<void>((resolve) => fake.server!.listen(0, "127.0.0.1", resolve));
    fake.url = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}`;
    fake.indexes.set(fake.indexName, {
      name: fake.indexName,
      dimension: fake.dimension,
      metric: fake.metric,
      host: fake.url,
      namespaces: fake.namespaces,
      pending: new Map(),
    });
    return fake;
  }

  /**
   * Answer the next `times` requests (optionally only those whose path starts with `pathPrefix`)
   * with `status`, and `headers` added to the answer (e.g. `{"retry-after": "1"}` with a 429).
   */
  failNext(status: number, times = 1, pathPrefix?: string, message?: string, headers?: Record<string, string>): void {
    this.faults.push({ status, remaining: times, pathPrefix, message, headers });
  }

  /**
   * Refuse (HTTP 400, nothing of the request stored) every upsert holding a record `refuse` picks,
   * as Pinecone refuses a whole request for one invalid record; `null` stops refusing.
   */
  refuseRecords(
    refuse: ((record: { id: string; metadata?: Record<string, unknown> }) => boolean) | null,
    message = "Record refused",
  ): void {
    this.refusal = refuse ? { refuse, message } : null;
  }

  /** Drop every pending fault and delay. */
  clearFaults(): void {
    this.faults = [];
    this.delays = [];
  }

  /** Delay the next `times` responses by `ms`. */
  delayNext(ms: number, times = 1): void {
    this.delays.push({ ms, remaining: times });
  }

  /** Make every lagged upsert visible to queries (in every index). */
  catchUp(): void {
    for (const index of this.indexes.values()) index.pending.clear();
  }

  /** Number of records in a namespace (`""` = default) of an index (default: the one named in the options). */
  count(namespace = "", indexName = this.indexName): number {
    return this.indexes.get(indexName)?.namespaces.get(namespace)?.size ?? 0;
  }

  /** An index the fake holds (for assertions), or undefined. */
  index(name: string): FakeIndex | undefined {
    return this.indexes.get(name);
  }

  /** Stop the server and drop open connections. */
  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = null;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString("utf8");
    const url = new URL(req.url ?? "/", "http://fake");
    const body = raw ? (JSON.parse(raw) as Record<string, unknown>) : null;
    this.requests.push({ method: req.method ?? "GET", path: url.pathname, query: url.searchParams, body, headers: req.headers });

    const send = (status: number, payload: unknown, headers: Record<string, string> = {}): void => {
      const text = JSON.stringify(payload);
      res.writeHead(status, { ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(text) });
      res.end(text);
    };
    const delay = this.delays.find((d) => d.remaining > 0);
    if (delay) {
      delay.remaining--;
      await new Promise((resolve) => setTimeout(resolve, delay.ms));
      if (res.destroyed || req.socket.destroyed) return;
    }
    if (req.headers["api-key"] !== this.apiKey) {
      send(401, { error: { code: "UNAUTHENTICATED", message: "Invalid API Key" }, status: 401 });
      return;
    }
    const fault = this.faults.find((f) => f.remaining > 0 && (!f.pathPrefix || url.pathname.startsWith(f.pathPrefix)));
    if (fault) {
      fault.remaining--;
      send(fault.status, { message: fault.message ?? `injected ${fault.status}` }, fault.headers);
      return;
    }
    try {
      if (req.method === "POST" && url.pathname === "/vectors/upsert" && Buffer.byteLength(raw) > MAX_UPSERT_REQUEST_BYTES) {
        throw badRequest(`Request size ${(Buffer.byteLength(raw) / 1024 / 1024).toFixed(1)}MB exceeds the maximum supported size of 2MB`);
      }
      send(200, this.route(req.method ?? "GET", url, body ?? {}));
    } catch (error) {
      if (error instanceof FakeHttpError) {
        // Pinecone's data plane answers {code, message}; the control plane {error: {code, message}, status}.
        send(error.status, {
          code: error.status === 400 ? 3 : 5,
          message: error.message,
          details: [],
          error: { code: error.code, message: error.message },
          status: error.status,
        });
      } else {
        send(400, { message: (error as Error).message });
      }
    }
  }

  private describe(index: FakeIndex): Record<string, unknown> {
    return {
      name: index.name,
      dimension: index.dimension,
      metric: index.metric,
      host: index.host,
      vector_type: "dense",
      deletion_protection: "disabled",
      spec: { serverless: { cloud: "aws", region: "us-east-1" } },
      status: { ready: true, state: "Ready" },
    };
  }

  private createIndex(body: Record<string, unknown>): Record<string, unknown> {
    const name = body.name;
    if (typeof name !== "string" || !/^[a-z0-9][a-z0-9-]{0,44}$/.test(name)) {
      throw badRequest("Index name must be 1-45 characters: lower-case letters, digits and hyphens, starting with a letter or digit");
    }
    if (this.indexes.has(name)) throw new FakeHttpError(409, "ALREADY_EXISTS", `Resource ${name} already exists`);
    if (body.vector_type !== undefined && body.vector_type !== "dense")
      throw badRequest("fake: only dense indexes (with optional sparse values) are supported");
    const metric = (body.metric ?? "cosine") as FakeMetric;
    if (!METRICS.includes(metric)) throw badRequest(`Metric must be one of ${METRICS.join(", ")}`);
    const dimension = body.dimension;
    if (typeof dimension !== "number" || !Number.isInteger(dimension) || dimension < 1 || dimension > MAX_DIMENSION) {
      throw badRequest(`Dimension must be an integer from 1 to ${MAX_DIMENSION} for a dense index`);
    }
    const index: FakeIndex = { name, dimension, metric, host: `${this.url}/hosts/${name}`, namespaces: new Map(), pending: new Map() };
    this.indexes.set(name, index);
    return this.describe(index);
  }

  private route(method: string, url: URL, body: Record<string, unknown>): unknown {
    let p = url.pathname;
    if (method === "POST" && p === "/indexes") return this.createIndex(body);
    if (method === "GET" && p === "/indexes") return { indexes: [...this.indexes.values()].map((i) => this.describe(i)) };
    if (method === "GET" && p.startsWith("/indexes/")) {
      const name = decodeURIComponent(p.slice("/indexes/".length));
      const index = this.indexes.get(name);
      if (!index) throw new FakeHttpError(404, "NOT_FOUND", `Resource ${name} not found`);
      return this.describe(index);
    }
    let index = this.indexes.get(this.indexName)!;
    const hosted = /^\/hosts\/([^/]+)(\/.*)$/.exec(p);
    if (hosted) {
      const named = this.indexes.get(decodeURIComponent(hosted[1]!));
      if (!named) throw new FakeHttpError(404, "NOT_FOUND", `Index ${hosted[1]} not found`);
      index = named;
      p = hosted[2]!;
    }
    return this.dataPlane(index, method, p, url, body);
  }

  private dataPlane(index: FakeIndex, method: string, p: string, url: URL, body: Record<string, unknown>): unknown {
    const ns = (name: string): Map<string, StoredVector> => {
      let map = index.namespaces.get(name);
      if (!map) {
        map = new Map();
        index.namespaces.set(name, map);
      }
      return map;
    };
    if (method === "POST" && p === "/vectors/upsert") {
      const namespace = normalizeNamespace(body.namespace);
      const vectors = body.vectors as StoredVector[];
      if (!Array.isArray(vectors) || vectors.length === 0) throw badRequest("Upsert needs a non-empty list of vectors");
      if (vectors.length > MAX_BATCH)
        throw badRequest(`Upsert of ${vectors.length} vectors exceeds the maximum of ${MAX_BATCH} per request`);
      // Validate the whole batch first: a refused request stores nothing.
      const checked = vectors.map((v) => {
        if (this.refusal?.refuse({ id: v.id, ...(v.metadata ? { metadata: v.metadata as Record<string, unknown> } : {}) }))
          throw badRequest(`${this.refusal.message}: ${v.id}`);
        if (!Array.isArray(v.values) || v.values.length !== index.dimension) {
          throw badRequest(
            `Vector dimension ${Array.isArray(v.values) ? v.values.length : 0} does not match the dimension of the index ${index.dimension}`,
          );
        }
        const metadataBytes = Buffer.byteLength(JSON.stringify(v.metadata ?? {}));
        if (metadataBytes > MAX_METADATA_BYTES)
          throw badRequest(`Metadata size is ${metadataBytes} bytes, which exceeds the limit of ${MAX_METADATA_BYTES} bytes per vector`);
        if (v.sparseValues === undefined || v.sparseValues === null) return { id: v.id, values: v.values, metadata: v.metadata };
        if (index.metric !== "dotproduct") throw badRequest(SPARSE_UNSUPPORTED);
        return { id: v.id, values: v.values, sparseValues: checkSparse(v.sparseValues, `vector ${v.id}`), metadata: v.metadata };
      });
      for (const v of checked) {
        ns(namespace).set(v.id, v);
        if (this.lagQueries) {
          if (!index.pending.has(namespace)) index.pending.set(namespace, new Set());
          index.pending.get(namespace)!.add(v.id);
        }
      }
      return { upsertedCount: vectors.length };
    }
    if (method === "POST" && p === "/query") {
      const namespace = normalizeNamespace(body.namespace);
      const vector = body.vector as number[];
      const topK = Number(body.topK ?? 10);
      const withData = body.includeMetadata === true || body.includeValues === true;
      if (!Number.isInteger(topK) || topK < 1 || topK > (withData ? MAX_TOP_K_WITH_DATA : MAX_TOP_K)) {
        throw badRequest(
          `topK must be from 1 to ${MAX_TOP_K} (${MAX_TOP_K_WITH_DATA} when metadata or values are included); got ${String(body.topK)}`,
        );
      }
      if (!Array.isArray(vector) || vector.length !== index.dimension) {
        throw badRequest(
          `Query vector dimension ${Array.isArray(vector) ? vector.length : 0} does not match the dimension of the index ${index.dimension}`,
        );
      }
      let sparse: FakeSparseValues | undefined;
      if (body.sparseVector !== undefined && body.sparseVector !== null) {
        if (index.metric !== "dotproduct") throw badRequest(SPARSE_UNSUPPORTED);
        sparse = checkSparse(body.sparseVector, "query");
      }
      const score = (v: StoredVector): number =>
        index.metric === "dotproduct"
          ? dot(vector, v.values) + sparseDot(sparse, v.sparseValues)
          : index.metric === "euclidean"
            ? squaredDistance(vector, v.values)
            : cosine(vector, v.values);
      const hidden = index.pending.get(namespace);
      const filter = body.filter as Record<string, unknown> | undefined;
      const matches = [...ns(namespace).values()]
        .filter((v) => !hidden?.has(v.id) && pineconeFilterMatches(v.metadata ?? {}, filter))
        .map((v) => ({
          id: v.id,
          score: score(v),
          values: body.includeValues ? v.values : [],
          ...(body.includeValues && v.sparseValues ? { sparseValues: v.sparseValues } : {}),
          metadata: body.includeMetadata ? v.metadata : undefined,
        }))
        .sort((a, b) => (index.metric === "euclidean" ? a.score - b.score : b.score - a.score))
        .slice(0, topK);
      return { matches, namespace: "", usage: { readUnits: 1 } };
    }
    if (method === "GET" && p === "/vectors/fetch") {
      const namespace = normalizeNamespace(url.searchParams.get("namespace"));
      const vectors: Record<string, StoredVector> = {};
      for (const id of url.searchParams.getAll("ids")) {
        const v = ns(namespace).get(id);
        if (v) vectors[id] = v;
      }
      return { vectors, namespace: "", usage: { readUnits: 1 } };
    }
    if (method === "POST" && p === "/vectors/delete") {
      const namespace = normalizeNamespace(body.namespace);
      const map = ns(namespace);
      if (body.deleteAll) map.clear();
      else if (Array.isArray(body.ids)) {
        if (body.ids.length > MAX_BATCH)
          throw badRequest(`Delete of ${body.ids.length} ids exceeds the maximum of ${MAX_BATCH} per request`);
        for (const id of body.ids as string[]) map.delete(id);
      } else if (body.filter) {
        for (const [id, v] of map) if (pineconeFilterMatches(v.metadata ?? {}, body.filter)) map.delete(id);
      }
      return {};
    }
    if (method === "POST" && p === "/describe_index_stats") {
      const namespaces: Record<string, { vectorCount: number }> = {};
      let total = 0;
      for (const [name, map] of index.namespaces) {
        if (map.size === 0) continue;
        namespaces[name === "" ? "__default__" : name] = { vectorCount: map.size };
        total += map.size;
      }
      return {
        namespaces,
        dimension: index.dimension,
        indexFullness: 0,
        totalVectorCount: total,
        metric: index.metric,
        vectorType: "dense",
      };
    }
    if (method === "GET" && p === "/vectors/list") {
      const namespace = normalizeNamespace(url.searchParams.get("namespace"));
      const prefix = url.searchParams.get("prefix") ?? "";
      const limit = Number(url.searchParams.get("limit") ?? "100");
      if (!Number.isInteger(limit) || limit < 1 || limit > 100)
        throw badRequest(`limit must be from 1 to 100; got ${String(url.searchParams.get("limit"))}`);
      // The token is the last id of the previous page: records deleted between pages shift nothing.
      const token = url.searchParams.get("paginationToken");
      const after = token === null ? null : Buffer.from(token, "base64url").toString("utf8");
      const ids = [...ns(namespace).keys()].filter((id) => id.startsWith(prefix) && (after === null || id > after)).sort();
      const page = ids.slice(0, limit);
      const out: Record<string, unknown> = { vectors: page.map((id) => ({ id })), namespace: "", usage: { readUnits: 1 } };
      if (ids.length > limit) out.pagination = { next: Buffer.from(page[page.length - 1]!, "utf8").toString("base64url") };
      return out;
    }
    throw badRequest(`fake: unsupported ${method} ${p}`);
  }
}
