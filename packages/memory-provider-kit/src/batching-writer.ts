/**
 * The background writer behind a non-blocking `syncTurn`: items are queued and returned from at
 * once; a timer writes the queue in batches (one transaction per batch, yielding to the event loop
 * between batches). A failing store keeps the items and is retried with backoff; `flush()` drains
 * everything and reports a failure instead of hiding it.
 */

/** Options for `BatchingWriter`. */
export interface BatchingWriterOptions<T> {
  /**
   * Write one batch (one transaction). Throw to keep the batch queued. `retried` is true when a
   * transient failure will be retried on a timer (background ticks and `flush()`), so the write
   * should not wait on the thread for long (e.g. for another process's lock: fail fast with a
   * transient error instead); false for `drain()`, whose synchronous caller needs it written now.
   */
  write(batch: T[], context: { retried: boolean }): void;
  /** False while there is nowhere to write (store not open); ticks then do nothing. */
  canWrite?: () => boolean;
  /** Most items per batch (read on every tick; default 256). */
  batchSize?: () => number;
  /** Delay before the first write after a push below `batchSize` (default 10 ms). */
  flushIntervalMs?: () => number;
  /** Most items kept while the store refuses writes; the oldest beyond that are dropped. */
  maxQueue?: number;
  /** True for failures a retry can clear (a busy database); they are retried quietly. */
  isTransient?: (error: unknown) => boolean;
  /** Report a background failure that will be retried, or items dropped by `maxQueue`. */
  onBackgroundError?: (event: { kind: "retry"; error: unknown } | { kind: "dropped"; count: number }) => void;
  /** How long `flush()` keeps retrying transient failures (default 60 s). */
  flushDeadlineMs?: number;
  /** The error `flush()` throws when the queue cannot be written (`queued` = items still queued). */
  flushError?: (queued: number, cause: unknown) => Error;
}

/** Most items a writer queues by default while the store refuses writes. */
export const DEFAULT_MAX_QUEUE = 100_000;

/** Queue + timer + backoff around a synchronous batch write. */
export class BatchingWriter<T> {
  private queue: T[] = [];
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private retryDelayMs = 0;

  /** See `BatchingWriterOptions`. */
  constructor(private readonly options: BatchingWriterOptions<T>) {}

  /** Items queued and not yet written. */
  get length(): number {
    return this.queue.length;
  }

  /** Queue one item and schedule a write; returns at once. */
  push(item: T): void {
    this.queue.push(item);
    const max = this.options.maxQueue ?? DEFAULT_MAX_QUEUE;
    if (this.queue.length > max) {
      const dropped = this.queue.splice(0, this.queue.length - max);
      this.options.onBackgroundError?.({ kind: "dropped", count: dropped.length });
    }
    if (this.retryDelayMs > 0) return this.scheduleTick(this.retryDelayMs);
    if (this.queue.length >= this.batchSize()) this.scheduleImmediate();
    else this.scheduleTick(this.options.flushIntervalMs?.() ?? 10);
  }

  /** Write everything queued now, one transaction per batch. Throws on failure (queue kept). */
  drain(): void {
    this.drainWith(false);
  }

  private drainWith(retried: boolean): void {
    if (!this.writable()) return;
    while (this.queue.length > 0) this.writeBatch(retried);
    if (this.timer && this.queue.length === 0) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }

  /**
   * Write what is queued now, reporting a failure to `onError` instead of throwing (reads before a
   * search). Its caller goes on without the items, so the write is told it will be retried (the
   * scheduled tick does): a search does not wait on the thread for another process's lock.
   */
  drainQuietly(onError: (error: unknown) => void): void {
    if (this.queue.length === 0) return;
    try {
      this.drainWith(true);
    } catch (error) {
      onError(error);
    }
  }

  /**
   * Wait until every queued item is written. Transient failures are retried until the deadline;
   * any other failure throws `flushError(queued, cause)` (the items stay queued).
   */
  async flush(): Promise<void> {
    const deadline = Date.now() + (this.options.flushDeadlineMs ?? 60_000);
    for (;;) {
      try {
        this.drainWith(true);
        return;
      } catch (error) {
        if (!this.transient(error) || Date.now() > deadline) {
          throw this.options.flushError ? this.options.flushError(this.queue.length, error) : error;
        }
        await new Promise((resolve) => setTimeout(resolve, 10 + Math.random() * 40));
      }
    }
  }

  /** Cancel scheduled writes (the queue is kept; `drain`/`flush` still write it). */
  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.immediate) clearImmediate(this.immediate);
    this.timer = undefined;
    this.immediate = undefined;
  }

  private batchSize(): number {
    return this.options.batchSize?.() ?? 256;
  }

  private writable(): boolean {
    return this.options.canWrite?.() ?? true;
  }

  private transient(error: unknown): boolean {
    return this.options.isTransient?.(error) ?? false;
  }

  private scheduleImmediate(): void {
    this.immediate ??= setImmediate(() => {
      this.immediate = undefined;
      this.tick();
    });
  }

  private scheduleTick(delay: number): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.tick();
    }, delay);
  }

  /** One background step: write one batch, then yield to the event loop before the next. */
  private tick(): void {
    if (!this.writable() || this.queue.length === 0) return;
    try {
      this.writeBatch(true);
      this.retryDelayMs = 0;
      if (this.queue.length > 0) this.scheduleImmediate();
    } catch (error) {
      // Keep the items; a busy or failing store is retried with backoff, never surfaced here.
      this.retryDelayMs = Math.min(5000, Math.max(20, this.retryDelayMs * 2));
      if (!this.transient(error)) this.options.onBackgroundError?.({ kind: "retry", error });
      this.scheduleTick(this.retryDelayMs);
    }
  }

  private writeBatch(retried: boolean): void {
    const batch = this.queue.slice(0, this.batchSize());
    this.options.write(batch, { retried });
    this.queue.splice(0, batch.length);
  }
}
