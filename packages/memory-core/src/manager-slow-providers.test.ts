import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  DEFAULT_BLOCKING_WARN_MS,
  DEFAULT_MAX_QUEUED_TASKS,
  MemoryManager,
  boundedCall,
  detachedCallCount,
  MemoryProvider,
  type ConfigField,
  type Logger,
  type MaybePromise,
  type MemoryManagerOptions,
  type SyncTurnOptions,
  type ToolSchema,
} from "@hermes/memory-core";
import { stallMeter, until } from "@hermes/test-support";

/** Hold the event loop for `ms`, as a provider ported with a synchronous SDK call does. */
function busyWait(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // spin
  }
}

/** A logger keeping every warning. */
function warnings(): Logger & { warned: string[] } {
  const warned: string[] = [];
  return { warned, debug: () => {}, info: () => {}, warn: (m) => void warned.push(m), error: (m) => void warned.push(m) };
}

type Hooks = {
  onSessionEnd?: () => MaybePromise<void>;
  initialize?: () => void;
  shutdown?: () => void;
  prefetch?: (query: string) => MaybePromise<string>;
  syncTurn?: (user: string, options: SyncTurnOptions) => MaybePromise<void>;
  queuePrefetch?: (query: string) => MaybePromise<void>;
};

/** An external provider whose hooks a test scripts. */
class ScriptedProvider extends MemoryProvider {
  readonly name = "slowmem";
  constructor(private readonly hooks: Hooks) {
    super();
  }
  isAvailable(): boolean {
    return true;
  }
  initialize(): void {
    this.hooks.initialize?.();
  }
  override shutdown(): void {
    this.hooks.shutdown?.();
  }
  getToolSchemas(): ToolSchema[] {
    return [];
  }
  getConfigSchema(): ConfigField[] {
    return [];
  }
  override prefetch(query: string): MaybePromise<string> {
    return this.hooks.prefetch ? this.hooks.prefetch(query) : "";
  }
  override syncTurn(user: string, _assistant: string, options: SyncTurnOptions): MaybePromise<void> {
    return this.hooks.syncTurn?.(user, options);
  }
  override onSessionEnd(): MaybePromise<void> {
    return this.hooks.onSessionEnd?.();
  }
  override queuePrefetch(query: string): MaybePromise<void> {
    return this.hooks.queuePrefetch?.(query);
  }
}

const homes: string[] = [];
afterEach(() => {
  for (const dir of homes.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function managerWith(hooks: Hooks, options: MemoryManagerOptions = {}) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "slow-providers-"));
  homes.push(home);
  const logger = warnings();
  const mgr = new MemoryManager({ hermesHome: home, logger, ...options });
  mgr.addProvider(new ScriptedProvider(hooks));
  return { mgr, logger };
}

describe("boundedCall: a bound bounds", () => {
  it("a call that settles past its bound is a timeout even when the timer never got to fire first", async () => {
    const late: unknown[] = [];
    const onLate = (outcome: unknown): void => void late.push(outcome);
    const sync = await boundedCall(
      () => {
        busyWait(150);
        return "sync";
      },
      50,
      { onLate },
    );
    // Settles in a microtask after holding the loop past the bound, before the timer's callback can run.
    const continuation = await boundedCall(
      async () => {
        await null;
        busyWait(150);
        return "continuation";
      },
      50,
      { onLate },
    );
    const thrown = await boundedCall(
      () => {
        busyWait(150);
        throw new Error("late failure");
      },
      50,
      { onLate },
    );
    expect([sync, continuation, thrown]).toEqual([
      { status: "timeout", timeoutMs: 50 },
      { status: "timeout", timeoutMs: 50 },
      { status: "timeout", timeoutMs: 50 },
    ]);
    expect(late).toEqual([
      { status: "ok", value: "sync" },
      { status: "ok", value: "continuation" },
      { status: "error", error: new Error("late failure") },
    ]);
    expect(detachedCallCount()).toBe(0);
    expect(await boundedCall(() => "quick", 50)).toEqual({ status: "ok", value: "quick" });
  });
});

