/**
 * Long jobs on the host's event loop (erasing thousands of items, importing a file) run in steps:
 * each step is synchronous and short, and the event loop serves timers, I/O and other callers
 * between steps. How much goes into one step is measured, not fixed: `StepPacer` sizes the next
 * step from the time the last ones took, so a slow disk, a busy machine or costly rows shrink the
 * steps and a fast machine grows them, each staying near `targetMs`.
 */

/** Options of `StepPacer`. */
export interface StepPacerOptions {
  /** Time one step aims at (ms). A step may take longer when a single unit does (default 15). */
  targetMs?: number;
  /** Units in the first step, before any has been measured (default 64). */
  initial?: number;
  /** Fewest units per step (default 1). */
  min?: number;
  /** Most units per step (default 100,000). */
  max?: number;
}

/** Default time one step aims at (ms): a step that takes three times its estimate still stays under 50 ms. */
export const STEP_TARGET_MS = 15;

/**
 * Sizes the steps of a long job by measured time. `size` is how many units (rows, items, lines)
 * the next step should take; `record(units, ms)` reports what a step took. The size follows the
 * measured time per unit toward `targetMs`, growing at most twice per step (a cheap step is no
 * proof that a larger one stays cheap) and shrinking at once when a step overran.
 */
export class StepPacer {
  readonly targetMs: number;
  private readonly min: number;
  private readonly max: number;
  private current: number;

  constructor(options: StepPacerOptions = {}) {
    this.targetMs = options.targetMs ?? STEP_TARGET_MS;
    this.min = Math.max(1, Math.floor(options.min ?? 1));
    this.max = Math.max(this.min, Math.floor(options.max ?? 100_000));
    this.current = clamp(Math.floor(options.initial ?? 64), this.min, this.max);
  }

  /** Units the next step should take. */
  get size(): number {
    return this.current;
  }

  /** Report a step: `units` done in `ms`. */
  record(units: number, ms: number): void {
    if (!(units > 0)) return;
    const perUnit = Math.max(ms, 0.01) / units;
    const fits = Math.floor(this.targetMs / perUnit);
    this.current = clamp(Math.min(fits, this.current * 2), this.min, this.max);
  }

  /** Run `step(size)` (returning the units it did), timed, and record it. Returns what `step` returned. */
  timed(step: (size: number) => number): number {
    const started = performance.now();
    const units = step(this.current);
    this.record(units, performance.now() - started);
    return units;
  }
}

/** Resolves after the event loop has served what was waiting (timers, I/O): the pause between steps. */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function clamp(n: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, Number.isFinite(n) ? n : min));
}
