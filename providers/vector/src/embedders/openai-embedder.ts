import { HermesMemoryError, coerceConfigValue, describeError, describeValue } from "@hermes/memory-core";
import { l2Normalize, type Embedder } from "./embedder.js";
import {
  delay,
  DEFAULT_RETRY_POLICY,
  markContentRefusal,
  parseRetryAfter,
  readBodyLimited,
  redactSecret,
  retryWait,
  type RetryPolicy,
} from "../retry-policy.js";

/** Options of {@link OpenAIEmbedder}. */
export interface OpenAIEmbedderOptions {
  /** API base including the version, e.g. `https://api.openai.com/v1` or `http://localhost:11434/v1`. */
  baseUrl: string;
  model: string;
  /** Bearer token; optional for local servers (Ollama, LM Studio). */
  apiKey?: string;
  /** Expected vector length; every response is checked against it. */
  dimensions: number;
  /**
   * Send `dimensions` in the request (OpenAI `text-embedding-3-*` can shorten vectors). Default:
   * true for `text-embedding-3*` models, false otherwise (most local servers reject or ignore it).
   */
  sendDimensions?: boolean;
  /** Texts per request (default 64). */
  batchSize?: number;
  /** Per-request timeout (default 30000 ms). */
  timeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  /** Characters of each text sent to be embedded (default `DEFAULT_EMBED_INPUT_CHARS`). */
  maxInputChars?: number;
}

/**
 * Characters of a text the embeddings endpoint is sent by default: its first 8,192 (about 2,000
 * tokens, inside every common embedding model's limit). Endpoints refuse inputs over their token
 * limit (400 or 413), and a text that can never be embedded would hold up every write queued
 * behind it; an embedding of a text's start is how long texts are embedded anyway. The stored
 * text is never cut, and keyword search sees all of it.
 */
export const DEFAULT_EMBED_INPUT_CHARS = 8192;

/** `text` cut to `max` UTF-16 units, never between the two halves of a surrogate pair. */
function clipInput(text: string, max: number): string {
  if (text.length <= max) return text;
  const last = text.charCodeAt(max - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max);
}

/** Largest float32 magnitude: a bigger number would become Infinity in the stored vector. */
const FLOAT32_MAX = 3.4028234663852886e38;

/**
 * Largest answer read for `texts` inputs of `dimensions` numbers: 64 bytes per number plus 1 MiB
 * (a float in JSON takes about 20). A longer or endless body is cut off instead of filling memory.
 */
function responseLimit(texts: number, dimensions: number): number {
  return 1024 * 1024 + texts * dimensions * 64;
}

/**
 * Embeddings from any OpenAI-compatible `/embeddings` endpoint (OpenAI, Ollama, vLLM, LM Studio):
 * batches, per-request timeouts, retries with exponential backoff and jitter on 429/5xx and
 * network errors (a 429 or 5xx carrying `Retry-After`, in seconds or as an HTTP-date, waits what it
 * asks, at most the policy's `maxDelayMs`), and a dimension check on every vector.
 */
export class OpenAIEmbedder implements Embedder {
  readonly id: string;
  readonly dimensions: number;
  private readonly options: OpenAIEmbedderOptions;
  private readonly retry: RetryPolicy;

  constructor(options: OpenAIEmbedderOptions) {
    const max = options.maxInputChars;
    if (max !== undefined && !(Number.isInteger(max) && max >= 1)) {
      throw new HermesMemoryError({
        code: "INVALID_CONFIG",
        message: `OpenAIEmbedder: maxInputChars must be a positive integer, got ${String(max)}.`,
      });
    }
    // The same rule as a `url` config field: an http(s) URL with a host, refused here rather than
    // after every request has failed and been retried.
    const baseUrl = coerceConfigValue({ key: "baseUrl", type: "url" }, options.baseUrl);
    if (!baseUrl.ok) {
      throw new HermesMemoryError({
        code: "INVALID_CONFIG",
        message: `OpenAIEmbedder: baseUrl ${baseUrl.problem} (got ${JSON.stringify(String(options.baseUrl)).slice(0, 200)}). Set memory.vector.embeddings_base_url.`,
      });
    }
    this.options = options;
    this.dimensions = options.dimensions;
    this.id = `openai:${options.model}`;
    this.retry = { ...DEFAULT_RETRY_POLICY, ...options.retry };
  }

