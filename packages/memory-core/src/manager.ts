/**
 * The MemoryManager: one built-in provider plus at most one external provider, fan-out with
 * per-provider error isolation, a FIFO background queue for writes, a time bound on every call
 * into a provider, egress scrubbing of every hand-off, and the checkpoint / session-switch
 * plumbing. The class is the public face; each job lives in a part beside it:
 * `manager-registry.ts` (providers and tool routes), `manager-hooks.ts` (bounded, logged calls
 * into providers), `manager-tools.ts` (tool calls and mirrored writes), `manager-turns.ts`
 * (prompt, recall and turn fan-out), `manager-checkpoint.ts` (pre-compress checkpoints) and
 * `manager-lifecycle.ts` (initialisation, background queue, session boundaries, shutdown).
 *
 * Every hook gets the full options object and reads what it needs; the manager never inspects a
 * hook's signature to decide what to pass. A provider declaring checkpoint API v1 (or none) never
 * sees `requireCheckpoint: true`.
 */
import { HermesMemoryError } from "./errors.js";
import type { Logger } from "./logger.js";
import { silentLogger } from "./logger.js";
import { CheckpointFanOut } from "./manager-checkpoint.js";
import { HookRunner, type ProviderHookReport } from "./manager-hooks.js";
import { SessionLifecycle, type BackgroundQueueState, type DrainState } from "./manager-lifecycle.js";
import { ProviderRegistry } from "./manager-registry.js";
import { ToolRouter } from "./manager-tools.js";
import { TurnFanOut } from "./manager-turns.js";
import { pluginRegistrationsByName, type PluginRegistrations } from "./plugin-registrations.js";
import { getHermesHome } from "./profile.js";
import type {
  ChatMessage,
  DelegationOptions,
  InitContext,
  MemoryProvider,
  MemoryWriteAction,
  MemoryWriteMetadata,
  MemoryWriteTarget,
  SessionSwitchOptions,
  ToolCallOptions,
  ToolSchema,
  TurnAuthor,
  TurnStartOptions,
} from "./provider.js";
import type { SpillConfig } from "./spill.js";

export type { BackgroundQueueState, DrainState } from "./manager-lifecycle.js";
export type { ProviderHookReport } from "./manager-hooks.js";

/** Options of `new MemoryManager(...)`. */
export interface MemoryManagerOptions {
  /** Upper bound for one external provider's `prefetch`, in ms. Default 8000; must be > 0. */
  externalPrefetchTimeoutMs?: number;
  /** Where fan-out failures and warnings go. Default: `silentLogger`. */
  logger?: Logger;
  /** `hooks.output_spill` settings; captured when the external provider registers. */
  spillConfig?: Partial<SpillConfig>;
  /** Profile home injected into `initialize()` and used for spill files. Default: the active
   * `getHermesHome()` at construction. */
  hermesHome?: string;
  /** How long `shutdownAll()` waits for queued background work, in ms. Default 5000. */
  drainTimeoutMs?: number;
  /**
   * Upper bound for one call of an external provider's hook other than `prefetch` (`initialize`,
   * `handleToolCall`, `syncTurn`, `onSessionEnd`, `shutdown`, …), in ms. Default 15000; must be
   * > 0 (`Infinity` = unbounded). A call past the bound is abandoned with a warning naming the
   * provider and the hook; it keeps running detached and its late result is dropped. A call that
   * settles after its bound (a provider that blocked the event loop past it) is a timeout too. A
   * write from the background queue (`syncTurn`, a session boundary's `onSessionEnd` /
   * `onSessionSwitch`) past its bound is warned about and waited for: the queue starts nothing
   * else until it settles, so the provider's writes never overlap. Cannot interrupt synchronous
   * work that blocks the event loop. The built-in provider is not bounded.
   */
  hookTimeoutMs?: number;
  /**
   * Warn once per (provider, hook) when one call of an external provider's hook holds the event
   * loop longer than this, in ms: the synchronous part of the call, until the provider's function
   * returns; `initialize` and `shutdown` are not measured. Default 200: above what fast local
   * storage costs even on a busy machine (a SQLite provider's cold first recall), below the stalls
   * of a synchronous network call; must be > 0 (`Infinity` = never warn).
   */
  blockingWarnMs?: number;
  /**
   * The most background tasks (`syncAll`, `queuePrefetchAll`, `commitSessionBoundary`) that wait to
   * start while an earlier one runs. Default 50000 (a burst of 20000 turns, as an import sends, fits whole; a stuck provider cannot grow it without limit); a whole number ≥ 1 (`Infinity` = unbounded).
   * When full, the oldest queued prefetch warm-up is dropped, else the new task is refused, with a
   * warning naming what the queue waits on; counts in `backgroundQueueState` and `DrainState`.
   */
  maxQueuedTasks?: number;
  /**
   * Offer the external provider's tools and system-prompt block to the model. Default `true`.
   * `false` withholds both together (the built-in memory stays), for hosts whose toolset on this
   * platform excludes memory; see `setExternalEnabled`.
   */
  externalEnabled?: boolean;
}

