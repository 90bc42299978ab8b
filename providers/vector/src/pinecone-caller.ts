/**
 * The one way this package calls Pinecone: an SDK client whose requests each have a timeout (the
 * body is read inside it too), and bounded retries with backoff and jitter on 429, 5xx, timeouts
 * and refused connections, never past a call's budget. A 401 becomes `PROVIDER_UNAVAILABLE` and is
 * never retried (later calls fail fast with the same error); any other refusal becomes
 * `STORAGE_FAILED` naming the HTTP status and Pinecone's message. Both Pinecone layouts (sidecar
 * and remote) make their calls through it.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { Pinecone } from "@pinecone-database/pinecone";
import { HermesMemoryError, describeError } from "@hermes/memory-core";
import { backoffDelay, delay, DEFAULT_RETRY_POLICY, type RetryPolicy } from "./retry-policy.js";

/** How to reach a Pinecone index; what both Pinecone stores take. */
export interface PineconeConnectionOptions {
  apiKey: string;
  /** Index name. */
  indexName: string;
  /** Index host (with scheme). Without it the host is looked up once through the control plane. */
  host?: string;
  /** Control-plane URL (default `https://api.pinecone.io`), with scheme. */
  controllerHostUrl?: string;
  /** The dense vectors' dimension (the embedder's). */
  dimensions: number;
  /** Per-request timeout in ms (default 10000). */
  requestTimeoutMs?: number;
  /** Retry policy for 429, 5xx, timeouts and refused connections. */
  retry?: Partial<RetryPolicy>;
}

/** Options of {@link PineconeCaller}. */
export interface PineconeCallerOptions {
  apiKey: string;
  indexName: string;
  /** Control-plane URL (default `https://api.pinecone.io`), with scheme. */
  controllerHostUrl?: string;
  /** Per-request timeout in ms (default 10000). */
  requestTimeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  /** What the index must look like, appended to the message of a refused request (e.g. "Check that the index exists with metric dotproduct and dimension 384."). */
  indexAdvice: string;
  /** How to get out of a rejected API key, appended to the 401 message. */
  authAdvice: string;
  /** A refusal that no retry can fix, turned into the error to throw (and keep throwing); `null` when it is not one. */
  fatalError?: (error: unknown) => HermesMemoryError | null;
}

interface AttemptState {
  timeoutMs: number;
  status?: number;
  timedOut?: boolean;
}

/** A Pinecone SDK client plus bounded, timed calls. */
export class PineconeCaller {
  readonly client: Pinecone;
  readonly indexName: string;
  readonly requestTimeoutMs: number;
  private readonly retry: RetryPolicy;
  private readonly attempt = new AsyncLocalStorage<AttemptState>();
  private readonly options: PineconeCallerOptions;
  /** Set after a 401 or another fatal refusal: further calls fail fast with the same error. */
  fatal: HermesMemoryError | null = null;

  constructor(options: PineconeCallerOptions) {
    this.options = options;
    this.indexName = options.indexName;
    this.retry = { ...DEFAULT_RETRY_POLICY, ...options.retry };
    this.requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
    const fetchApi = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const state = this.attempt.getStore();
      const timeoutMs = state?.timeoutMs ?? this.requestTimeoutMs;
      const controller = new AbortController();
      const timer = setTimeout(() => {
        if (state) state.timedOut = true;
        controller.abort(new Error(`Pinecone request timed out after ${timeoutMs} ms`));
      }, timeoutMs);
      const signal = init?.signal ? AbortSignal.any([init.signal, controller.signal]) : controller.signal;
      try {
        const response = await fetch(input, { ...init, signal });
        if (state) state.status = response.status;
        // The body is read inside the timeout too: a server may stall after the headers.
        const body = await response.arrayBuffer();
        return new Response(body.byteLength === 0 && (response.status === 204 || response.status === 304) ? null : body, {
          status: response.status,
          statusText: response.statusText,
          headers: response.headers,
        });
      } finally {
        clearTimeout(timer);
      }
    };
    this.client = new Pinecone({
      apiKey: options.apiKey,
      ...(options.controllerHostUrl ? { controllerHostUrl: options.controllerHostUrl } : {}),
      maxRetries: 0,
      fetchApi: fetchApi as never,
    });
  }

  /** Remember `error` as fatal (later calls throw it at once) and return it. */
  markFatal(error: HermesMemoryError): HermesMemoryError {
    this.fatal = error;
    return error;
  }

  /** Run one SDK call with a timeout per attempt and bounded retries within `budgetMs`. */
  async call<T>(what: string, budgetMs: number | undefined, fn: () => Promise<T>): Promise<T> {
    if (this.fatal) throw this.fatal;
    const deadline = budgetMs === undefined ? Infinity : Date.now() + budgetMs;
    let lastError: unknown;
    let lastStatus: number | undefined;
    let timedOut = false;
    for (let attempt = 0; ; attempt++) {
      const state: AttemptState = { timeoutMs: Math.max(1, Math.min(this.requestTimeoutMs, deadline - Date.now())) };
      try {
        return await this.attempt.run(state, fn);
      } catch (error) {
        if (error instanceof HermesMemoryError) throw error;
        lastError = error;
        lastStatus = state.status;
        timedOut = Boolean(state.timedOut);
        if (state.status === 401 || (error as Error)?.name === "PineconeAuthorizationError") {
          throw this.markFatal(
            new HermesMemoryError({
              code: "PROVIDER_UNAVAILABLE",
              message: `Pinecone rejected the API key (401) for index "${this.indexName}". ${this.options.authAdvice}`,
              cause: error,
            }),
          );
        }
        const fatal = this.options.fatalError?.(error);
        if (fatal) throw this.markFatal(fatal);
        const retryable = state.timedOut || state.status === undefined || state.status === 429 || state.status >= 500;
        if (!retryable || attempt >= this.retry.maxRetries) break;
        const wait = backoffDelay(this.retry, attempt);
        if (Date.now() + wait + 1 >= deadline) break;
        await delay(wait);
      }
    }
    if (lastStatus !== undefined && lastStatus !== 429 && lastStatus < 500) {
      throw new HermesMemoryError({
        code: "STORAGE_FAILED",
        message: `Pinecone rejected ${what} on index "${this.indexName}" (HTTP ${lastStatus}: ${describeError(lastError)}). ${this.options.indexAdvice}`,
        cause: lastError,
      });
    }
    const detail = lastStatus ? `HTTP ${lastStatus}` : timedOut ? `timed out after ${this.requestTimeoutMs} ms` : describeError(lastError);
    throw new HermesMemoryError({
      code: "STORAGE_FAILED",
      message: `Pinecone ${what} on index "${this.indexName}" failed (${detail}) after retries. Check Pinecone's status and your network; the call is safe to repeat.`,
      cause: lastError,
    });
  }
}
