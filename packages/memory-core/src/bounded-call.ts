/**
 * One bounded call into provider code. Every hook the manager, `openMemory()` and the loader call
 * on a provider goes through `boundedCall`, so a provider that never settles costs at most the
 * timeout instead of hanging the host.
 *
 * What a timeout cannot do: interrupt synchronous work. A provider that blocks the event loop
 * (a busy loop, a synchronous native call) blocks this timer too; only a worker thread or a child
 * process could bound that. A call that timed out keeps running detached: its late result or
 * error is dropped (the optional `onLate` callback sees it).
 */

/** The tagged result of `boundedCall`. */
export type BoundedOutcome<T> = { status: "ok"; value: T } | { status: "error"; error: unknown } | { status: "timeout"; timeoutMs: number };

/** Options of `boundedCall`. */
export interface BoundedCallOptions {
  /** Called once when a call that already timed out settles later (value or error). */
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
  let settled: Promise<{ status: "ok"; value: Awaited<T> } | { status: "error"; error: unknown }>;
  try {
    const result = fn();
    // A synchronous result cannot time out: settle without a timer or a race (hot hooks such as a
    // turn's sync return nothing, and a timer per call is most of what bounding them costs).
    if (!isThenable(result)) return { status: "ok", value: result as Awaited<T> };
    settled = Promise.resolve(result).then(
      (value) => ({ status: "ok" as const, value: value as Awaited<T> }),
      (error: unknown) => ({ status: "error" as const, error }),
    );
  } catch (error) {
    return { status: "error", error };
  }
  if (!Number.isFinite(timeoutMs)) return settled;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<{ status: "timeout"; timeoutMs: number }>((resolve) => {
    timer = setTimeout(() => resolve({ status: "timeout", timeoutMs }), timeoutMs);
  });
  const outcome = await Promise.race([settled, deadline]);
  clearTimeout(timer);
  if (outcome.status === "timeout") {
    detached++;
    void settled.then((late) => {
      detached--;
      options.onLate?.(late);
    });
  }
  return outcome;
}

/**
 * True when `value` has a callable `then` (what `await` would wait for). A `then` getter that
 * throws makes the call an error, as awaiting the value would.
 */
function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null && (typeof value === "object" || typeof value === "function") && typeof (value as { then?: unknown }).then === "function"
  );
}

/** `"2s"` / `"0.25s"` for log lines. */
export function formatSeconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(3))}s`;
}