/** Default bound for an external provider's `prefetch` (ms). */
export const DEFAULT_EXTERNAL_PREFETCH_TIMEOUT_MS = 8000;
/** Default wait for queued background work in `shutdownAll()` (ms). */
export const DEFAULT_DRAIN_TIMEOUT_MS = 5000;
/** Default bound for one provider hook call other than `prefetch` (ms). */
export const DEFAULT_HOOK_TIMEOUT_MS = 15000;
/** Default threshold of the once-per-hook warning about a provider blocking the event loop (ms). */
export const DEFAULT_BLOCKING_WARN_MS = 200;
/** Default most background tasks waiting to start. */
export const DEFAULT_MAX_QUEUED_TASKS = 50_000;

function checkQueueBound(value: unknown): number {
  const max = value ?? DEFAULT_MAX_QUEUED_TASKS;
  if (max === Number.POSITIVE_INFINITY || (typeof max === "number" && Number.isInteger(max) && max >= 1)) return max as number;
  throw new HermesMemoryError({
    code: "INVALID_ARGUMENT",
    message: `maxQueuedTasks must be a whole number >= 1 or Infinity (got ${String(max)}); omit it for the ${DEFAULT_MAX_QUEUED_TASKS} default.`,
  });
}

function checkTimeout(name: string, value: unknown, defaultMs: number, min: "positive" | "non-negative"): number {
  const ms = value ?? defaultMs;
  const ok = typeof ms === "number" && !Number.isNaN(ms) && (min === "positive" ? ms > 0 : ms >= 0);
  if (!ok) {
    throw new HermesMemoryError({
      code: "INVALID_ARGUMENT",
      message: `${name} must be ${min === "positive" ? "positive (a number > 0)" : "a number >= 0"} (got ${String(ms)}); pass milliseconds or omit it for the ${defaultMs} ms default.`,
    });
  }
  return ms as number;
}

/**
 * Orchestrates the built-in provider and at most one external provider. Create one per agent
 * session host; call `addProvider` for each provider, then `initializeAll`.
 *
 * Every fan-out isolates failures per provider (logged, never thrown, unless the method says so)
 * and passes everything it hands over through `scrubSecrets`. `syncAll`, `queuePrefetchAll` and
 * `commitSessionBoundary` only enqueue work on the manager's single FIFO background queue and
 * return immediately; use `flushPending()` to wait for it and `shutdownAll()` at exit.
 */
export class MemoryManager {
  private readonly registry: ProviderRegistry;
  private readonly hooks: HookRunner;
  private readonly tools: ToolRouter;
  private readonly turns: TurnFanOut;
  private readonly checkpoints: CheckpointFanOut;
  private readonly lifecycle: SessionLifecycle;

