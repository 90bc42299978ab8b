/**
 * A provider hosted in a worker thread behind the `MemoryProvider` interface (and
 * `SearchableMemory` when the provider is searchable). Its hooks run off the host's event loop, so
 * synchronous work in the provider never stalls the host, and each call's bound is real: a call
 * past its bound is rejected with `PROVIDER_TIMEOUT`, the worker terminated and a new one started
 * (and re-initialised with the last `initialize` arguments) for the next call.
 *
 * The synchronous members (`isAvailable`, `getToolSchemas`, `getConfigSchema`, `recallStatus`,
 * `unavailableReason`, `backupPaths`, `capabilities`, `name`) answer from a snapshot the worker
 * takes after loading the provider and after every call.
 *
 * Writes handed to a worker that is then replaced before they were acknowledged (by a resolved
 * `flush()`, or for providers without `flush` by their own resolved call) are not replayed: the
 * next `flush()` (or `shutdown()`) rejects with `WRITES_LOST` saying how many and why.
 */
import { HermesMemoryError, describeError } from "../errors.js";
import { formatSeconds } from "../bounded-call.js";
import { silentLogger, type Logger } from "../logger.js";
import { DEFAULT_EXTERNAL_PREFETCH_TIMEOUT_MS, DEFAULT_HOOK_TIMEOUT_MS } from "../manager.js";
import {
  MemoryProvider,
  type ChatMessage,
  type ConfigField,
  type DelegationOptions,
  type ForgetScope,
  type InitContext,
  type MemoryHit,
  type MemoryItem,
  type MemorySearchOptions,
  type MemoryStats,
  type MemoryUpdate,
  type MemoryWriteAction,
  type MemoryWriteMetadata,
  type MemoryWriteTarget,
  type PrefetchOptions,
  type PreCompressOptions,
  type RecallStatus,
  type SearchCapabilities,
  type SessionSwitchOptions,
  type SyncTurnOptions,
  type ToolCallOptions,
  type ToolSchema,
  type TurnStartOptions,
} from "../provider.js";
import { replaceProviderSkills } from "../skills.js";
import { OPTIONAL_METHODS, WRITE_METHODS } from "./methods.js";
import { unwrapSettled, type ProviderSnapshot, type WorkerStart } from "./protocol.js";
import { WorkerConnection, type WorkerReady } from "./worker-connection.js";
import { WriteLedger } from "./write-ledger.js";

/** Options of `startWorkerHostedProvider`. */
export interface WorkerHostedOptions extends Omit<WorkerStart, "name"> {
  logger?: Logger;
  /** Bound of every call but `prefetch` (ms; default the manager's `hookTimeoutMs` default, 15000; `Infinity` = none). */
  hookTimeoutMs?: number;
  /** Bound of `prefetch` (ms; default the manager's `externalPrefetchTimeoutMs` default, 8000). */
  prefetchTimeoutMs?: number;
  /** Bound of starting a worker and loading the provider in it (ms; default `importTimeoutMs` + 5000). */
  startTimeoutMs?: number;
}

type Init = { method: "initialize" | "initializeForInspection"; args: [string, InitContext] };

/**
 * Start a worker thread, load provider `name` in it (core's discovery and loader, the same options)
 * and return its proxy. Throws what loading throws (`PROVIDER_NOT_FOUND`, `PROVIDER_LOAD_FAILED`…),
 * or `PROVIDER_TIMEOUT` when the worker does not report within `startTimeoutMs`.
 */
export async function startWorkerHostedProvider(name: string, options: WorkerHostedOptions): Promise<WorkerHostedProvider> {
  const { logger = silentLogger, hookTimeoutMs, prefetchTimeoutMs, startTimeoutMs, ...start } = options;
  const settings: Settings = {
    start: { ...start, name },
    logger,
    hookTimeoutMs: hookTimeoutMs ?? DEFAULT_HOOK_TIMEOUT_MS,
    prefetchTimeoutMs: prefetchTimeoutMs ?? DEFAULT_EXTERNAL_PREFETCH_TIMEOUT_MS,
    startTimeoutMs: startTimeoutMs ?? (start.importTimeoutMs ?? 10_000) + 5000,
  };
  const connection = new WorkerConnection(settings.start, logger);
  const ready = await withinStart(connection, settings);
  if (start.registerSkills === true || ready.skills.length > 0) replaceProviderSkills(start.hermesHome, name, ready.skills);
  if (ready.registrations.length > 0) {
    // Hooks, tools and commands are functions of the worker's thread; the host cannot call them.
    logger.warn(
      `Memory provider '${name}' runs in a worker thread, so what its register(ctx) registered besides the provider (${ready.registrations.join(", ")}) stays there and is not offered to the host; run it inline (memory.isolation.${name}: inline) to use them.`,
    );
  }
  return new WorkerHostedProvider(settings, connection, ready);
}

