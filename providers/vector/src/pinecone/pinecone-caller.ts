/**
 * The one way this package calls Pinecone: an SDK client whose requests each have a timeout (the
 * body is read inside it too), and bounded retries with backoff and jitter on 429, 5xx, timeouts
 * and refused connections, never past a call's budget; a 429 or 5xx carrying `Retry-After` waits
 * what it asks (at most the policy's `maxDelayMs`) instead of the backoff. A 401 becomes
 * `PROVIDER_UNAVAILABLE` and is never retried (later calls fail fast with the same error); any
 * other refusal becomes `STORAGE_FAILED` naming the HTTP status and Pinecone's message. Both
 * Pinecone layouts (sidecar and remote) make their calls through it.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { Pinecone, type Index, type IndexModel, type PineconeRecord, type RecordMetadata } from "@pinecone-database/pinecone";
import { HermesMemoryError, describeError, describeValue } from "@hermes/memory-core";
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

/** Options of {@link PineconeCaller}: how to reach the index (a store's own options may be passed whole), plus what its messages advise. */
export interface PineconeCallerOptions extends Omit<PineconeConnectionOptions, "dimensions"> {
  /** What the index must look like, appended to the message of a refused request (e.g. "Check that the index exists with metric dotproduct and dimension 384."). */
  indexAdvice: string;
  /** How to get out of a rejected API key, appended to the 401 message. */
  authAdvice: string;
  /** A refusal that no retry can fix, turned into the error to throw (and keep throwing); `null` when it is not one. */
  fatalError?: (error: unknown) => HermesMemoryError | null;
  /**
   * Checks the index description the host lookup returns: the error to throw (and keep throwing)
   * when the index cannot serve this store (wrong metric or dimension), `null` when it can.
   */
  checkIndex?: (model: IndexModel) => HermesMemoryError | null;
}

/** Most ids per fetch request (they travel in the URL). */
const FETCH_IDS_PER_REQUEST = 100;
/** Most ids per delete request (Pinecone's limit). */
const DELETE_IDS_PER_REQUEST = 1000;
/** Largest upsert request body, in bytes of UTF-8 JSON: Pinecone's 2 MB, less room for the envelope. */
const MAX_UPSERT_REQUEST_BYTES = 2 * 1024 * 1024 - 64 * 1024;

interface AttemptState {
  timeoutMs: number;
  /** HTTP status of a response whose body was read completely. */
  status?: number;
  /** That response's `Retry-After`, in ms (absent or unreadable: undefined). */
  retryAfterMs?: number;
  timedOut?: boolean;
  /** A 3xx answer (never followed): its status and `Location`. */
  redirect?: { status: number; location: string };
  /** The answer's body was larger than {@link MAX_RESPONSE_BYTES} (reading stopped). */
  tooLarge?: boolean;
}

/**
 * Largest Pinecone answer read (64 MiB): a query of 1000 matches with 40 KB of metadata each, or a
 * fetch of 100 records with values and metadata, stays well below it. A longer body (a broken or
 * hostile server) is cut off instead of filling memory until the timeout.
 */
export const MAX_RESPONSE_BYTES = 64 * 1024 * 1024;

/** `error` as a cause that cannot carry `secret`: itself when its message does not contain it, else an Error with the redacted message. */
export function redactedCause(error: unknown, secret: string | undefined): unknown {
  const text = describeError(error);
  if (!secret || secret.length < 4 || !text.includes(secret)) return error;
  const safe = new Error(redactSecret(text, secret));
  safe.name = (error as Error)?.name ?? "Error";
  return safe;
}

/**
 * The error for a Pinecone answer that is not what the protocol says (`detail` names the field):
 * `STORAGE_FAILED`, never retried (the same server would answer the same).
 */
