/**
 * A session's life on the providers: initialisation, the background queue that carries turns and
 * session boundaries, session end and switch (a failed switch remembered for a retry on exactly
 * the providers that failed), and shutdown (drain the queue within a deadline, then every
 * provider's `shutdown()` in reverse registration order).
 */
import { BackgroundQueue, type BackgroundTaskKind, type EnqueueResult } from "./background-queue.js";
import { describeProviderError as describeError } from "./plugin-describe.js";
import type { Logger } from "./logger.js";
import type { HookRunner, ProviderHookReport } from "./manager-hooks.js";
import type { ProviderRegistry } from "./manager-registry.js";
import type { ChatMessage, InitContext, MemoryProvider, SessionSwitchOptions } from "./provider.js";

/** What `shutdownAll()` found while draining the background queue. */
export interface DrainState {
  status: "not_started" | "draining" | "drained" | "timed_out";
  /** Queued `syncAll` / session-boundary tasks that never started. */
  abandonedWrites: number;
  /** Queued `queuePrefetchAll` tasks that never started. */
  abandonedPrefetches: number;
  /** Tasks still running (detached) when the drain deadline passed. */
  activeTasks: number;
  /** Providers whose `shutdown()` did not settle within `hookTimeoutMs` (left running detached). */
  stuckProviders: ProviderHookReport[];
  /** Providers whose `shutdown()` threw or rejected. */
  failedProviders: ProviderHookReport[];
  /** Writes refused during the manager's life because the background queue was full (`maxQueuedTasks`). */
  droppedWrites: number;
  /** Prefetch warm-ups dropped or refused during the manager's life because the queue was full. */
  droppedPrefetches: number;
}

/** The background queue right now (`MemoryManager.backgroundQueueState`). */
export interface BackgroundQueueState {
  /** Tasks waiting to start. */
  queued: number;
  /** 1 while a task runs (also one left running detached by a timed-out shutdown drain), else 0. */
  running: number;
  /** The most tasks that wait to start (`maxQueuedTasks`). */
  maxQueued: number;
  /** Writes refused so far because the queue was full. */
  droppedWrites: number;
  /** Prefetch warm-ups dropped or refused so far because the queue was full. */
  droppedPrefetches: number;
}

/** A deep enough copy of a drain state that a caller cannot change the manager's. */
export function copyDrainState(state: DrainState): DrainState {
  return {
    ...state,
    stuckProviders: state.stuckProviders.map((r) => ({ ...r })),
    failedProviders: state.failedProviders.map((r) => ({ ...r })),
  };
}

/** What the session lifecycle needs beyond the registry and the hook runner. */
export interface SessionLifecycleOptions {
  logger: Logger;
  drainTimeoutMs: number;
  hermesHome: string;
  /** The most background tasks that wait to start (see `BackgroundQueue`). */
  maxQueuedTasks: number;
}

/** The session lifecycle (the rules are `MemoryManager`'s). */
export class SessionLifecycle {
  private queue: BackgroundQueue | null = null;
  private shuttingDown = false;
  private shutdownPromise: Promise<DrainState> | null = null;
  private drainState: DrainState = {
    status: "not_started",
    abandonedWrites: 0,
    abandonedPrefetches: 0,
    activeTasks: 0,
    stuckProviders: [],
    failedProviders: [],
    droppedWrites: 0,
    droppedPrefetches: 0,
  };
  private pendingSwitch: { providers: MemoryProvider[]; newSessionId: string; options: SessionSwitchOptions } | null = null;
  private readonly logger: Logger;

  constructor(
    private readonly registry: ProviderRegistry,
    private readonly hooks: HookRunner,
    private readonly options: SessionLifecycleOptions,
  ) {
    this.logger = options.logger;
  }

  /** `initialize` (or `initializeForInspection`) on every provider; the ones that did not complete. */
  async initializeEach(sessionId: string, ctx: Partial<InitContext>, inspection: boolean): Promise<ProviderHookReport[]> {
    const full: InitContext = {
      ...ctx,
      hermesHome: ctx.hermesHome ?? this.options.hermesHome,
      platform: ctx.platform ?? "cli",
    };
    const hook = inspection ? "initialize_for_inspection" : "initialize";
    const reports: ProviderHookReport[] = [];
    await this.hooks.fanOut(
      [...this.registry.list],
      "initialize",
      (provider) => (inspection ? provider.initializeForInspection(sessionId, { ...full }) : provider.initialize(sessionId, { ...full })),
      (provider, outcome) => {
        const report = this.hooks.hookReport(provider, hook, outcome);
        if (report) reports.push(report);
      },
      { label: hook },
    );
    return reports;
  }

