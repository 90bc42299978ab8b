/**
 * How many milliseconds of work the rate remembers: a sample's weight halves about every 3.5 s,
 * so bursty progress (a batch committed every few seconds) moves the estimate a little, not from
 * "never" to "now" and back.
 */
const RATE_MEMORY_MS = 5_000;
/** Samples closer together than this are merged: a burst of updates is one observation. */
const MIN_SAMPLE_MS = 250;
/** No estimate before this much time has passed: the first items say little about the rest. */
const WARM_UP_MS = 1_000;

/**
 * Estimates the time left for `done` of `total` items from the rate seen so far, smoothed over
 * time (an exponential moving average whose weights depend on elapsed time, not on how often
 * progress is reported), so the estimate a bar shows changes steadily instead of jumping with
 * every batch.
 */
export class EtaEstimator {
  private readonly startedAt: number;
  private lastAt: number;
  private lastDone: number;
  /** Items per millisecond, smoothed; undefined until the first sample. */
  private rate: number | undefined;
  private done = 0;
  private total = 0;

  constructor(startedAt: number, done = 0) {
    this.startedAt = startedAt;
    this.lastAt = startedAt;
    this.lastDone = done;
    this.done = done;
  }

  /** Record that `done` of `total` items are finished at time `at` (ms, monotonic). */
  observe(done: number, total: number, at: number): void {
    this.done = done;
    this.total = total;
    const elapsed = at - this.lastAt;
    if (elapsed < MIN_SAMPLE_MS) return;
    const sample = Math.max(0, done - this.lastDone) / elapsed;
    const weight = 1 - Math.exp(-elapsed / RATE_MEMORY_MS);
    this.rate = this.rate === undefined ? sample : this.rate + weight * (sample - this.rate);
    this.lastAt = at;
    this.lastDone = done;
  }

  /** Milliseconds left at time `at`, or undefined while there is no estimate (warming up, no progress yet). */
  remainingMs(at: number): number | undefined {
    if (this.total > 0 && this.done >= this.total) return 0;
    if (this.total <= 0 || at - this.startedAt < WARM_UP_MS || !this.rate) return undefined;
    return (this.total - this.done) / this.rate;
  }
}

/**
 * An estimate as a bar shows it, rounded so that it does not flicker: seconds below a minute,
 * then whole minutes and seconds in 10 s steps, then hours and minutes.
 */
export function formatEta(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return "ETA --";
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `ETA ${seconds}s`;
  if (seconds < 3600) {
    const steps = Math.round(seconds / 10) * 10;
    const minutes = Math.floor(steps / 60);
    const rest = steps % 60;
    return rest === 0 ? `ETA ${minutes}m` : `ETA ${minutes}m ${rest}s`;
  }
  const minutes = Math.round(seconds / 60);
  return `ETA ${Math.floor(minutes / 60)}h ${minutes % 60}m`;
}
