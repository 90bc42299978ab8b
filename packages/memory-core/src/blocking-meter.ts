import type { Logger } from "./logger.js";

/**
 * Measures how long a provider hook holds the event loop: the synchronous part of one call, from
 * the call until the provider's function returns its value or promise. While it runs nothing else
 * in the host does (timers, requests, other sessions). Work a provider does after its first
 * `await` (each synchronous continuation) also blocks the loop but cannot be attributed to a call
 * from outside, so it is not measured. Past `warnMs`, one warning per (provider, hook) names both,
 * the measured time and the fix; later calls stay quiet.
 */
export class BlockingMeter {
  private readonly warned = new Set<string>();

  constructor(
    private readonly logger: Logger,
    private readonly warnMs: number,
  ) {}

  /** Call `fn` (synchronously, as given) and warn once for `provider`/`hook` when it held the loop past the threshold. */
  measure<T>(provider: string, hook: string, fn: () => T): T {
    if (!Number.isFinite(this.warnMs)) return fn();
    const started = performance.now();
    try {
      return fn();
    } finally {
      const blockedMs = performance.now() - started;
      if (blockedMs > this.warnMs) this.warnOnce(provider, hook, blockedMs);
    }
  }

  private warnOnce(provider: string, hook: string, blockedMs: number): void {
    const key = `${provider}\0${hook}`;
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.logger.warn(
      `Memory provider '${provider}' ${hook} blocked the event loop for ${Math.round(blockedMs)} ms (over blockingWarnMs ${this.warnMs} ms; warned once per provider and hook): ` +
        `synchronous work in a hook stalls the host's timers and every other request, and a hook's time bound cannot cut it short. ` +
        `Make the call asynchronous, or run the provider in a worker thread with \`memory.isolation: { ${provider}: worker }\` in config.yaml.`,
    );
  }
}
