import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { HermesMemoryError } from "@hermes/memory-core";
import { PineconeFake } from "@hermes/pinecone-fake";
import { PineconeVectorStore } from "./pinecone-vector-store.js";
import { PineconeRemoteMemory } from "./pinecone-remote-store.js";
import { ConceptEmbedder, CONCEPT_DIMENSIONS } from "../test-support/concept-embedder.js";
import { sendHugeBody } from "../test-support/huge-body.js";

/** A Pinecone server that is broken or hostile, on loopback: each test answers as it likes. */
const KEY = "pcsk_hostile-test-SECRET-0123456789";
const servers: http.Server[] = [];
const dirs: string[] = [];
const fakes: PineconeFake[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
  for (const fake of fakes.splice(0)) await fake.close();
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

interface Seen {
  method: string;
  path: string;
  apiKey: string | undefined;
}

async function serve(
  handler: (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void,
): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      seen.push({ method: req.method ?? "", path: req.url ?? "", apiKey: req.headers["api-key"] as string | undefined });
      handler(req, res, body);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

function json(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(typeof body === "string" ? body : JSON.stringify(body));
}

function store(host: string, extra: Partial<ConstructorParameters<typeof PineconeVectorStore>[0]> = {}): PineconeVectorStore {
  return new PineconeVectorStore({
    apiKey: KEY,
    indexName: "mem",
    host,
    dimensions: 4,
    requestTimeoutMs: 2000,
    retry: { maxRetries: 2, baseDelayMs: 1, maxDelayMs: 2, random: () => 0.5 },
    ...extra,
  });
}

async function failure(promise: Promise<unknown>): Promise<HermesMemoryError> {
  const error = await promise.then(
    (value) => new Error(`resolved with ${JSON.stringify(value)?.slice(0, 200)}`),
    (e: unknown) => e,
  );
  if (!(error instanceof HermesMemoryError)) throw new Error(`expected a HermesMemoryError, got ${String(error)}`);
  expect(error.message).not.toContain(KEY);
  return error;
}

const query = (s: PineconeVectorStore): Promise<unknown> => s.query(new Float32Array([1, 0, 0, 0]), { topK: 3 });

describe("Pinecone answering with a redirect", () => {
  it("does not follow a 307 to another host: the API key never reaches it, and the call fails naming the redirect", async () => {
    const other = await serve((_req, res) => json(res, 200, { matches: [{ id: "planted", score: 1 }], namespace: "" }));
    const pinecone = await serve((req, res) => {
      res.writeHead(307, { location: `${other.url}${req.url}` });
      res.end();
    });
    const error = await failure(query(store(pinecone.url)));
    expect(error.code).toBe("STORAGE_FAILED");
    expect(error.message).toMatch(/redirect \(HTTP 307 to http:\/\/127\.0\.0\.1:\d+\/query\).*not followed.*pinecone_host/);
    expect(other.seen).toEqual([]);
    expect(pinecone.seen).toHaveLength(1); // a refusal, not retried
  });

  it("remote layout: writes answered with a redirect stay in the outbox (not 'acknowledged' by the other host) and reach Pinecone once it answers", async () => {
    const fake = await PineconeFake.start({ dimension: CONCEPT_DIMENSIONS, indexName: "mem", metric: "dotproduct", apiKey: KEY });
    fakes.push(fake);
    const sink = await serve((_req, res) => json(res, 200, {}));
    let hostile = true;
    const proxy = await serve((req, res, body) => {
      if (hostile) {
        res.writeHead(308, { location: `${sink.url}${req.url}` });
        res.end();
        return;
      }
      const forward = http.request(`${fake.url}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      forward.end(body);
    });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pinecone-hostile-"));
    dirs.push(dir);
    const open = (): PineconeRemoteMemory =>
      PineconeRemoteMemory.open({
        apiKey: KEY,
        indexName: "mem",
        host: proxy.url,
        namespace: "team",
        embedder: new ConceptEmbedder(),
        outboxFile: path.join(dir, "outbox.sqlite"),
        retry: { maxRetries: 1, baseDelayMs: 1, maxDelayMs: 2, random: () => 0.5 },
      });
    const first = open();
    const ids = [first.remember({ content: "written while Pinecone redirects" }), first.remember({ content: "a second write" })];
    const error = await failure(first.flush());
    expect(error.code).toBe("STORAGE_FAILED");
    expect(error.message).toMatch(/2 writes are not acknowledged.*redirect/);
    expect(await first.close()).toBe(2);
    expect(sink.seen).toEqual([]);

    hostile = false;
    const second = open();
    await second.flush();
    expect([...(fake.namespaces.get("team")?.keys() ?? [])].sort()).toEqual([...ids].sort());
    expect(await second.close()).toBe(0);
  });
});

describe("Pinecone refusing the API key", () => {
  it("a 403 is PROVIDER_UNAVAILABLE naming PINECONE_API_KEY and the setup command, not retried, without the key the server echoed", async () => {
    const pinecone = await serve((_req, res) =>
      json(res, 403, { error: { code: "FORBIDDEN", message: `API key ${KEY} may not write to this index` } }),
    );
    const error = await failure(query(store(pinecone.url)));
    expect(error.code).toBe("PROVIDER_UNAVAILABLE");
    expect(error.message).toMatch(/403.*PINECONE_API_KEY.*hermes-memory memory setup vector/);
    expect(pinecone.seen).toHaveLength(1);
  });

  it("a key echoed in a 400 refusal or a 500 is not repeated in the error or its cause", async () => {
    const pinecone = await serve((_req, res) =>
      json(res, 400, { error: { code: "INVALID_ARGUMENT", message: `bad request from key ${KEY}` } }),
    );
    const error = await failure(query(store(pinecone.url)));
    expect(error.code).toBe("STORAGE_FAILED");
    expect(error.message).toMatch(/HTTP 400.*bad request from key \*\*\*/);
    expect(String((error.cause as Error | undefined)?.message ?? "")).not.toContain(KEY);
  });
});

describe("Pinecone answering with the wrong shape", () => {
  it("malformed JSON on 200 is a malformed-response STORAGE_FAILED, not 'check that the index exists'", async () => {
    const pinecone = await serve((_req, res) => json(res, 200, "{not json"));
    const error = await failure(query(store(pinecone.url)));
    expect(error.code).toBe("STORAGE_FAILED");
    expect(error.message).toMatch(/answered query on index "mem" with a malformed response/);
    expect(error.message).not.toMatch(/Check that the index exists/);
  });

  it.each([
    ["a null match", { matches: [null] }, /match 0 is null/],
    ["a numeric id", { matches: [{ id: 5, score: 0.5 }] }, /id of match 0 is 5, not text/],
    ["a score that is text", { matches: [{ id: "a", score: "NaN" }] }, /score of match 0 \(a\) is "NaN", not a finite number/],
    ["matches that are an object", { matches: { a: 1 } }, /matches.* not a list|malformed response/],
    ["metadata that is a list", { matches: [{ id: "a", score: 1, metadata: [1, 2] }] }, /metadata of match 0 is a list/],
    [
      "metadata nested 10,000 levels",
      `{"matches":[{"id":"a","score":1,"metadata":{"deep":${"[".repeat(10_000)}${"]".repeat(10_000)}}}]}`,
      /metadata field "deep" of match 0 is a list/,
    ],
  ])("query: %s is STORAGE_FAILED naming the field, never an untyped error or a bad hit", async (_name, body, message) => {
    const pinecone = await serve((_req, res) => json(res, 200, body));
    const error = await failure(query(store(pinecone.url)));
    expect(error.code).toBe("STORAGE_FAILED");
    expect(error.message).toMatch(message);
  });

  it.each([
    [
      "values that are text",
      { vectors: { a: { id: "a", values: ["NaN", "Infinity", 1, 2] } } },
      /value 0 of record a is "NaN", not a finite number/,
    ],
    ["values of the wrong dimension", { vectors: { a: { id: "a", values: [1, 2] } } }, /record a has 2 values; the index's vectors have 4/],
    ["a null record", { vectors: { a: null } }, /record a is null/],
  ])("fetch: %s is STORAGE_FAILED naming the field", async (_name, body, message) => {
    const pinecone = await serve((_req, res) => json(res, 200, body));
    const error = await failure(store(pinecone.url).fetch(["a"]));
    expect(error.code).toBe("STORAGE_FAILED");
    expect(error.message).toMatch(message);
  });

  it("list: a pagination token that comes back again ends the listing with STORAGE_FAILED instead of looping forever", async () => {
    let pages = 0;
    const pinecone = await serve((_req, res) => {
      pages++;
      json(res, 200, { vectors: [{ id: `id${pages}` }], pagination: pages < 50 ? { next: "same-token" } : undefined, namespace: "" });
    });
    const ids: string[] = [];
    const error = await failure(
      (async () => {
        for await (const id of store(pinecone.url).listIds("")) ids.push(id);
      })(),
    );
    expect(error.message).toMatch(/pagination token it had returned before/);
    expect(pages).toBe(2);
  });

  it("describe_index_stats: a record count that is not a number is STORAGE_FAILED", async () => {
    const pinecone = await serve((_req, res) =>
      json(res, 200, { namespaces: { a: { vectorCount: "many" } }, dimension: 4, totalVectorCount: 1 }),
    );
    const error = await failure(store(pinecone.url).stats());
    expect(error.message).toMatch(/record count of namespace a is "many", not a count/);
  });
});

describe("Pinecone answering with a huge, endless or stalled body", () => {
  it("stops reading an answer larger than 64 MiB (a 200 MB body) with STORAGE_FAILED saying so", async () => {
    let sentSoFar = (): number => 0;
    const pinecone = await serve((_req, res) => {
      sentSoFar = sendHugeBody(res, '{"matches":');
    });
    const started = Date.now();
    const error = await failure(query(store(pinecone.url, { requestTimeoutMs: 20_000 })));
    expect(error.code).toBe("STORAGE_FAILED");
    expect(error.message).toMatch(/answer to query on index "mem" was larger than 64 MiB; reading stopped/);
    expect(sentSoFar()).toBeLessThan(200 * (1 << 20));
    expect(Date.now() - started).toBeLessThan(10_000);
  }, 30_000);

  it("a body that stalls after the headers (slowloris) is a timeout, retried, and reported as one", async () => {
    const pinecone = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write('{"matches": [');
      const timer = setInterval(() => (res.destroyed ? clearInterval(timer) : res.write(" ")), 20);
      res.on("close", () => clearInterval(timer));
    });
    const started = Date.now();
    const error = await failure(
      query(store(pinecone.url, { requestTimeoutMs: 150, retry: { maxRetries: 1, baseDelayMs: 1, maxDelayMs: 1 } })),
    );
    expect(error.code).toBe("STORAGE_FAILED");
    expect(error.message).toMatch(/failed \(timed out after 150 ms\) after retries/);
    expect(pinecone.seen).toHaveLength(2);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it("a connection reset mid-body is retried and then reported, typed", async () => {
    const pinecone = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": "1000" });
      res.write('{"matches": [');
      setTimeout(() => res.socket?.destroy(), 10);
    });
    const error = await failure(query(store(pinecone.url, { retry: { maxRetries: 1, baseDelayMs: 1, maxDelayMs: 1 } })));
    expect(error.code).toBe("STORAGE_FAILED");
    expect(pinecone.seen).toHaveLength(2);
  });
});
