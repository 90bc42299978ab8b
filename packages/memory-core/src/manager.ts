/**
 * The MemoryManager: one built-in provider plus at most one external provider, fan-out with
 * per-provider error isolation, a FIFO background queue for writes, a time bound on every call
 * into a provider, egress scrubbing of every hand-off, and the checkpoint / session-switch
 * plumbing.
 *
 * Port note: the Python manager inspects each hook's signature to decide which keyword arguments
 * a provider accepts ("legacy signatures"). TypeScript has no reliable signature sniffing, so the
 * manager always passes the full options object and providers read what they need.
 * The legacy-signature behaviours (omitting `messages` for old `sync_turn`, positional metadata
 * for 3-argument `on_memory_write`, skipping `require_checkpoint` for bare `on_pre_compress`,
 * refusing dynamically synthesised hooks) are therefore dropped. v1 checkpoint providers still
 * never see `requireCheckpoint: true`.
 */
import { BackgroundQueue, type BackgroundTaskKind } from "./background-queue.js";
import { boundedCall, formatSeconds, type BoundedOutcome } from "./bounded-call.js";
import { CheckpointUnavailableError, HermesMemoryError } from "./errors.js";
import { describeProviderError as describeError, readProviderName } from "./plugin-describe.js";
import type { Logger } from "./logger.js";
import { silentLogger } from "./logger.js";
import { getHermesHome } from "./profile.js";
import { BUILTIN_PROVIDER_NAME } from "./provider.js";
import type {
  ChatMessage,
  DelegationOptions,
  InitContext,
  MemoryProvider,
  MemoryWriteAction,
  MemoryWriteMetadata,
  MemoryWriteTarget,
  RecallStatus,
  SessionSwitchOptions,
  SyncTurnOptions,
  ToolCallOptions,
  ToolSchema,
  TurnAuthor,
  TurnStartOptions,
} from "./provider.js";
import { describeRecall, fenceRecall } from "./recall.js";
import { escapeToolResult } from "./recall-escape.js";
import { scrubSecrets } from "./scrub.js";
import { normalizeSpillConfig, spillIfOversized, type SpillConfig } from "./spill.js";
import { RESERVED_CORE_TOOL_NAMES, normalizeToolSchema } from "./tool-schema.js";

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
   * provider and the hook; it keeps running detached and its late result is dropped. Cannot
   * interrupt synchronous work that blocks the event loop. The built-in provider is not bounded.
   */
  hookTimeoutMs?: number;
  /**
   * Offer the external provider's tools and system-prompt block to the model. Default `true`.
   * `false` withholds both together (the built-in memory stays), for hosts whose toolset on this
   * platform excludes memory; see `setExternalEnabled`.
   */
  externalEnabled?: boolean;
}

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
}

/** Default bound for an external provider's `prefetch` (ms). */
export const DEFAULT_EXTERNAL_PREFETCH_TIMEOUT_MS = 8000;
/** Default wait for queued background work in `shutdownAll()` (ms). */
export const DEFAULT_DRAIN_TIMEOUT_MS = 5000;
/** Default bound for one provider hook call other than `prefetch` (ms). */
export const DEFAULT_HOOK_TIMEOUT_MS = 15000;

function copyDrainState(state: DrainState): DrainState {
  return {
    ...state,
    stuckProviders: state.stuckProviders.map((r) => ({ ...r })),
    failedProviders: state.failedProviders.map((r) => ({ ...r })),
  };
}

/** One row of `HOOK_FAILURE_LOG`; `attachError` also hands the error object to the logger. */
interface HookFailureLog {
  level: "debug" | "warn" | "error";
  label: string;
  note?: string;
  attachError?: boolean;
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
  sync_turn: { level: "warn", label: "sync_turn" },
  on_turn_start: { level: "warn", label: "on_turn_start" },
  on_session_end: { level: "warn", label: "on_session_end", attachError: true },
  on_session_switch: { level: "warn", label: "on_session_switch" },
  on_pre_compress: { level: "debug", label: "on_pre_compress" },
  on_memory_write: { level: "warn", label: "on_memory_write" },
  on_delegation: { level: "warn", label: "on_delegation" },
  initialize: { level: "warn", label: "initialize" },
  shutdown: { level: "warn", label: "shutdown" },
} as const satisfies Record<string, HookFailureLog>;

type ProviderHook = keyof typeof HOOK_FAILURE_LOG;

const MIRRORED_ACTIONS: ReadonlySet<string> = new Set(["add", "replace", "remove"]);

// `/skill` turns embed the whole skill body in the user message; only the user's own instruction
// is memory-worthy. The host wraps skill invocations with this header (hermes-agent skill commands).
const SKILL_INVOCATION_HEADER = /^\s*\[SYSTEM: The user has invoked the "[^"\n]*" (?:skill|bundle)\b/;
const SKILL_INSTRUCTION_MARKER = "The user has provided the following instruction alongside the skill invocation:";
const BARE_SKILL_COMMAND = /^\s*\/(?:skill|bundle)(?:\s+\S+)?\s*$/;
const SKILL_COMMAND_WITH_TEXT = /^\s*\/(?:skill|bundle)\s+\S+\s+([\s\S]+)$/;

/**
 * Strip skill scaffolding from a user message: a host-expanded skill invocation keeps only the
 * instruction the user typed alongside it; a raw `/skill <name> <text>` keeps `<text>`; a bare
 * `/skill <name>` yields `""` (not synced, not recalled). Any other text is returned unchanged.
 */
