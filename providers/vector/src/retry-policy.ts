// Helpers of the HTTP callers (Pinecone, the embeddings endpoint).

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
 * Resolve after `ms`. The timer is deliberately not unref'd: a caller awaiting a retry (a script's
 * `flush()`, a CLI command) must keep the process alive until the call succeeds or fails with an
 * error; an unref'd backoff let Node exit mid-retry with nothing reported. Retries are bounded by
 * `maxRetries` and the call's budget, so this never holds a process open indefinitely.
 */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
