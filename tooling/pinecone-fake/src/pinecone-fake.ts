/**
 * A loopback HTTP server speaking the Pinecone 8.2.0 REST protocol (control-plane host lookup and
 * the data plane: upsert, query, fetch, delete, describe_index_stats, list) so the real SDK can be
 * tested unchanged. Used by the vector provider's tests (its contract run included) and by
 * pnpm test:chaos. Metadata filters are evaluated by the fake's own `pineconeFilterMatches`.
 *
 * Fault injection: `failNext(status, times)`, `delayNext(ms, times)`, and `lagQueries` (upserts
 * become visible to `query` only after `catchUp()`, like Pinecone's eventual consistency).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { pineconeFilterMatches, type FakeMetadata } from "./filter.js";

interface StoredVector {
  id: string;
  values: number[];
  metadata?: FakeMetadata;
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
  indexName?: string;
  dimension?: number;
}

interface Fault {
  status: number;
  remaining: number;
  pathPrefix?: string;
  message?: string;
}

function normalizeNamespace(ns: unknown): string {
  return ns === undefined || ns === null || ns === "__default__" ? "" : String(ns);
}

function cosine(a: number[], b: number[]): number {
  let dot = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * (b[i] ?? 0);
    na += a[i]! * a[i]!;
    nb += (b[i] ?? 0) * (b[i] ?? 0);
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

export class PineconeFake {
  apiKey: string;
  readonly indexName: string;
  readonly dimension: number;
  readonly namespaces = new Map<string, Map<string, StoredVector>>();
  readonly requests: FakeRequest[] = [];
  /** When true, upserts are stored but hidden from `query` until `catchUp()`. */
  lagQueries = false;
  private readonly pending = new Map<string, Set<string>>();
  private faults: Fault[] = [];
  private delays: Array<{ ms: number; remaining: number }> = [];
  private server: http.Server | null = null;
  url = "";

  private constructor(options: PineconeFakeOptions) {
    this.apiKey = options.apiKey ?? "test-key";
    this.indexName = options.indexName ?? "hermes";
    this.dimension = options.dimension ?? 384;
  }

  /** Start on 127.0.0.1, port 0. */
  static async start(options: PineconeFakeOptions = {}): Promise<PineconeFake> {
    const fake = new PineconeFake(options);
    fake.server = http.createServer((req, res) => void fake.handle(req, res));
    await new Promise<void>((resolve) => fake.server!.listen(0, "127.0.0.1", resolve));
    fake.url = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}`;
    return fake;
  }

  /** Answer the next `times` requests (optionally only those whose path starts with `pathPrefix`) with `status`. */
  failNext(status: number, times = 1, pathPrefix?: string, message?: string): void {
    this.faults.push({ status, remaining: times, pathPrefix, message });
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

  /** Make every lagged upsert visible to queries. */
  catchUp(): void {
    this.pending.clear();
  }

  /** Number of vectors in a namespace (`""` = default). */
  count(namespace = ""): number {
    return this.namespaces.get(namespace)?.size ?? 0;
  }

  /** Stop the server and drop open connections. */
  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = null;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private ns(name: string): Map<string, StoredVector> {
    let map = this.namespaces.get(name);
    if (!map) {
      map = new Map();
      this.namespaces.set(name, map);
    }
    return map;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString("utf8");
    const url = new URL(req.url ?? "/", "http://fake");
    const body = raw ? (JSON.parse(raw) as Record<string, unknown>) : null;
    this.requests.push({ method: req.method ?? "GET", path: url.pathname, query: url.searchParams, body, headers: req.headers });

    const send = (status: number, payload: unknown): void => {
      const text = JSON.stringify(payload);
      res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
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
      send(fault.status, { message: fault.message ?? `injected ${fault.status}` });
      return;
    }
    try {
      send(200, this.route(req.method ?? "GET", url, body ?? {}));
    } catch (error) {
      send(400, { message: (error as Error).message });
    }
  }

  private route(method: string, url: URL, body: Record<string, unknown>): unknown {
    const p = url.pathname;
    if (method === "GET" && p.startsWith("/indexes/")) {
      return {
        name: decodeURIComponent(p.slice("/indexes/".length)),
        dimension: this.dimension,
        metric: "cosine",
        host: this.url,
        vector_type: "dense",
        deletion_protection: "disabled",
        spec: { serverless: { cloud: "aws", region: "us-east-1" } },
        status: { ready: true, state: "Ready" },
      };
    }
    if (method === "POST" && p === "/vectors/upsert") {
      const namespace = normalizeNamespace(body.namespace);
      const vectors = body.vectors as StoredVector[];
      for (const v of vectors) {
        if (v.values.length !== this.dimension) {
          throw new Error(`Vector dimension ${v.values.length} does not match the dimension of the index ${this.dimension}`);
        }
        this.ns(namespace).set(v.id, { id: v.id, values: v.values, metadata: v.metadata });
        if (this.lagQueries) {
          if (!this.pending.has(namespace)) this.pending.set(namespace, new Set());
          this.pending.get(namespace)!.add(v.id);
        }
      }
      return { upsertedCount: vectors.length };
    }
    if (method === "POST" && p === "/query") {
      const namespace = normalizeNamespace(body.namespace);
      const vector = body.vector as number[];
      const hidden = this.pending.get(namespace);
      const filter = body.filter as Record<string, unknown> | undefined;
      const matches = [...this.ns(namespace).values()]
        .filter((v) => !hidden?.has(v.id) && pineconeFilterMatches(v.metadata ?? {}, filter))
        .map((v) => ({ id: v.id, score: cosine(vector, v.values), values: body.includeValues ? v.values : [], metadata: body.includeMetadata ? v.metadata : undefined }))
        .sort((a, b) => b.score - a.score)
        .slice(0, Number(body.topK ?? 10));
      return { matches, namespace: "", usage: { readUnits: 1 } };
    }
    if (method === "GET" && p === "/vectors/fetch") {
      const namespace = normalizeNamespace(url.searchParams.get("namespace"));
      const vectors: Record<string, StoredVector> = {};
      for (const id of url.searchParams.getAll("ids")) {
        const v = this.ns(namespace).get(id);
        if (v) vectors[id] = v;
      }
      return { vectors, namespace: "", usage: { readUnits: 1 } };
    }
    if (method === "POST" && p === "/vectors/delete") {
      const namespace = normalizeNamespace(body.namespace);
      const map = this.ns(namespace);
      if (body.deleteAll) map.clear();
      else if (Array.isArray(body.ids)) for (const id of body.ids as string[]) map.delete(id);
      else if (body.filter) {
        for (const [id, v] of map) if (pineconeFilterMatches(v.metadata ?? {}, body.filter)) map.delete(id);
      }
      return {};
    }
    if (method === "POST" && p === "/describe_index_stats") {
      const namespaces: Record<string, { vectorCount: number }> = {};
      let total = 0;
      for (const [name, map] of this.namespaces) {
        if (map.size === 0) continue;
        namespaces[name === "" ? "__default__" : name] = { vectorCount: map.size };
        total += map.size;
      }
      return { namespaces, dimension: this.dimension, indexFullness: 0, totalVectorCount: total };
    }
    if (method === "GET" && p === "/vectors/list") {
      const namespace = normalizeNamespace(url.searchParams.get("namespace"));
      const prefix = url.searchParams.get("prefix") ?? "";
      const limit = Number(url.searchParams.get("limit") ?? "100");
      const start = Number(url.searchParams.get("paginationToken") ?? "0");
      const ids = [...this.ns(namespace).keys()].filter((id) => id.startsWith(prefix)).sort();
      const page = ids.slice(start, start + limit);
      const out: Record<string, unknown> = { vectors: page.map((id) => ({ id })), namespace: "", usage: { readUnits: 1 } };
      if (start + limit < ids.length) out.pagination = { next: String(start + limit) };
      return out;
    }
    throw new Error(`fake: unsupported ${method} ${p}`);
  }
}