export function stripSkillScaffolding(text: string): string {
  if (typeof text !== "string") return "";
  if (SKILL_INVOCATION_HEADER.test(text)) {
    const at = text.lastIndexOf(SKILL_INSTRUCTION_MARKER);
    return at < 0 ? "" : text.slice(at + SKILL_INSTRUCTION_MARKER.length).trim();
  }
  if (BARE_SKILL_COMMAND.test(text)) return "";
  const withText = SKILL_COMMAND_WITH_TEXT.exec(text);
  if (withText) return (withText[1] ?? "").trim();
  return text;
}

/** Python `int(x)` for a provider's checkpoint version: absent → 1, unparseable → null. */
function checkpointVersionOf(provider: MemoryProvider): number | null {
  let raw: unknown;
  try {
    raw = (provider as { preCompressCheckpointApiVersion?: unknown }).preCompressCheckpointApiVersion;
  } catch {
    return null; // a getter that throws declares nothing usable
  }
  if (raw === undefined || raw === null) return 1;
  if (typeof raw === "number") return Number.isFinite(raw) ? Math.trunc(raw) : null;
  if (typeof raw === "string" && /^\s*[+-]?\d+\s*$/.test(raw)) return Number.parseInt(raw, 10);
  if (typeof raw === "boolean") return raw ? 1 : 0;
  return null;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function nonEmptyString(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

/**
 * Tool arguments are plain data from the model: only own properties count, so a `__proto__` key
 * (an own property after `JSON.parse`) or an inherited value can never steer the manager.
 */
function own(record: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

/**
 * A shallow copy holding only the own enumerable properties, with an ordinary prototype. An own
 * `__proto__` key stays a plain data property (spread defines properties, it never calls the
 * `__proto__` setter), and nothing inherited reaches a provider.
 */
function plainArgs(args: unknown): Record<string, unknown> {
  return isRecord(args) ? { ...args } : {};
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
  private readonly list: MemoryProvider[] = [];
  /**
   * Each provider's name, read once in `addProvider`: a provider's `name` getter may throw or
   * change later (even to `builtin`, which would lift its time bounds); the manager never re-reads it.
   */
  private readonly names = new WeakMap<MemoryProvider, string>();
  private readonly toolRoutes = new Map<string, MemoryProvider>();
  private externalName: string | null = null;
  private capturedSpillConfig: SpillConfig | null = null;
  private readonly inflightPrefetch = new Set<MemoryProvider>();
  private externalOn: boolean;
  private queue: BackgroundQueue | null = null;
  private shuttingDown = false;
  private shutdownPromise: Promise<DrainState> | null = null;
  private drainState: DrainState = { status: "not_started", abandonedWrites: 0, abandonedPrefetches: 0, activeTasks: 0, stuckProviders: [], failedProviders: [] };
  private pendingSwitch: { providers: MemoryProvider[]; newSessionId: string; options: SessionSwitchOptions } | null = null;

  private readonly logger: Logger;
  private readonly prefetchTimeoutMs: number;
  private readonly drainTimeoutMs: number;
  private readonly hookTimeoutMs: number;
  private readonly hermesHome: string;
  private readonly spillOptions: Partial<SpillConfig>;

  /**
   * @throws HermesMemoryError `INVALID_ARGUMENT` when a timeout is not a positive number.
   */
  constructor(options: MemoryManagerOptions = {}) {
    this.prefetchTimeoutMs = checkTimeout("externalPrefetchTimeoutMs", options.externalPrefetchTimeoutMs, DEFAULT_EXTERNAL_PREFETCH_TIMEOUT_MS, "positive");
    this.drainTimeoutMs = checkTimeout("drainTimeoutMs", options.drainTimeoutMs, DEFAULT_DRAIN_TIMEOUT_MS, "non-negative");
    this.hookTimeoutMs = checkTimeout("hookTimeoutMs", options.hookTimeoutMs, DEFAULT_HOOK_TIMEOUT_MS, "positive");
    this.externalOn = options.externalEnabled !== false;
    this.logger = options.logger ?? silentLogger;
    this.hermesHome = options.hermesHome ?? getHermesHome();
    this.spillOptions = { ...(options.spillConfig ?? {}) };
  }

  // --- registration ----------------------------------------------------------------------------

  /** Registered providers in order (a copy). */
  get providers(): MemoryProvider[] {
    return [...this.list];
  }

  /** The first registered provider with this name, if any. */
  getProvider(name: string): MemoryProvider | undefined {
    return this.list.find((p) => this.nameOf(p) === name);
  }

  /**
   * Register a provider. `builtin` is always accepted and placed before any external provider; a
   * second external provider is refused with a warning (returns `false`). The provider's tool
   * schemas are read before any state changes: if `getToolSchemas()` throws, this rethrows and the
   * manager is unchanged. Tools named like a reserved core tool (external providers only) or
   * already routed to another provider are ignored with a warning — first registered wins.
   */
  addProvider(provider: MemoryProvider): boolean {
    const providerName = readProviderName(provider);
    if (providerName === null) {
      throw new HermesMemoryError({
        code: "INVALID_PROVIDER",
        message: "addProvider() got a provider whose name is not a string (or whose name getter throws); declare the name as a plain string property, e.g. readonly name = \"my-memory\".",
      });
    }
    const isBuiltin = providerName === BUILTIN_PROVIDER_NAME;
    if (!isBuiltin && this.externalName !== null) {
      this.logger.warn(
        `Rejected memory provider '${providerName}' — external provider '${this.externalName}' is already registered. Only one external memory provider is allowed at a time. Configure which one via memory.provider in config.yaml.`,
      );
      return false;
    }
    // Read and normalise every schema before any state changes: a throwing getToolSchemas() or a
    // list whose iteration throws is rethrown with the manager unchanged; one bad schema is skipped.
    const schemas = provider.getToolSchemas();
    const rawSchemas: unknown[] = Array.isArray(schemas) ? Array.from(schemas as unknown[]) : [];
    const normalized: ToolSchema[] = [];
    for (const raw of rawSchemas) {
      const schema = this.safeNormalize(providerName, raw);
      if (schema) normalized.push(schema);
    }

    this.names.set(provider, providerName);
    if (isBuiltin) {
      // The built-in provider always comes first, even when registered after the external one.
      const firstExternal = this.list.findIndex((p) => this.nameOf(p) !== BUILTIN_PROVIDER_NAME);
      if (firstExternal < 0) this.list.push(provider);
      else this.list.splice(firstExternal, 0, provider);
    } else {
      this.externalName = providerName;
      this.capturedSpillConfig = normalizeSpillConfig(this.spillOptions);
      this.list.push(provider);
    }

    for (const schema of normalized) {
      const toolName = schema.name;
      if (!isBuiltin && RESERVED_CORE_TOOL_NAMES.has(toolName)) {
        this.logger.warn(
          `Memory provider '${providerName}' tool '${toolName}' shadows a reserved core tool name; registration ignored. Core tools always win — rename the provider's tool to something unique.`,
        );
        continue;
      }
      const owner = this.toolRoutes.get(toolName);
      if (owner) {
        this.logger.warn(
          `Memory tool name conflict: '${toolName}' already registered by ${this.nameOf(owner)}, ignoring from ${providerName}`,
        );
        continue;
      }
      this.toolRoutes.set(toolName, provider);
    }
    this.logger.info(`Memory provider '${providerName}' registered (${rawSchemas.length} tools)`);
    return true;
  }

  /** The name a provider had when it was registered (see `names`). */
  private nameOf(provider: MemoryProvider): string {
    return this.names.get(provider) ?? readProviderName(provider) ?? "(unnamed)";
  }

  /**
   * `normalizeToolSchema` that never throws (a schema's getters are provider code), and returns
   * plain JSON data: a schema that cannot be serialised (cyclic, BigInt) or whose getters throw is
   * skipped with a warning, because the host sends every advertised schema to the model API.
   */
  private safeNormalize(providerName: string, raw: unknown, warnNameless = false): ToolSchema | null {
    let schema: ToolSchema | null;
    try {
      schema = normalizeToolSchema(raw);
    } catch (error) {
      this.logger.warn(`Memory provider '${providerName}' returned a tool schema that cannot be read (${describeError(error)}); skipping it`);
      return null;
    }
    if (!schema) {
      if (warnNameless) this.logger.warn(`Memory provider '${providerName}' returned a tool schema without a name; skipping it`);
      return null;
    }
    try {
      return JSON.parse(JSON.stringify(schema)) as ToolSchema;
    } catch (error) {
      this.logger.warn(`Memory provider '${providerName}' tool '${schema.name}' schema is not JSON-serialisable (${describeError(error)}); skipping it`);
      return null;
    }
  }

  /**
   * Tool schemas to advertise to the model, normalised (bare form) and de-duplicated. Only tools
   * that `handleToolCall` would route are listed, each once, from the provider that owns it. A
   * provider whose `getToolSchemas()` throws is skipped with a warning.
   */
  getToolSchemas(): ToolSchema[] {
    const out: ToolSchema[] = [];
    const seen = new Set<string>();
    for (const provider of this.offeredProviders()) {
      let schemas: unknown;
      try {
        schemas = provider.getToolSchemas();
      } catch (error) {
        this.logHookFailure(provider, "get_tool_schemas", describeError(error));
        continue;
      }
      let list: unknown[];
      try {
        list = Array.isArray(schemas) ? Array.from(schemas as unknown[]) : [];
      } catch (error) {
        this.logHookFailure(provider, "get_tool_schemas", describeError(error));
        continue;
      }
      for (const raw of list) {
        const schema = this.safeNormalize(this.nameOf(provider), raw, true);
        if (!schema) continue;
        if (seen.has(schema.name) || this.toolRoutes.get(schema.name) !== provider) continue;
        seen.add(schema.name);
        out.push(schema);
      }
    }
    return out;
  }

  /** Names of every routed tool (without the external provider's while it is withheld). */
  getToolNames(): Set<string> {
    return new Set([...this.toolRoutes.keys()].filter((name) => this.routeFor(name) !== undefined));
  }

  /** True when `handleToolCall(name, …)` would reach a provider. */
  hasTool(name: string): boolean {
    return this.routeFor(name) !== undefined;
  }

  /**
   * The gate for hosts whose toolset on this platform excludes memory: `false` withholds the
   * external provider's tools (`getToolSchemas`, `getToolNames`, `hasTool`, `handleToolCall`) and
   * its `systemPromptBlock()` in `buildSystemPrompt()` together. The built-in memory is never
   * withheld, and the external provider's lifecycle hooks (sync, prefetch, session end) still run.
   * Default: `MemoryManagerOptions.externalEnabled` (`true` unless set).
   */
  setExternalEnabled(enabled: boolean): void {
    this.externalOn = enabled !== false;
  }

  /** Whether the external provider's tools and system-prompt block are offered (see `setExternalEnabled`). */
  get externalEnabled(): boolean {
    return this.externalOn;
  }

  /**
   * Unregister a provider and its tool routes (e.g. one whose `initialize()` failed). The
   * built-in provider cannot be removed. Returns `false` when no such provider is registered.
   * Does not call its `shutdown()`.
   */
  removeProvider(name: string): boolean {
    if (name === BUILTIN_PROVIDER_NAME) return false;
    const index = this.list.findIndex((p) => this.nameOf(p) === name);
    if (index < 0) return false;
    const [provider] = this.list.splice(index, 1);
    for (const [tool, owner] of [...this.toolRoutes]) if (owner === provider) this.toolRoutes.delete(tool);
    if (this.externalName === name) this.externalName = null;
    this.inflightPrefetch.delete(provider!);
    return true;
  }

  private isWithheld(provider: MemoryProvider): boolean {
    return !this.externalOn && this.nameOf(provider) !== BUILTIN_PROVIDER_NAME;
  }

  private offeredProviders(): MemoryProvider[] {
    return this.list.filter((p) => !this.isWithheld(p));
  }

  private routeFor(name: string): MemoryProvider | undefined {
    const provider = this.toolRoutes.get(name);
    return provider && !this.isWithheld(provider) ? provider : undefined;
  }

  /**
   * Call one provider hook within `hookTimeoutMs` (or `timeoutMs`). Never throws: the outcome is
   * tagged. A timeout is logged here as a warning naming the provider and the hook; errors are
   * logged by the caller, which knows how serious they are.
   */
  private async callHook<T>(
    provider: MemoryProvider,
    hook: string,
    fn: () => T | PromiseLike<T>,
    timeoutMs: number = this.hookTimeoutMs,
  ): Promise<BoundedOutcome<Awaited<T>>> {
    // The built-in memory is core code working on local files (its own locks are bounded); timing
    // it out would only report a write as failed that still lands.
    if (this.nameOf(provider) === BUILTIN_PROVIDER_NAME) timeoutMs = Number.POSITIVE_INFINITY;
    const outcome = await boundedCall(fn, timeoutMs, {
      onLate: (late) =>
        this.logger.debug(`Memory provider '${this.nameOf(provider)}' ${hook} settled after its timeout (${late.status}); the late result was dropped`),
    });
    if (outcome.status === "timeout") {
      this.logger.warn(
        `Memory provider '${this.nameOf(provider)}' ${hook} timed out after ${formatSeconds(timeoutMs)}; continuing without it (the call keeps running detached). Raise hookTimeoutMs if the provider is only slow.`,
      );
    }
    return outcome;
  }

  /**
   * Log one provider hook's failure at the level `HOOK_FAILURE_LOG` gives that hook. `label`
   * overrides the table's name for the hook (e.g. `handle_tool_call(<tool>)`).
   */
  private logHookFailure(provider: MemoryProvider, hook: ProviderHook, reason: string, error?: unknown, label?: string): void {
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
   * checkpoint failure aborts `onPreCompress`). `callLabel` names the hook in the timeout
   * message when it differs from the table's label.
   */
  private async fanOut<T>(
    providers: readonly MemoryProvider[],
    hook: ProviderHook,
    call: (provider: MemoryProvider) => T | PromiseLike<T>,
    onOutcome?: (provider: MemoryProvider, outcome: BoundedOutcome<Awaited<T>>) => void,
    callLabel: string = HOOK_FAILURE_LOG[hook].label,
  ): Promise<void> {
    for (const provider of providers) {
      const outcome = await this.callHook(provider, callLabel, () => call(provider));
      if (outcome.status === "error") this.logHookFailure(provider, hook, describeError(outcome.error), outcome.error);
      onOutcome?.(provider, outcome);
    }
  }

  /**
   * `scrubSecrets` that never throws: a value the scrubber refuses (e.g. nested too deeply) is
   * logged as a warning and not handed to any provider.
   */
  private scrub<T>(value: T, what: string): { ok: true; value: T } | { ok: false; reason: string } {
    try {
      return { ok: true, value: scrubSecrets(value) };
    } catch (error) {
      const reason = error instanceof RangeError ? `too deeply nested to scrub (${error.message})` : describeError(error);
      this.logger.warn(`Memory manager could not scrub ${what}: ${reason}; it was not handed to any memory provider.`);
      return { ok: false, reason };
    }
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
    return escapeToolResult(await this.routeToolCall(name, args, options));
  }

  private async routeToolCall(name: string, args: Record<string, unknown>, options: ToolCallOptions): Promise<string> {
    const provider = this.routeFor(name);
    if (!provider) return JSON.stringify({ error: `No memory provider handles tool '${name}'` });
    const given = plainArgs(args);
    const builtinMemoryTool = name === "memory" && this.nameOf(provider) === BUILTIN_PROVIDER_NAME;
    let callArgs = given;
    if (!builtinMemoryTool) {
      const scrubbed = this.scrub(given, `the arguments of tool '${name}'`);
      if (!scrubbed.ok) return JSON.stringify({ error: `Memory tool '${name}' arguments rejected: ${scrubbed.reason}. Pass flat, plain JSON arguments.` });
      callArgs = scrubbed.value;
    }
    const hook = `handle_tool_call(${name})`;
    const outcome = await this.callHook(provider, hook, () => provider.handleToolCall(name, callArgs, { ...options }));
    if (outcome.status === "timeout") {
      return JSON.stringify({ error: `Memory tool '${name}' timed out after ${formatSeconds(outcome.timeoutMs)} (provider '${this.nameOf(provider)}'); the call was abandoned, try again later.` });
    }
    let result: string;
    try {
      if (outcome.status === "error") throw outcome.error;
      const raw: unknown = outcome.value;
      result = typeof raw === "string" ? raw : (JSON.stringify(raw ?? null) ?? "null");
    } catch (error) {
      const message = describeError(error);
      this.logHookFailure(provider, "handle_tool_call", message, undefined, hook);
      return JSON.stringify({ error: `Memory tool '${name}' failed: ${message}` });
    }
    if (builtinMemoryTool) {
      try {
        const sessionId = typeof options.sessionId === "string" && options.sessionId ? options.sessionId : undefined;
        await this.notifyMemoryToolWrite(result, given, {
          buildMetadata: () => ({ toolName: "memory", writeOrigin: "memory_tool", ...(sessionId ? { sessionId } : {}) }),
        });
      } catch (error) {
        this.logger.debug(`Mirroring built-in memory write failed: ${describeError(error)}`);
      }
    }
    return result;
  }

  // --- prompt and recall -----------------------------------------------------------------------

  /**
   * Every offered provider's non-empty static `systemPromptBlock()`, joined by a blank line. The
   * external provider's block is left out while it is withheld (`setExternalEnabled(false)`).
   */
  async buildSystemPrompt(): Promise<string> {
    const blocks: string[] = [];
    await this.fanOut(this.offeredProviders(), "system_prompt_block", (provider) => provider.systemPromptBlock(), (_provider, outcome) => {
      if (outcome.status === "ok" && typeof outcome.value === "string" && outcome.value.trim() !== "") blocks.push(outcome.value);
    });
    return blocks.join("\n\n");
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
    const stripped = stripSkillScaffolding(query);
    if (stripped.trim() === "") return "";
    const scrubbed = this.scrub(stripped, "the recall query");
    if (!scrubbed.ok) return "";
    const safeQuery = scrubbed.value;
    const sessionId = options.sessionId ?? "";
    const results = await Promise.all(
      [...this.list].map(async (provider) => {
        try {
          return await this.prefetchProvider(provider, safeQuery, sessionId);
        } catch (error) {
          this.logHookFailure(provider, "prefetch", describeError(error));
          return "";
        }
      }),
    );
    return results.filter((r) => r.trim() !== "").join("\n\n");
  }

  /**
   * The recall block for the upcoming model call: `prefetchAll(query)` wrapped by `fenceRecall`,
   * ready to append to the user message (`""` when nothing was recalled). Whatever the stored
   * memories contain, the block has one opening and one closing fence, at its ends, with every
   * recalled character between them. Call it after `onTurnStart`; skip it for trivial prompts
   * (`isTrivialPrompt`). Never throws.
   */
  async recall(query: string, options: { sessionId?: string } = {}): Promise<string> {
    return fenceRecall(await this.prefetchAll(query, options), { logger: this.logger });
  }

  private async prefetchProvider(provider: MemoryProvider, query: string, sessionId: string): Promise<string> {
    if (this.nameOf(provider) === BUILTIN_PROVIDER_NAME) {
      const value: unknown = await provider.prefetch(query, { sessionId });
      return typeof value === "string" ? value : value == null ? "" : String(value);
    }
    if (this.inflightPrefetch.has(provider)) {
      this.logger.debug(`Memory provider '${this.nameOf(provider)}' prefetch still running; skipping this turn`);
      return "";
    }
    // While a timed-out call is still running the provider is skipped, not called again.
    this.inflightPrefetch.add(provider);
    const outcome = await boundedCall(() => provider.prefetch(query, { sessionId }), this.prefetchTimeoutMs, {
      onLate: () => this.inflightPrefetch.delete(provider),
    });
    if (outcome.status === "timeout") {
      this.logger.warn(
        `Memory provider '${this.nameOf(provider)}' prefetch timed out after ${this.prefetchTimeoutMs / 1000}s; skipping it until the stuck call returns`,
      );
      return "";
    }
    this.inflightPrefetch.delete(provider);
    if (outcome.status === "error") throw outcome.error;
    const value: unknown = outcome.value;
    if (value !== null && value !== undefined && typeof value !== "string") {
      // "[object Object]" or "42" is no recall; never put it in front of the model.
      this.logger.warn(`Memory provider '${this.nameOf(provider)}' prefetch returned ${Array.isArray(value) ? "an array" : typeof value}, not a string; ignored. A provider's prefetch() must return recalled text.`);
      return "";
    }
    const text = value ?? "";
    if (text.trim() === "") return "";
    return spillIfOversized(text, {
      sessionId: sessionId || null,
      source: `${this.nameOf(provider)} memory prefetch`,
      config: this.capturedSpillConfig ?? normalizeSpillConfig(this.spillOptions),
      hermesHome: this.hermesHome,
      logger: this.logger,
    });
  }

  /**
   * Ask every provider to pre-warm recall for the next turn. Returns immediately: the calls run on
   * the background queue (kind `prefetch`) in the caller's profile scope.
   */
  queuePrefetchAll(query: string, options: { sessionId?: string } = {}): void {
    const providers = [...this.list];
    if (providers.length === 0) return;
    const stripped = stripSkillScaffolding(query);
    if (stripped.trim() === "") return;
    const scrubbed = this.scrub(stripped, "the recall query");
    if (!scrubbed.ok) return;
    const safeQuery = scrubbed.value;
    const sessionId = options.sessionId ?? "";
    this.schedule("prefetch", () => this.fanOut(providers, "queue_prefetch", (provider) => provider.queuePrefetch(safeQuery, { sessionId })));
  }

  /** `"<glyph> <label> — recalled N memories"` for every provider reporting a recall status. */
  describeRecall(): string {
    const statuses: Array<RecallStatus | null> = [];
    for (const provider of this.list) {
      try {
        const status: unknown = provider.recallStatus();
        if (status === null || status === undefined) continue;
        const { providerLabel, count, glyph } = status as Partial<RecallStatus>;
        // Only plain values reach the indicator: a label whose toString throws cannot break it.
        if (typeof providerLabel !== "string") throw new Error(`recallStatus() returned a providerLabel that is not a string`);
        statuses.push({ providerLabel, count: typeof count === "number" ? count : 0, ...(typeof glyph === "string" ? { glyph } : {}) });
      } catch (error) {
        this.logHookFailure(provider, "recall_status", describeError(error));
      }
    }
    return describeRecall(statuses);
  }

  // --- turns and background work ---------------------------------------------------------------

  /**
   * Hand a completed turn to every provider. Returns synchronously in microseconds: user text,
   * assistant text and `messages` are scrubbed together here, and the `syncTurn` calls run later
   * on the FIFO background queue (kind `write`). A bare `/skill` invocation is not synced. Skip
   * this for interrupted turns. After `shutdownAll()` the turn is dropped with a warning.
   */
  syncAll(
    user: string,
    assistant: string,
    options: { sessionId?: string; messages?: ChatMessage[]; turnAuthor?: TurnAuthor } = {},
  ): void {
    const providers = [...this.list];
    if (providers.length === 0) return;
    const userText = stripSkillScaffolding(user);
    if (userText !== user && userText.trim() === "") return;
    const messages = Array.isArray(options.messages) ? [...options.messages] : undefined;
    const scrubbed = this.scrub([userText, assistant ?? "", messages ?? null] as const, "a turn");
    // The turn is dropped; scrub() logged the warning.
    if (!scrubbed.ok) return;
    const [safeUser, safeAssistant, safeMessages] = scrubbed.value;
    const base: SyncTurnOptions = { sessionId: options.sessionId ?? "" };
    if (safeMessages) base.messages = safeMessages as ChatMessage[];
    if (options.turnAuthor) base.turnAuthor = { ...options.turnAuthor };
    this.schedule("write", () => this.fanOut(providers, "sync_turn", (provider) => provider.syncTurn(safeUser, safeAssistant, { ...base })));
  }

  /**
   * Wait until everything queued before this call has run. Resolves `true` when done (also when
   * nothing was ever queued or the manager is shut down), `false` when `timeoutMs` passed first.
   */
  async flushPending(timeoutMs?: number): Promise<boolean> {
    if (!this.queue || this.queue.isClosed) return true;
    return this.queue.waitForIdle(timeoutMs);
  }

  private schedule(kind: BackgroundTaskKind, fn: () => Promise<void>): void {
    if (this.shuttingDown) {
      this.logger.warn(`Memory manager is shutting down; rejecting late ${kind} task`);
      return;
    }
    // Created lazily, so a manager that never queues work holds no queue at all.
    this.queue ??= new BackgroundQueue((error, taskKind) =>
      this.logger.warn(`Memory background ${taskKind} task failed: ${describeError(error)}`),
    );
    if (!this.queue.enqueue(kind, fn)) {
      this.logger.warn(`Memory manager shut down during ${kind} submission; task rejected`);
    }
  }

  /** Start of a turn (1-based `turnNumber`), before `prefetchAll`. The message is scrubbed. */
  async onTurnStart(turnNumber: number, message: string, options: TurnStartOptions = {}): Promise<void> {
    const scrubbed = this.scrub(typeof message === "string" ? message : "", "the turn's message");
    if (!scrubbed.ok) return;
    const safeMessage = scrubbed.value;
    await this.fanOut([...this.list], "on_turn_start", (provider) => provider.onTurnStart(turnNumber, safeMessage, { ...options }));
  }

  /**
   * A real session boundary (exit, `/reset`, expiry). Hands every provider a scrubbed copy, each
   * call bounded by `hookTimeoutMs`. Never throws: a transcript that cannot be scrubbed (nested too
   * deeply) is dropped with a warning, and a provider that fails or times out is logged.
   */
  async onSessionEnd(messages: ChatMessage[]): Promise<void> {
    const scrubbed = this.scrub(Array.isArray(messages) ? [...messages] : [], "the session transcript");
    if (!scrubbed.ok) return;
    const safe = scrubbed.value;
    await this.fanOut([...this.list], "on_session_end", (provider) => provider.onSessionEnd(safe));
  }

  /**
   * `/new`-style boundary without blocking the caller: queues ONE background task that runs
   * `onSessionEnd(snapshot)` and then `onSessionSwitch(newSessionId, {reset: true, …})`, so the
   * old transcript is always attributed to the old session.
   */
  commitSessionBoundary(
    messages: ChatMessage[],
    options: { newSessionId: string; parentSessionId?: string; reason?: string },
  ): void {
    if (this.list.length === 0) return;
    const snapshot = Array.isArray(messages) ? [...messages] : [];
    const { newSessionId, parentSessionId = "", reason = "new_session" } = options;
    this.schedule("write", async () => {
      await this.onSessionEnd(snapshot);
      await this.onSessionSwitch(newSessionId, { parentSessionId, reset: true, reason });
    });
  }

  /**
   * The session id rotated without teardown. An empty id is a no-op (`true`). `rewound` is passed
   * only when true. Returns `false` when any provider threw or returned `false`; those providers
   * are remembered and `retryPendingSessionSwitch()` retries only them.
   */
  async onSessionSwitch(newSessionId: string, options: Partial<SessionSwitchOptions> = {}): Promise<boolean> {
    if (!newSessionId) return true;
    const { parentSessionId, reset, rewound, ...extra } = options;
    const forwarded = {
      ...extra,
      parentSessionId: parentSessionId ?? "",
      reset: reset === true,
      ...(rewound === true ? { rewound: true } : {}),
    } as SessionSwitchOptions;
    const failed = await this.switchProviders([...this.list], newSessionId, forwarded);
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
  ): Promise<MemoryProvider[]> {
    const failed: MemoryProvider[] = [];
    await this.fanOut(providers, "on_session_switch", (provider) => provider.onSessionSwitch(newSessionId, { ...options }), (provider, outcome) => {
      if (outcome.status === "ok" && (outcome.value as unknown) === false) this.logHookFailure(provider, "on_session_switch", "returned false");
      if (outcome.status !== "ok" || (outcome.value as unknown) === false) failed.push(provider);
    });
    return failed;
  }

  // --- compression -----------------------------------------------------------------------------

  /** True when some provider implements pre-compress checkpoint API `apiVersion` (default 2). */
  supportsPreCompressCheckpoint(apiVersion = 2): boolean {
    return this.list.some((p) => {
      const version = checkpointVersionOf(p);
      return version !== null && version >= apiVersion;
    });
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
    const requireCheckpoint = options.requireCheckpoint === true;
    const apiVersion = options.checkpointApiVersion ?? 2;
    const scrubbed = this.scrub(
      [Array.isArray(messages) ? [...messages] : [], Array.isArray(options.evidenceMessages) ? [...options.evidenceMessages] : null] as const,
      "the messages to compress",
    );
    if (!scrubbed.ok) {
      if (requireCheckpoint) throw new CheckpointUnavailableError(`the messages could not be scrubbed (${scrubbed.reason})`);
      return "";
    }
    const [raw, evidence] = scrubbed.value;
    const parts: string[] = [];
    let checkpointSucceeded = false;
    const isCheckpoint = (provider: MemoryProvider): boolean => (checkpointVersionOf(provider) ?? 1) >= apiVersion;
    await this.fanOut(
      [...this.list],
      "on_pre_compress",
      (provider) => {
        const checkpoint = isCheckpoint(provider);
        const payload = (checkpoint && evidence ? evidence : raw) as ChatMessage[];
        return provider.onPreCompress([...payload], { requireCheckpoint: checkpoint ? requireCheckpoint : false });
      },
      (provider, outcome) => {
        if (outcome.status === "ok") {
          const result: unknown = outcome.value;
          if (typeof result === "string" && result.trim() !== "") parts.push(result);
          if (isCheckpoint(provider)) checkpointSucceeded = true;
        } else if (outcome.status === "error" && requireCheckpoint && isCheckpoint(provider)) {
          // A checkpoint the host required failed: stop here and let the host see why.
          throw outcome.error;
        }
      },
    );
    if (requireCheckpoint && !checkpointSucceeded) {
      throw new CheckpointUnavailableError(`No active memory provider completed pre-compress checkpoint API v${apiVersion}`, {
        remediation: true,
      });
    }
    return parts.join("\n\n");
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
    const scrubbed = this.scrub([content ?? "", plainArgs(metadata)] as const, "a mirrored memory write");
    if (!scrubbed.ok) return;
    const [safeContent, safeMetadata] = scrubbed.value;
    await this.fanOut(
      this.list.filter((p) => this.nameOf(p) !== BUILTIN_PROVIDER_NAME),
      "on_memory_write",
      (provider) => provider.onMemoryWrite(action, target, safeContent, { ...(safeMetadata as MemoryWriteMetadata) }),
    );
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
    let parsed: unknown = result;
    if (typeof result === "string") {
      try {
        parsed = JSON.parse(result);
      } catch {
        return;
      }
    }
    if (!isRecord(parsed) || parsed.success !== true || parsed.staged === true) return;
    const toolArgs = plainArgs(args);
    const target = (nonEmptyString(own(toolArgs, "target")) ?? "memory") as MemoryWriteTarget;
    const operations = own(toolArgs, "operations");
    const batched = Array.isArray(operations) && operations.length > 0;
    const ops: unknown[] = batched ? (operations as unknown[]) : [toolArgs];

    for (let i = 0; i < ops.length; i++) {
      const op = ops[i];
      const opAction = isRecord(op) ? own(op, "action") : undefined;
      if (!isRecord(op) || typeof opAction !== "string" || !MIRRORED_ACTIONS.has(opAction)) continue;
      const action = opAction as MemoryWriteAction;
      try {
        const metadata: MemoryWriteMetadata = { ...(options.buildMetadata?.() ?? {}) };
        delete metadata.previousContent;
        delete metadata.previous_content;
        const oldText = nonEmptyString(own(op, "old_text")) ?? nonEmptyString(own(op, "oldText"));
        if (oldText) metadata.oldText = oldText;
        if (action !== "add") {
          const previous = batched
            ? this.batchEntry(parsed, action === "replace" ? "replaced_entries" : "removed_entries", i + 1)
            : nonEmptyString(own(parsed, action === "replace" ? "replaced_entry" : "removed_entry"));
          if (previous) metadata.previousContent = previous;
        }
        const content = nonEmptyString(own(op, "content")) ?? nonEmptyString(own(op, "new_text")) ?? "";
        await this.onMemoryWrite(action, target, content, metadata);
      } catch (error) {
        this.logger.debug(`Mirroring memory ${action} (operation ${i + 1}) failed: ${describeError(error)}`);
      }
    }
  }

  private batchEntry(result: Record<string, unknown>, key: string, index: number): string | undefined {
    const map = own(result, key);
    if (Array.isArray(map)) return undefined;
    if (!isRecord(map)) return undefined;
    return nonEmptyString(own(map, String(index)));
  }

  /** On the parent when a subagent finished: scrubbed task and result to every provider. */
  async onDelegation(task: string, result: string, options: Partial<DelegationOptions> = {}): Promise<void> {
    const scrubbed = this.scrub([task ?? "", result ?? ""] as const, "a delegation result");
    if (!scrubbed.ok) return;
    const [safeTask, safeResult] = scrubbed.value;
    const forwarded: DelegationOptions = { ...options, childSessionId: options.childSessionId ?? "" };
    await this.fanOut([...this.list], "on_delegation", (provider) => provider.onDelegation(safeTask, safeResult, { ...forwarded }));
  }

  // --- lifecycle -------------------------------------------------------------------------------

  /**
   * Initialise every provider with `ctx` plus `hermesHome` (the manager's home unless given) and
   * `platform` (`cli` unless given), each call bounded by `hookTimeoutMs`. A provider that fails or
   * times out is logged and stays registered; the returned list names each one (empty when all
   * succeeded) so a host can `removeProvider()` it, as `openMemory()` does.
   */
  async initializeAll(sessionId: string, ctx: Partial<InitContext> = {}): Promise<ProviderHookReport[]> {
    return this.initializeEach(sessionId, ctx, false);
  }

  /** Like `initializeAll`, but calls `initializeForInspection` (no network, no background work). */
  async initializeAllForInspection(sessionId: string, ctx: Partial<InitContext> = {}): Promise<ProviderHookReport[]> {
    return this.initializeEach(sessionId, ctx, true);
  }

  private async initializeEach(sessionId: string, ctx: Partial<InitContext>, inspection: boolean): Promise<ProviderHookReport[]> {
    const full: InitContext = {
      ...ctx,
      hermesHome: ctx.hermesHome ?? this.hermesHome,
      platform: ctx.platform ?? "cli",
    };
    const hook = inspection ? "initialize_for_inspection" : "initialize";
    const reports: ProviderHookReport[] = [];
    await this.fanOut(
      [...this.list],
      "initialize",
      (provider) => (inspection ? provider.initializeForInspection(sessionId, { ...full }) : provider.initialize(sessionId, { ...full })),
      (provider, outcome) => {
        const report = this.hookReport(provider, hook, outcome);
        if (report) reports.push(report);
      },
      hook,
    );
    return reports;
  }

  private hookReport(provider: MemoryProvider, hook: string, outcome: BoundedOutcome<unknown>): ProviderHookReport | null {
    if (outcome.status === "timeout") {
      return { name: this.nameOf(provider), hook, outcome: "timeout", reason: `did not settle within ${formatSeconds(outcome.timeoutMs)}` };
    }
    if (outcome.status === "error") return { name: this.nameOf(provider), hook, outcome: "error", reason: describeError(outcome.error) };
    return null;
  }

  /** A copy of what the last `shutdownAll()` drain found. */
  get shutdownDrainState(): DrainState {
    return copyDrainState(this.drainState);
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
    this.shutdownPromise ??= this.runShutdown();
    return this.shutdownPromise;
  }

  private async runShutdown(): Promise<DrainState> {
    this.shuttingDown = true;
    const queue = this.queue;
    const stuckProviders: ProviderHookReport[] = [];
    const failedProviders: ProviderHookReport[] = [];
    if (!queue) {
      this.drainState = { status: "drained", abandonedWrites: 0, abandonedPrefetches: 0, activeTasks: 0, stuckProviders, failedProviders };
    } else {
      this.drainState = { status: "draining", abandonedWrites: 0, abandonedPrefetches: 0, activeTasks: queue.size, stuckProviders, failedProviders };
      const outcome = await queue.drain(this.drainTimeoutMs);
      this.drainState = {
        status: outcome.timedOut ? "timed_out" : "drained",
        abandonedWrites: outcome.abandonedWrites,
        abandonedPrefetches: outcome.abandonedPrefetches,
        activeTasks: outcome.activeTasks,
        stuckProviders,
        failedProviders,
      };
      if (outcome.timedOut) {
        this.logger.warn(
          `Memory shutdown drain timed out after ${(this.drainTimeoutMs / 1000).toFixed(2)}s; abandoning ${outcome.abandonedWrites} queued memory write(s) and ${outcome.abandonedPrefetches} queued prefetch(es); ${outcome.activeTasks} active task(s) remain detached`,
        );
      }
    }
    await this.fanOut([...this.list].reverse(), "shutdown", (provider) => provider.shutdown(), (provider, outcome) => {
      const report = this.hookReport(provider, "shutdown", outcome);
      if (report?.outcome === "timeout") stuckProviders.push(report);
      if (report?.outcome === "error") failedProviders.push(report);
    });
    return copyDrainState(this.drainState);
  }
}