  /** Embed `texts` in batches; throws `STORAGE_FAILED` (endpoint) or `EMBEDDING_DIMENSION_MISMATCH`. */
  async embed(texts: string[]): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    const size = this.options.batchSize ?? 64;
    for (let i = 0; i < texts.length; i += size) out.push(...(await this.embedBatch(texts.slice(i, i + size))));
    return out;
  }

  private async embedBatch(texts: string[]): Promise<Float32Array[]> {
    // Empty strings are rejected by some servers; a single space embeds as "nothing".
    const max = this.options.maxInputChars ?? DEFAULT_EMBED_INPUT_CHARS;
    const input = texts.map((t) => (t.trim() === "" ? " " : clipInput(t, max)));
    const sendDimensions = this.options.sendDimensions ?? this.options.model.startsWith("text-embedding-3");
    const body = JSON.stringify({
      model: this.options.model,
      input,
      encoding_format: "float",
      ...(sendDimensions ? { dimensions: this.dimensions } : {}),
    });
    const url = `${this.options.baseUrl.replace(/\/+$/, "")}/embeddings`;
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (this.options.apiKey) headers.authorization = `Bearer ${this.options.apiKey}`;
    let lastProblem = "";
    const apiKey = this.options.apiKey;
    for (let attempt = 0; ; attempt++) {
      let retryAfterMs: number | undefined;
      try {
        const response = await fetch(url, { method: "POST", headers, body, signal: AbortSignal.timeout(this.options.timeoutMs ?? 30_000) });
        // At most responseLimit bytes are read: a broken server may send without end.
        const limit = responseLimit(texts.length, this.dimensions);
        const raw = await readBodyLimited(response, limit);
        if (raw === null) {
          throw new HermesMemoryError({
            code: "STORAGE_FAILED",
            message: `The embeddings endpoint ${url} answered HTTP ${response.status} with more than ${limit} bytes for ${texts.length} inputs of ${this.dimensions} dimensions; reading stopped. Check that memory.vector.embeddings_base_url points at an OpenAI-compatible /embeddings API.`,
          });
        }
        const text = new TextDecoder().decode(raw);
        if (response.ok) return this.parse(this.json(text, url), texts.length, url);
        const detail = redactSecret(text.slice(0, 300), apiKey);
        lastProblem = `HTTP ${response.status}${detail ? `: ${detail}` : ""}`;
        if (response.status === 401 || response.status === 403) {
          throw new HermesMemoryError({
            code: "PROVIDER_UNAVAILABLE",
            message: `The embeddings endpoint ${url} refused the request (${lastProblem}). Set EMBEDDINGS_API_KEY in $HERMES_HOME/.env, or check memory.vector.embeddings_base_url.`,
          });
        }
        if (response.status === 413) {
          throw markContentRefusal(
            new HermesMemoryError({
              code: "STORAGE_FAILED",
              message: `The embeddings endpoint ${url} refused the input as too large (${lastProblem}). Shorten the text, or lower the batch size of the embedder.`,
            }),
            413,
          );
        }
        if (response.status !== 429 && response.status < 500) {
          throw markContentRefusal(
            new HermesMemoryError({
              code: "STORAGE_FAILED",
              message: `The embeddings endpoint ${url} rejected the request (${lastProblem}). Check memory.vector.embeddings_model ("${this.options.model}") and memory.vector.dimensions, and that the text is not longer than the model accepts.`,
            }),
            response.status,
          );
        }
        retryAfterMs = parseRetryAfter(response.headers.get("retry-after"));
      } catch (error) {
        if (HermesMemoryError.isInstance(error)) throw error;
        lastProblem =
          (error as Error)?.name === "TimeoutError"
            ? `timed out after ${this.options.timeoutMs ?? 30_000} ms`
            : redactSecret(describeError(error), apiKey);
      }
      if (attempt >= this.retry.maxRetries) break;
      await delay(retryWait(this.retry, attempt, retryAfterMs));
    }
    throw new HermesMemoryError({
      code: "STORAGE_FAILED",
      message: `The embeddings endpoint ${url} failed after ${this.retry.maxRetries + 1} attempts (${lastProblem}). Check that the server is running and reachable.`,
    });
  }

  /** A response body as JSON, or `STORAGE_FAILED` naming what came instead. */
  private json(text: string, url: string): unknown {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw this.malformed(url, `not JSON: ${JSON.stringify(redactSecret(text.slice(0, 80), this.options.apiKey))}`);
    }
  }

  private malformed(url: string, detail: string): HermesMemoryError {
    return new HermesMemoryError({
      code: "STORAGE_FAILED",
      message: `The embeddings endpoint ${url} answered with a malformed response (${detail}). Check that memory.vector.embeddings_base_url points at an OpenAI-compatible /embeddings API and memory.vector.embeddings_model ("${this.options.model}") is an embedding model.`,
    });
  }

  /**
   * The vectors of a `{data: [{index, embedding}]}` answer, in input order: exactly one per input
   * (by `index`, or in the given order when no entry has one), each a list of `dimensions` finite
   * numbers. Anything else is `STORAGE_FAILED` naming what was wrong (a wrong length is
   * `EMBEDDING_DIMENSION_MISMATCH`).
   */
  private parse(response: unknown, expected: number, url: string): Float32Array[] {
    const data = typeof response === "object" && response !== null ? (response as { data?: unknown }).data : undefined;
    if (!Array.isArray(data)) throw this.malformed(url, `"data" is ${describeValue(data)}, not a list`);
    if (data.length !== expected) {
      throw new HermesMemoryError({
        code: "STORAGE_FAILED",
        message: `The embeddings endpoint returned ${data.length} vectors for ${expected} inputs. Check that it is OpenAI-compatible.`,
      });
    }
    const entries = data.map((d: unknown, i) => {
      if (typeof d !== "object" || d === null) throw this.malformed(url, `data[${i}] is ${describeValue(d)}, not an object`);
      return d as { index?: unknown; embedding?: unknown };
    });
    const ordered: Array<{ index?: unknown; embedding?: unknown }> = new Array(expected);
    if (entries.every((d) => d.index === undefined || d.index === null)) entries.forEach((d, i) => (ordered[i] = d));
    else {
      for (const [i, d] of entries.entries()) {
        const index = d.index;
        if (typeof index !== "number" || !Number.isInteger(index) || index < 0 || index >= expected) {
          throw this.malformed(url, `data[${i}].index is ${describeValue(index)}; expected an integer from 0 to ${expected - 1}`);
        }
        if (ordered[index]) throw this.malformed(url, `two vectors have index ${index}`);
        ordered[index] = d;
      }
    }
    return ordered.map((d, i) => {
      const v = d.embedding;
      if (!Array.isArray(v)) {
        throw this.malformed(
          url,
          `the embedding of input ${i} is ${typeof v === "string" ? "text (base64? the request asks for encoding_format float)" : describeValue(v)}, not a list of numbers`,
        );
      }
      if (v.length !== this.dimensions) {
        throw new HermesMemoryError({
          code: "EMBEDDING_DIMENSION_MISMATCH",
          message: `Model "${this.options.model}" returned ${v.length}-dimensional vectors but memory.vector.dimensions is ${this.dimensions}. Set memory.vector.dimensions: ${v.length} and run \`hermes-memory vector reindex\`.`,
        });
      }
      const bad = v.findIndex((x) => typeof x !== "number" || !Number.isFinite(x) || Math.abs(x) > FLOAT32_MAX);
      if (bad >= 0)
        throw this.malformed(url, `entry ${bad} of the embedding of input ${i} is ${describeValue(v[bad])}, not a finite number`);
      return l2Normalize(Float32Array.from(v as number[]));
    });
  }
}
