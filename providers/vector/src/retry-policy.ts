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

/** Resolve after `ms` (an unref'd timer, so a pending backoff never keeps the process alive). */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    timer.unref?.();
  });
}
