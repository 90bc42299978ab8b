import { Bench } from "tinybench";
import { summarize, type Summary } from "./stats.js";

/** How long and how often to time one task. */
export interface TimingOptions {
  /** Minimum time budget in ms (tinybench keeps going until both budget and iterations are met). */
  timeMs: number;
  /** Minimum number of measured calls. */
  iterations: number;
  /** Warm-up budget in ms before measuring (JIT, caches, page cache). */
  warmupMs?: number;
  /** Warm-up calls. */
  warmupIterations?: number;
  /** Runs after every call, outside the timed window (e.g. drain a queue between turns). */
  afterEach?: () => Promise<void> | void;
  /** Declares `fn` synchronous so tinybench does not wrap it in a promise. */
  sync?: boolean;
}

/**
 * Times `fn` with tinybench (warm-up first, samples retained) and summarises the per-call latency
 * in milliseconds. Throws when the task itself threw, so a broken target never prints a number.
 */
export async function timeTask(name: string, fn: () => unknown, options: TimingOptions): Promise<Summary> {
  const bench = new Bench({
    name,
    time: options.timeMs,
    iterations: options.iterations,
    warmup: true,
    warmupTime: options.warmupMs ?? Math.min(500, options.timeMs / 4),
    warmupIterations: options.warmupIterations ?? Math.max(5, Math.floor(options.iterations / 10)),
    retainSamples: true,
    throws: true,
  });
  bench.add(name, fn as () => void, {
    ...(options.afterEach ? { afterEach: async () => options.afterEach?.() } : {}),
    ...(options.sync ? { async: false } : {}),
  });
  await bench.run();
  const task = bench.tasks[0];
  const result = task?.result;
  if (!result || result.state !== "completed") {
    throw new Error(`benchmark task "${name}" did not complete (state ${result?.state ?? "missing"})`);
  }
  const samples = result.latency.samples;
  if (!samples || samples.length === 0) throw new Error(`benchmark task "${name}" recorded no samples`);
  return summarize(samples);
}

/** Wall-clock milliseconds of one async operation (for throughput and build times). */
export async function wallClock<T>(fn: () => Promise<T> | T): Promise<{ ms: number; value: T }> {
  const start = process.hrtime.bigint();
  const value = await fn();
  return { ms: Number(process.hrtime.bigint() - start) / 1e6, value };
}
