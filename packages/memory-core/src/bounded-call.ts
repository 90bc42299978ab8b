/**
 * One bounded call into provider code. Every hook the manager, `openMemory()` and the loader call
 * on a provider goes through `boundedCall`, so a provider that never settles costs at most the
 * timeout instead of hanging the host.
 *
 * A bound is a promise about time, not about timers: a call that settles after its bound elapsed
 * is a timeout, whether or not the timer got to run. A provider that blocks the event loop (a busy
 * loop, a synchronous SDK call) also blocks the timer, so its call can settle "before" the timer
 * callback; its result is still discarded, because using it would break the bound's promise to the
 * host. What a timeout cannot do is interrupt synchronous work: only a worker thread or a child
 * process can. A call that timed out keeps running detached: its late result or error is dropped
 * (the optional `onLate` callback sees it).
 */

/** The tagged result of `boundedCall`. */
export type BoundedOutcome<T> = { status: "ok"; value: T } | { status: "error"; error: unknown } | { status: "timeout"; timeoutMs: number };

/** Options of `boundedCall`. */
export interface BoundedCallOptions {
  /**
   * Called once with the result of a call that timed out: when it settles later, or right away when
   * it settled past its bound before the timer could fire (value or error).
   */
  onLate?: (late: { status: "ok"; value: unknown } | { status: "error"; error: unknown }) => void;
}

let detached = 0;

/**
 * Number of calls that timed out and have not settled yet, process-wide. A CLI uses it to exit
 * right away instead of waiting for the event loop to empty (a hung call may hold it open).
 */
export function detachedCallCount(): number {
  return detached;
}

/**
 * Run `fn` (sync or async) and settle within `timeoutMs`. Never throws and never rejects: a
 * synchronous throw or a rejection becomes `{status: "error"}`, the deadline `{status: "timeout"}`.
 * The timer is cleared as soon as the call settles, so a fast call leaves no handle behind.
 * `timeoutMs` of `Infinity` means unbounded (no timer).
 */
export async function boundedCall<T>(
  fn: () => T | PromiseLike<T>,
  timeoutMs: number,
  options: BoundedCallOptions = {},
): Promise<BoundedOutcome<Awaited<T>>> {
  const started = performance.now();
  let settled: Promise<Timed<Settled<Awaited<T>>>>;
  try {
    const result = fn();
    // A synchronous result needs no timer or race (hot hooks such as a turn's sync return nothing,
    // and a timer per call is most of what bounding them costs); only its duration can overrun.
    if (!isThenable(result)) return withinBound({ status: "ok", value: result as Awaited<T> }, started, timeoutMs, options);
    settled = Promise.resolve(result).then(
      (value) => ({ outcome: { status: "ok" as const, value: value as Awaited<T> }, at: performance.now() }),
      (error: unknown) => ({ outcome: { status: "error" as const, error }, at: performance.now() }),
    );
  } catch (error) {
    return withinBound({ status: "error", error }, started, timeoutMs, options);
  }
  if (!Number.isFinite(timeoutMs)) return (await settled).outcome;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<{ status: "timeout"; timeoutMs: number }>((resolve) => {
    timer = setTimeout(() => resolve({ status: "timeout", timeoutMs }), timeoutMs);
  });
  const first = await Promise.race([settled, deadline]);
  clearTimeout(timer);
  if ("outcome" in first) return withinBound(first.outcome, started, timeoutMs, options, first.at);
  detached++;
  void settled.then((late) => {
    detached--;
    notifyLate(options, late.outcome);
  });
  return first;
}

type Settled<T> = { status: "ok"; value: T } | { status: "error"; error: unknown };
type Timed<T> = { outcome: T; at: number };

/**
 * A settled call's outcome, or a timeout when it settled past its bound (the event loop was held
 * up, so the timer could not fire first); the discarded result goes to `onLate`.
 */
function withinBound<T>(
  outcome: Settled<T>,
  started: number,
  timeoutMs: number,
  options: BoundedCallOptions,
  settledAt: number = performance.now(),
): BoundedOutcome<T> {
  if (!Number.isFinite(timeoutMs) || settledAt - started <= timeoutMs) return outcome;
  notifyLate(options, outcome);
  return { status: "timeout", timeoutMs };
}

/** `onLate` that cannot break the caller: a throwing callback is ignored. */
function notifyLate(options: BoundedCallOptions, late: Settled<unknown>): void {
  try {
    options.onLate?.(late);
  } catch {
    // The late result is being dropped anyway; its observer failing changes nothing.
  }
}

/**
 * True when `value` has a callable `then` (what `await` would wait for). A `then` getter that
 * throws makes the call an error, as awaiting the value would.
 */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null && (typeof value === "object" || typeof value === "function") && typeof (value as { then?: unknown }).then === "function"
  );
}

/** `"2s"` / `"0.25s"` for log lines. */
export function formatSeconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(3))}s`;
}
