import type { Logger } from "../logger.js";
import { MemoryProvider } from "../provider.js";
import type {
  ChatMessage,
  ConfigField,
  DelegationOptions,
  InitContext,
  MaybePromise,
  MemoryWriteAction,
  MemoryWriteMetadata,
  MemoryWriteTarget,
  PreCompressOptions,
  PrefetchOptions,
  RecallStatus,
  SessionSwitchOptions,
  SyncTurnOptions,
  ToolCallOptions,
  ToolSchema,
  TurnStartOptions,
} from "../provider.js";

/** Hooks a test can script; each receives the same arguments the manager passed. */
export interface ScriptedHooks {
  initialize?: (sessionId: string, ctx: InitContext) => MaybePromise<void>;
  initializeForInspection?: (sessionId: string, ctx: InitContext) => MaybePromise<void>;
  getToolSchemas?: () => unknown[];
  handleToolCall?: (name: string, args: Record<string, unknown>, options: ToolCallOptions) => MaybePromise<unknown>;
  systemPromptBlock?: () => MaybePromise<string>;
  prefetch?: (query: string, options: PrefetchOptions) => MaybePromise<string>;
  queuePrefetch?: (query: string, options: PrefetchOptions) => MaybePromise<void>;
  recallStatus?: () => RecallStatus | null;
  syncTurn?: (user: string, assistant: string, options: SyncTurnOptions) => MaybePromise<void>;
  onTurnStart?: (turn: number, message: string, options: TurnStartOptions) => MaybePromise<void>;
  onSessionEnd?: (messages: ChatMessage[]) => MaybePromise<void>;
  onSessionSwitch?: (id: string, options: SessionSwitchOptions) => MaybePromise<void | boolean>;
  onPreCompress?: (messages: ChatMessage[], options: PreCompressOptions) => MaybePromise<string>;
  onMemoryWrite?: (
    action: MemoryWriteAction,
    target: MemoryWriteTarget,
    content: string,
    metadata: MemoryWriteMetadata,
  ) => MaybePromise<void>;
  onDelegation?: (task: string, result: string, options: DelegationOptions) => MaybePromise<void>;
  shutdown?: () => MaybePromise<void>;
}

export interface RecordedCall {
  hook: string;
  args: unknown[];
}

/**
 * A provider that records every hook call (in order) and runs optional scripted behaviour.
 * `log` (shared between providers) records `<name>.<hook>` for cross-provider ordering checks.
 */
export class RecordingProvider extends MemoryProvider {
  readonly name: string;
  override readonly preCompressCheckpointApiVersion: 1 | 2;
  readonly calls: RecordedCall[] = [];

  constructor(
    name: string,
    readonly hooks: ScriptedHooks = {},
    options: { tools?: unknown[]; checkpointVersion?: 1 | 2; log?: string[] } = {},
  ) {
    super();
    this.name = name;
    this.preCompressCheckpointApiVersion = options.checkpointVersion ?? 1;
    this.tools = options.tools ?? [];
    this.log = options.log;
  }

  private readonly tools: unknown[];
  private readonly log: string[] | undefined;

  /** Arguments of every call to `hook`, in order. */
  argsOf(hook: string): unknown[][] {
    return this.calls.filter((c) => c.hook === hook).map((c) => c.args);
  }

  private record(hook: string, args: unknown[]): void {
    this.calls.push({ hook, args });
    this.log?.push(`${this.name}.${hook}`);
  }