interface Settings {
  start: WorkerStart;
  logger: Logger;
  hookTimeoutMs: number;
  prefetchTimeoutMs: number;
  startTimeoutMs: number;
}

async function withinStart(connection: WorkerConnection, settings: Settings): Promise<WorkerReady> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new HermesMemoryError({
            code: "PROVIDER_TIMEOUT",
            message: `Memory provider '${settings.start.name}' did not load in its worker thread within ${formatSeconds(settings.startTimeoutMs)}; check the provider's module for work that never ends at import time, or raise importTimeoutMs.`,
          }),
        ),
      settings.startTimeoutMs,
    );
  });
  try {
    return await Promise.race([connection.ready, deadline]);
  } catch (error) {
    await connection.terminate("it did not load");
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

export class WorkerHostedProvider extends MemoryProvider {
  readonly name: string;
  override readonly preCompressCheckpointApiVersion: 1 | 2;
  /** The provider's methods that run in the worker (overridden hooks and optional methods). */
  private readonly remote: ReadonlySet<string>;
  private connection: WorkerConnection | null;
  private starting: Promise<WorkerConnection> | null = null;
  private snapshot: ProviderSnapshot;
  private lastInit: Init | null = null;
  private readonly ledger = new WriteLedger();
  private replacements = 0;

  declare remember?: (item: MemoryItem) => Promise<string>;
  declare search?: (query: string, options?: MemorySearchOptions) => Promise<MemoryHit[]>;
  declare get?: (id: string) => Promise<MemoryHit | null>;
  declare forget?: (id: string) => Promise<boolean>;
  declare stats?: () => Promise<MemoryStats>;
  declare flush?: () => Promise<void>;
  declare forgetWhere?: (scope: ForgetScope) => Promise<number>;
  declare update?: (id: string, changes: MemoryUpdate) => Promise<boolean>;
  declare purgeExpired?: () => Promise<number>;
  declare capabilities?: () => SearchCapabilities;

  constructor(
    private readonly settings: Settings,
    connection: WorkerConnection,
    ready: WorkerReady,
  ) {
    super();
    this.name = ready.snapshot.name;
    this.preCompressCheckpointApiVersion = ready.snapshot.preCompressCheckpointApiVersion;
    this.remote = new Set(ready.methods);
    this.snapshot = ready.snapshot;
    this.connection = connection;
    this.watch(connection);
    const self = this as unknown as Record<string, unknown>;
    for (const method of OPTIONAL_METHODS) {
      if (!this.remote.has(method)) continue;
      self[method] = method === "flush" ? () => this.flushAll() : (...args: unknown[]) => this.invoke(method, args);
    }
    if (ready.snapshot.capabilities) this.capabilities = () => unwrapSettled(this.current().capabilities!, this.name) as SearchCapabilities;
    // Not overridden by the provider: keep the base method, so setup writes config.yaml itself.
    if (!this.remote.has("saveConfig")) self.saveConfig = MemoryProvider.prototype.saveConfig;
    this.ledger.setFlushes(this.remote.has("flush"));
    // An unavailable provider is not initialised or called: its idle worker ends now (a call would start a new one).
    if (!(ready.snapshot.isAvailable.ok && ready.snapshot.isAvailable.value)) this.park();
  }

  /** End the idle worker quietly; the next call starts a new one. */
  private park(): void {
    const connection = this.connection;
    this.connection = null;
    if (connection) void connection.terminate("the provider is not available");
  }

  /**
   * Resolves once a worker is running and (when `initialize` ran) initialised: a replaced worker's
   * successor starts at once, and this waits for it. Rejects when it cannot start.
   */
  async ready(): Promise<void> {
    await this.live();
  }

  /**
   * End the current worker now, as a call past its bound does, and start its successor: for a host
   * with its own watchdog. Calls in flight reject with `PROVIDER_CRASHED`; writes not yet
   * acknowledged are reported by the next `flush()` (`WRITES_LOST`).
   */
  replaceWorker(reason = "the host replaced it"): void {
    if (this.connection) this.replace(this.connection, reason);
  }

  /** How many times the worker was replaced (timeouts, crashes, `replaceWorker`). */
  get workerReplacements(): number {
    return this.replacements;
  }

  isAvailable(): boolean {
    return unwrapSettled(this.current().isAvailable, this.name);
  }
  override unavailableReason(): string {
    return unwrapSettled(this.current().unavailableReason, this.name);
  }
  getToolSchemas(): ToolSchema[] {
    return unwrapSettled(this.current().getToolSchemas, this.name) as ToolSchema[];
  }
  getConfigSchema(): ConfigField[] {
    return unwrapSettled(this.current().getConfigSchema, this.name) as ConfigField[];
  }
  override recallStatus(): RecallStatus | null {
    return unwrapSettled(this.current().recallStatus, this.name) as RecallStatus | null;
  }
  override backupPaths(): string[] {
    return unwrapSettled(this.current().backupPaths, this.name);
  }

  async initialize(sessionId: string, ctx: InitContext): Promise<void> {
    await this.invoke("initialize", [sessionId, ctx]);
    this.lastInit = { method: "initialize", args: [sessionId, ctx] };
  }
  override async initializeForInspection(sessionId: string, ctx: InitContext): Promise<void> {
    if (!this.remote.has("initializeForInspection")) return this.initialize(sessionId, ctx);
    await this.invoke("initializeForInspection", [sessionId, ctx]);
    this.lastInit = { method: "initializeForInspection", args: [sessionId, ctx] };
  }
  override handleToolCall(toolName: string, args: Record<string, unknown>, options: ToolCallOptions = {}): Promise<string> {
    return this.forward("handleToolCall", [toolName, args, options], () => super.handleToolCall(toolName, args, options));
  }
  override systemPromptBlock(): Promise<string> {
    return this.forward("systemPromptBlock", [], () => super.systemPromptBlock());
  }
  override prefetch(query: string, options: PrefetchOptions): Promise<string> {
    return this.forward("prefetch", [query, options], () => super.prefetch(query, options));
  }
  override queuePrefetch(query: string, options: PrefetchOptions): Promise<void> {
    return this.forward("queuePrefetch", [query, options], () => super.queuePrefetch(query, options));
  }
  override syncTurn(userContent: string, assistantContent: string, options: SyncTurnOptions): Promise<void> {
    return this.forward("syncTurn", [userContent, assistantContent, options], () => super.syncTurn(userContent, assistantContent, options));
  }
  override onTurnStart(turnNumber: number, message: string, options: TurnStartOptions): Promise<void> {
    return this.forward("onTurnStart", [turnNumber, message, options], () => super.onTurnStart(turnNumber, message, options));
  }
  override onSessionEnd(messages: ChatMessage[]): Promise<void> {
    return this.forward("onSessionEnd", [messages], () => super.onSessionEnd(messages));
  }
  override onSessionSwitch(newSessionId: string, options: SessionSwitchOptions): Promise<void | boolean> {
    return this.forward("onSessionSwitch", [newSessionId, options], () => super.onSessionSwitch(newSessionId, options));
  }
  override onPreCompress(messages: ChatMessage[], options: PreCompressOptions): Promise<string> {
    return this.forward("onPreCompress", [messages, options], () => super.onPreCompress(messages, options));
  }
  override onMemoryWrite(
    action: MemoryWriteAction,
    target: MemoryWriteTarget,
    content: string,
    metadata: MemoryWriteMetadata,
  ): Promise<void> {
    const args = [action, target, content, metadata];
    return this.forward("onMemoryWrite", args, () => super.onMemoryWrite(action, target, content, metadata));
  }
  override onDelegation(task: string, result: string, options: DelegationOptions): Promise<void> {
    return this.forward("onDelegation", [task, result, options], () => super.onDelegation(task, result, options));
  }
  override saveConfig(values: Record<string, unknown>, hermesHome: string): Promise<void> {
    return this.forward("saveConfig", [values, hermesHome], () => undefined);
  }
  declare postSetup?: (hermesHome: string, values: Record<string, unknown>) => Promise<void>;
  declare getStatusConfig?: (providerConfig: Record<string, unknown>) => Promise<Record<string, unknown>>;

  /**
   * Shut the provider down in its worker, then end the worker. Idempotent. Rejects with
   * `WRITES_LOST` when writes were lost to a replaced worker and no `flush()` reported them yet.
   */
  override async shutdown(): Promise<void> {
    if (this.starting) await this.starting.catch(() => {});
    const connection = this.connection;
    this.lastInit = null;
    if (connection && connection.deadReason === null) {
      try {
        if (this.remote.has("shutdown")) await this.invoke("shutdown", []);
        this.ledger.acknowledgeAll();
      } finally {
        this.connection = null;
        await connection.terminate("the provider was shut down");
      }
    }
    this.connection = null;
    const lost = this.ledger.takeLost();
    if (lost) throw lost.error(this.name);
  }

  private current(): ProviderSnapshot {
    return this.connection?.snapshot ?? this.snapshot;
  }

  private async forward<T>(method: string, args: unknown[], local: () => unknown): Promise<T> {
    if (!this.remote.has(method)) return (await local()) as T;
    return (await this.invoke(method, args)) as T;
  }

  private async flushAll(): Promise<void> {
    const mark = this.ledger.flushStarted();
    const lost = this.ledger.takeLost();
    try {
      await this.invoke("flush", []);
    } catch (error) {
      if (lost) this.ledger.restoreLost(lost);
      throw error;
    }
    this.ledger.flushed(mark);
    if (lost) throw lost.error(this.name);
  }

  /** Run `method` in the worker within its bound; past the bound the worker is replaced. */
  private async invoke(method: string, args: unknown[]): Promise<unknown> {
    const connection = await this.live();
    const timeoutMs = method === "prefetch" ? this.settings.prefetchTimeoutMs : this.settings.hookTimeoutMs;
    const write = WRITE_METHODS.has(method) ? this.ledger.handed(method) : null;
    const call = connection.call(method, args);
    let timer: NodeJS.Timeout | undefined;
    const deadline = Number.isFinite(timeoutMs)
      ? new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), timeoutMs)))
      : new Promise<never>(() => {});
    try {
      const outcome = await Promise.race([call.then((value) => ({ value })), deadline]);
      if (outcome === "timeout") {
        const reason = `${method}() did not finish within ${formatSeconds(timeoutMs)}`;
        call.catch(() => {}); // rejected by the termination below; the timeout is what the caller hears
        this.replace(connection, reason);
        throw new HermesMemoryError({
          code: "PROVIDER_TIMEOUT",
          message: `Memory provider '${this.name}' ${reason} in its worker thread; the worker was terminated and a new one serves the next call. Fix the provider's slow work, or raise the bound (hookTimeoutMs, externalPrefetchTimeoutMs).`,
        });
      }
      if (write !== null) this.ledger.resolved(write);
      return outcome.value;
    } catch (error) {
      if (write !== null) this.ledger.failed(write);
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /** The running worker, or a new one (re-initialised) when the last one was replaced. */
  private async live(): Promise<WorkerConnection> {
    if (this.connection && this.connection.deadReason === null) return this.connection;
    this.starting ??= this.restart().finally(() => (this.starting = null));
    return this.starting;
  }

  private async restart(): Promise<WorkerConnection> {
    const connection = new WorkerConnection(this.settings.start, this.settings.logger);
    await withinStart(connection, this.settings);
    const init = this.lastInit;
    if (init) {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), this.settings.hookTimeoutMs)));
      try {
        const outcome = await Promise.race([connection.call(init.method, init.args), deadline]);
        if (outcome === "timeout") throw new Error(`${init.method}() did not finish within ${formatSeconds(this.settings.hookTimeoutMs)}`);
      } catch (error) {
        await connection.terminate("its initialize failed");
        throw new HermesMemoryError({
          code: "PROVIDER_UNAVAILABLE",
          message: `Memory provider '${this.name}' could not be re-initialised in a new worker thread (${error instanceof Error ? error.message : String(error)}); the next call tries again. Run \`hermes-memory memory status\` to see what is wrong.`,
          cause: error,
        });
      } finally {
        clearTimeout(timer);
      }
    }
    this.connection = connection;
    this.watch(connection);
    return connection;
  }

  private watch(connection: WorkerConnection): void {
    connection.setDeathListener((reason) => this.lose(connection, reason));
  }

  /** Terminate a worker that over-ran its bound; the next call starts a new one. */
  private replace(connection: WorkerConnection, reason: string): void {
    this.lose(connection, reason);
    void connection.terminate(reason);
  }

  private lose(connection: WorkerConnection, reason: string): void {
    if (connection !== this.connection) return;
    if (connection.snapshot) this.snapshot = connection.snapshot;
    this.connection = null;
    this.replacements++;
    const count = this.ledger.workerLost(reason);
    // The successor starts now, so the next call does not pay for loading the provider again.
    if (this.lastInit) void this.live().catch((error: unknown) => this.settings.logger.warn(describeError(error)));
    this.settings.logger.warn(
      `Memory provider '${this.name}': ${reason}; a new worker thread replaces it.${count > 0 ? ` ${count} write(s) handed to it were not yet acknowledged and may be lost; the next flush() reports them (WRITES_LOST).` : ""}`,
    );
  }
}