export function malformedPineconeResponse(indexName: string, what: string, detail: string, cause?: unknown): HermesMemoryError {
  return new HermesMemoryError({
    code: "STORAGE_FAILED",
    message: `Pinecone answered ${what} on index "${indexName}" with a malformed response (${detail}). Check that memory.vector.pinecone_host / pinecone_controller_url point at Pinecone (not a proxy or another service); the call is safe to repeat.`,
    ...(cause !== undefined ? { cause } : {}),
  });
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
  private indexHandle: Index<RecordMetadata> | null = null;
  private indexLookup: Promise<Index<RecordMetadata>> | null = null;
  private readonly namespaceHandles = new Map<string, Index<RecordMetadata>>();

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
        // Redirects are not followed: fetch would re-send the Api-Key header to whatever host the
        // Location names. A 3xx is reported by `call` as a refusal naming the target.
        const response = await fetch(input, { ...init, signal, redirect: "manual" });
        if (response.status >= 300 && response.status < 400 && state) {
          state.redirect = { status: response.status, location: response.headers.get("location") ?? "(no Location)" };
        }
        // The body is read inside the timeout too (a server may stall after the headers), and at
        // most MAX_RESPONSE_BYTES of it (a server may send without end).
        const body = await readBodyLimited(response, MAX_RESPONSE_BYTES);
        if (body === null) {
          if (state) state.tooLarge = true;
          throw new Error(`Pinecone's answer is larger than ${MAX_RESPONSE_BYTES} bytes`);
        }
        // Only a completely read answer has a status: a stall in the body is a timeout.
        if (state) {
          state.status = response.status;
          state.retryAfterMs = parseRetryAfter(response.headers.get("retry-after"));
        }
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
    if (options.host) this.indexHandle = this.client.index({ name: options.indexName, host: options.host });
  }

  /**
   * The index's data-plane handle. Without a configured host, the host is looked up once through
   * the control plane (`describe_index`, checked by `checkIndex`) and kept; concurrent callers share
   * one lookup, and a failed lookup is tried again by the next call. The lookup is ours, not the
   * SDK's: the SDK caches hosts per process by key and name, which goes stale when two stores (or
   * tests) point at different control planes.
   */
  async index(budgetMs?: number): Promise<Index<RecordMetadata>> {
    if (this.indexHandle) return this.indexHandle;
    this.indexLookup ??= this.call("describe_index", budgetMs, () => this.client.describeIndex(this.indexName))
      .then((model) => {
        const refusal = this.options.checkIndex?.(model) ?? null;
        if (refusal) throw this.markFatal(refusal);
        const host = /^https?:\/\//.test(model.host) ? model.host : `https://${model.host}`;
        this.indexHandle = this.client.index({ name: this.indexName, host });
        return this.indexHandle;
      })
      .finally(() => {
        this.indexLookup = null;
      });
    return this.indexLookup;
  }

  /** The handle of `namespace` (`""`: the index's default namespace). */
  async namespace(namespace: string, budgetMs?: number): Promise<Index<RecordMetadata>> {
    const base = await this.index(budgetMs);
    if (namespace === "") return base;
    let handle = this.namespaceHandles.get(namespace);
    if (!handle) {
      handle = base.namespace(namespace);
      this.namespaceHandles.set(namespace, handle);
    }
    return handle;
  }

  /** Upsert `records` into `namespace`, in requests of at most `maxRecords` records and under 2 MB of JSON each. */
  async upsertRecords(
    namespace: string,
    records: ReadonlyArray<PineconeRecord<RecordMetadata>>,
    maxRecords: number,
    budgetMs?: number,
  ): Promise<void> {
    const handle = await this.namespace(namespace, budgetMs);
    let batch: Array<PineconeRecord<RecordMetadata>> = [];
    let bytes = 0;
    const send = async (): Promise<void> => {
      if (batch.length === 0) return;
      const payload = batch;
      batch = [];
      bytes = 0;
      await this.call("upsert", budgetMs, () => handle.upsert({ records: payload }));
    };
    for (const record of records) {
      // Bytes, not characters: text outside ASCII takes two to four bytes a character.
      const size = Buffer.byteLength(JSON.stringify(record));
      if (batch.length >= maxRecords || bytes + size > MAX_UPSERT_REQUEST_BYTES) await send();
      batch.push(record);
      bytes += size;
    }
    await send();
  }

  /** The records of `ids` in `namespace` (checked; ids Pinecone does not hold are left out), 100 ids per request. */
  async fetchRecords(
    namespace: string,
    ids: readonly string[],
    dimensions: number,
    budgetMs?: number,
  ): Promise<ReturnType<typeof checkPineconeFetched>> {
    const handle = await this.namespace(namespace, budgetMs);
    const out: ReturnType<typeof checkPineconeFetched> = [];
    for (let i = 0; i < ids.length; i += FETCH_IDS_PER_REQUEST) {
      const chunk = ids.slice(i, i + FETCH_IDS_PER_REQUEST);
      const response = await this.call("fetch", budgetMs, () => handle.fetch({ ids: chunk }));
      out.push(...checkPineconeFetched(this.indexName, response.records, dimensions));
    }
    return out;
  }

  /** Delete the records of `ids` from `namespace`, 1000 ids per request. */
  async deleteIds(namespace: string, ids: readonly string[], budgetMs?: number): Promise<void> {
    const handle = await this.namespace(namespace, budgetMs);
    for (let i = 0; i < ids.length; i += DELETE_IDS_PER_REQUEST) {
      const chunk = ids.slice(i, i + DELETE_IDS_PER_REQUEST);
      await this.call("delete", budgetMs, () => handle.deleteMany({ ids: chunk }));
    }
  }

  /** Every id in `namespace` starting with `prefix` (`""`: every id), one checked page of at most `pageSize` ids at a time. */
  async *listIdPages(namespace: string, prefix: string, pageSize = 100): AsyncGenerator<string[]> {
    const handle = await this.namespace(namespace);
    const seen = new Set<string>();
    let token: string | undefined;
    do {
      const page = await this.call("list", undefined, () =>
        handle.listPaginated({ ...(prefix ? { prefix } : {}), limit: pageSize, ...(token ? { paginationToken: token } : {}) }),
      );
      const { ids, next } = checkPineconeListPage(this.indexName, page, seen);
      if (ids.length > 0) yield ids;
      token = next;
    } while (token);
  }

  /** `describe_index_stats`, checked; the default namespace is named `"__default__"`, as Pinecone names it. */
  async indexStats(budgetMs?: number): Promise<ReturnType<typeof checkPineconeStats>> {
    const handle = await this.index(budgetMs);
    return checkPineconeStats(this.indexName, await this.call("describe_index_stats", budgetMs, () => handle.describeIndexStats()));
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
    let lastRetryAfterMs: number | undefined;
    let timedOut = false;
    for (let attempt = 0; ; attempt++) {
      const state: AttemptState = { timeoutMs: Math.max(1, Math.min(this.requestTimeoutMs, deadline - Date.now())) };
      try {
        return await this.attempt.run(state, fn);
      } catch (error) {
        if (error instanceof HermesMemoryError) throw error;
        const apiKey = this.options.apiKey;
        lastError = redactedCause(error, apiKey);
        lastStatus = state.status;
        lastRetryAfterMs = state.retryAfterMs;
        timedOut = Boolean(state.timedOut);
        if (state.status === 401 || (error as Error)?.name === "PineconeAuthorizationError") {
          throw this.markFatal(
            new HermesMemoryError({
              code: "PROVIDER_UNAVAILABLE",
              message: `Pinecone rejected the API key (401) for index "${this.indexName}". ${this.options.authAdvice}`,
              cause: lastError,
            }),
          );
        }
        if (state.status === 403) {
          // Not remembered as fatal: a key without write permission may still read.
          throw new HermesMemoryError({
            code: "PROVIDER_UNAVAILABLE",
            message: `Pinecone refused ${what} on index "${this.indexName}" (403 Forbidden: ${redactSecret(describeError(error), apiKey)}): the API key lacks permission for this index or operation. ${this.options.authAdvice}`,
            cause: lastError,
          });
        }
        if (state.redirect) {
          throw new HermesMemoryError({
            code: "STORAGE_FAILED",
            message: `Pinecone answered ${what} on index "${this.indexName}" with a redirect (HTTP ${state.redirect.status} to ${redactSecret(state.redirect.location, apiKey).slice(0, 200)}), which is not followed so that the API key is never sent to another host. Check memory.vector.pinecone_host and pinecone_controller_url.`,
            cause: lastError,
          });
        }
        if (state.tooLarge) {
          throw new HermesMemoryError({
            code: "STORAGE_FAILED",
            message: `Pinecone's answer to ${what} on index "${this.indexName}" was larger than ${MAX_RESPONSE_BYTES / 1024 / 1024} MiB; reading stopped. Check that memory.vector.pinecone_host / pinecone_controller_url point at Pinecone.`,
            cause: lastError,
          });
        }
        if (state.status !== undefined && state.status >= 200 && state.status < 300) {
          throw malformedPineconeResponse(
            this.indexName,
            what,
            `HTTP ${state.status}: ${redactSecret(describeError(error), apiKey).slice(0, 300)}`,
            lastError,
          );
        }
        const fatal = this.options.fatalError?.(error);
        if (fatal) throw this.markFatal(fatal);
        const retryable = state.timedOut || state.status === undefined || state.status === 429 || state.status >= 500;
        if (!retryable || attempt >= this.retry.maxRetries) break;
        // The server's Retry-After when it sent one, else the backoff; a wait that would end past
        // the deadline is not started: the call fails now, as it would then.
        const wait = retryWait(this.retry, attempt, state.retryAfterMs);
        if (Date.now() + wait + 1 >= deadline) break;
        await delay(wait);
      }
    }
    if (lastStatus !== undefined && lastStatus !== 429 && lastStatus < 500) {
      throw markContentRefusal(
        new HermesMemoryError({
          code: "STORAGE_FAILED",
          message: `Pinecone rejected ${what} on index "${this.indexName}" (HTTP ${lastStatus}: ${describeError(lastError).slice(0, 500)}). ${this.options.indexAdvice}`,
          cause: lastError,
        }),
        lastStatus,
      );
    }
    const asked = lastRetryAfterMs !== undefined ? `; it asked to retry after ${Math.ceil(lastRetryAfterMs / 1000)} s` : "";
    const detail = lastStatus
      ? `HTTP ${lastStatus}${asked}`
      : timedOut
        ? `timed out after ${this.requestTimeoutMs} ms`
        : describeError(lastError);
    throw new HermesMemoryError({
      code: "STORAGE_FAILED",
      message: `Pinecone ${what} on index "${this.indexName}" failed (${detail}) after retries. Check Pinecone's status and your network; the call is safe to repeat.`,
      cause: lastError,
    });
  }
}