  isAvailable(): boolean {
    return true;
  }
  initialize(sessionId: string, ctx: InitContext): MaybePromise<void> {
    this.record("initialize", [sessionId, ctx]);
    return this.hooks.initialize?.(sessionId, ctx);
  }
  override initializeForInspection(sessionId: string, ctx: InitContext): MaybePromise<void> {
    this.record("initializeForInspection", [sessionId, ctx]);
    return this.hooks.initializeForInspection?.(sessionId, ctx);
  }
  getToolSchemas(): ToolSchema[] {
    return (this.hooks.getToolSchemas ? this.hooks.getToolSchemas() : this.tools) as ToolSchema[];
  }
  override handleToolCall(name: string, args: Record<string, unknown>, options: ToolCallOptions = {}): MaybePromise<string> {
    this.record("handleToolCall", [name, args, options]);
    if (!this.hooks.handleToolCall) return JSON.stringify({ ok: true, provider: this.name, tool: name });
    return this.hooks.handleToolCall(name, args, options) as MaybePromise<string>;
  }
  getConfigSchema(): ConfigField[] {
    return [];
  }
  override systemPromptBlock(): MaybePromise<string> {
    this.record("systemPromptBlock", []);
    return this.hooks.systemPromptBlock ? this.hooks.systemPromptBlock() : "";
  }
  override prefetch(query: string, options: PrefetchOptions): MaybePromise<string> {
    this.record("prefetch", [query, options]);
    return this.hooks.prefetch ? this.hooks.prefetch(query, options) : "";
  }
  override queuePrefetch(query: string, options: PrefetchOptions): MaybePromise<void> {
    this.record("queuePrefetch", [query, options]);
    return this.hooks.queuePrefetch?.(query, options);
  }
  override recallStatus(): RecallStatus | null {
    return this.hooks.recallStatus ? this.hooks.recallStatus() : null;
  }
  override syncTurn(user: string, assistant: string, options: SyncTurnOptions): MaybePromise<void> {
    this.record("syncTurn", [user, assistant, options]);
    return this.hooks.syncTurn?.(user, assistant, options);
  }
  override onTurnStart(turn: number, message: string, options: TurnStartOptions): MaybePromise<void> {
    this.record("onTurnStart", [turn, message, options]);
    return this.hooks.onTurnStart?.(turn, message, options);
  }
  override onSessionEnd(messages: ChatMessage[]): MaybePromise<void> {
    this.record("onSessionEnd", [messages]);
    return this.hooks.onSessionEnd?.(messages);
  }
  override onSessionSwitch(id: string, options: SessionSwitchOptions): MaybePromise<void | boolean> {
    this.record("onSessionSwitch", [id, options]);
    return this.hooks.onSessionSwitch?.(id, options);
  }
  override onPreCompress(messages: ChatMessage[], options: PreCompressOptions): MaybePromise<string> {
    this.record("onPreCompress", [messages, options]);
    return this.hooks.onPreCompress ? this.hooks.onPreCompress(messages, options) : "";
  }
  override onMemoryWrite(
    action: MemoryWriteAction,
    target: MemoryWriteTarget,
    content: string,
    metadata: MemoryWriteMetadata,
  ): MaybePromise<void> {
    this.record("onMemoryWrite", [action, target, content, metadata]);
    return this.hooks.onMemoryWrite?.(action, target, content, metadata);
  }
  override onDelegation(task: string, result: string, options: DelegationOptions): MaybePromise<void> {
    this.record("onDelegation", [task, result, options]);
    return this.hooks.onDelegation?.(task, result, options);
  }
  override shutdown(): MaybePromise<void> {
    this.record("shutdown", []);
    return this.hooks.shutdown?.();
  }
}

/** A logger that keeps every message, by level. */
export interface CapturingLogger extends Logger {
  messages: Array<{ level: "debug" | "info" | "warn" | "error"; message: string }>;
  /** Messages of one level. */
  at(level: "debug" | "info" | "warn" | "error"): string[];
}

/** Create a logger that records messages for assertions. */
export function capturingLogger(): CapturingLogger {
  const messages: CapturingLogger["messages"] = [];
  return {
    messages,
    at: (level) => messages.filter((m) => m.level === level).map((m) => m.message),
    debug: (message) => void messages.push({ level: "debug", message }),
    info: (message) => void messages.push({ level: "info", message }),
    warn: (message) => void messages.push({ level: "warn", message }),
    error: (message) => void messages.push({ level: "error", message }),
  };
}

/** A promise plus its resolve function, for providers that block until the test releases them. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** Poll `condition` until it is true or `timeoutMs` passes (then throw). */
export async function waitFor(condition: () => boolean, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met before the deadline");
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** Tool schema shorthand. */
export function tool(name: string, description = `${name} tool`): ToolSchema {
  return { name, description, parameters: { type: "object", properties: {} } };
}
