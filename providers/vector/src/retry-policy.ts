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