  /**
   * @throws HermesMemoryError `INVALID_ARGUMENT` when a timeout or `blockingWarnMs` is not a positive
   * number, or `maxQueuedTasks` not a whole number ≥ 1.
   */
  constructor(options: MemoryManagerOptions = {}) {
    const prefetchTimeoutMs = checkTimeout(
      "externalPrefetchTimeoutMs",
      options.externalPrefetchTimeoutMs,
      DEFAULT_EXTERNAL_PREFETCH_TIMEOUT_MS,
      "positive",
    );
    const drainTimeoutMs = checkTimeout("drainTimeoutMs", options.drainTimeoutMs, DEFAULT_DRAIN_TIMEOUT_MS, "non-negative");
    const hookTimeoutMs = checkTimeout("hookTimeoutMs", options.hookTimeoutMs, DEFAULT_HOOK_TIMEOUT_MS, "positive");
    const blockingWarnMs = checkTimeout("blockingWarnMs", options.blockingWarnMs, DEFAULT_BLOCKING_WARN_MS, "positive");
    const maxQueuedTasks = checkQueueBound(options.maxQueuedTasks);
    const logger = options.logger ?? silentLogger;
    const hermesHome = options.hermesHome ?? getHermesHome();
    this.registry = new ProviderRegistry(logger, { ...(options.spillConfig ?? {}) }, options.externalEnabled !== false);
    this.hooks = new HookRunner(logger, hookTimeoutMs, (provider) => this.registry.nameOf(provider), blockingWarnMs);
    this.lifecycle = new SessionLifecycle(this.registry, this.hooks, { logger, drainTimeoutMs, hermesHome, maxQueuedTasks });
    this.tools = new ToolRouter(this.registry, this.hooks, logger);
    this.turns = new TurnFanOut(this.registry, this.hooks, {
      logger,
      prefetchTimeoutMs,
      hermesHome,
      schedule: (kind, fn) => this.lifecycle.schedule(kind, fn),
    });
    this.checkpoints = new CheckpointFanOut(this.registry, this.hooks);
  }

  // --- registration ----------------------------------------------------------------------------

  /** Registered providers in order (a copy). */
  get providers(): MemoryProvider[] {
    return [...this.registry.list];
  }

  /**
   * What each registered provider's plugin module registered besides the provider — `hooks`,
   * `tools`, `commands`, `other` — keyed by provider name, read-only (empty lists when it
   * registered none). The manager never calls them; a host does, bounded, with `runPluginHook` /
   * `callPluginFunction`.
   */
  pluginRegistrations(): Readonly<Record<string, PluginRegistrations>> {
    return pluginRegistrationsByName(this.registry.list);
  }

  /** The first registered provider with this name, if any. */
  getProvider(name: string): MemoryProvider | undefined {
    return this.registry.find(name);
  }

  /**
   * Register a provider. `builtin` is always accepted and placed before any external provider; a
   * second external provider is refused with a warning (returns `false`). The provider's tool
   * schemas are read before any state changes: if `getToolSchemas()` throws, this rethrows and the
   * manager is unchanged. Tools named like a reserved core tool (external providers only) or
   * already routed to another provider are ignored with a warning — first registered wins.
   */
  addProvider(provider: MemoryProvider): boolean {
    return this.registry.add(provider);
  }

  /**
   * Tool schemas to advertise to the model, normalised (bare form) and de-duplicated. Only tools
   * that `handleToolCall` would route are listed, each once, from the provider that owns it. A
   * provider whose `getToolSchemas()` throws is skipped with a warning.
   */
  getToolSchemas(): ToolSchema[] {
    return this.tools.getToolSchemas();
  }

  /** Names of every routed tool (without the external provider's while it is withheld). */
  getToolNames(): Set<string> {
    return this.registry.toolNames();
  }

  /** True when `handleToolCall(name, …)` would reach a provider. */
  hasTool(name: string): boolean {
    return this.registry.routeFor(name) !== undefined;
  }