// --- checks of Pinecone's answers -------------------------------------------------------------
// The SDK passes the JSON it receives through without checking types, so a broken or hostile
// server could hand a non-string id, a non-numeric score or a nested object to the callers.

/** Metadata as Pinecone stores it (flat: text, finite numbers, booleans, lists of text). */
export type PineconeFlatMetadata = Record<string, string | number | boolean | string[]>;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Check one record's metadata (`undefined`/`null` = none); `where` names it in the message. */
export function checkPineconeMetadata(indexName: string, what: string, where: string, value: unknown): PineconeFlatMetadata {
  if (value === undefined || value === null) return {};
  if (!isRecord(value))
    throw malformedPineconeResponse(indexName, what, `the metadata of ${where} is ${describeValue(value)}, not an object`);
  for (const [field, v] of Object.entries(value)) {
    const ok =
      typeof v === "string" ||
      typeof v === "boolean" ||
      (typeof v === "number" && Number.isFinite(v)) ||
      (Array.isArray(v) && v.every((x) => typeof x === "string"));
    if (!ok)
      throw malformedPineconeResponse(
        indexName,
        what,
        `metadata field "${field.slice(0, 40)}" of ${where} is ${describeValue(v)}; Pinecone stores only text, finite numbers, booleans and lists of text`,
      );
  }
  return value as PineconeFlatMetadata;
}

