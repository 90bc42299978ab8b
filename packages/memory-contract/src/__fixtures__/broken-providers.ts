// Deliberately broken variants of the minimal provider, one mistake each. The kit's tests assert
// that each one fails exactly the clause that covers its mistake.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { ChatMessage, InitContext, SyncTurnOptions, ToolSchema } from "@hermes/memory-core";
import { MinimalProvider, type StoredItem } from "./minimal-provider.js";

/** syncTurn awaits a (simulated) network round-trip before returning. */
export class BlockingSyncProvider extends MinimalProvider {
  override async syncTurn(user: string, assistant: string, options: SyncTurnOptions): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 25));
    super.syncTurn(user, assistant, options);
  }
}

/** isAvailable() pings a server to see whether the backend is up. */
export class FetchInIsAvailableProvider extends MinimalProvider {
  override isAvailable(): boolean {
    void fetch("http://127.0.0.1:9/health").catch(() => undefined);
    return true;
  }
}

/** initialize() keeps a "last session" marker in ~/.minimal-cache instead of under hermesHome. */
export class HomeWritingProvider extends MinimalProvider {
  override initialize(sessionId: string, ctx: InitContext): void {
    super.initialize(sessionId, ctx);
    const dir = path.join(os.homedir(), ".minimal-cache");
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, "last-session"), sessionId);
  }
}

const GLOBAL_ITEMS: StoredItem[] = [];

/** Keeps its items in one module-level array: every profile sees every other profile's data. */
export class LeakyProfileProvider extends MinimalProvider {
  override initialize(sessionId: string, ctx: InitContext): void {
    super.initialize(sessionId, ctx);
    for (const item of this.items) if (!GLOBAL_ITEMS.some((g) => g.id === item.id)) GLOBAL_ITEMS.push(item);
    this.items = GLOBAL_ITEMS;
  }
}

/** Stores every checkpoint call again under fresh ids: retries duplicate the archive. */
export class DuplicatingCheckpointProvider extends MinimalProvider {
  override async onPreCompress(messages: ChatMessage[]): Promise<string> {
    for (const message of messages) this.addItem({ content: this.checkpointText(message), kind: "checkpoint" });
    await this.persist();
    return "checkpoint stored";
  }
}

/** Dedupes by a digest of the whole transcript: a longer transcript re-stores the old messages. */
export class WholeTranscriptCheckpointProvider extends MinimalProvider {
  override async onPreCompress(messages: ChatMessage[]): Promise<string> {
    const content = messages.map((m) => this.checkpointText(m)).join("\n");
    const id = `ckpt-${this.checkpointKey({ role: "transcript", content })}`;
    if (!this.items.some((i) => i.id === id)) this.addItem({ id, content, kind: "checkpoint" });
    await this.persist();
    return "checkpoint stored";
  }
}

/** Swallows storage errors in onPreCompress and reports success anyway. */
export class SwallowingCheckpointProvider extends MinimalProvider {
  override async onPreCompress(messages: ChatMessage[]): Promise<string> {
    try {
      return await super.onPreCompress(messages);
    } catch {
      return "";
    }
  }
}

/** A tool name with a space and a "!": strict model APIs reject the whole request. */
export class BadToolNameProvider extends MinimalProvider {
  override getToolSchemas(): ToolSchema[] {
    return super.getToolSchemas().map((tool) => ({ ...tool, name: "minimal search!" }));
  }

  override handleToolCall(toolName: string, args: Record<string, unknown>): string {
    return super.handleToolCall(toolName === "minimal search!" ? "minimal_search" : toolName, args);
  }
}

/** Throws on tools it does not know and on bad arguments instead of returning error strings. */
export class ThrowingToolProvider extends MinimalProvider {
  override handleToolCall(toolName: string, args: Record<string, unknown>): string {
    const result = super.handleToolCall(toolName, args);
    if (result.includes('"error"')) throw new Error(`tool call failed: ${result}`);
    return result;
  }
}

/** Starts a ref'd heartbeat interval in initialize() and never clears it. */
export class TimerLeakProvider extends MinimalProvider {
  static readonly timers = new Set<NodeJS.Timeout>();