describe("a provider that blocks the event loop", () => {
  it("a synchronous 1.5 s prefetch past its 200 ms bound is not used, and the warning names provider and hook", async () => {
    const { mgr, logger } = managerWith(
      {
        prefetch: () => {
          busyWait(1500);
          return "LATE-SYNCHRONOUS-RECALL";
        },
      },
      { externalPrefetchTimeoutMs: 200 },
    );
    const recall = await mgr.recall("what do I like?");
    expect(recall).not.toContain("LATE-SYNCHRONOUS-RECALL");
    expect(logger.warned.some((w) => w.includes("'slowmem' prefetch timed out after 0.2s"))).toBe(true);
    const blocked = logger.warned.filter((w) => w.includes("'slowmem' prefetch blocked the event loop"));
    expect(blocked).toHaveLength(1);
    expect(blocked[0]).toMatch(/for 1[4-9]\d\d ms|for \d{4,} ms/);
    expect(blocked[0]).toContain("memory.isolation: { slowmem: worker }");
    // The call already returned, so the provider is called again next turn; warned about once only.
    expect(await mgr.recall("and now?")).not.toContain("LATE-SYNCHRONOUS-RECALL");
    expect(logger.warned.filter((w) => w.includes("prefetch timed out"))).toHaveLength(2);
    expect(logger.warned.filter((w) => w.includes("blocked the event loop"))).toHaveLength(1);
    await mgr.shutdownAll();
  });

  it("a fast prefetch within its bound is used and not warned about", async () => {
    const { mgr, logger } = managerWith({ prefetch: () => "fresh recall" }, { externalPrefetchTimeoutMs: 200 });
    expect(await mgr.recall("what do I like?")).toContain("fresh recall");
    expect(logger.warned).toEqual([]);
    await mgr.shutdownAll();
  });

  it("a synchronous 400 ms syncTurn is warned about once, naming provider, hook and time, not once per call", async () => {
    const stored: string[] = [];
    const { mgr, logger } = managerWith({
      syncTurn: (user) => {
        busyWait(400);
        stored.push(user);
      },
    });
    const meter = stallMeter();
    mgr.syncAll("turn one", "a");
    mgr.syncAll("turn two", "a");
    mgr.syncAll("turn three", "a");
    expect(await mgr.flushPending(20_000)).toBe(true);
    expect(meter.stop()).toBeGreaterThanOrEqual(390);
    expect(stored).toEqual(["turn one", "turn two", "turn three"]);
    const blocked = logger.warned.filter((w) => w.includes("blocked the event loop"));
    expect(blocked).toHaveLength(1);
    expect(blocked[0]).toContain("Memory provider 'slowmem' sync_turn blocked the event loop for");
    expect(Number(/for (\d+) ms/.exec(blocked[0]!)?.[1])).toBeGreaterThanOrEqual(390);
    expect(blocked[0]).toContain("over blockingWarnMs 200 ms");
    expect(blocked[0]).toContain("Make the call asynchronous");
    await mgr.shutdownAll();
  });

  it("opening and closing (initialize, shutdown) are not measured: synchronous setup is their accepted pattern", async () => {
    const { mgr, logger } = managerWith({ initialize: () => busyWait(150), shutdown: () => busyWait(150) });
    expect(await mgr.initializeAll("s1")).toEqual([]);
    await mgr.shutdownAll();
    expect(logger.warned).toEqual([]);
  });

  it("blockingWarnMs sets the threshold (default 200 ms) and is validated like the timeouts", async () => {
    expect(DEFAULT_BLOCKING_WARN_MS).toBe(200);
    const quiet = managerWith({ syncTurn: () => busyWait(60) });
    quiet.mgr.syncAll("u", "a");
    expect(await quiet.mgr.flushPending(10_000)).toBe(true);
    expect(quiet.logger.warned).toEqual([]);
    await quiet.mgr.shutdownAll();
    const strict = managerWith({ syncTurn: () => busyWait(60) }, { blockingWarnMs: 20 });
    strict.mgr.syncAll("u", "a");
    expect(await strict.mgr.flushPending(10_000)).toBe(true);
    expect(strict.logger.warned.filter((w) => w.includes("'slowmem' sync_turn blocked the event loop"))).toHaveLength(1);
    await strict.mgr.shutdownAll();
    for (const bad of [0, -1, Number.NaN, "50"]) {
      expect(() => new MemoryManager({ blockingWarnMs: bad as number })).toThrow(/blockingWarnMs must be positive/);
    }
  });
});