/** Check dense values: finite numbers, `dimensions` of them (an empty list = not returned). */
export function checkPineconeValues(indexName: string, what: string, where: string, value: unknown, dimensions: number): number[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value))
    throw malformedPineconeResponse(indexName, what, `the values of ${where} are ${describeValue(value)}, not a list`);
  if (value.length !== 0 && value.length !== dimensions) {
    throw malformedPineconeResponse(indexName, what, `${where} has ${value.length} values; the index's vectors have ${dimensions}`);
  }
  const bad = value.findIndex((v) => typeof v !== "number" || !Number.isFinite(v));
  if (bad >= 0)
    throw malformedPineconeResponse(indexName, what, `value ${bad} of ${where} is ${describeValue(value[bad])}, not a finite number`);
  return value as number[];
}

/** Check a sparse vector (parallel lists of indices and finite values), or none. */
export function checkPineconeSparse(
  indexName: string,
  what: string,
  where: string,
  value: unknown,
): { indices: number[]; values: number[] } | undefined {
  if (value === undefined || value === null) return undefined;
  const ok =
    isRecord(value) &&
    Array.isArray(value.indices) &&
    Array.isArray(value.values) &&
    value.indices.length === value.values.length &&
    value.indices.every((i) => typeof i === "number" && Number.isInteger(i) && i >= 0) &&
    value.values.every((v) => typeof v === "number" && Number.isFinite(v));
  if (!ok)
    throw malformedPineconeResponse(indexName, what, `the sparse values of ${where} are not parallel lists of indices and finite numbers`);
  return { indices: value.indices as number[], values: value.values as number[] };
}

/** Check a query's matches: a list of `{id: text, score: finite number, metadata}`. */
export function checkPineconeMatches(
  indexName: string,
  matches: unknown,
): Array<{ id: string; score: number; metadata: PineconeFlatMetadata }> {
  if (matches === undefined || matches === null) return [];
  if (!Array.isArray(matches)) throw malformedPineconeResponse(indexName, "query", `matches is ${describeValue(matches)}, not a list`);
  return matches.map((m: unknown, i) => {
    if (!isRecord(m)) throw malformedPineconeResponse(indexName, "query", `match ${i} is ${describeValue(m)}, not an object`);
    if (typeof m.id !== "string")
      throw malformedPineconeResponse(indexName, "query", `the id of match ${i} is ${describeValue(m.id)}, not text`);
    const score = m.score ?? 0;
    if (typeof score !== "number" || !Number.isFinite(score)) {
      throw malformedPineconeResponse(
        indexName,
        "query",
        `the score of match ${i} (${m.id.slice(0, 80)}) is ${describeValue(score)}, not a finite number`,
      );
    }
    return { id: m.id, score, metadata: checkPineconeMetadata(indexName, "query", `match ${i}`, m.metadata) };
  });
}

