import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Pinecone } from "@pinecone-database/pinecone";
import { PineconeFake } from "./pinecone-fake.js";

let fake: PineconeFake;
let client: Pinecone;

beforeEach(async () => {
  fake = await PineconeFake.start({ dimension: 3, indexName: "hybrid", metric: "dotproduct" });
  client = new Pinecone({ apiKey: fake.apiKey, controllerHostUrl: fake.url, maxRetries: 0 });
});
afterEach(async () => {
  await fake.close();
});

/** The HTTP status and message of a rejected SDK call. */
async function rejection(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e as Error,
  );
  if (!error) throw new Error("expected the call to be rejected");
  return error.message;
}

describe("PineconeFake control plane", () => {
  it("describes the starting index with its metric, answers 404 for an unknown one, and creates indexes served at their own host", async () => {
    const described = await client.describeIndex("hybrid");
    expect(described).toMatchObject({ name: "hybrid", dimension: 3, metric: "dotproduct", host: fake.url });
    expect(await rejection(client.describeIndex("missing"))).toMatch(/404/);

    const created = await client.createIndex({
      name: "plain",
      dimension: 2,
      metric: "cosine",
      spec: { serverless: { cloud: "aws", region: "us-east-1" } },
    });
    expect(created).toMatchObject({ name: "plain", dimension: 2, metric: "cosine", host: `${fake.url}/hosts/plain` });
    expect((await client.listIndexes()).indexes?.map((i) => i.name).sort()).toEqual(["hybrid", "plain"]);
    expect(
      await rejection(client.createIndex({ name: "plain", dimension: 2, spec: { serverless: { cloud: "aws", region: "us-east-1" } } })),
    ).toMatch(/already exists/i);

    // Each index keeps its own records.
    const plain = client.index({ name: "plain", host: created!.host });
    await plain.upsert({ records: [{ id: "p1", values: [1, 0] }] });
    expect(fake.count("", "plain")).toBe(1);
    expect(fake.count("")).toBe(0);
    expect((await plain.describeIndexStats()).totalRecordCount).toBe(1);
  });
});

