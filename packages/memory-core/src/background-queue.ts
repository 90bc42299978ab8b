import { bindProfile } from "./profile.js";

/** Durability class of a background task, reported separately when shutdown abandons tasks. */
export type BackgroundTaskKind = "write" | "prefetch";

interface QueuedTask {
  kind: BackgroundTaskKind;
  state: "queued" | "running" | "abandoned";
  run: () => Promise<void>;
}

/** What `enqueue` did: queued (possibly after dropping an older prefetch to make room), or refused and why. */
export type EnqueueResult = { queued: true; evicted?: "prefetch" } | { queued: false; reason: "closed" | "full" };

/** What `drain()` found: how many tasks were still queued (by kind) or running at the deadline. */
export interface QueueDrainResult {
  timedOut: boolean;
  abandonedWrites: number;
  abandonedPrefetches: number;
  activeTasks: number;
}

/**
 * A single-lane FIFO of async tasks: each task starts only after the previous one settled, so
 * turn N's writes always land before turn N+1's. Tasks are bound to the scheduling caller's
 * profile (`bindProfile`) and chained with `.then` from the caller's async context, so a task
 * never inherits another profile's scope from whichever task happened to run before it.
 *
 * The queue holds at most `maxQueued` tasks waiting to start (the running one not counted), so a
 * provider that stalls the queue cannot grow it without limit. When it is full, the oldest queued
 * prefetch warm-up is dropped to make room (a warm-up only speeds up the next recall, and the
 * newest query is the one worth warming); with none queued, the new task is refused. A write is
 * never dropped once queued: what was accepted keeps its order and reaches the provider, and what
 * is refused is refused at once, while its caller can still be told. Both count in `dropped`.
 *
 * `enqueue` returns synchronously; a task failure is reported to `onError` and never breaks the
 * chain. The queue must not be used for anything the caller needs to await directly.
 */
export class BackgroundQueue {
  private tail: Promise<void> = Promise.resolve();
  private readonly live = new Set<QueuedTask>();
  /** The prefetch warm-ups not started yet, oldest first, so a full queue finds one to drop without a scan. */
  private readonly waitingPrefetches = new Set<QueuedTask>();
  private readonly idleWaiters = new Set<(drained: boolean) => void>();
  private closed = false;
  private running = 0;
  /** Tasks dropped or refused because the queue was full, by kind. */
  readonly dropped: Record<BackgroundTaskKind, number> = { write: 0, prefetch: 0 };

  constructor(
    private readonly onError: (error: unknown, kind: BackgroundTaskKind) => void,
    readonly maxQueued: number = Number.POSITIVE_INFINITY,
  ) {}

  /** Number of tasks waiting to start (the running one not counted). */
  get queued(): number {
    return this.live.size - this.running;
  }

  /** Number of tasks queued or running. */
  get size(): number {
    return this.live.size;
  }

  /** True once `close()` was called: later `enqueue` calls are refused. */
  get isClosed(): boolean {
    return this.closed;
  }

  /** Schedule `fn` after everything already queued; refused once closed or when full (see the class). */
  enqueue(kind: BackgroundTaskKind, fn: () => unknown): EnqueueResult {
    if (this.closed) return { queued: false, reason: "closed" };
    let evicted: "prefetch" | undefined;
    if (this.queued >= this.maxQueued) {
      if (!this.evictOldestPrefetch()) {
        this.dropped[kind]++;
        return { queued: false, reason: "full" };
      }
      evicted = "prefetch";
    }
    const bound = bindProfile(fn);
    const task: QueuedTask = { kind, state: "queued", run: async () => void (await bound()) };
    this.live.add(task);
    if (kind === "prefetch") this.waitingPrefetches.add(task);
    this.tail = this.tail.then(() => this.execute(task));
    return evicted ? { queued: true, evicted } : { queued: true };
  }

  /** Abandon the oldest prefetch that has not started; false when none is queued. */
  private evictOldestPrefetch(): boolean {
    const task = this.waitingPrefetches.values().next().value;
    if (task === undefined) return false;
    task.state = "abandoned";
    this.waitingPrefetches.delete(task);
    this.live.delete(task);
    this.dropped.prefetch++;
    return true;
  }

  private async execute(task: QueuedTask): Promise<void> {
    this.waitingPrefetches.delete(task);
    if (task.state === "abandoned") return;
    task.state = "running";
    this.running++;
    try {
      await task.run();
    } catch (error) {
      try {
        this.onError(error, task.kind);
      } catch {
        // A throwing error reporter must not stall the queue.
      }
    } finally {
      this.running--;
      this.live.delete(task);
      if (this.live.size === 0) this.notifyIdle(true);
    }
  }

  private notifyIdle(drained: boolean): void {
    const waiters = [...this.idleWaiters];
    this.idleWaiters.clear();
    for (const resolve of waiters) resolve(drained);
  }

  /**
   * Resolve `true` once every task queued before this call has finished, `false` when
   * `timeoutMs` elapses first (or the queue abandons its tasks while waiting).
   */
  waitForIdle(timeoutMs?: number): Promise<boolean> {
    if (this.live.size === 0) return Promise.resolve(true);
    // Waiting on the current tail proves every earlier task ran, even if new ones arrive later.
    const tail = this.tail;
    return new Promise<boolean>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const finish = (value: boolean): void => {
        if (timer) clearTimeout(timer);
        this.idleWaiters.delete(finish);
        resolve(value);
      };
      this.idleWaiters.add(finish);
      void tail.then(() => finish(true));
      if (timeoutMs !== undefined && Number.isFinite(timeoutMs)) {
        timer = setTimeout(() => finish(false), Math.max(0, timeoutMs));
      }
    });
  }

  /**
   * Refuse new tasks, wait up to `timeoutMs` for the queued ones, then abandon whatever is still
   * queued (it will never start) and report the running task as detached. Idempotent in effect:
   * a second call finds nothing left to abandon.
   */
  async drain(timeoutMs: number): Promise<QueueDrainResult> {
    this.closed = true;
    const drained = await this.waitForIdle(timeoutMs);
    if (drained || this.live.size === 0) {
      return { timedOut: false, abandonedWrites: 0, abandonedPrefetches: 0, activeTasks: 0 };
    }
    let abandonedWrites = 0;
    let abandonedPrefetches = 0;
    let activeTasks = 0;
    for (const task of this.live) {
      if (task.state === "running") {
        activeTasks++;
        continue;
      }
      task.state = "abandoned";
      this.live.delete(task);
      this.waitingPrefetches.delete(task);
      if (task.kind === "write") abandonedWrites++;
      else abandonedPrefetches++;
    }
    this.notifyIdle(false);
    return { timedOut: true, abandonedWrites, abandonedPrefetches, activeTasks };
  }
}