/** Check a fetch's records: an object of id → `{values, sparseValues?, metadata}`. */
export function checkPineconeFetched(
  indexName: string,
  records: unknown,
  dimensions: number,
): Array<{ id: string; values: number[]; sparseValues?: { indices: number[]; values: number[] }; metadata: PineconeFlatMetadata }> {
  if (records === undefined || records === null) return [];
  if (!isRecord(records)) throw malformedPineconeResponse(indexName, "fetch", `records is ${describeValue(records)}, not an object`);
  return Object.entries(records).map(([id, rec]) => {
    const where = `record ${id.slice(0, 80)}`;
    if (!isRecord(rec)) throw malformedPineconeResponse(indexName, "fetch", `${where} is ${describeValue(rec)}, not an object`);
    const sparse = checkPineconeSparse(indexName, "fetch", where, rec.sparseValues);
    return {
      id,
      values: checkPineconeValues(indexName, "fetch", where, rec.values, dimensions),
      ...(sparse ? { sparseValues: sparse } : {}),
      metadata: checkPineconeMetadata(indexName, "fetch", where, rec.metadata),
    };
  });
}

/**
 * Check one page of `list`: its ids (text) and the next page's token. `seen` holds the tokens
 * already followed: a token seen before would make the listing loop forever.
 */
export function checkPineconeListPage(indexName: string, page: unknown, seen: Set<string>): { ids: string[]; next: string | undefined } {
  if (!isRecord(page)) throw malformedPineconeResponse(indexName, "list", `the page is ${describeValue(page)}, not an object`);
  const vectors = page.vectors ?? [];
  if (!Array.isArray(vectors)) throw malformedPineconeResponse(indexName, "list", `vectors is ${describeValue(vectors)}, not a list`);
  const ids = vectors.flatMap((v: unknown, i) => {
    const id = isRecord(v) ? v.id : undefined;
    if (id === undefined || id === null || id === "") return [];
    if (typeof id !== "string")
      throw malformedPineconeResponse(indexName, "list", `the id of entry ${i} is ${describeValue(id)}, not text`);
    return [id];
  });
  const pagination = page.pagination;
  const next = isRecord(pagination) ? pagination.next : undefined;
  if (next !== undefined && next !== null && typeof next !== "string") {
    throw malformedPineconeResponse(indexName, "list", `the pagination token is ${describeValue(next)}, not text`);
  }
  if (typeof next === "string" && next !== "") {
    if (seen.has(next))
      throw malformedPineconeResponse(
        indexName,
        "list",
        "it returned a pagination token it had returned before, so the listing would never end",
      );
    seen.add(next);
    return { ids, next };
  }
  return { ids, next: undefined };
}

/** Check `describe_index_stats`: record counts are non-negative integers. */
export function checkPineconeStats(
  indexName: string,
  stats: unknown,
): { dimension?: number; totalRecordCount?: number; namespaces: Record<string, number> } {
  if (!isRecord(stats))
    throw malformedPineconeResponse(indexName, "describe_index_stats", `the answer is ${describeValue(stats)}, not an object`);
  const count = (value: unknown, where: string): number | undefined => {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== "number" || !Number.isInteger(value) || value < 0)
      throw malformedPineconeResponse(indexName, "describe_index_stats", `${where} is ${describeValue(value)}, not a count`);
    return value;
  };
  const namespaces: Record<string, number> = {};
  const raw = stats.namespaces ?? {};
  if (!isRecord(raw))
    throw malformedPineconeResponse(indexName, "describe_index_stats", `namespaces is ${describeValue(raw)}, not an object`);
  for (const [name, info] of Object.entries(raw))
    namespaces[name] = count(isRecord(info) ? info.recordCount : info, `the record count of namespace ${name.slice(0, 80)}`) ?? 0;
  const dimension = count(stats.dimension, "dimension");
  const totalRecordCount = count(stats.totalRecordCount, "totalRecordCount");
  return { ...(dimension !== undefined ? { dimension } : {}), ...(totalRecordCount !== undefined ? { totalRecordCount } : {}), namespaces };
}
