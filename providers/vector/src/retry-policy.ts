// Helpers of the HTTP callers (Pinecone, the embeddings endpoint), and the rule for content they refuse.

/** Read `response`'s body, at most `limit` bytes; null when it is longer (reading stops there). */
export async function readBodyLimited(response: Response, limit: number): Promise<Uint8Array | null> {
  if (!response.body) return new Uint8Array(0);
  const declared = Number(response.headers.get("content-length"));
  const reader = response.body.getReader();
  if (Number.isFinite(declared) && declared > limit) {
    await reader.cancel().catch(() => undefined);
    return null;
  }
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => undefined);
      return null;
    }
    chunks.push(value);
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
}

/** `text` with every occurrence of `secret` replaced by `***` (a server may echo the key it was sent). */
export function redactSecret(text: string, secret: string | undefined): string {
  return secret && secret.length >= 4 ? text.split(secret).join("***") : text;
}

/** Bounded retry settings: exponential backoff with jitter, never past a deadline. */
export interface RetryPolicy {
  /** Retries after the first attempt (default 4). */
  maxRetries: number;
  /** First backoff in ms (default 200). */
  baseDelayMs: number;
  /** Largest backoff in ms (default 5000). */
  maxDelayMs: number;
  /** Source of jitter in [0, 1) (tests may pin it). */
  random: () => number;
}

/** Default retry settings. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = { maxRetries: 4, baseDelayMs: 200, maxDelayMs: 5000, random: Math.random };

/**
 * Backoff before retry number `attempt` (0-based): `base·2^attempt`, capped, with "equal jitter"
 * (half fixed, half random) so many clients retrying together spread out.
 */
export function backoffDelay(policy: RetryPolicy, attempt: number): number {
  const exp = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt);
  return exp / 2 + (exp / 2) * policy.random();
}

/**
 * Largest `Retry-After` read, in ms (about 24.8 days, the longest timer Node can set): a longer or
 * unrepresentable value (`1e400`, thirty digits, a date in the year 9999) is garbage, not a
 * request to wait. Whatever is read, the wait used is capped by {@link retryWait}.
 */
export const MAX_RETRY_AFTER_MS = 2 ** 31 - 1;

const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const LONG_DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const TIME = "(\\d{2}):(\\d{2}):(\\d{2})";
/** `Sun, 06 Nov 1994 08:49:37 GMT` (the form servers send). */
const IMF_FIXDATE = new RegExp(`^(${DAYS.join("|")}), (\\d{2}) (${MONTHS.join("|")}) (\\d{4}) ${TIME} GMT$`);
/** `Sunday, 06-Nov-94 08:49:37 GMT` (obsolete, still to be accepted). */
const RFC850_DATE = new RegExp(`^(${LONG_DAYS.join("|")}), (\\d{2})-(${MONTHS.join("|")})-(\\d{2}) ${TIME} GMT$`);
/** `Sun Nov  6 08:49:37 1994` (C's asctime, obsolete, in GMT). */
const ASCTIME_DATE = new RegExp(`^(${DAYS.join("|")}) (${MONTHS.join("|")}) ([ \\d]\\d) ${TIME} (\\d{4})$`);

/** Milliseconds since the epoch of an HTTP-date in any of its three forms, or NaN. */
function parseHttpDate(text: string, now: number): number {
  const utc = (year: number, month: string, day: string, h: string, m: string, s: string): number => {
    const [dd, hh, mm, ss] = [Number(day), Number(h), Number(m), Number(s)];
    if (dd < 1 || dd > 31 || hh > 23 || mm > 59 || ss > 60) return NaN;
    const time = Date.UTC(year, MONTHS.indexOf(month), dd, hh, mm, ss);
    // Date.UTC rolls 31 Feb over into March: such a date does not exist.
    return new Date(time).getUTCDate() === dd ? time : NaN;
  };
  let match = IMF_FIXDATE.exec(text);
  if (match) return utc(Number(match[4]), match[3]!, match[2]!, match[5]!, match[6]!, match[7]!);
  match = RFC850_DATE.exec(text);
  if (match) {
    // A two-digit year more than 50 years in the future names the most recent past year ending so.
    const thisYear = new Date(now).getUTCFullYear();
    let year = Math.floor(thisYear / 100) * 100 + Number(match[4]);
    if (year > thisYear + 50) year -= 100;
    return utc(year, match[3]!, match[2]!, match[5]!, match[6]!, match[7]!);
  }
  match = ASCTIME_DATE.exec(text);
  if (match) return utc(Number(match[7]), match[2]!, match[3]!.trim(), match[4]!, match[5]!, match[6]!);
  return NaN;
}

/**
 * A `Retry-After` header as a wait in ms, from `now`: delta-seconds (`120`; fractions such as
 * `1.5` are accepted too, as some servers send them; `0` is "retry now") or an HTTP-date (a date
 * already past is "retry now"). `undefined` when the header is absent, empty, negative, not one of
 * these forms, or longer than {@link MAX_RETRY_AFTER_MS}: the caller then uses its own backoff.
 */
