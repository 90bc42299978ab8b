import { afterEach, describe, expect, it } from "vitest";
import { HermesMemoryError } from "@hermes/memory-core";
import { DEFAULT_EMBED_INPUT_CHARS, OpenAIEmbedder } from "./openai-embedder.js";
import { contentRefusalStatus } from "../retry-policy.js";
import { closeEmbeddingsServers, startEmbeddingsServer } from "../test-support/embeddings-server.js";

afterEach(closeEmbeddingsServers);

describe("OpenAIEmbedder against a loopback /v1/embeddings server", () => {
  it("marks a refusal of the input (400, 413, 422) as a content refusal, so a sender can set that write aside; not an outage", async () => {
    for (const status of [400, 413, 422]) {
      const { url } = await startEmbeddingsServer(4, () => status);
      const error = await new OpenAIEmbedder({ baseUrl: url, model: "m", dimensions: 4, retry: { maxRetries: 0 } })
        .embed(["text"])
        .catch((e: unknown) => e);
      expect(HermesMemoryError.hasCode(error, "STORAGE_FAILED")).toBe(true);
      expect(contentRefusalStatus(error)).toBe(status);
    }
    for (const status of [401, 404, 503]) {
      const { url } = await startEmbeddingsServer(4, () => status);
      const error = await new OpenAIEmbedder({ baseUrl: url, model: "m", dimensions: 4, retry: { maxRetries: 0 } })
        .embed(["text"])
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(Error);
      expect(contentRefusalStatus(error)).toBeUndefined();
    }
  });

  it("batches, sends model/dimensions/auth, restores order and normalises", async () => {
    const { url, seen } = await startEmbeddingsServer(8);
    const e = new OpenAIEmbedder({ baseUrl: url, model: "text-embedding-3-small", apiKey: "sk-test", dimensions: 8, batchSize: 2 });
    const vectors = await e.embed(["a", "bb", "ccc", ""]);
    expect(seen).toHaveLength(2);
    expect(seen[0]!.body).toMatchObject({ model: "text-embedding-3-small", input: ["a", "bb"], dimensions: 8 });
    expect(seen[1]!.body.input).toEqual(["ccc", " "]);
    expect(seen[0]!.auth).toBe("Bearer sk-test");
    expect(vectors[0]![1]).toBeCloseTo(0.6);
    expect(vectors[0]![2]).toBeCloseTo(0.8);
    expect(vectors[2]![3]).toBeCloseTo(0.6);
    expect(e.id).toBe("openai:text-embedding-3-small");
  });

  it("refuses a baseUrl that is not an http(s) URL with a host when constructed, not after retried requests", () => {
    for (const baseUrl of ["file:///etc/passwd", "not a url", "localhost:11434/v1", "ftp://host.example", ""]) {
      expect(() => new OpenAIEmbedder({ baseUrl, model: "m", dimensions: 4 })).toThrow(
        expect.objectContaining({
          code: "INVALID_CONFIG",
          message: expect.stringMatching(/baseUrl must be an http:\/\/ or https:\/\/ URL with a host/),
        }),
      );
    }
    expect(new OpenAIEmbedder({ baseUrl: "http://127.0.0.1:11434/v1", model: "m", dimensions: 4 }).dimensions).toBe(4);
  });

  it("sends each text cut to maxInputChars (default 8,192), never splitting a surrogate pair", async () => {
    const { url, seen } = await startEmbeddingsServer(4);
    const long = "a".repeat(20_000);
    await new OpenAIEmbedder({ baseUrl: url, model: "nomic-embed-text", dimensions: 4 }).embed([long, "short"]);
    expect(seen[0]!.body.input.map((t) => t.length)).toEqual([DEFAULT_EMBED_INPUT_CHARS, 5]);
    await new OpenAIEmbedder({ baseUrl: url, model: "nomic-embed-text", dimensions: 4, maxInputChars: 3 }).embed(["ab😀cd"]);
    expect(seen[1]!.body.input).toEqual(["ab"]);
    expect(() => new OpenAIEmbedder({ baseUrl: url, model: "m", dimensions: 4, maxInputChars: 0 })).toThrow(
      expect.objectContaining({ code: "INVALID_CONFIG" }),
    );
  });

  it("does not send dimensions to other models (Ollama, vLLM) and needs no key", async () => {
    const { url, seen } = await startEmbeddingsServer(4);
    await new OpenAIEmbedder({ baseUrl: url, model: "nomic-embed-text", dimensions: 4 }).embed(["x"]);
    expect(seen[0]!.body.dimensions).toBeUndefined();
    expect(seen[0]!.auth).toBeUndefined();
  });

  it("retries 429 and 5xx with backoff, then succeeds", async () => {
    const { url, seen } = await startEmbeddingsServer(4, (n) => (n === 1 ? 429 : n === 2 ? 503 : 200));
    const vectors = await new OpenAIEmbedder({ baseUrl: url, model: "m", dimensions: 4, retry: { baseDelayMs: 1, maxDelayMs: 5 } }).embed([
      "x",
    ]);
    expect(vectors).toHaveLength(1);
    expect(seen).toHaveLength(3);
  });

  describe("a 429 or 503 carrying Retry-After", () => {
    // The backoff alone would wait about 1 ms (baseDelayMs 1): a longer wait is the server's.
    async function timedEmbed(retryAfter: string, maxDelayMs = 5000, status = 429): Promise<number> {
      const { url, seen } = await startEmbeddingsServer(4, (n) => (n === 1 ? { status, retryAfter } : 200));
      const e = new OpenAIEmbedder({ baseUrl: url, model: "m", dimensions: 4, retry: { baseDelayMs: 1, maxDelayMs, random: () => 0.5 } });
      const started = Date.now();
      expect(await e.embed(["x"])).toHaveLength(1);
      const waited = Date.now() - started;
      expect(seen).toHaveLength(2);
      return waited;
    }

    it("waits the seconds it asks for (Retry-After: 1), then succeeds", async () => {
      expect(await timedEmbed("1")).toBeGreaterThanOrEqual(900);
    });

    it("waits until the HTTP-date it names, then succeeds", async () => {
      expect(await timedEmbed(new Date(Date.now() + 2000).toUTCString(), 5000, 503)).toBeGreaterThanOrEqual(900);
    });

    it("waits at most maxDelayMs however long it asks", async () => {
      const waited = await timedEmbed("86400", 300);
      expect(waited).toBeGreaterThanOrEqual(250);
      expect(waited).toBeLessThan(5000);
    });

    it("ignores a Retry-After that is not seconds or an HTTP-date (here 1e3, not 1000 s), and backs off as usual", async () => {
      expect(await timedEmbed("1e3", 3000)).toBeLessThan(1500);
    });
  });

  it("fails clearly: 401 without retry, repeated 500 after bounded retries, wrong dimensions", async () => {
    const { url, seen } = await startEmbeddingsServer(4, (n) => (n === 1 ? 401 : 500));
    const e = new OpenAIEmbedder({ baseUrl: url, model: "m", dimensions: 4, retry: { maxRetries: 2, baseDelayMs: 1, maxDelayMs: 2 } });
    const unauthorized = await e.embed(["x"]).catch((err: unknown) => err);
    expect(HermesMemoryError.hasCode(unauthorized, "PROVIDER_UNAVAILABLE")).toBe(true);
    expect((unauthorized as Error).message).toMatch(/EMBEDDINGS_API_KEY/);
    expect(seen).toHaveLength(1);
    const failing = await e.embed(["x"]).catch((err: unknown) => err);
    expect(HermesMemoryError.hasCode(failing, "STORAGE_FAILED")).toBe(true);
    expect((failing as Error).message).toMatch(/after 3 attempts \(HTTP 500/);
    expect(seen).toHaveLength(4);
  });

  it("reports a dimension mismatch naming both sizes and the reindex fix", async () => {
    const { url } = await startEmbeddingsServer(6);
    const error = await new OpenAIEmbedder({ baseUrl: url, model: "m", dimensions: 4 }).embed(["x"]).catch((err: unknown) => err);
    expect(HermesMemoryError.hasCode(error, "EMBEDDING_DIMENSION_MISMATCH")).toBe(true);
    expect((error as Error).message).toMatch(/6-dimensional.*dimensions is 4.*reindex/);
  });

  it("honours the request timeout", async () => {
    const { url } = await startEmbeddingsServer(4, () => "hang");
    const started = Date.now();
    const error = await new OpenAIEmbedder({
      baseUrl: url,
      model: "m",
      dimensions: 4,
      timeoutMs: 100,
      retry: { maxRetries: 1, baseDelayMs: 1, maxDelayMs: 1 },
    })
      .embed(["x"])
      .catch((err: unknown) => err);
    expect((error as Error).message).toMatch(/timed out after 100 ms/);
    expect(Date.now() - started).toBeLessThan(2000);
  });
});