  override initialize(sessionId: string, ctx: InitContext): void {
    super.initialize(sessionId, ctx);
    TimerLeakProvider.timers.add(setInterval(() => undefined, 60_000));
  }

  /** Test clean-up: stop every leaked interval. */
  static clearLeaks(): void {
    for (const timer of TimerLeakProvider.timers) clearInterval(timer);
    TimerLeakProvider.timers.clear();
  }
}

/** A secret field without envVar and a default missing from its choices. */
export class BadConfigProvider extends MinimalProvider {
  override getConfigSchema() {
    return [
      { key: "api_key", description: "API key", secret: true },
      { key: "mode", description: "Search mode", default: "slow", choices: ["fast", "thorough"] },
    ];
  }
}

/** Ignores agentContext: a subagent's turns are stored like the primary agent's. */
export class SubagentWritingProvider extends MinimalProvider {
  override initialize(sessionId: string, ctx: InitContext): void {
    super.initialize(sessionId, ctx);
    this.writes = true;
  }
}

/**
 * Buffers writes until flush()/shutdown() (fine) but does not flush in onSessionEnd(): turns of a
 * session the host ended and then exited without a clean shutdown are lost.
 */
export class NoFlushOnSessionEndProvider extends MinimalProvider {
  private buffered = false;

  override scheduleWrite(): void {
    this.buffered = true;
  }

  override async flush(): Promise<void> {
    if (this.buffered) {
      this.buffered = false;
      await this.persist();
    }
    await super.flush();
  }

  override async onSessionEnd(): Promise<void> {
    // The mistake: nothing is flushed here.
  }
}

/**
 * Buffers writes until flush()/shutdown() (fine) but does not flush in onSessionSwitch(): turns of
 * the session the host switched away from are lost if it exits before a clean shutdown.
 */
export class NoFlushOnSessionSwitchProvider extends MinimalProvider {
  private buffered = false;

  override scheduleWrite(): void {
    this.buffered = true;
  }

  override async flush(): Promise<void> {
    if (this.buffered) {
      this.buffered = false;
      await this.persist();
    }
    await super.flush();
  }

  override async onSessionSwitch(): Promise<boolean> {
    // The mistake: nothing is flushed here.
    return true;
  }
}

/** Labels every user line "User:", ignoring the turn author's name. */
export class IgnoresTurnAuthorProvider extends MinimalProvider {
  override syncTurn(userContent: string, assistantContent: string, options: SyncTurnOptions): void {
    super.syncTurn(userContent, assistantContent, { sessionId: options.sessionId });
  }
}

/** Archives checkpoint messages as bare text, without their role label. */
export class UnlabelledCheckpointProvider extends MinimalProvider {
  override checkpointText(message: ChatMessage): string {
    return typeof message.content === "string" ? message.content : "";
  }
}

/** Caches queuePrefetch results by query text alone, so another session is served a stale result. */
export class QueryKeyedPrefetchCacheProvider extends MinimalProvider {
  private readonly cache = new Map<string, string>();

  override queuePrefetch(query: string): void {
    this.cache.set(query, super.prefetch(query));
  }

  override prefetch(query: string): string {
    return this.cache.get(query) ?? super.prefetch(query);
  }
}

/** prefetch() returns a thenable (not a native Promise) that never calls back. */
export class NeverSettlingThenableProvider extends MinimalProvider {
  override prefetch(): string {
    // Typed as text like the base; at run time a thenable that never calls back.
    return { then() {} } as unknown as string;
  }
}

/** initialize() never settles. */
export class HangingInitializeProvider extends MinimalProvider {
  override initialize(): Promise<void> {
    return new Promise<void>(() => {});
  }
}

/** isAvailable() blocks for over a second (e.g. a synchronous probe of a backend). */
export class SlowIsAvailableProvider extends MinimalProvider {
  override isAvailable(): boolean {
    const until = Date.now() + 1_200;
    while (Date.now() < until) {
      // busy: what a synchronous network probe or a heavy scan does to the host's start
    }
    return true;
  }
}