describe("writes reach a provider in order, never overlapping", () => {
  it("a syncTurn taking 3× hookTimeoutMs: no two calls overlap and every turn arrives in order", async () => {
    const calls: Array<{ user: string; start: number; end: number }> = [];
    let running = 0;
    let overlapped = false;
    const { mgr, logger } = managerWith(
      {
        syncTurn: async (user) => {
          running++;
          if (running > 1) overlapped = true;
          const start = performance.now();
          await new Promise((resolve) => setTimeout(resolve, 300));
          calls.push({ user, start, end: performance.now() });
          running--;
        },
      },
      { hookTimeoutMs: 100 },
    );
    for (const turn of ["t1", "t2", "t3", "t4"]) mgr.syncAll(turn, "a");
    expect(await mgr.flushPending(20_000)).toBe(true);
    expect(overlapped).toBe(false);
    expect(calls.map((c) => c.user)).toEqual(["t1", "t2", "t3", "t4"]);
    for (let i = 1; i < calls.length; i++) expect(calls[i]!.start).toBeGreaterThanOrEqual(calls[i - 1]!.end);
    expect(logger.warned.some((w) => w.includes("'slowmem' sync_turn timed out after 0.1s; the background queue waits for it"))).toBe(true);
    await mgr.shutdownAll();
  });

  it("a queued session boundary reaches the provider only after its slow last turn was written", async () => {
    const events: string[] = [];
    const { mgr } = managerWith(
      {
        syncTurn: async (user) => {
          events.push(`start ${user}`);
          await new Promise((resolve) => setTimeout(resolve, 300));
          events.push(`end ${user}`);
        },
        onSessionEnd: () => void events.push("session end"),
      },
      { hookTimeoutMs: 100 },
    );
    mgr.syncAll("last turn", "a");
    mgr.commitSessionBoundary([{ role: "user", content: "last turn" }], { newSessionId: "s2" });
    expect(await mgr.flushPending(20_000)).toBe(true);
    expect(events).toEqual(["start last turn", "end last turn", "session end"]);
    await mgr.shutdownAll();
  });
});

describe("the background queue is bounded", () => {
  it("past maxQueuedTasks it drops queued warm-ups first, then refuses new writes, and says so; nothing else is lost", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const stored: string[] = [];
    const { mgr, logger } = managerWith(
      {
        syncTurn: async (user) => {
          if (user === "w1") await gate;
          stored.push(user);
        },
      },
      { hookTimeoutMs: 100, maxQueuedTasks: 3 },
    );
    mgr.syncAll("w1", "a"); // runs, stuck
    await until(() => mgr.backgroundQueueState.running === 1);
    mgr.syncAll("w2", "a");
    mgr.queuePrefetchAll("warm up");
    mgr.syncAll("w3", "a"); // the queue is full: w2, the warm-up, w3
    mgr.syncAll("w4", "a"); // the warm-up makes room
    mgr.syncAll("w5", "a"); // only writes queued: refused
    const full = logger.warned.filter((w) => w.startsWith("Memory background queue is full"));
    expect(full).toHaveLength(2);
    expect(full[0]).toContain("dropped the oldest queued prefetch warm-up to make room for this write");
    expect(full[1]).toContain("refused this write");
    for (const warning of full) expect(warning).toMatch(/the queue is waiting on provider 'slowmem' sync_turn \(\d/);
    expect(full[1]).toContain("Dropped so far: 1 write(s), 1 prefetch(es)");
    expect(mgr.backgroundQueueState).toEqual({ queued: 3, running: 1, maxQueued: 3, droppedWrites: 1, droppedPrefetches: 1 });

    release();
    expect(await mgr.flushPending(10_000)).toBe(true);
    expect(stored).toEqual(["w1", "w2", "w3", "w4"]);
    const state = await mgr.shutdownAll();
    expect(state).toMatchObject({ status: "drained", abandonedWrites: 0, droppedWrites: 1, droppedPrefetches: 1 });
    expect(logger.warned).toContain(
      "Memory background queue dropped 1 write(s) and 1 prefetch(es) during this session because it was full (maxQueuedTasks 3).",
    );
  });

  it("a call stuck forever with a full queue does not hold shutdownAll past drainTimeoutMs", async () => {
    const { mgr } = managerWith(
      { syncTurn: () => new Promise<void>(() => {}) },
      { hookTimeoutMs: 50, drainTimeoutMs: 300, maxQueuedTasks: 2 },
    );
    mgr.syncAll("stuck", "a");
    await until(() => mgr.backgroundQueueState.running === 1);
    for (const turn of ["q1", "q2", "refused"]) mgr.syncAll(turn, "a");
    const started = performance.now();
    const state = await mgr.shutdownAll();
    expect(performance.now() - started).toBeLessThan(300 + 1500);
    expect(state).toMatchObject({ status: "timed_out", abandonedWrites: 2, activeTasks: 1, droppedWrites: 1, droppedPrefetches: 0 });
  });

  it("maxQueuedTasks (default 50000) is validated", () => {
    expect(DEFAULT_MAX_QUEUED_TASKS).toBe(50_000);
    expect(new MemoryManager().backgroundQueueState.maxQueued).toBe(50_000);
    for (const bad of [0, 1.5, -3, Number.NaN, "10"]) {
      expect(() => new MemoryManager({ maxQueuedTasks: bad as number })).toThrow(/maxQueuedTasks must be a whole number >= 1 or Infinity/);
    }
    expect(new MemoryManager({ maxQueuedTasks: Number.POSITIVE_INFINITY }).backgroundQueueState.maxQueued).toBe(Number.POSITIVE_INFINITY);
  });
});
