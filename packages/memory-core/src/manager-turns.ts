/**
 * What a turn hands the providers: the system-prompt blocks, recall for the upcoming model call
 * (concurrent, the external provider bounded and never called twice at once), recall warm-up and
 * completed turns on the background queue, the turn's start, the recall indicator and a finished
 * subagent's result. Everything handed over is scrubbed first.
 */
import type { BackgroundTaskKind } from "./background-queue.js";
import { boundedCall } from "./bounded-call.js";
import { describeProviderError as describeError } from "./plugin-describe.js";
import type { Logger } from "./logger.js";
import type { HookRunner } from "./manager-hooks.js";
import type { ProviderRegistry } from "./manager-registry.js";
import { BUILTIN_PROVIDER_NAME } from "./provider.js";
import type {
  ChatMessage,
  DelegationOptions,
  MemoryProvider,
  RecallStatus,
  SyncTurnOptions,
  TurnAuthor,
  TurnStartOptions,
} from "./provider.js";
import { describeRecall, fenceRecall } from "./recall.js";
import { spillIfOversized } from "./spill.js";

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

/** Puts one task on the manager's background queue (see `SessionLifecycle.schedule`). */
export type ScheduleTask = (kind: BackgroundTaskKind, fn: () => Promise<void>) => void;

/** What the turn's fan-out needs beyond the registry and the hook runner. */
export interface TurnFanOutOptions {
  logger: Logger;
  prefetchTimeoutMs: number;
  hermesHome: string;
  schedule: ScheduleTask;
}

/** The per-turn fan-out (the rules are `MemoryManager`'s). */
export class TurnFanOut {
  /** External providers whose `prefetch` is still running (a timed-out call keeps its place). */
  readonly inflightPrefetch = new Set<MemoryProvider>();
  private readonly logger: Logger;

  constructor(
    private readonly registry: ProviderRegistry,
    private readonly hooks: HookRunner,
    private readonly options: TurnFanOutOptions,
  ) {
    this.logger = options.logger;
  }

  /** Every offered provider's non-empty `systemPromptBlock()`, joined by a blank line. */
  async buildSystemPrompt(): Promise<string> {
    const blocks: string[] = [];
    await this.hooks.fanOut(
      this.registry.offeredProviders(),
      "system_prompt_block",
      (provider) => provider.systemPromptBlock(),
      (_provider, outcome) => {
        if (outcome.status === "ok" && typeof outcome.value === "string" && outcome.value.trim() !== "") blocks.push(outcome.value);
      },
    );
    return blocks.join("\n\n");
  }

  /** Recall from every provider concurrently, joined by a blank line; never throws. */
  async prefetchAll(query: string, options: { sessionId?: string }): Promise<string> {
    const safeQuery = this.recallQuery(query);
    if (safeQuery === null) return "";
    const sessionId = options.sessionId ?? "";
    const results = await Promise.all(
      [...this.registry.list].map(async (provider) => {
        try {
          return await this.prefetchProvider(provider, safeQuery, sessionId);
        } catch (error) {
          this.hooks.logHookFailure(provider, "prefetch", describeError(error));
          return "";
        }
      }),
    );
    return results.filter((r) => r.trim() !== "").join("\n\n");
  }

  /** `prefetchAll` wrapped by `fenceRecall`. */
  async recall(query: string, options: { sessionId?: string }): Promise<string> {
    return fenceRecall(await this.prefetchAll(query, options), { logger: this.logger });
  }

  /** The query without skill scaffolding, scrubbed; `null` when nothing is left to recall for. */
  private recallQuery(query: string): string | null {
    const stripped = stripSkillScaffolding(query);
    if (stripped.trim() === "") return null;
    const scrubbed = this.hooks.scrub(stripped, "the recall query");
    return scrubbed.ok ? scrubbed.value : null;
  }

  private async prefetchProvider(provider: MemoryProvider, query: string, sessionId: string): Promise<string> {
    const name = this.registry.nameOf(provider);
    if (name === BUILTIN_PROVIDER_NAME) {
      const value: unknown = await provider.prefetch(query, { sessionId });
      return typeof value === "string" ? value : value == null ? "" : String(value);
    }
    if (this.inflightPrefetch.has(provider)) {
      this.logger.debug(`Memory provider '${name}' prefetch still running; skipping this turn`);
      return "";
    }
    // While a timed-out call is still running the provider is skipped, not called again.
    this.inflightPrefetch.add(provider);
    const { prefetchTimeoutMs } = this.options;
    const outcome = await boundedCall(
      () => this.hooks.measure(provider, "prefetch", () => provider.prefetch(query, { sessionId })),
      prefetchTimeoutMs,
      {
        onLate: () => this.inflightPrefetch.delete(provider),
      },
    );
    if (outcome.status === "timeout") {
      // A call that held the event loop past the bound has already returned: its result is dropped, nothing is still running.
      const still = this.inflightPrefetch.has(provider);
      this.logger.warn(
        `Memory provider '${name}' prefetch timed out after ${prefetchTimeoutMs / 1000}s; ${still ? "skipping it until the stuck call returns" : "its late result was discarded"}`,
      );
      return "";
    }
    this.inflightPrefetch.delete(provider);
    if (outcome.status === "error") throw outcome.error;
    const value: unknown = outcome.value;
    if (value !== null && value !== undefined && typeof value !== "string") {
      // "[object Object]" or "42" is no recall; never put it in front of the model.
      this.logger.warn(
        `Memory provider '${name}' prefetch returned ${Array.isArray(value) ? "an array" : typeof value}, not a string; ignored. A provider's prefetch() must return recalled text.`,
      );
      return "";
    }
    const text = value ?? "";
    if (text.trim() === "") return "";
    return spillIfOversized(text, {
      sessionId: sessionId || null,
      source: `${name} memory prefetch`,
      config: this.registry.spillConfig(),
      hermesHome: this.options.hermesHome,
      logger: this.logger,
    });
  }