describe("PineconeFake sparse-dense records", () => {
  it("stores sparse values, returns them from fetch and query, and scores dense·dense + sparse·sparse on a dotproduct index", async () => {
    const index = client.index({ name: "hybrid", host: fake.url });
    await index.upsert({
      records: [
        { id: "a", values: [1, 0, 0], sparseValues: { indices: [7, 4_000_000_000], values: [2, 1] }, metadata: { kind: "fact" } },
        { id: "b", values: [0.5, 0, 0], sparseValues: { indices: [9], values: [5] }, metadata: { kind: "turn" } },
        { id: "c", values: [0, 1, 0] },
      ],
    });
    const fetched = await index.fetch({ ids: ["a", "c"] });
    expect(fetched.records.a!.sparseValues).toEqual({ indices: [7, 4_000_000_000], values: [2, 1] });
    expect(fetched.records.c!.sparseValues).toBeUndefined();

    const dense = await index.query({ vector: [1, 0, 0], topK: 3 });
    expect(dense.matches.map((m) => [m.id, m.score])).toEqual([
      ["a", 1],
      ["b", 0.5],
      ["c", 0],
    ]);
    // a: 1·1 + 2·0.5 (index 7) = 2; b: 0.5 + 5·1 (index 9) = 5.5; c: 0.
    const hybrid = await index.query({
      vector: [1, 0, 0],
      sparseVector: { indices: [7, 9], values: [0.5, 1] },
      topK: 3,
      includeValues: true,
      includeMetadata: true,
    });
    expect(hybrid.matches.map((m) => [m.id, m.score])).toEqual([
      ["b", 5.5],
      ["a", 2],
      ["c", 0],
    ]);
    expect(hybrid.matches[0]!.sparseValues).toEqual({ indices: [9], values: [5] });
    expect(hybrid.matches[0]!.metadata).toEqual({ kind: "turn" });
    const filtered = await index.query({
      vector: [1, 0, 0],
      sparseVector: { indices: [9], values: [1] },
      topK: 3,
      filter: { kind: "fact" },
    });
    expect(filtered.matches.map((m) => m.id)).toEqual(["a"]);
  });

  it("refuses sparse values on an index whose metric is not dotproduct, on upsert and on query", async () => {
    const created = await client.createIndex({
      name: "cos",
      dimension: 3,
      metric: "cosine",
      spec: { serverless: { cloud: "aws", region: "us-east-1" } },
    });
    const cos = client.index({ name: "cos", host: created!.host });
    expect(await rejection(cos.upsert({ records: [{ id: "x", values: [1, 0, 0], sparseValues: { indices: [1], values: [1] } }] }))).toMatch(
      /does not support sparse values/,
    );
    expect(fake.count("", "cos")).toBe(0);
    await cos.upsert({ records: [{ id: "x", values: [1, 0, 0] }] });
    expect(await rejection(cos.query({ vector: [1, 0, 0], sparseVector: { indices: [1], values: [1] }, topK: 1 }))).toMatch(
      /does not support sparse values/,
    );
    expect((await cos.query({ vector: [1, 0, 0], topK: 1 })).matches[0]!.id).toBe("x");
  });

  it("refuses malformed sparse vectors and over-limit requests with HTTP 400, storing nothing of a refused batch", async () => {
    const index = client.index({ name: "hybrid", host: fake.url });
    const up = (sparseValues: { indices: number[]; values: number[] }) =>
      index.upsert({
        records: [
          { id: "ok", values: [1, 0, 0] },
          { id: "bad", values: [1, 0, 0], sparseValues },
        ],
      });
    expect(await rejection(up({ indices: [1, 2], values: [1] }))).toMatch(/2 indices but 1 values/);
    expect(await rejection(up({ indices: [3, 3], values: [1, 1] }))).toMatch(/duplicate index 3/);
    expect(await rejection(up({ indices: [-1], values: [1] }))).toMatch(/unsigned 32-bit/);
    expect(await rejection(up({ indices: [2 ** 32], values: [1] }))).toMatch(/unsigned 32-bit/);
    const many = Array.from({ length: 1001 }, (_, i) => i);
    expect(await rejection(up({ indices: many, values: many.map(() => 1) }))).toMatch(/maximum is 1000/);
    expect(fake.count("")).toBe(0);
    expect(await rejection(index.upsert({ records: [{ id: "big", values: [1, 0, 0], metadata: { text: "x".repeat(41_000) } }] }))).toMatch(
      /exceeds the limit of 40960/,
    );
    expect(await rejection(index.query({ vector: [1, 0, 0], topK: 1001, includeMetadata: true }))).toMatch(/topK/);
    expect(await rejection(index.query({ vector: [1, 0], topK: 1 }))).toMatch(/dimension 2/);
  });
});

describe("PineconeFake list and delete", () => {
  it("lists ids by prefix page by page, unaffected by deletes between pages, and deletes by ids, by filter and all per namespace", async () => {
    const index = client.index({ name: "hybrid", host: fake.url }).namespace("team");
    const records = Array.from({ length: 7 }, (_, i) => ({ id: `u1#${i}`, values: [1, 0, 0], metadata: { n: i } }));
    await index.upsert({ records: [...records, { id: "u2#0", values: [0, 1, 0], metadata: { n: 100 } }] });
    await client.index({ name: "hybrid", host: fake.url }).upsert({ records: [{ id: "u1#default", values: [1, 1, 1] }] });

    const seen: string[] = [];
    let token: string | undefined;
    do {
      const page = await index.listPaginated({ prefix: "u1#", limit: 3, ...(token ? { paginationToken: token } : {}) });
      const ids = (page.vectors ?? []).map((v) => v.id!);
      seen.push(...ids);
      // Deleting what was listed must not make the next page skip anything.
      await index.deleteMany({ ids });
      token = page.pagination?.next;
    } while (token);
    expect(seen).toEqual(records.map((r) => r.id));
    expect(fake.count("team")).toBe(1);
    expect(fake.count("")).toBe(1);

    await index.upsert({ records: records.slice(0, 4) });
    await index.deleteMany({ filter: { n: { $lt: 2 } } });
    expect([...fake.namespaces.get("team")!.keys()].sort()).toEqual(["u1#2", "u1#3", "u2#0"]);
    await index.deleteAll();
    expect(fake.count("team")).toBe(0);
    expect(fake.count("")).toBe(1);
    expect(await rejection(index.deleteMany({ ids: Array.from({ length: 1001 }, (_, i) => `x${i}`) }))).toMatch(/maximum of 1000/);
  });
});
