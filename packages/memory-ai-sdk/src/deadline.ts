/** What `settleWithin` returns when the deadline passed or the work failed. */
export const MISSED = Symbol("missed-deadline");

/**
 * Wait for `work` at most `ms` milliseconds. Resolves to the value, or to `MISSED` when the work
 * rejected or did not settle in time. Never rejects and never keeps the process alive: a provider
 * that hangs must not hold a model call (or process exit) hostage.
 */
export async function settleWithin<T>(work: () => PromiseLike<T> | T, ms: number): Promise<T | typeof MISSED> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<typeof MISSED>((resolve) => {
    timer = setTimeout(() => resolve(MISSED), ms);
    timer.unref?.();
  });
  const attempt: Promise<T | typeof MISSED> = (async () => work())().then(
    (value): T | typeof MISSED => value,
    (): T | typeof MISSED => MISSED,
  );
  try {
    return await Promise.race([attempt, deadline]);
  } finally {
    if (timer) clearTimeout(timer);
  }
}
