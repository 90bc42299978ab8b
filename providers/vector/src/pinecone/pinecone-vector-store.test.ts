import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HermesMemoryError } from "@hermes/memory-core";
import { PineconeFake } from "@hermes/pinecone-fake";
import { PineconeVectorStore, flattenMetadata } from "./pinecone-vector-store.js";
import { HashingEmbedder } from "../embedders/hashing-embedder.js";

const DIMS = 32;
const embedder = new HashingEmbedder({ dimensions: DIMS });
let fake: PineconeFake;

beforeEach(async () => {
  fake = await PineconeFake.start({ dimension: DIMS, indexName: "mem" });
});
afterEach(async () => {
  await fake.close();
});

function store(extra: Partial<ConstructorParameters<typeof PineconeVectorStore>[0]> = {}): PineconeVectorStore {
  return new PineconeVectorStore({
    apiKey: "test-key",
    indexName: "mem",
    controllerHostUrl: fake.url,
    dimensions: DIMS,
    retry: { baseDelayMs: 5, maxDelayMs: 20, random: () => 0.5 },
    ...extra,
  });
}

async function records(texts: string[], meta: (i: number) => Record<string, unknown> = () => ({})) {
  const vectors = await embedder.embed(texts);
  return texts.map((text, i) => ({ id: `id${i}`, vector: vectors[i]!, metadata: flattenMetadata({ text, ...meta(i) }) }));
}

