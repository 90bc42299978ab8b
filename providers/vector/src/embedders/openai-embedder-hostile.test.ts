import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { HermesMemoryError } from "@hermes/memory-core";
import { OpenAIEmbedder } from "./openai-embedder.js";
import { sendHugeBody } from "../test-support/huge-body.js";

/** A broken or hostile OpenAI-compatible /v1/embeddings server on loopback. */
const KEY = "sk-hostile-test-SECRET-0123456789";
let server: http.Server | null = null;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = null;
});

/** Start a server answering every request with `answer` (status and body, or a custom writer); returns the base URL and the request count. */
async function startServer(answer: (input: string[], res: http.ServerResponse) => void): Promise<{ url: string; requests: () => number }> {
  let n = 0;
  server = http.createServer((req, res) => {
    let raw = "";
    req.on("data", (c: Buffer) => (raw += c.toString()));
    req.on("end", () => {
      n++;
      answer((JSON.parse(raw) as { input: string[] }).input, res);
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server!.address() as AddressInfo).port}/v1`, requests: () => n };
}

function reply(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(typeof body === "string" ? body : JSON.stringify(body));
}

function embedder(url: string, extra: Partial<ConstructorParameters<typeof OpenAIEmbedder>[0]> = {}): OpenAIEmbedder {
  return new OpenAIEmbedder({
    baseUrl: url,
    model: "m",
    apiKey: KEY,
    dimensions: 4,
    retry: { maxRetries: 2, baseDelayMs: 1, maxDelayMs: 2 },
    ...extra,
  });
}

async function failure(promise: Promise<unknown>): Promise<HermesMemoryError> {
  const error = await promise.then(
    (value) => new Error(`resolved with ${JSON.stringify(value, (_k, v: unknown) => (v instanceof Float32Array ? Array.from(v) : v))}`),
    (e: unknown) => e,
  );
  if (!(error instanceof HermesMemoryError)) throw new Error(`expected a HermesMemoryError, got ${String(error)}`);
  expect(error.message).not.toContain(KEY);
  return error;
}

const vector = (i: number): number[] => [i + 1, 1, 0, 0];

describe("OpenAIEmbedder against a broken or hostile endpoint", () => {
  it.each([
    [
      "text entries",
      () => ({
        data: [
          { index: 0, embedding: [1, "x", 0, 0] },
          { index: 1, embedding: vector(1) },
        ],
      }),
      /entry 1 of the embedding of input 0 is "x", not a finite number/,
    ],
    [
      "null entries",
      () => ({
        data: [
          { index: 0, embedding: vector(0) },
          { index: 1, embedding: [1, null, 0, 0] },
        ],
      }),
      /entry 1 of the embedding of input 1 is null/,
    ],
    [
      "NaN and Infinity as text",
      () => ({
        data: [
          { index: 0, embedding: ["NaN", "Infinity", 0, 0] },
          { index: 1, embedding: vector(1) },
        ],
      }),
      /entry 0 of the embedding of input 0 is "NaN"/,
    ],
    [
      "a number beyond float32",
      () => ({
        data: [
          { index: 0, embedding: [1e39, 0, 0, 0] },
          { index: 1, embedding: vector(1) },
        ],
      }),
      /entry 0 of the embedding of input 0 is 1e\+39, not a finite number/,
    ],
    [
      "two vectors with one index",
      () => ({
        data: [
          { index: 0, embedding: vector(0) },
          { index: 0, embedding: vector(1) },
        ],
      }),
      /two vectors have index 0/,
    ],
    [
      "an index out of range",
      () => ({
        data: [
          { index: 0, embedding: vector(0) },
          { index: 5, embedding: vector(1) },
        ],
      }),
      /data\[1\]\.index is 5; expected an integer from 0 to 1/,
    ],
    [
      "a null vector",
      () => ({
        data: [
          { index: 0, embedding: null },
          { index: 1, embedding: vector(1) },
        ],
      }),
      /the embedding of input 0 is null, not a list of numbers/,
    ],
    ["data that is an object", () => ({ data: { 0: vector(0) } }), /"data" is an object, not a list/],
    ["a null entry", () => ({ data: [null, { index: 1, embedding: vector(1) }] }), /data\[0\] is null, not an object/],
    ["malformed JSON", () => "{not json", /not JSON: "\{not json"/],
  ])("%s: STORAGE_FAILED naming what was wrong, no silently stored NaN vectors, no retries", async (_name, body, message) => {
    const { url, requests } = await startServer((_input, res) => reply(res, 200, body()));
    const error = await failure(embedder(url).embed(["a", "b"]));
    expect(error.code).toBe("STORAGE_FAILED");
    expect(error.message).toMatch(/answered with a malformed response/);
    expect(error.message).toMatch(message);
    expect(error.message).toMatch(/embeddings_base_url/);
    expect(requests()).toBe(1);
  });

  it("still restores the order of `data` by index, and accepts answers without any index in input order", async () => {
    const { url } = await startServer((input, res) =>
      reply(res, 200, { data: input.map((_t, i) => ({ index: i, embedding: vector(i) })).reverse() }),
    );
    const ordered = await embedder(url).embed(["a", "b"]);
    expect(ordered[0]![0]! / ordered[0]![1]!).toBeCloseTo(1); // input 0 got [1,1,0,0], input 1 [2,1,0,0]
    expect(ordered[1]![0]! / ordered[1]![1]!).toBeCloseTo(2);
    server!.closeAllConnections();
    await new Promise<void>((resolve) => server!.close(() => resolve()));
    const { url: plain } = await startServer((input, res) => reply(res, 200, { data: input.map((_t, i) => ({ embedding: vector(i) })) }));
    const inOrder = await embedder(plain).embed(["a", "b"]);
    expect(inOrder[1]![0]! / inOrder[1]![1]!).toBeCloseTo(2);
  });

  it("never repeats the API key a server echoes in a 401, 400 or 5xx body", async () => {
    for (const status of [401, 400, 503]) {
      const { url } = await startServer((_input, res) => reply(res, status, { error: { message: `Incorrect API key provided: ${KEY}` } }));
      const error = await failure(embedder(url).embed(["a"]));
      expect(error.message).toMatch(/Incorrect API key provided: \*\*\*/);
      server!.closeAllConnections();
      await new Promise<void>((resolve) => server!.close(() => resolve()));
      server = null;
    }
  });

  it("a 413 says the input is too large, not to check the model and dimensions", async () => {
    const { url, requests } = await startServer((_input, res) => reply(res, 413, { error: { message: "payload too large" } }));
    const error = await failure(embedder(url).embed(["a"]));
    expect(error.code).toBe("STORAGE_FAILED");
    expect(error.message).toMatch(/refused the input as too large \(HTTP 413.*Shorten the text/);
    expect(requests()).toBe(1);
  });

  it("stops reading an answer far larger than the vectors asked for (a 200 MB body) with STORAGE_FAILED", async () => {
    let sentSoFar = (): number => 0;
    const { url } = await startServer((_input, res) => {
      sentSoFar = sendHugeBody(res, '{"data":');
    });
    const started = Date.now();
    const error = await failure(embedder(url, { retry: { maxRetries: 0 } }).embed(["a"]));
    expect(error.code).toBe("STORAGE_FAILED");
    expect(error.message).toMatch(/with more than \d+ bytes for 1 inputs of 4 dimensions; reading stopped/);
    expect(sentSoFar()).toBeLessThan(200 * (1 << 20));
    expect(Date.now() - started).toBeLessThan(10_000);
  }, 30_000);

  it("a body that never ends (slowloris) is cut off by the request timeout and retried", async () => {
    const { url, requests } = await startServer((_input, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write('{"data": [');
      const timer = setInterval(() => (res.destroyed ? clearInterval(timer) : res.write(" ")), 20);
      res.on("close", () => clearInterval(timer));
    });
    const started = Date.now();
    const error = await failure(embedder(url, { timeoutMs: 150, retry: { maxRetries: 1, baseDelayMs: 1, maxDelayMs: 1 } }).embed(["a"]));
    expect(error.message).toMatch(/failed after 2 attempts \(timed out after 150 ms\)/);
    expect(requests()).toBe(2);
    expect(Date.now() - started).toBeLessThan(2000);
  });
});
