/**
 * How the manager calls into providers: every hook call bounded in time, every failure logged at
 * the level its hook deserves, fan-out one provider at a time with per-provider isolation, and
 * scrubbing that never throws. The other parts of the manager call providers only through here.
 */
import { BlockingMeter } from "./blocking-meter.js";
import { boundedCall, formatSeconds, type BoundedOutcome } from "./bounded-call.js";
import { describeProviderError as describeError } from "./plugin-describe.js";
import type { Logger } from "./logger.js";
import { BUILTIN_PROVIDER_NAME } from "./provider.js";
import type { MemoryProvider } from "./provider.js";
import { scrubSecrets } from "./scrub.js";
import { WriteLanes } from "./write-lanes.js";

/** One provider hook that did not complete in `shutdownAll()` or `initializeAll()`. */
export interface ProviderHookReport {
  /** Provider name. */
  name: string;
  /** The hook, e.g. `shutdown` or `initialize`. */
  hook: string;
  /** `timeout` when it did not settle within the bound, `error` when it threw or rejected. */
  outcome: "timeout" | "error";
  /** Human-readable cause (error text or "did not settle within 15s"). */
  reason: string;
}

/** One row of `HOOK_FAILURE_LOG`; `attachError` also hands the error object to the logger. */
interface HookFailureLog {
  level: "debug" | "warn" | "error";
  label: string;
  note?: string;
  attachError?: boolean;
  /** A hook that hands the provider something to store: queued calls to one provider never overlap. */
  write?: boolean;
}

/**
 * How loudly a provider hook's failure is logged, in one place. `warn` for hooks whose failure loses
 * work or context the user expects (a turn not stored, a session not ended); `debug` for
 * best-effort hooks the next turn repairs (recall warm-up, recall status, the v1 pre-compress
 * summary); `error` for a model tool call, whose failure the model sees as well. `label` is how the
 * hook is named in the message (`Memory provider '<name>' <label> failed<note>: <reason>`).
 */
const HOOK_FAILURE_LOG = {
  get_tool_schemas: { level: "warn", label: "get_tool_schemas()" },
  handle_tool_call: { level: "error", label: "handle_tool_call" },
  system_prompt_block: { level: "warn", label: "system_prompt_block()" },
  prefetch: { level: "debug", label: "prefetch", note: " (non-fatal)" },
  queue_prefetch: { level: "debug", label: "queue_prefetch", note: " (non-fatal)" },
  recall_status: { level: "debug", label: "recall_status", note: " (non-fatal)" },
  sync_turn: { level: "warn", label: "sync_turn", write: true },
  on_turn_start: { level: "warn", label: "on_turn_start" },
  on_session_end: { level: "warn", label: "on_session_end", attachError: true, write: true },
  on_session_switch: { level: "warn", label: "on_session_switch", write: true },
  on_pre_compress: { level: "debug", label: "on_pre_compress" },
  on_memory_write: { level: "warn", label: "on_memory_write", write: true },
  on_delegation: { level: "warn", label: "on_delegation", write: true },
  initialize: { level: "warn", label: "initialize" },
  shutdown: { level: "warn", label: "shutdown" },
} as const satisfies Record<string, HookFailureLog>;

/** A provider hook the manager calls, as named in `HOOK_FAILURE_LOG`. */
export type ProviderHook = keyof typeof HOOK_FAILURE_LOG;

/** Options of `HookRunner.fanOut`. */
export interface FanOutOptions {
  /** Names the hook in the timeout message when it differs from the table's label. */
  label?: string;
  /**
   * The fan-out runs as a background task: a write hook's call starts only after the provider's
   * previous queued write settled, and one that times out is still waited for, so the queue waits
   * with it and the provider's writes never overlap.
   */
  queued?: boolean;
}

/**
 * Hooks whose blocking time is not measured: they run once, before a session starts or after it
 * ended, where opening or closing local storage synchronously is the accepted pattern (a SQLite
 * provider does both). The warning is about the hooks of a running conversation, whose stall
 * recurs every turn.
 */
const UNMEASURED_HOOKS: ReadonlySet<string> = new Set(["initialize", "initialize_for_inspection", "shutdown"]);

/** What `HookRunner.scrub` gives back: the scrubbed value, or why it was refused. */
export type ScrubResult<T> = { ok: true; value: T } | { ok: false; reason: string };

/** Calls provider hooks for the manager: bounded, isolated, logged, writes in order. */
export class HookRunner {
  private readonly blocking: BlockingMeter;
  private readonly lanes = new WriteLanes<MemoryProvider>();
  private waitingOn: { name: string; hook: string; since: number } | null = null;

  constructor(
    private readonly logger: Logger,
    private readonly hookTimeoutMs: number,
    private readonly nameOf: (provider: MemoryProvider) => string,
    blockingWarnMs: number = Number.POSITIVE_INFINITY,
  ) {
    this.blocking = new BlockingMeter(logger, blockingWarnMs);
  }

