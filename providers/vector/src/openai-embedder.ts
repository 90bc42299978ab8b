import { HermesMemoryError, describeError } from "@hermes/memory-core";
import { l2Normalize, type Embedder } from "./embedder.js";
import { backoffDelay, delay, DEFAULT_RETRY_POLICY, type RetryPolicy } from "./retry-policy.js";

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
}

interface EmbeddingResponse {
  data?: Array<{ embedding?: number[]; index?: number }>;
}

/**
 * Embeddings from any OpenAI-compatible `/embeddings` endpoint (OpenAI, Ollama, vLLM, LM Studio):
 * batches, per-request timeouts, retries with exponential backoff and jitter on 429/5xx and
 * network errors (honouring `Retry-After`), and a dimension check on every vector.
 */
export class OpenAIEmbedder implements Embedder {
  readonly id: string;
  readonly dimensions: number;
  private readonly options: OpenAIEmbedderOptions;
  private readonly retry: RetryPolicy;

  constructor(options: OpenAIEmbedderOptions) {
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
    const input = texts.map((t) => (t.trim() === "" ? " " : t));
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
    for (let attempt = 0; ; attempt++) {
      let retryAfterMs: number | undefined;
      try {
        const response = await fetch(url, { method: "POST", headers, body, signal: AbortSignal.timeout(this.options.timeoutMs ?? 30_000) });
        if (response.ok) return this.parse((await response.json()) as EmbeddingResponse, texts.length);
        const detail = (await response.text().catch(() => "")).slice(0, 300);
        lastProblem = `HTTP ${response.status}${detail ? `: ${detail}` : ""}`;
        if (response.status === 401 || response.status === 403) {
          throw new HermesMemoryError({
            code: "PROVIDER_UNAVAILABLE",
            message: `The embeddings endpoint ${url} refused the request (${lastProblem}). Set EMBEDDINGS_API_KEY in $HERMES_HOME/.env, or check memory.vector.embeddings_base_url.`,
          });
        }
        if (response.status !== 429 && response.status < 500) {
          throw new HermesMemoryError({
            code: "STORAGE_FAILED",
            message: `The embeddings endpoint ${url} rejected the request (${lastProblem}). Check memory.vector.embeddings_model ("${this.options.model}") and memory.vector.dimensions.`,
          });
        }
        const retryAfter = Number(response.headers.get("retry-after"));
        if (Number.isFinite(retryAfter) && retryAfter > 0) retryAfterMs = Math.min(retryAfter * 1000, this.retry.maxDelayMs);
      } catch (error) {
        if (HermesMemoryError.isInstance(error)) throw error;
        lastProblem = (error as Error)?.name === "TimeoutError" ? `timed out after ${this.options.timeoutMs ?? 30_000} ms` : describeError(error);
      }
      if (attempt >= this.retry.maxRetries) break;
      await delay(retryAfterMs ?? backoffDelay(this.retry, attempt));
    }
    throw new HermesMemoryError({
      code: "STORAGE_FAILED",
      message: `The embeddings endpoint ${url} failed after ${this.retry.maxRetries + 1} attempts (${lastProblem}). Check that the server is running and reachable.`,
    });
  }

  private parse(response: EmbeddingResponse, expected: number): Float32Array[] {
    const data = [...(response.data ?? [])].sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
    if (data.length !== expected) {
      throw new HermesMemoryError({
        code: "STORAGE_FAILED",
        message: `The embeddings endpoint returned ${data.length} vectors for ${expected} inputs. Check that it is OpenAI-compatible.`,
      });
    }
    return data.map((d) => {
      const v = d.embedding ?? [];
      if (v.length !== this.dimensions) {
        throw new HermesMemoryError({
          code: "EMBEDDING_DIMENSION_MISMATCH",
          message: `Model "${this.options.model}" returned ${v.length}-dimensional vectors but memory.vector.dimensions is ${this.dimensions}. Set memory.vector.dimensions: ${v.length} and run \`hermes-memory vector reindex\`.`,
        });
      }
      return l2Normalize(Float32Array.from(v));
    });
  }
}
