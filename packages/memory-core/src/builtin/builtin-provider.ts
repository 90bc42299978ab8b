import path from "node:path";
import type { Logger } from "../logger.js";
import { silentLogger } from "../logger.js";
import type { ConfigField, InitContext, ToolCallOptions, ToolSchema, TurnStartOptions } from "../provider.js";
import { BUILTIN_PROVIDER_NAME, MemoryProvider } from "../provider.js";
import { BuiltinMemoryStore, DEFAULT_MEMORY_CHAR_LIMIT, DEFAULT_USER_CHAR_LIMIT, positiveLimit } from "./memory-store.js";
import { MEMORY_TOOL_NAME, MEMORY_TOOL_SCHEMA, MEMORY_UNAVAILABLE_RESULT, MemoryToolDispatcher } from "./memory-tool.js";

/** Options of `BuiltinMemoryProvider` (from config.yaml `memory.*`). */
export interface BuiltinMemoryOptions {
  /** `memory.memory_char_limit` (default 2200). */
  memoryCharLimit?: number;
  /** `memory.user_char_limit` (default 1375). */
  userCharLimit?: number;
  /** `memory.memory_enabled` (default true): render MEMORY.md into the system prompt. */
  memoryEnabled?: boolean;
  /** `memory.user_profile_enabled` (default true): render USER.md into the system prompt. */
  userProfileEnabled?: boolean;
  logger?: Logger;
}

/**
 * The built-in memory: `$HERMES_HOME/memories/MEMORY.md` and `USER.md`, the frozen snapshot in
 * `systemPromptBlock()`, and the `memory` tool. Always registered first by the manager; never
 * spilled and never the target of mirrored writes (it is their source).
 *
 * The memory directory is bound at `initialize` from `ctx.hermesHome` and never re-resolved, so a
 * background task running under another profile cannot redirect writes. When both
 * `memoryEnabled` and `userProfileEnabled` are false the tool answers "Memory is not available".
 */
export class BuiltinMemoryProvider extends MemoryProvider {
  readonly name = BUILTIN_PROVIDER_NAME;
  private readonly options: Required<Omit<BuiltinMemoryOptions, "logger">> & { logger: Logger };
  private storeInstance: BuiltinMemoryStore | null = null;
  private dispatcher = new MemoryToolDispatcher(null);

  /** Throws `HermesMemoryError` (`INVALID_CONFIG`) when a limit is not a positive integer. */
  constructor(options: BuiltinMemoryOptions = {}) {
    super();
    this.options = {
      memoryCharLimit: positiveLimit(options.memoryCharLimit, DEFAULT_MEMORY_CHAR_LIMIT, "memoryCharLimit"),
      userCharLimit: positiveLimit(options.userCharLimit, DEFAULT_USER_CHAR_LIMIT, "userCharLimit"),
      memoryEnabled: options.memoryEnabled ?? true,
      userProfileEnabled: options.userProfileEnabled ?? true,
      logger: options.logger ?? silentLogger,
    };
  }

  /** The store after `initialize` (null before, or when both targets are disabled). */
  get store(): BuiltinMemoryStore | null {
    return this.storeInstance;
  }

  /** Always available: plain files, no dependencies. */
  isAvailable(): true {
    return true;
  }

  /** Bind the store to `<ctx.hermesHome>/memories` and capture the frozen snapshot. */
  async initialize(_sessionId: string, ctx: InitContext): Promise<void> {
    if (!this.options.memoryEnabled && !this.options.userProfileEnabled) {
      this.storeInstance = null;
      this.dispatcher = new MemoryToolDispatcher(null);
      return;
    }
    const store = new BuiltinMemoryStore({
      dir: path.join(ctx.hermesHome, "memories"),
      memoryCharLimit: this.options.memoryCharLimit,
      userCharLimit: this.options.userCharLimit,
    });
    await store.loadFromDisk();
    this.storeInstance = store;
    this.dispatcher = new MemoryToolDispatcher(store);
    for (const problem of store.loadProblems()) this.options.logger.warn(problem);
    this.options.logger.debug(`builtin memory loaded from ${store.dir}`);
  }

  /** The `memory` tool. */
  getToolSchemas(): ToolSchema[] {
    return [MEMORY_TOOL_SCHEMA];
  }

  /** Handle `memory` calls; returns the result as a JSON string (errors included, never throws). */
  override async handleToolCall(toolName: string, args: Record<string, unknown>, options: ToolCallOptions = {}): Promise<string> {
    if (toolName !== MEMORY_TOOL_NAME) return super.handleToolCall(toolName, args, options);
    if (!this.storeInstance) return JSON.stringify(MEMORY_UNAVAILABLE_RESULT);
    return this.dispatcher.callJson(args);
  }

  /**
   * The frozen MEMORY.md and USER.md snapshot taken at `initialize` (blank line between the two
   * blocks), each gated by its enable flag. Mid-session writes do not change it.
   */
  override systemPromptBlock(): string {
    const store = this.storeInstance;
    if (!store) return "";
    const blocks: string[] = [];
    if (this.options.memoryEnabled) blocks.push(store.renderSnapshot("memory"));
    if (this.options.userProfileEnabled) blocks.push(store.renderSnapshot("user"));
    return blocks.filter((b) => b !== "").join("\n\n");
  }

  /** Each turn starts with a fresh failure budget for the `memory` tool. */
  override onTurnStart(_turnNumber: number, _message: string, _options: TurnStartOptions): void {
    this.dispatcher.resetTurn();
  }

  /** Nothing to configure through setup; limits come from `memory.*` in config.yaml. */
  getConfigSchema(): ConfigField[] {
    return [];
  }
}