  /**
   * Put one task on the manager's single FIFO background queue, created on first use so a manager
   * that never queues work holds no queue. Once shutdown began, the task is refused with a warning;
   * a task the full queue drops or refuses is named in a warning with what the queue waits on.
   */
  schedule(kind: BackgroundTaskKind, fn: () => Promise<void>): void {
    if (this.shuttingDown) {
      this.logger.warn(`Memory manager is shutting down; rejecting late ${kind} task`);
      return;
    }
    this.queue ??= new BackgroundQueue(
      (error, taskKind) => this.logger.warn(`Memory background ${taskKind} task failed: ${describeError(error)}`),
      this.options.maxQueuedTasks,
    );
    const result = this.queue.enqueue(kind, fn);
    if (!result.queued && result.reason === "closed") {
      this.logger.warn(`Memory manager shut down during ${kind} submission; task rejected`);
    } else if (!result.queued || result.evicted) {
      this.warnDropped(kind, result);
    }
  }

  private warnDropped(kind: BackgroundTaskKind, result: EnqueueResult): void {
    const queue = this.queue!;
    const what = result.queued
      ? `dropped the oldest queued prefetch warm-up to make room for this ${kind === "write" ? "write" : "prefetch warm-up"}`
      : kind === "write"
        ? "refused this write (a completed turn or session boundary no provider will receive)"
        : "refused this prefetch warm-up";
    const wait = this.hooks.describeQueueWait();
    this.logger.warn(
      `Memory background queue is full (${queue.maxQueued} task(s) waiting to start, maxQueuedTasks); ${what}${wait ? `: ${wait}` : ""}. ` +
        `Dropped so far: ${queue.dropped.write} write(s), ${queue.dropped.prefetch} prefetch(es). A provider this slow needs a higher hookTimeoutMs or worker isolation, or is stuck.`,
    );
  }

  /** The background queue right now. */
  get queueState(): BackgroundQueueState {
    const queue = this.queue;
    if (!queue) return { queued: 0, running: 0, maxQueued: this.options.maxQueuedTasks, droppedWrites: 0, droppedPrefetches: 0 };
    return {
      queued: queue.queued,
      running: queue.size - queue.queued,
      maxQueued: queue.maxQueued,
      droppedWrites: queue.dropped.write,
      droppedPrefetches: queue.dropped.prefetch,
    };
  }

  /** Wait until everything queued before this call has run; `false` when `timeoutMs` passed first. */
  async flushPending(timeoutMs?: number): Promise<boolean> {
    if (!this.queue || this.queue.isClosed) return true;
    return this.queue.waitForIdle(timeoutMs);
  }

  /** `onSessionEnd` on every provider with a scrubbed copy of the transcript (`queued` from a background task). */
  async onSessionEnd(messages: ChatMessage[], queued = false): Promise<void> {
    const scrubbed = this.hooks.scrub(Array.isArray(messages) ? [...messages] : [], "the session transcript");
    if (!scrubbed.ok) return;
    const safe = scrubbed.value;
    await this.hooks.fanOut([...this.registry.list], "on_session_end", (provider) => provider.onSessionEnd(safe), undefined, { queued });
  }

  /** Queue one task: session end on a snapshot of `messages`, then the switch to the new session. */
  commitSessionBoundary(messages: ChatMessage[], options: { newSessionId: string; parentSessionId?: string; reason?: string }): void {
    if (this.registry.list.length === 0) return;
    const snapshot = Array.isArray(messages) ? [...messages] : [];
    const { newSessionId, parentSessionId = "", reason = "new_session" } = options;
    this.schedule("write", async () => {
      await this.onSessionEnd(snapshot, true);
      await this.onSessionSwitch(newSessionId, { parentSessionId, reset: true, reason }, true);
    });
  }

  /** Switch every provider to `newSessionId`; remembers the providers that failed for a retry. */
  async onSessionSwitch(newSessionId: string, options: Partial<SessionSwitchOptions>, queued = false): Promise<boolean> {
    if (!newSessionId) return true;
    const { parentSessionId, reset, rewound, ...extra } = options;
    const forwarded = {
      ...extra,
      parentSessionId: parentSessionId ?? "",
      reset: reset === true,
      ...(rewound === true ? { rewound: true } : {}),
    } as SessionSwitchOptions;
    const failed = await this.switchProviders([...this.registry.list], newSessionId, forwarded, queued);
    this.pendingSwitch = failed.length > 0 ? { providers: failed, newSessionId, options: forwarded } : null;
    return failed.length === 0;
  }

