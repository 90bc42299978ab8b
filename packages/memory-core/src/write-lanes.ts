import { isThenable } from "./bounded-call.js";

/**
 * Per-provider order of writes: a write to a provider starts only after every earlier write to the
 * same provider settled, so a provider never receives overlapping writes, even when an earlier call
 * outlived its bound and keeps running detached. A write to an idle lane is called at once, and a
 * synchronous result leaves nothing behind (no promise, no entry).
 */
export class WriteLanes<K extends object> {
  private readonly tails = new Map<K, Promise<void>>();

  /**
   * Call `fn` once every earlier write under `key` settled. Returns what `fn` returned (called at
   * once when the lane is idle) or a promise of it (chained after the earlier writes).
   */
  run<T>(key: K, fn: () => T | PromiseLike<T>): T | PromiseLike<T> {
    const tail = this.tails.get(key);
    const result = tail ? tail.then(fn) : fn();
    if (!isThenable(result)) return result;
    const done = Promise.resolve(result).then(noop, noop);
    this.tails.set(key, done);
    void done.then(() => {
      if (this.tails.get(key) === done) this.tails.delete(key);
    });
    return result;
  }

  /** Resolves once every write under `key` started so far settled (at once when none runs). */
  idle(key: K): Promise<void> {
    return this.tails.get(key) ?? Promise.resolve();
  }

  /** True while a write under `key` has not settled. */
  busy(key: K): boolean {
    return this.tails.has(key);
  }
}

function noop(): void {}