export function parseRetryAfter(header: string | null | undefined, now: number = Date.now()): number | undefined {
  const text = header?.trim();
  if (!text) return undefined;
  let ms: number;
  if (/^\d+(\.\d+)?$/.test(text)) ms = Math.ceil(Number(text) * 1000);
  else {
    const date = parseHttpDate(text, now);
    if (Number.isNaN(date)) return undefined;
    ms = Math.max(0, date - now);
  }
  return Number.isFinite(ms) && ms <= MAX_RETRY_AFTER_MS ? ms : undefined;
}

/**
 * The wait before retry number `attempt` (0-based): what the server asked for in `Retry-After`
 * (`retryAfterMs`, from {@link parseRetryAfter}) when it asked, else {@link backoffDelay}; never
 * more than `policy.maxDelayMs`, so a server asking for hours cannot stall the caller. Callers
 * still stop retrying when the wait would end past their deadline.
 */
export function retryWait(policy: RetryPolicy, attempt: number, retryAfterMs: number | undefined): number {
  return retryAfterMs === undefined ? backoffDelay(policy, attempt) : Math.min(retryAfterMs, policy.maxDelayMs);
}

/**
 * Resolve after `ms`. The timer is deliberately not unref'd: a caller awaiting a retry (a script's
 * `flush()`, a CLI command) must keep the process alive until the call succeeds or fails with an
 * error; an unref'd backoff let Node exit mid-retry with nothing reported. Retries are bounded by
 * `maxRetries` and the call's budget, so this never holds a process open indefinitely.
 */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

const REFUSED_STATUS = Symbol.for("@hermes/memory-vector.refusedStatus");

/**
 * HTTP statuses with which a remote service refuses what it was sent (the request's content), not
 * the caller or the moment: sending the same content again is refused again.
 */
const CONTENT_REFUSALS = new Set([400, 413, 422]);

/**
 * What refused the content: an HTTP status (a remote service), or `"local"` for a local model that
 * cannot embed a text (its vector comes out NaN or infinite, every time).
 */
export type ContentRefusal = number | "local";

/**
 * Mark `error` as a refusal of the request's content when `refusal` is one (HTTP 400, 413, 422, or
 * `"local"`), so a sender can set the refused writes aside instead of re-sending them forever.
 * Any other status leaves `error` unmarked. Returns `error`.
 */
export function markContentRefusal<E extends Error>(error: E, refusal: ContentRefusal | undefined): E {
  if (refusal === "local" || (refusal !== undefined && CONTENT_REFUSALS.has(refusal)))
    Object.defineProperty(error, REFUSED_STATUS, { value: refusal, enumerable: false });
  return error;
}

/** True for an error marked by {@link markContentRefusal}: sending the same content again is refused again. */
export function isContentRefusal(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const mark = (error as Record<symbol, unknown>)[REFUSED_STATUS];
  return typeof mark === "number" || mark === "local";
}

/** The HTTP status of an error marked by {@link markContentRefusal}, else undefined (also for a local refusal). */
export function contentRefusalStatus(error: unknown): number | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const status = (error as Record<symbol, unknown>)[REFUSED_STATUS];
  return typeof status === "number" ? status : undefined;
}

/**
 * Send `items` with `send`, finding the ones refused for their content on their own. When `send`
 * throws a content refusal ({@link isContentRefusal}) for several items, each half is sent again
 * (recursively), so a refused item costs about log2(n) extra sends and the others go through in
 * order. The refused items are returned with their refusal, but only once the receiver is known to
 * take content: another item of this call was delivered, or `accepted` (it took one before), or
 * every refusal is a local model's (`"local"`: it embedded a test text when loaded). While none
 * holds (a misconfigured service, index or dimension refuses everything), nothing is called
 * refused and the first refusal is thrown, so the caller keeps every item for a later attempt. Any
 * other failure is thrown at once (what was delivered before it stays delivered, and `onDelivered`
 * has been told).
 */
export async function isolateRefused<T>(
  items: readonly T[],
  send: (part: T[]) => Promise<void>,
  options: { accepted?: boolean; onDelivered?: (part: T[]) => void } = {},
): Promise<{ delivered: T[]; refused: Array<{ item: T; error: unknown }> }> {
  const delivered: T[] = [];
  const refused: Array<{ item: T; error: unknown }> = [];
  const attempt = async (part: T[]): Promise<void> => {
    try {
      await send(part);
    } catch (error) {
      if (!isContentRefusal(error)) throw error;
      if (part.length === 1) {
        refused.push({ item: part[0]!, error });
        return;
      }
      const half = Math.ceil(part.length / 2);
      await attempt(part.slice(0, half));
      await attempt(part.slice(half));
      return;
    }
    options.onDelivered?.(part);
    delivered.push(...part);
  };
  if (items.length > 0) await attempt([...items]);
  // A local model's refusal needs no such proof: it embedded its test text when it was loaded.
  const unproven =
    refused.length > 0 &&
    delivered.length === 0 &&
    options.accepted !== true &&
    refused.some((r) => contentRefusalStatus(r.error) !== undefined);
  if (unproven) throw refused[0]!.error;
  return { delivered, refused };
}