  /** Retry the last session switch on the providers that failed it. `true` when none remain. */
  async retryPendingSessionSwitch(): Promise<boolean> {
    const pending = this.pendingSwitch;
    if (!pending) return true;
    const failed = await this.switchProviders(pending.providers, pending.newSessionId, pending.options);
    // A newer switch may have replaced the record while we were retrying; keep that one.
    if (this.pendingSwitch === pending) {
      this.pendingSwitch = failed.length > 0 ? { ...pending, providers: failed } : null;
    }
    return failed.length === 0;
  }

  private async switchProviders(
    providers: MemoryProvider[],
    newSessionId: string,
    options: SessionSwitchOptions,
    queued = false,
  ): Promise<MemoryProvider[]> {
    const failed: MemoryProvider[] = [];
    await this.hooks.fanOut(
      providers,
      "on_session_switch",
      (provider) => provider.onSessionSwitch(newSessionId, { ...options }),
      (provider, outcome) => {
        if (outcome.status === "ok" && (outcome.value as unknown) === false)
          this.hooks.logHookFailure(provider, "on_session_switch", "returned false");
        if (outcome.status !== "ok" || (outcome.value as unknown) === false) failed.push(provider);
      },
      { queued },
    );
    return failed;
  }

  /** A copy of what the last shutdown drain found. */
  get shutdownDrainState(): DrainState {
    return copyDrainState(this.drainState);
  }

  /** Drain, then shut every provider down; runs once, later calls get the same promise. */
  shutdownAll(): Promise<DrainState> {
    this.shutdownPromise ??= this.runShutdown();
    return this.shutdownPromise;
  }

  private async runShutdown(): Promise<DrainState> {
    this.shuttingDown = true;
    const stuckProviders: ProviderHookReport[] = [];
    const failedProviders: ProviderHookReport[] = [];
    await this.drainQueue(stuckProviders, failedProviders);
    await this.hooks.fanOut(
      [...this.registry.list].reverse(),
      "shutdown",
      (provider) => provider.shutdown(),
      (provider, outcome) => {
        const report = this.hooks.hookReport(provider, "shutdown", outcome);
        if (report?.outcome === "timeout") stuckProviders.push(report);
        if (report?.outcome === "error") failedProviders.push(report);
      },
    );
    return copyDrainState(this.drainState);
  }

  /**
   * Wait up to `drainTimeoutMs` for queued work and record what was left in `drainState` (whose
   * provider lists are the ones the shutdown fan-out fills afterwards).
   */
  private async drainQueue(stuckProviders: ProviderHookReport[], failedProviders: ProviderHookReport[]): Promise<void> {
    const queue = this.queue;
    if (!queue) {
      this.drainState = {
        status: "drained",
        abandonedWrites: 0,
        abandonedPrefetches: 0,
        activeTasks: 0,
        stuckProviders,
        failedProviders,
        droppedWrites: 0,
        droppedPrefetches: 0,
      };
      return;
    }
    this.drainState = {
      status: "draining",
      abandonedWrites: 0,
      abandonedPrefetches: 0,
      activeTasks: queue.size,
      stuckProviders,
      failedProviders,
      droppedWrites: queue.dropped.write,
      droppedPrefetches: queue.dropped.prefetch,
    };
    const { drainTimeoutMs } = this.options;
    const outcome = await queue.drain(drainTimeoutMs);
    this.drainState = {
      status: outcome.timedOut ? "timed_out" : "drained",
      abandonedWrites: outcome.abandonedWrites,
      abandonedPrefetches: outcome.abandonedPrefetches,
      activeTasks: outcome.activeTasks,
      stuckProviders,
      failedProviders,
      droppedWrites: queue.dropped.write,
      droppedPrefetches: queue.dropped.prefetch,
    };
    if (queue.dropped.write + queue.dropped.prefetch > 0) {
      this.logger.warn(
        `Memory background queue dropped ${queue.dropped.write} write(s) and ${queue.dropped.prefetch} prefetch(es) during this session because it was full (maxQueuedTasks ${queue.maxQueued}).`,
      );
    }
    if (outcome.timedOut) {
      this.logger.warn(
        `Memory shutdown drain timed out after ${(drainTimeoutMs / 1000).toFixed(2)}s; abandoning ${outcome.abandonedWrites} queued memory write(s) and ${outcome.abandonedPrefetches} queued prefetch(es); ${outcome.activeTasks} active task(s) remain detached`,
      );
    }
  }
}