  /**
   * The gate for hosts whose toolset on this platform excludes memory: `false` withholds the
   * external provider's tools (`getToolSchemas`, `getToolNames`, `hasTool`, `handleToolCall`) and
   * its `systemPromptBlock()` in `buildSystemPrompt()` together. The built-in memory is never
   * withheld, and the external provider's lifecycle hooks (sync, prefetch, session end) still run.
   * Default: `MemoryManagerOptions.externalEnabled` (`true` unless set).
   */
  setExternalEnabled(enabled: boolean): void {
    this.registry.externalEnabled = enabled !== false;
  }

  /** Whether the external provider's tools and system-prompt block are offered (see `setExternalEnabled`). */
  get externalEnabled(): boolean {
    return this.registry.externalEnabled;
  }

  /**
   * Unregister a provider and its tool routes (e.g. one whose `initialize()` failed). The
   * built-in provider cannot be removed. Returns `false` when no such provider is registered.
   * Does not call its `shutdown()`.
   */
  removeProvider(name: string): boolean {
    const provider = this.registry.remove(name);
    if (!provider) return false;
    this.turns.inflightPrefetch.delete(provider);
    return true;
  }

  // --- tools -----------------------------------------------------------------------------------

  /**
   * Route a model tool call to the provider that owns the tool. Never throws: an unrouted or
   * withheld tool, a provider failure, a call that does not settle within `hookTimeoutMs`, or
   * arguments that cannot be scrubbed (nested too deeply) become a JSON `{"error": …}` string; a
   * non-string result is JSON-stringified. Arguments are plain data: only their own enumerable
   * properties are passed on (a `__proto__` key stays an ordinary key).
   *
   * Arguments for an external provider are scrubbed first. The built-in `memory` tool gets them
   * as the model wrote them: it stores facts in the user's own MEMORY.md / USER.md, and its
   * `old_text` must match the stored entry to replace or remove it. After it returns, its
   * successful writes are mirrored to the external provider scrubbed (`notifyMemoryToolWrite`).
   *
   * The result carries recalled memory to the model, so no stored text in it may read as a tag:
   * it passes through `escapeToolResult` (JSON results keep their parsed value exactly).
   */
  async handleToolCall(name: string, args: Record<string, unknown>, options: ToolCallOptions = {}): Promise<string> {
    return this.tools.handleToolCall(name, args, options);
  }

  // --- prompt and recall -----------------------------------------------------------------------

  /**
   * Every offered provider's non-empty static `systemPromptBlock()`, joined by a blank line. The
   * external provider's block is left out while it is withheld (`setExternalEnabled(false)`).
   */
  async buildSystemPrompt(): Promise<string> {
    return this.turns.buildSystemPrompt();
  }

  /**
   * Recall for the upcoming model call; call it after `onTurnStart` and skip it for trivial
   * prompts (`isTrivialPrompt`). Providers are queried concurrently in the caller's profile scope.
   * The built-in provider is never timed out or spilled; each external provider is bounded by
   * `externalPrefetchTimeoutMs` and skipped (not re-called) while a previous call is in flight —
   * a result arriving after the timeout is dropped. Non-empty external results pass through
   * `spillIfOversized`. Results joined by a blank line; `""` when nothing was recalled. Never
   * throws. Wrap the result with `fenceRecall` before adding it to the user message, or call
   * `recall`, which does both.
   */
  async prefetchAll(query: string, options: { sessionId?: string } = {}): Promise<string> {
    return this.turns.prefetchAll(query, options);
  }

  /**
   * The recall block for the upcoming model call: `prefetchAll(query)` wrapped by `fenceRecall`,
   * ready to append to the user message (`""` when nothing was recalled). Whatever the stored
   * memories contain, the block has one opening and one closing fence, at its ends, with every
   * recalled character between them. Call it after `onTurnStart`; skip it for trivial prompts
   * (`isTrivialPrompt`). Never throws.
   */
  async recall(query: string, options: { sessionId?: string } = {}): Promise<string> {
    return this.turns.recall(query, options);
  }

