/**
 * The MemoryManager: one built-in provider plus at most one external provider, fan-out with
 * per-provider error isolation, a FIFO background queue for writes, bounded external prefetch,
 * egress scrubbing of every hand-off, and the checkpoint / session-switch plumbing
 * (REFERENCE §2, DESIGN §2.2).
 *
 * Port note: the Python manager inspects each hook's signature to decide which keyword arguments
 * a provider accepts ("legacy signatures"). TypeScript has no reliable signature sniffing, so the
 * manager always passes the full options object (DESIGN §2.1) and providers read what they need.
 * The legacy-signature behaviours (omitting `messages` for old `sync_turn`, positional metadata
 * for 3-argument `on_memory_write`, skipping `require_checkpoint` for bare `on_pre_compress`,
 * refusing dynamically synthesised hooks) are therefore dropped. v1 checkpoint providers still
 * never see `requireCheckpoint: true`.
 */
import { BackgroundQueue, type BackgroundTaskKind } from "./background-queue.js";
import { CheckpointUnavailableError, HermesMemoryError, describeError } from "./errors.js";
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
import { describeRecall } from "./recall.js";
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
}

/** Default bound for an external provider's `prefetch` (ms). */
export const DEFAULT_EXTERNAL_PREFETCH_TIMEOUT_MS = 8000;
/** Default wait for queued background work in `shutdownAll()` (ms). */
export const DEFAULT_DRAIN_TIMEOUT_MS = 5000;

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
  const raw: unknown = (provider as { preCompressCheckpointApiVersion?: unknown }).preCompressCheckpointApiVersion;
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

type PrefetchOutcome = { ok: true; value: unknown } | { ok: false; error: unknown };

