import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HermesMemoryError } from "@hermes/memory-core";
import { PineconeFake } from "@hermes/pinecone-fake";
import { PineconeCaller } from "./pinecone-caller.js";

const DIMS = 4;
let fake: PineconeFake;

beforeEach(async () => {
  fake = await PineconeFake.start({ dimension: DIMS, indexName: "mem" });
});
afterEach(async () => {
  await fake.close();
});

function caller(extra: Partial<ConstructorParameters<typeof PineconeCaller>[0]> = {}): PineconeCaller {
  return new PineconeCaller({
    apiKey: "test-key",
    indexName: "mem",
    controllerHostUrl: fake.url,
    retry: { maxRetries: 0 },
    indexAdvice: "Check the index.",
    authAdvice: "Check the key.",
    ...extra,
  });
}

const record = (i: number, text = `item ${i}`) => ({ id: `id${i}`, values: [1, i % 7, 0.5, 0.25], metadata: { text } });
const requests = (path: string) => fake.requests.filter((r) => r.path === path);

describe("PineconeCaller: the index handle and the calls both Pinecone layouts share", () => {
  it("looks the host up once for concurrent callers and every namespace, and never when the host is configured", async () => {
    const c = caller();
    await Promise.all([c.index(), c.namespace("a"), c.namespace("b"), c.namespace("")]);
    await c.namespace("a");
    expect(requests("/indexes/mem")).toHaveLength(1);

    const withHost = caller({ host: fake.url });
    await withHost.upsertRecords("a", [record(1)], 100);
    expect(requests("/indexes/mem")).toHaveLength(1);
    expect(fake.count("a")).toBe(1);
  });

  it("tries a failed host lookup again on the next call", async () => {
    const c = caller();
    fake.failNext(500, 1, "/indexes/mem");
    await expect(c.index()).rejects.toMatchObject({ code: "STORAGE_FAILED" });
    await c.upsertRecords("", [record(1)], 100);
    expect(requests("/indexes/mem")).toHaveLength(2);
    expect(fake.count("")).toBe(1);
  });

  it("a refusal from checkIndex is fatal: later calls throw it without a request", async () => {
    const refusal = new HermesMemoryError({ code: "PROVIDER_UNAVAILABLE", message: "wrong metric" });
    const c = caller({ checkIndex: (model) => (model.metric === "cosine" ? refusal : null) });
    await expect(c.namespace("a")).rejects.toBe(refusal);
    const before = fake.requests.length;
    await expect(c.upsertRecords("a", [record(1)], 100)).rejects.toBe(refusal);
    await expect(c.call("query", undefined, async () => 1)).rejects.toBe(refusal);
    expect(fake.requests.length).toBe(before);
    expect(c.fatal).toBe(refusal);
  });

  it("upserts in requests of at most maxRecords records and under Pinecone's 2 MB", async () => {
    const c = caller();
    await c.upsertRecords(
      "n",
      Array.from({ length: 250 }, (_, i) => record(i)),
      100,
    );
    expect(requests("/vectors/upsert").map((r) => (r.body!.vectors as unknown[]).length)).toEqual([100, 100, 50]);

    // 99 records of 30 KB text: about 3 MB, which Pinecone (and the fake) refuse as one request.
    fake.requests.length = 0;
    await c.upsertRecords(
      "big",
      Array.from({ length: 99 }, (_, i) => record(i, `${i} `.padEnd(30_000, "x"))),
      100,
    );
    const sizes = requests("/vectors/upsert").map((r) => Buffer.byteLength(JSON.stringify(r.body)));
    expect(sizes.length).toBeGreaterThanOrEqual(2);
    for (const size of sizes) expect(size).toBeLessThan(2 * 1024 * 1024);
    expect(fake.count("big")).toBe(99);

    // 99 records of 12,000 three-byte characters: 1.2 million characters but 3.6 MB of UTF-8.
    fake.requests.length = 0;
    await c.upsertRecords(
      "wide",
      Array.from({ length: 99 }, (_, i) => record(i, `${i} `.padEnd(12_000, "語"))),
      100,
    );
    const wide = requests("/vectors/upsert").map((r) => Buffer.byteLength(JSON.stringify(r.body)));
    expect(wide.length).toBeGreaterThanOrEqual(2);
    for (const size of wide) expect(size).toBeLessThan(2 * 1024 * 1024);
    expect(fake.count("wide")).toBe(99);
  });

  it("fetches 100 ids per request and leaves out ids Pinecone does not hold", async () => {
    const c = caller();
    await c.upsertRecords(
      "n",
      Array.from({ length: 230 }, (_, i) => record(i)),
      100,
    );
    const ids = [...Array.from({ length: 230 }, (_, i) => `id${i}`), "missing-1", "missing-2"];
    const got = await c.fetchRecords("n", ids, DIMS);
    expect(requests("/vectors/fetch")).toHaveLength(3);
    expect(got.map((r) => r.id).sort()).toEqual(ids.slice(0, 230).sort());
    expect(got.find((r) => r.id === "id8")).toMatchObject({ values: [1, 1, 0.5, 0.25], metadata: { text: "item 8" } });
  });

  it("deletes 1,000 ids per request", async () => {
    const c = caller();
    await c.upsertRecords(
      "n",
      Array.from({ length: 30 }, (_, i) => record(i)),
      100,
    );
    await c.deleteIds(
      "n",
      Array.from({ length: 2500 }, (_, i) => `id${i}`),
    );
    expect(requests("/vectors/delete").map((r) => (r.body!.ids as unknown[]).length)).toEqual([1000, 1000, 500]);
    expect(fake.count("n")).toBe(0);
  });

  it("lists the ids with a prefix page by page, and counts records per namespace", async () => {
    const c = caller();
    await c.upsertRecords("n", [...Array.from({ length: 7 }, (_, i) => record(i)), { ...record(99), id: "other" }], 100);
    const pages: string[][] = [];
    for await (const page of c.listIdPages("n", "id", 3)) pages.push(page);
    expect(pages.map((p) => p.length)).toEqual([3, 3, 1]);
    expect(pages.flat().sort()).toEqual(Array.from({ length: 7 }, (_, i) => `id${i}`).sort());
    expect((await c.indexStats()).namespaces.n).toBe(8);
  });
});