  /**
   * Ask every provider to pre-warm recall for the next turn. Returns immediately: the calls run on
   * the background queue (kind `prefetch`) in the caller's profile scope.
   */
  queuePrefetchAll(query: string, options: { sessionId?: string } = {}): void {
    this.turns.queuePrefetchAll(query, options);
  }

  /** `"<glyph> <label> — recalled N memories"` for every provider reporting a recall status. */
  describeRecall(): string {
    return this.turns.describeRecall();
  }

  // --- turns and background work ---------------------------------------------------------------

  /**
   * Hand a completed turn to every provider. Returns synchronously in microseconds: user text,
   * assistant text and `messages` are scrubbed together here, and the `syncTurn` calls run later
   * on the FIFO background queue (kind `write`). A bare `/skill` invocation is not synced. Skip
   * this for interrupted turns. After `shutdownAll()` the turn is dropped with a warning.
   */
  syncAll(user: string, assistant: string, options: { sessionId?: string; messages?: ChatMessage[]; turnAuthor?: TurnAuthor } = {}): void {
    this.turns.syncAll(user, assistant, options);
  }

  /**
   * Wait until everything queued before this call has run. Resolves `true` when done (also when
   * nothing was ever queued or the manager is shut down), `false` when `timeoutMs` passed first.
   */
  async flushPending(timeoutMs?: number): Promise<boolean> {
    return this.lifecycle.flushPending(timeoutMs);
  }

  /** Start of a turn (1-based `turnNumber`), before `prefetchAll`. The message is scrubbed. */
  async onTurnStart(turnNumber: number, message: string, options: TurnStartOptions = {}): Promise<void> {
    await this.turns.onTurnStart(turnNumber, message, options);
  }

  // --- session boundaries ----------------------------------------------------------------------

  /**
   * A real session boundary (exit, `/reset`, expiry). Hands every provider a scrubbed copy, each
   * call bounded by `hookTimeoutMs`. Never throws: a transcript that cannot be scrubbed (nested too
   * deeply) is dropped with a warning, and a provider that fails or times out is logged.
   */
  async onSessionEnd(messages: ChatMessage[]): Promise<void> {
    await this.lifecycle.onSessionEnd(messages);
  }

  /**
   * `/new`-style boundary without blocking the caller: queues ONE background task that runs
   * `onSessionEnd(snapshot)` and then `onSessionSwitch(newSessionId, {reset: true, …})`, so the
   * old transcript is always attributed to the old session.
   */
  commitSessionBoundary(messages: ChatMessage[], options: { newSessionId: string; parentSessionId?: string; reason?: string }): void {
    this.lifecycle.commitSessionBoundary(messages, options);
  }

  /**
   * The session id rotated without teardown. An empty id is a no-op (`true`). `rewound` is passed
   * only when true. Returns `false` when any provider threw or returned `false`; those providers
   * are remembered and `retryPendingSessionSwitch()` retries only them.
   */
  async onSessionSwitch(newSessionId: string, options: Partial<SessionSwitchOptions> = {}): Promise<boolean> {
    return this.lifecycle.onSessionSwitch(newSessionId, options);
  }

  /** Retry the last session switch on the providers that failed it. `true` when none remain. */
  async retryPendingSessionSwitch(): Promise<boolean> {
    return this.lifecycle.retryPendingSessionSwitch();
  }

  // --- compression -----------------------------------------------------------------------------

  /** True when some provider implements pre-compress checkpoint API `apiVersion` (default 2). */
  supportsPreCompressCheckpoint(apiVersion = 2): boolean {
    return this.checkpoints.supports(apiVersion);
  }