describe("PineconeVectorStore against the loopback fake", () => {
  it("looks up the host, upserts in batches, queries with filters and namespaces, fetches, lists, deletes and reports stats", async () => {
    const s = store({ upsertBatchSize: 3 });
    const texts = ["red apples", "green apples", "blue sky", "deep blue sea", "red sunset", "apple pie recipe", "sky diving"];
    await s.upsert(await records(texts, (i) => ({ parity: i % 2 === 0 ? "even" : "odd", n: i })), { namespace: "p:u1" });
    expect(fake.requests.filter((r) => r.path === "/indexes/mem")).toHaveLength(1);
    expect(fake.requests.filter((r) => r.path === "/vectors/upsert")).toHaveLength(3);
    expect(fake.requests.find((r) => r.path === "/vectors/upsert")!.headers["x-pinecone-api-version"]).toBe("2026-04");
    expect(fake.count("p:u1")).toBe(7);

    const [q] = await embedder.embed(["apples"]);
    const hits = await s.query(q!, { topK: 2, namespace: "p:u1" });
    expect(hits.map((h) => h.metadata.text).sort()).toEqual(["green apples", "red apples"]);
    const filtered = await s.query(q!, { topK: 5, namespace: "p:u1", filter: { $and: [{ parity: "odd" }, { n: { $gte: 1 } }] } });
    expect(filtered.every((h) => h.metadata.parity === "odd")).toBe(true);
    expect(await s.query(q!, { topK: 5, namespace: "p:u2" })).toEqual([]);

    const fresh = store(); // no read-your-writes cache: everything comes from the server
    expect((await fresh.query(q!, { topK: 1, namespace: "p:u1" }))[0]!.metadata.text).toMatch(/apples/);
    const fetched = await fresh.fetch(["id0", "nope"], { namespace: "p:u1" });
    expect([...fetched.keys()]).toEqual(["id0"]);
    expect(fetched.get("id0")!.vector.length).toBe(DIMS);

    const ids: string[] = [];
    for await (const id of fresh.listIds("p:u1", { pageSize: 3 })) ids.push(id);
    expect(ids).toHaveLength(7);

    await s.delete({ ids: ["id0"] }, { namespace: "p:u1" });
    await s.delete({ filter: { parity: "odd" } }, { namespace: "p:u1" });
    expect(fake.count("p:u1")).toBe(3);
    expect((await s.query(q!, { topK: 10, namespace: "p:u1" })).map((h) => h.id).sort()).toEqual(["id2", "id4", "id6"]);
    await s.upsert(await records(["default ns"]));
    const stats = await s.stats();
    expect(stats.namespaces).toEqual({ "p:u1": 3, "": 1 });
    expect(stats.totalRecords).toBe(4);
    await s.delete({ all: true }, { namespace: "p:u1" });
    expect(fake.count("p:u1")).toBe(0);
  });

  it("serves a record written a moment ago before Pinecone's index catches up, and hides a fresh delete", async () => {
    fake.lagQueries = true;
    const s = store();
    await s.upsert(await records(["the launch code is tulip"]), { namespace: "n" });
    const [q] = await embedder.embed(["launch code"]);
    expect((await s.query(q!, { topK: 3, namespace: "n" })).map((h) => h.id)).toEqual(["id0"]);
    expect(await store().query(q!, { topK: 3, namespace: "n" })).toEqual([]);
    fake.catchUp();
    await s.delete({ ids: ["id0"] }, { namespace: "n" });
    expect(await s.query(q!, { topK: 3, namespace: "n" })).toEqual([]);
  });

  it("retries a 429 and succeeds; gives up on repeated 500 with STORAGE_FAILED", async () => {
    const s = store({ host: fake.url });
    fake.failNext(429, 2, "/vectors/upsert");
    await s.upsert(await records(["hello"]));
    expect(fake.count()).toBe(1);
    expect(fake.requests.filter((r) => r.path === "/vectors/upsert")).toHaveLength(3);

    fake.failNext(500, 100, "/query");
    const [q] = await embedder.embed(["hello"]);
    const error = await s.query(q!, { topK: 1 }).catch((e: unknown) => e);
    expect(HermesMemoryError.hasCode(error, "STORAGE_FAILED")).toBe(true);
    expect((error as Error).message).toMatch(/HTTP 500/);
    expect(fake.requests.filter((r) => r.path === "/query")).toHaveLength(5); // 1 + maxRetries 4
  });

  it("reports a rejected request (wrong dimension) without retrying", async () => {
    const s = new PineconeVectorStore({ apiKey: "test-key", indexName: "mem", host: fake.url, dimensions: 16 });
    const error = await s.upsert([{ id: "a", vector: new Float32Array(16).fill(0.1) }]).catch((e: unknown) => e);
    expect(HermesMemoryError.hasCode(error, "STORAGE_FAILED")).toBe(true);
    expect((error as Error).message).toMatch(/rejected upsert .*HTTP 400.*does not match the dimension.*dimension \(16\)/);
    expect(fake.requests).toHaveLength(1);
  });

  it("stays within a call's budget while retrying", async () => {
    const s = store({ host: fake.url, retry: { baseDelayMs: 100, maxDelayMs: 1000, random: () => 0.5 } });
    fake.failNext(503, 1000, "/query");
    const [q] = await embedder.embed(["x"]);
    const started = Date.now();
    const error = await s.query(q!, { topK: 1, budgetMs: 250 }).catch((e: unknown) => e);
    expect(HermesMemoryError.hasCode(error, "STORAGE_FAILED")).toBe(true);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  describe("a 429 or 503 carrying Retry-After", () => {
    // The backoff alone would wait at most a few ms (baseDelayMs 5): a longer wait is the server's.
    const patient = { retry: { baseDelayMs: 5, maxDelayMs: 5000, random: () => 0.5 } };

    async function timedUpsert(s: PineconeVectorStore): Promise<number> {
      const recs = await records(["hello"]);
      const started = Date.now();
      await s.upsert(recs);
      return Date.now() - started;
    }

    it("waits the seconds it asks for (Retry-After: 1), then succeeds", async () => {
      fake.failNext(429, 1, "/vectors/upsert", "Too many requests", { "retry-after": "1" });
      expect(await timedUpsert(store({ host: fake.url, ...patient }))).toBeGreaterThanOrEqual(900);
      expect(fake.count()).toBe(1);
      expect(fake.requests.filter((r) => r.path === "/vectors/upsert")).toHaveLength(2);
    });

    it("waits until the HTTP-date it names, then succeeds", async () => {
      fake.failNext(503, 1, "/vectors/upsert", "Service unavailable", { "retry-after": new Date(Date.now() + 2000).toUTCString() });
      expect(await timedUpsert(store({ host: fake.url, ...patient }))).toBeGreaterThanOrEqual(900);
      expect(fake.count()).toBe(1);
    });

    it("waits at most maxDelayMs however long it asks (a day, or 31 years)", async () => {
      const s = store({ host: fake.url, retry: { baseDelayMs: 5, maxDelayMs: 300, random: () => 0.5 } });
      fake.failNext(429, 1, "/vectors/upsert", "Too many requests", { "retry-after": "86400" });
      const waited = await timedUpsert(s);
      expect(waited).toBeGreaterThanOrEqual(250); // the cap, not the backoff
      expect(waited).toBeLessThan(5000);
      fake.failNext(429, 1, "/vectors/upsert", "Too many requests", { "retry-after": "999999999" });
      expect(await timedUpsert(s)).toBeLessThan(5000);
      expect(fake.requests.filter((r) => r.path === "/vectors/upsert")).toHaveLength(4);
    });

    it("ignores a Retry-After that is not seconds or an HTTP-date, and backs off as usual", async () => {
      fake.failNext(429, 3, "/vectors/upsert", "Too many requests", { "retry-after": "soon" });
      expect(await timedUpsert(store({ host: fake.url, ...patient }))).toBeLessThan(900);
      expect(fake.requests.filter((r) => r.path === "/vectors/upsert")).toHaveLength(4);
    });

    it("does not start a wait that would end past the call's budget: fails at once saying what Pinecone asked", async () => {
      const s = store({ host: fake.url, ...patient });
      fake.failNext(429, 1000, "/query", "Too many requests", { "retry-after": "2" });
      const [q] = await embedder.embed(["x"]);
      const error = await s.query(q!, { topK: 1, budgetMs: 1000 }).catch((e: unknown) => e);
      expect(HermesMemoryError.hasCode(error, "STORAGE_FAILED")).toBe(true);
      expect((error as Error).message).toMatch(/failed \(HTTP 429; it asked to retry after 2 s\) after retries/);
      expect(fake.requests.filter((r) => r.path === "/query")).toHaveLength(1);
    });
  });

  it("turns a 401 into PROVIDER_UNAVAILABLE with a setup message and does not retry", async () => {
    const s = store({ apiKey: "wrong", host: fake.url });
    const error = await s.stats().catch((e: unknown) => e);
    expect(HermesMemoryError.hasCode(error, "PROVIDER_UNAVAILABLE")).toBe(true);
    expect((error as Error).message).toMatch(/PINECONE_API_KEY/);
    expect(fake.requests).toHaveLength(1);
    expect(s.authError).not.toBeNull();
  });

  it("honours the request timeout on a slow response", async () => {
    const s = store({ host: fake.url, requestTimeoutMs: 100, retry: { maxRetries: 1, baseDelayMs: 5, maxDelayMs: 5 } });
    fake.delayNext(5000, 5);
    const started = Date.now();
    const error = await s.stats().catch((e: unknown) => e);
    expect(HermesMemoryError.hasCode(error, "STORAGE_FAILED")).toBe(true);
    expect((error as Error).message).toMatch(/timed out/);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it("flattens metadata to Pinecone's types and truncates long text", () => {
    const flat = flattenMetadata({
      a: 1,
      b: "x",
      c: true,
      d: ["p", "q"],
      e: { nested: 1 },
      f: null,
      g: Number.NaN,
      text: "é".repeat(40_000),
    });
    expect(flat).toMatchObject({ a: 1, b: "x", c: true, d: ["p", "q"], e: '{"nested":1}', text_truncated: true });
    expect("f" in flat || "g" in flat).toBe(false);
    expect(Buffer.byteLength(flat.text as string)).toBeLessThanOrEqual(30_000);
  });
});