  /**
   * Call one provider hook within `hookTimeoutMs` (or `timeoutMs`). Never throws: the outcome is
   * tagged. A timeout is logged here as a warning naming the provider and the hook; errors are
   * logged by the caller, which knows how serious they are. A `queuedWrite` starts only after the
   * provider's previous queued write settled, and is waited for past its bound, so the background
   * queue never hands a provider overlapping writes.
   */
  async callHook<T>(
    provider: MemoryProvider,
    hook: string,
    fn: () => T | PromiseLike<T>,
    timeoutMs: number = this.hookTimeoutMs,
    queuedWrite = false,
  ): Promise<BoundedOutcome<Awaited<T>>> {
    const name = this.nameOf(provider);
    // The built-in memory is core code working on local files (its own locks are bounded); timing
    // it out would only report a write as failed that still lands, and its time is not a provider's.
    const builtin = name === BUILTIN_PROVIDER_NAME;
    if (builtin) timeoutMs = Number.POSITIVE_INFINITY;
    const measured = builtin || UNMEASURED_HOOKS.has(hook) ? fn : () => this.blocking.measure(name, hook, fn);
    if (queuedWrite) await this.lanes.idle(provider);
    const call = queuedWrite ? () => this.lanes.run(provider, measured) : measured;
    const outcome = await boundedCall(call, timeoutMs, {
      onLate: (late) =>
        this.logger.debug(`Memory provider '${name}' ${hook} settled after its timeout (${late.status}); the late result was dropped`),
    });
    if (outcome.status === "timeout") this.warnTimeout(name, hook, timeoutMs, queuedWrite);
    if (outcome.status === "timeout" && queuedWrite) await this.lanes.idle(provider);
    return outcome;
  }

  private warnTimeout(name: string, hook: string, timeoutMs: number, queuedWrite: boolean): void {
    const after = `Memory provider '${name}' ${hook} timed out after ${formatSeconds(timeoutMs)}`;
    if (queuedWrite) {
      this.logger.warn(
        `${after}; the background queue waits for it to settle before the next task, so the provider's writes keep their order (maxQueuedTasks bounds what waits). Raise hookTimeoutMs if the provider is only slow.`,
      );
    } else {
      this.logger.warn(
        `${after}; continuing without it (the call keeps running detached). Raise hookTimeoutMs if the provider is only slow.`,
      );
    }
  }

  /** Call `fn` (a provider's synchronous hook, or the start of an asynchronous one) measuring how long it blocks. */
  measure<T>(provider: MemoryProvider, hook: string, fn: () => T): T {
    const name = this.nameOf(provider);
    return name === BUILTIN_PROVIDER_NAME ? fn() : this.blocking.measure(name, hook, fn);
  }

  /** What the background queue is waiting on, for a queue-full warning; `""` when no queued call runs. */
  describeQueueWait(): string {
    const wait = this.waitingOn;
    if (!wait) return "";
    return `the queue is waiting on provider '${wait.name}' ${wait.hook} (${formatSeconds(performance.now() - wait.since)} so far)`;
  }

  /**
   * Log one provider hook's failure at the level `HOOK_FAILURE_LOG` gives that hook. `label`
   * overrides the table's name for the hook (e.g. `handle_tool_call(<tool>)`).
   */
  logHookFailure(provider: MemoryProvider, hook: ProviderHook, reason: string, error?: unknown, label?: string): void {
    const entry: HookFailureLog = HOOK_FAILURE_LOG[hook];
    const message = `Memory provider '${this.nameOf(provider)}' ${label ?? entry.label} failed${entry.note ?? ""}: ${reason}`;
    if (entry.attachError && error !== undefined) this.logger[entry.level](message, error);
    else this.logger[entry.level](message);
  }

  /**
   * Call `hook` on each provider in turn, one at a time, each call bounded by `callHook` (a
   * timeout is logged there). A provider that throws or rejects is logged via `logHookFailure` and
   * the next one is still called. `onOutcome` sees every outcome right after its call, in order;
   * if it throws, the fan-out stops there and the error propagates (this is how a required
   * checkpoint failure aborts `onPreCompress`). A write hook's calls to one provider never
   * overlap when they come from the background queue (`options.queued`).
   */
  async fanOut<T>(
    providers: readonly MemoryProvider[],
    hook: ProviderHook,
    call: (provider: MemoryProvider) => T | PromiseLike<T>,
    onOutcome?: (provider: MemoryProvider, outcome: BoundedOutcome<Awaited<T>>) => void,
    options: FanOutOptions = {},
  ): Promise<void> {
    const entry: HookFailureLog = HOOK_FAILURE_LOG[hook];
    const queuedWrite = entry.write === true && options.queued === true;
    const label = options.label ?? entry.label;
    for (const provider of providers) {
      if (options.queued) this.waitingOn = { name: this.nameOf(provider), hook: label, since: performance.now() };
      let outcome: BoundedOutcome<Awaited<T>>;
      try {
        outcome = await this.callHook(provider, label, () => call(provider), this.hookTimeoutMs, queuedWrite);
      } finally {
        if (options.queued) this.waitingOn = null;
      }
      if (outcome.status === "error") this.logHookFailure(provider, hook, describeError(outcome.error), outcome.error);
      onOutcome?.(provider, outcome);
    }
  }

  /** The report naming a provider whose hook timed out or failed; `null` when it completed. */
  hookReport(provider: MemoryProvider, hook: string, outcome: BoundedOutcome<unknown>): ProviderHookReport | null {
    if (outcome.status === "timeout") {
      return { name: this.nameOf(provider), hook, outcome: "timeout", reason: `did not settle within ${formatSeconds(outcome.timeoutMs)}` };
    }
    if (outcome.status === "error") return { name: this.nameOf(provider), hook, outcome: "error", reason: describeError(outcome.error) };
    return null;
  }

  /**
   * `scrubSecrets` that never throws: a value the scrubber refuses (e.g. nested too deeply) is
   * logged as a warning and not handed to any provider.
   */
  scrub<T>(value: T, what: string): ScrubResult<T> {
    try {
      return { ok: true, value: scrubSecrets(value) };
    } catch (error) {
      const reason = error instanceof RangeError ? `too deeply nested to scrub (${error.message})` : describeError(error);
      this.logger.warn(`Memory manager could not scrub ${what}: ${reason}; it was not handed to any memory provider.`);
      return { ok: false, reason };
    }
  }
}