  /**
   * Before context compression. v1 providers get the raw messages and `requireCheckpoint: false`;
   * checkpoint providers (version ≥ `checkpointApiVersion`) get `evidenceMessages` when given and
   * the real flag. With `requireCheckpoint`, a checkpoint provider's failure is rethrown, and if no
   * checkpoint provider succeeded a `CheckpointUnavailableError` is thrown. Otherwise failures are
   * logged and skipped. Returns the non-empty results joined by a blank line. Prefer the
   * `preCompress()` helper, which also normalises the evidence.
   */
  async onPreCompress(
    messages: ChatMessage[],
    options: { evidenceMessages?: ChatMessage[]; requireCheckpoint?: boolean; checkpointApiVersion?: number } = {},
  ): Promise<string> {
    return this.checkpoints.onPreCompress(messages, options);
  }

  // --- memory-write mirroring and delegation ---------------------------------------------------

  /**
   * Mirror a committed built-in memory write to the external provider(s) only — the built-in
   * provider is the source. Content and metadata are scrubbed; each provider gets its own copy.
   */
  async onMemoryWrite(
    action: MemoryWriteAction,
    target: MemoryWriteTarget,
    content: string,
    metadata: MemoryWriteMetadata = {},
  ): Promise<void> {
    await this.tools.onMemoryWrite(action, target, content, metadata);
  }

  /**
   * Mirror the writes of one built-in `memory` tool call, after it returned. Mirrors nothing
   * unless the result (JSON string or object) has `success: true` and is not `staged`. Batched
   * `operations` are mirrored in order; `previousContent` comes from the committed result
   * (`replaced_entry`/`removed_entry`, or `replaced_entries`/`removed_entries` keyed by 1-based
   * op index). Never throws.
   */
  async notifyMemoryToolWrite(
    result: string | Record<string, unknown>,
    args: Record<string, unknown>,
    options: { buildMetadata?: () => MemoryWriteMetadata } = {},
  ): Promise<void> {
    await this.tools.notifyMemoryToolWrite(result, args, options);
  }

  /** On the parent when a subagent finished: scrubbed task and result to every provider. */
  async onDelegation(task: string, result: string, options: Partial<DelegationOptions> = {}): Promise<void> {
    await this.turns.onDelegation(task, result, options);
  }

  // --- lifecycle -------------------------------------------------------------------------------

  /**
   * Initialise every provider with `ctx` plus `hermesHome` (the manager's home unless given) and
   * `platform` (`cli` unless given), each call bounded by `hookTimeoutMs`. A provider that fails or
   * times out is logged and stays registered; the returned list names each one (empty when all
   * succeeded) so a host can `removeProvider()` it, as `openMemory()` does.
   */
  async initializeAll(sessionId: string, ctx: Partial<InitContext> = {}): Promise<ProviderHookReport[]> {
    return this.lifecycle.initializeEach(sessionId, ctx, false);
  }

  /** Like `initializeAll`, but calls `initializeForInspection` (no network, no background work). */
  async initializeAllForInspection(sessionId: string, ctx: Partial<InitContext> = {}): Promise<ProviderHookReport[]> {
    return this.lifecycle.initializeEach(sessionId, ctx, true);
  }

  /**
   * The background queue now: tasks waiting and running, its bound, and how many tasks it dropped
   * or refused so far because it was full. Read it after `flushPending()` to see what was lost.
   */
  get backgroundQueueState(): BackgroundQueueState {
    return this.lifecycle.queueState;
  }

  /** A copy of what the last `shutdownAll()` drain found. */
  get shutdownDrainState(): DrainState {
    return this.lifecycle.shutdownDrainState;
  }

  /**
   * Stop accepting background work, wait up to `drainTimeoutMs` for queued tasks, abandon what is
   * left (reported in the returned state and a warning), then call `shutdown()` on every provider
   * in reverse registration order, each isolated and bounded by `hookTimeoutMs`: a provider whose
   * `shutdown()` does not settle is named in `stuckProviders` (and a warning) and left running
   * detached, one that throws in `failedProviders`. Always resolves; idempotent: later calls
   * return the same state.
   */
  shutdownAll(): Promise<DrainState> {
    return this.lifecycle.shutdownAll();
  }
}