  /** Queue `queuePrefetch` on every provider (background kind `prefetch`). */
  queuePrefetchAll(query: string, options: { sessionId?: string }): void {
    const providers = [...this.registry.list];
    if (providers.length === 0) return;
    const safeQuery = this.recallQuery(query);
    if (safeQuery === null) return;
    const sessionId = options.sessionId ?? "";
    this.options.schedule("prefetch", () =>
      this.hooks.fanOut(providers, "queue_prefetch", (provider) => provider.queuePrefetch(safeQuery, { sessionId }), undefined, {
        queued: true,
      }),
    );
  }

  /** The recall indicator line of every provider reporting a recall status. */
  describeRecall(): string {
    const statuses: Array<RecallStatus | null> = [];
    for (const provider of this.registry.list) {
      try {
        const status: unknown = this.hooks.measure(provider, "recall_status", () => provider.recallStatus());
        if (status === null || status === undefined) continue;
        const { providerLabel, count, glyph } = status as Partial<RecallStatus>;
        // Only plain values reach the indicator: a label whose toString throws cannot break it.
        if (typeof providerLabel !== "string") throw new Error(`recallStatus() returned a providerLabel that is not a string`);
        statuses.push({ providerLabel, count: typeof count === "number" ? count : 0, ...(typeof glyph === "string" ? { glyph } : {}) });
      } catch (error) {
        this.hooks.logHookFailure(provider, "recall_status", describeError(error));
      }
    }
    return describeRecall(statuses);
  }

  /** Scrub a completed turn now and queue its `syncTurn` calls (background kind `write`). */
  syncAll(user: string, assistant: string, options: { sessionId?: string; messages?: ChatMessage[]; turnAuthor?: TurnAuthor }): void {
    const providers = [...this.registry.list];
    if (providers.length === 0) return;
    const userText = stripSkillScaffolding(user);
    if (userText !== user && userText.trim() === "") return;
    const messages = Array.isArray(options.messages) ? [...options.messages] : undefined;
    const scrubbed = this.hooks.scrub([userText, assistant ?? "", messages ?? null] as const, "a turn");
    // The turn is dropped; scrub() logged the warning.
    if (!scrubbed.ok) return;
    const [safeUser, safeAssistant, safeMessages] = scrubbed.value;
    const base: SyncTurnOptions = { sessionId: options.sessionId ?? "" };
    if (safeMessages) base.messages = safeMessages as ChatMessage[];
    if (options.turnAuthor) base.turnAuthor = { ...options.turnAuthor };
    this.options.schedule("write", () =>
      this.hooks.fanOut(providers, "sync_turn", (provider) => provider.syncTurn(safeUser, safeAssistant, { ...base }), undefined, {
        queued: true,
      }),
    );
  }

  /** `onTurnStart` on every provider with the scrubbed message. */
  async onTurnStart(turnNumber: number, message: string, options: TurnStartOptions): Promise<void> {
    const scrubbed = this.hooks.scrub(typeof message === "string" ? message : "", "the turn's message");
    if (!scrubbed.ok) return;
    const safeMessage = scrubbed.value;
    await this.hooks.fanOut([...this.registry.list], "on_turn_start", (provider) =>
      provider.onTurnStart(turnNumber, safeMessage, { ...options }),
    );
  }

  /** A finished subagent's scrubbed task and result to every provider. */
  async onDelegation(task: string, result: string, options: Partial<DelegationOptions>): Promise<void> {
    const scrubbed = this.hooks.scrub([task ?? "", result ?? ""] as const, "a delegation result");
    if (!scrubbed.ok) return;
    const [safeTask, safeResult] = scrubbed.value;
    const forwarded: DelegationOptions = { ...options, childSessionId: options.childSessionId ?? "" };
    await this.hooks.fanOut([...this.registry.list], "on_delegation", (provider) =>
      provider.onDelegation(safeTask, safeResult, { ...forwarded }),
    );
  }
}
