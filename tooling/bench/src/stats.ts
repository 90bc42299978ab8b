/**
 * Latency summaries. Every number the bench reports comes from here, so median/p95/p99 mean the
 * same thing in every suite (linear interpolation between order statistics).
 */

/** Summary of a set of samples, in the samples' unit (milliseconds for latency). */
export interface Summary {
  n: number;
  median: number;
  p95: number;
  p99: number;
  min: number;
  max: number;
  mean: number;
}

/**
 * Percentile `q` (0–100) of ascending-sorted samples, interpolating linearly. Throws on an empty
 * array, because a percentile of nothing would silently print as 0.
 */
export function percentile(sorted: ArrayLike<number>, q: number): number {
  const n = sorted.length;
  if (n === 0) throw new RangeError("percentile() of an empty sample set: measure at least once");
  if (n === 1) return sorted[0] as number;
  const rank = (Math.min(100, Math.max(0, q)) / 100) * (n - 1);
  const lo = Math.floor(rank);
  const hi = Math.min(n - 1, lo + 1);
  const a = sorted[lo] as number;
  const b = sorted[hi] as number;
  return a + (b - a) * (rank - lo);
}

/** Summarises samples (any order). Does not modify the input. */
export function summarize(samples: ArrayLike<number>): Summary {
  const sorted = Float64Array.from(samples as ArrayLike<number>).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    n: sorted.length,
    median: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    min: sorted[0] as number,
    max: sorted[sorted.length - 1] as number,
    mean: sum / sorted.length,
  };
}

/** Multiplies every location statistic (e.g. ms → µs). */
export function scaleSummary(s: Summary, factor: number): Summary {
  return {
    n: s.n,
    median: s.median * factor,
    p95: s.p95 * factor,
    p99: s.p99 * factor,
    min: s.min * factor,
    max: s.max * factor,
    mean: s.mean * factor,
  };
}