const TIMED_OUT = Symbol("timed-out");

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
  private readonly toolRoutes = new Map<string, MemoryProvider>();
  private externalName: string | null = null;
  private capturedSpillConfig: SpillConfig | null = null;
  private readonly inflightPrefetch = new Map<MemoryProvider, Promise<PrefetchOutcome>>();
  private queue: BackgroundQueue | null = null;
  private shuttingDown = false;
  private shutdownPromise: Promise<DrainState> | null = null;
  private drainState: DrainState = { status: "not_started", abandonedWrites: 0, abandonedPrefetches: 0, activeTasks: 0 };
  private pendingSwitch: { providers: MemoryProvider[]; newSessionId: string; options: SessionSwitchOptions } | null = null;

  private readonly logger: Logger;
  private readonly prefetchTimeoutMs: number;
  private readonly drainTimeoutMs: number;
  private readonly hermesHome: string;
  private readonly spillOptions: Partial<SpillConfig>;

  /**
   * @throws HermesMemoryError `INVALID_ARGUMENT` when a timeout is not a positive number.
   */
  constructor(options: MemoryManagerOptions = {}) {
    const timeout = options.externalPrefetchTimeoutMs ?? DEFAULT_EXTERNAL_PREFETCH_TIMEOUT_MS;
    if (typeof timeout !== "number" || !(timeout > 0)) {
      throw new HermesMemoryError({
        code: "INVALID_ARGUMENT",
        message: `externalPrefetchTimeoutMs must be positive (got ${String(timeout)}); pass a number of milliseconds > 0 or omit it for the 8000 ms default.`,
      });
    }
    const drain = options.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS;
    if (typeof drain !== "number" || !(drain >= 0)) {
      throw new HermesMemoryError({
        code: "INVALID_ARGUMENT",
        message: `drainTimeoutMs must be a number >= 0 (got ${String(drain)}); omit it for the 5000 ms default.`,
      });
    }
    this.prefetchTimeoutMs = timeout;
    this.drainTimeoutMs = drain;
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
    return this.list.find((p) => p.name === name);
  }

  /**
   * Register a provider. `builtin` is always accepted and placed before any external provider; a
   * second external provider is refused with a warning (returns `false`). The provider's tool
   * schemas are read before any state changes: if `getToolSchemas()` throws, this rethrows and the
   * manager is unchanged. Tools named like a reserved core tool (external providers only) or
   * already routed to another provider are ignored with a warning — first registered wins.
   */
  addProvider(provider: MemoryProvider): boolean {
    const isBuiltin = provider.name === BUILTIN_PROVIDER_NAME;
    if (!isBuiltin && this.externalName !== null) {
      this.logger.warn(
        `Rejected memory provider '${provider.name}' — external provider '${this.externalName}' is already registered. Only one external memory provider is allowed at a time. Configure which one via memory.provider in config.yaml.`,
      );
      return false;
    }
    const schemas = provider.getToolSchemas();
    const rawSchemas: unknown[] = Array.isArray(schemas) ? schemas : [];

    if (isBuiltin) {
      // The built-in provider always comes first, even when registered after the external one.
      const firstExternal = this.list.findIndex((p) => p.name !== BUILTIN_PROVIDER_NAME);
      if (firstExternal < 0) this.list.push(provider);
      else this.list.splice(firstExternal, 0, provider);
    } else {
      this.externalName = provider.name;
      this.capturedSpillConfig = normalizeSpillConfig(this.spillOptions);
      this.list.push(provider);
    }

    for (const raw of rawSchemas) {
      const schema = normalizeToolSchema(raw);
      if (!schema) continue;
      const toolName = schema.name;
      if (!isBuiltin && RESERVED_CORE_TOOL_NAMES.has(toolName)) {
        this.logger.warn(
          `Memory provider '${provider.name}' tool '${toolName}' shadows a reserved core tool name; registration ignored. Core tools always win — rename the provider's tool to something unique.`,
        );
        continue;
      }
      const owner = this.toolRoutes.get(toolName);
      if (owner) {
        this.logger.warn(
          `Memory tool name conflict: '${toolName}' already registered by ${owner.name}, ignoring from ${provider.name}`,
        );
        continue;
      }
      this.toolRoutes.set(toolName, provider);
    }
    this.logger.info(`Memory provider '${provider.name}' registered (${rawSchemas.length} tools)`);
    return true;
  }

  /**
   * Tool schemas to advertise to the model, normalised (bare form) and de-duplicated. Only tools
   * that `handleToolCall` would route are listed, each once, from the provider that owns it. A
   * provider whose `getToolSchemas()` throws is skipped with a warning.
   */
  getToolSchemas(): ToolSchema[] {
    const out: ToolSchema[] = [];
    const seen = new Set<string>();
    for (const provider of this.list) {
      let schemas: unknown;
      try {
        schemas = provider.getToolSchemas();
      } catch (error) {
        this.logger.warn(`Memory provider '${provider.name}' get_tool_schemas() failed: ${describeError(error)}`);
        continue;
      }
      if (!Array.isArray(schemas)) continue;
      for (const raw of schemas) {
        const schema = normalizeToolSchema(raw);
        if (!schema) {
          this.logger.warn(`Memory provider '${provider.name}' returned a tool schema without a name; skipping it`);
          continue;
        }
        if (seen.has(schema.name) || this.toolRoutes.get(schema.name) !== provider) continue;
        seen.add(schema.name);
        out.push(schema);
      }
    }
    return out;
  }

  /** Names of every routed tool. */
  getToolNames(): Set<string> {
    return new Set(this.toolRoutes.keys());
  }

  /** True when `handleToolCall(name, …)` would reach a provider. */
  hasTool(name: string): boolean {
    return this.toolRoutes.has(name);
  }

  // --- tools -----------------------------------------------------------------------------------

  /**
   * Route a model tool call to the provider that owns the tool. Never throws: an unrouted tool or
   * a provider failure becomes a JSON `{"error": …}` string; a non-string result is
   * JSON-stringified. Arguments are scrubbed first. After the built-in `memory` tool returns, its
   * successful writes are mirrored to the external provider (`notifyMemoryToolWrite`).
   */
  async handleToolCall(name: string, args: Record<string, unknown>, options: ToolCallOptions = {}): Promise<string> {
    const provider = this.toolRoutes.get(name);
    if (!provider) return JSON.stringify({ error: `No memory provider handles tool '${name}'` });
    const safeArgs = scrubSecrets(isRecord(args) ? args : {});
    let result: string;
    try {
      const raw: unknown = await provider.handleToolCall(name, safeArgs, { ...options });
      result = typeof raw === "string" ? raw : (JSON.stringify(raw ?? null) ?? "null");
    } catch (error) {
      const message = describeError(error);
      this.logger.error(`Memory provider '${provider.name}' handle_tool_call(${name}) failed: ${message}`);
      return JSON.stringify({ error: `Memory tool '${name}' failed: ${message}` });
    }
    if (name === "memory" && provider.name === BUILTIN_PROVIDER_NAME) {
      try {
        const sessionId = typeof options.sessionId === "string" && options.sessionId ? options.sessionId : undefined;
        await this.notifyMemoryToolWrite(result, safeArgs, {
          buildMetadata: () => ({ toolName: "memory", writeOrigin: "memory_tool", ...(sessionId ? { sessionId } : {}) }),
        });
      } catch (error) {
        this.logger.debug(`Mirroring built-in memory write failed: ${describeError(error)}`);
      }
    }
    return result;
  }

  // --- prompt and recall -----------------------------------------------------------------------

  /** Every provider's non-empty static `systemPromptBlock()`, joined by a blank line. */
  async buildSystemPrompt(): Promise<string> {
    const blocks: string[] = [];
    for (const provider of [...this.list]) {
      try {
        const block: unknown = await provider.systemPromptBlock();
        if (typeof block === "string" && block.trim() !== "") blocks.push(block);
      } catch (error) {
        this.logger.warn(`Memory provider '${provider.name}' system_prompt_block() failed: ${describeError(error)}`);
      }
    }
    return blocks.join("\n\n");
  }

  /**
   * Recall for the upcoming model call; call it after `onTurnStart` and skip it for trivial
   * prompts (`isTrivialPrompt`). Providers are queried concurrently in the caller's profile scope.
   * The built-in provider is never timed out or spilled; each external provider is bounded by
   * `externalPrefetchTimeoutMs` and skipped (not re-called) while a previous call is in flight —
   * a result arriving after the timeout is dropped. Non-empty external results pass through
   * `spillIfOversized`. Results joined by a blank line; `""` when nothing was recalled. Never
   * throws. Wrap the result with `fenceRecall` before adding it to the user message.
   */
  async prefetchAll(query: string, options: { sessionId?: string } = {}): Promise<string> {
    const stripped = stripSkillScaffolding(query);
    if (stripped.trim() === "") return "";
    const safeQuery = scrubSecrets(stripped);
    const sessionId = options.sessionId ?? "";
    const results = await Promise.all(
      [...this.list].map(async (provider) => {
        try {
          return await this.prefetchProvider(provider, safeQuery, sessionId);
        } catch (error) {
          this.logger.debug(`Memory provider '${provider.name}' prefetch failed (non-fatal): ${describeError(error)}`);
          return "";
        }
      }),
    );
    return results.filter((r) => r.trim() !== "").join("\n\n");
  }

  private async prefetchProvider(provider: MemoryProvider, query: string, sessionId: string): Promise<string> {
    if (provider.name === BUILTIN_PROVIDER_NAME) {
      const value: unknown = await provider.prefetch(query, { sessionId });
      return typeof value === "string" ? value : value == null ? "" : String(value);
    }
    if (this.inflightPrefetch.has(provider)) {
      this.logger.debug(`Memory provider '${provider.name}' prefetch still running; skipping this turn`);
      return "";
    }
    const settled: Promise<PrefetchOutcome> = (async () => provider.prefetch(query, { sessionId }))().then(
      (value) => ({ ok: true, value }),
      (error: unknown) => ({ ok: false, error }),
    );
    this.inflightPrefetch.set(provider, settled);
    void settled.then(() => {
      if (this.inflightPrefetch.get(provider) === settled) this.inflightPrefetch.delete(provider);
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<typeof TIMED_OUT>((resolve) => {
      timer = setTimeout(() => resolve(TIMED_OUT), this.prefetchTimeoutMs);
    });
    const outcome = await Promise.race([settled, timeout]);
    if (timer) clearTimeout(timer);
    if (outcome === TIMED_OUT) {
      this.logger.warn(
        `Memory provider '${provider.name}' prefetch timed out after ${this.prefetchTimeoutMs / 1000}s; skipping it until the stuck call returns`,
      );
      return "";
    }
    if (!outcome.ok) throw outcome.error;
    const value = outcome.value;
    const text = typeof value === "string" ? value : value == null ? "" : String(value);
    if (text.trim() === "") return "";
    return spillIfOversized(text, {
      sessionId: sessionId || null,
      source: `${provider.name} memory prefetch`,
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
    const safeQuery = scrubSecrets(stripped);
    const sessionId = options.sessionId ?? "";
    this.schedule("prefetch", async () => {
      for (const provider of providers) {
        try {
          await provider.queuePrefetch(safeQuery, { sessionId });
        } catch (error) {
          this.logger.debug(`Memory provider '${provider.name}' queue_prefetch failed (non-fatal): ${describeError(error)}`);
        }
      }
    });
  }

  /** `"<glyph> <label> — recalled N memories"` for every provider reporting a recall status. */
  describeRecall(): string {
    const statuses: Array<RecallStatus | null> = [];
    for (const provider of this.list) {
      try {
        statuses.push(provider.recallStatus());
      } catch (error) {
        this.logger.debug(`Memory provider '${provider.name}' recall_status failed (non-fatal): ${describeError(error)}`);
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
    const [safeUser, safeAssistant, safeMessages] = scrubSecrets([userText, assistant ?? "", messages ?? null] as const);
    const base: SyncTurnOptions = { sessionId: options.sessionId ?? "" };
    if (safeMessages) base.messages = safeMessages as ChatMessage[];
    if (options.turnAuthor) base.turnAuthor = { ...options.turnAuthor };
    this.schedule("write", async () => {
      for (const provider of providers) {
        try {
          await provider.syncTurn(safeUser, safeAssistant, { ...base });
        } catch (error) {
          this.logger.warn(`Memory provider '${provider.name}' sync_turn failed: ${describeError(error)}`);
        }
      }
    });
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
    const safeMessage = scrubSecrets(typeof message === "string" ? message : "");
    for (const provider of [...this.list]) {
      try {
        await provider.onTurnStart(turnNumber, safeMessage, { ...options });
      } catch (error) {
        this.logger.warn(`Memory provider '${provider.name}' on_turn_start failed: ${describeError(error)}`);
      }
    }
  }

  /** A real session boundary (exit, `/reset`, expiry). Hands every provider a scrubbed copy. */
  async onSessionEnd(messages: ChatMessage[]): Promise<void> {
    const safe = scrubSecrets(Array.isArray(messages) ? [...messages] : []);
    for (const provider of [...this.list]) {
      try {
        await provider.onSessionEnd(safe);
      } catch (error) {
        this.logger.warn(`Memory provider '${provider.name}' on_session_end failed: ${describeError(error)}`, error);
      }
    }
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
    for (const provider of providers) {
      try {
        const result: unknown = await provider.onSessionSwitch(newSessionId, { ...options });
        if (result === false) {
          this.logger.warn(`Memory provider '${provider.name}' on_session_switch failed: returned false`);
          failed.push(provider);
        }
      } catch (error) {
        this.logger.warn(`Memory provider '${provider.name}' on_session_switch failed: ${describeError(error)}`);
        failed.push(provider);
      }
    }
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
    const [raw, evidence] = scrubSecrets([
      Array.isArray(messages) ? [...messages] : [],
      Array.isArray(options.evidenceMessages) ? [...options.evidenceMessages] : null,
    ] as const);
    const parts: string[] = [];
    let checkpointSucceeded = false;
    for (const provider of [...this.list]) {
      const isCheckpoint = (checkpointVersionOf(provider) ?? 1) >= apiVersion;
      const payload = (isCheckpoint && evidence ? evidence : raw) as ChatMessage[];
      try {
        const result: unknown = await provider.onPreCompress([...payload], {
          requireCheckpoint: isCheckpoint ? requireCheckpoint : false,
        });
        if (typeof result === "string" && result.trim() !== "") parts.push(result);
        if (isCheckpoint) checkpointSucceeded = true;
      } catch (error) {
        this.logger.debug(`Memory provider '${provider.name}' on_pre_compress failed: ${describeError(error)}`);
        if (requireCheckpoint && isCheckpoint) throw error;
      }
    }
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
    const [safeContent, safeMetadata] = scrubSecrets([content ?? "", { ...(metadata ?? {}) }] as const);
    for (const provider of this.list.filter((p) => p.name !== BUILTIN_PROVIDER_NAME)) {
      try {
        await provider.onMemoryWrite(action, target, safeContent, { ...(safeMetadata as MemoryWriteMetadata) });
      } catch (error) {
        this.logger.warn(`Memory provider '${provider.name}' on_memory_write failed: ${describeError(error)}`);
      }
    }
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
    const toolArgs = isRecord(args) ? args : {};
    const target = (nonEmptyString(toolArgs.target) ?? "memory") as MemoryWriteTarget;
    const batched = Array.isArray(toolArgs.operations) && toolArgs.operations.length > 0;
    const ops: unknown[] = batched ? (toolArgs.operations as unknown[]) : [toolArgs];

    for (let i = 0; i < ops.length; i++) {
      const op = ops[i];
      if (!isRecord(op) || typeof op.action !== "string" || !MIRRORED_ACTIONS.has(op.action)) continue;
      const action = op.action as MemoryWriteAction;
      try {
        const metadata: MemoryWriteMetadata = { ...(options.buildMetadata?.() ?? {}) };
        delete metadata.previousContent;
        delete metadata.previous_content;
        const oldText = nonEmptyString(op.old_text) ?? nonEmptyString(op.oldText);
        if (oldText) metadata.oldText = oldText;
        if (action !== "add") {
          const previous = batched
            ? this.batchEntry(parsed, action === "replace" ? "replaced_entries" : "removed_entries", i + 1)
            : nonEmptyString(parsed[action === "replace" ? "replaced_entry" : "removed_entry"]);
          if (previous) metadata.previousContent = previous;
        }
        const content = nonEmptyString(op.content) ?? nonEmptyString(op.new_text) ?? "";
        await this.onMemoryWrite(action, target, content, metadata);
      } catch (error) {
        this.logger.debug(`Mirroring memory ${action} (operation ${i + 1}) failed: ${describeError(error)}`);
      }
    }
  }

  private batchEntry(result: Record<string, unknown>, key: string, index: number): string | undefined {
    const map = result[key];
    if (Array.isArray(map)) return undefined;
    if (!isRecord(map)) return undefined;
    return nonEmptyString(map[String(index)]);
  }

  /** On the parent when a subagent finished: scrubbed task and result to every provider. */
  async onDelegation(task: string, result: string, options: Partial<DelegationOptions> = {}): Promise<void> {
    const [safeTask, safeResult] = scrubSecrets([task ?? "", result ?? ""] as const);
    const forwarded: DelegationOptions = { ...options, childSessionId: options.childSessionId ?? "" };
    for (const provider of [...this.list]) {
      try {
        await provider.onDelegation(safeTask, safeResult, { ...forwarded });
      } catch (error) {
        this.logger.warn(`Memory provider '${provider.name}' on_delegation failed: ${describeError(error)}`);
      }
    }
  }

  // --- lifecycle -------------------------------------------------------------------------------

  /**
   * Initialise every provider with `ctx` plus `hermesHome` (the manager's home unless given) and
   * `platform` (`cli` unless given). A provider that fails is logged and stays registered.
   */
  async initializeAll(sessionId: string, ctx: Partial<InitContext> = {}): Promise<void> {
    await this.initializeEach(sessionId, ctx, false);
  }

  /** Like `initializeAll`, but calls `initializeForInspection` (no network, no background work). */
  async initializeAllForInspection(sessionId: string, ctx: Partial<InitContext> = {}): Promise<void> {
    await this.initializeEach(sessionId, ctx, true);
  }

  private async initializeEach(sessionId: string, ctx: Partial<InitContext>, inspection: boolean): Promise<void> {
    const full: InitContext = {
      ...ctx,
      hermesHome: ctx.hermesHome ?? this.hermesHome,
      platform: ctx.platform ?? "cli",
    };
    for (const provider of [...this.list]) {
      try {
        if (inspection) await provider.initializeForInspection(sessionId, { ...full });
        else await provider.initialize(sessionId, { ...full });
      } catch (error) {
        this.logger.warn(`Memory provider '${provider.name}' initialize failed: ${describeError(error)}`);
      }
    }
  }

  /** A copy of what the last `shutdownAll()` drain found. */
  get shutdownDrainState(): DrainState {
    return { ...this.drainState };
  }

  /**
   * Stop accepting background work, wait up to `drainTimeoutMs` for queued tasks, abandon what is
   * left (reported in the returned state and a warning), then call `shutdown()` on every provider
   * in reverse registration order, each isolated. Idempotent: later calls return the same state.
   */
  shutdownAll(): Promise<DrainState> {
    this.shutdownPromise ??= this.runShutdown();
    return this.shutdownPromise;
  }

  private async runShutdown(): Promise<DrainState> {
    this.shuttingDown = true;
    const queue = this.queue;
    if (!queue) {
      this.drainState = { status: "drained", abandonedWrites: 0, abandonedPrefetches: 0, activeTasks: 0 };
    } else {
      this.drainState = { status: "draining", abandonedWrites: 0, abandonedPrefetches: 0, activeTasks: queue.size };
      const outcome = await queue.drain(this.drainTimeoutMs);
      this.drainState = {
        status: outcome.timedOut ? "timed_out" : "drained",
        abandonedWrites: outcome.abandonedWrites,
        abandonedPrefetches: outcome.abandonedPrefetches,
        activeTasks: outcome.activeTasks,
      };
      if (outcome.timedOut) {
        this.logger.warn(
          `Memory shutdown drain timed out after ${(this.drainTimeoutMs / 1000).toFixed(2)}s; abandoning ${outcome.abandonedWrites} queued memory write(s) and ${outcome.abandonedPrefetches} queued prefetch(es); ${outcome.activeTasks} active task(s) remain detached`,
        );
      }
    }
    for (const provider of [...this.list].reverse()) {
      try {
        await provider.shutdown();
      } catch (error) {
        this.logger.warn(`Memory provider '${provider.name}' shutdown failed: ${describeError(error)}`);
      }
    }
    return { ...this.drainState };
  }
}
