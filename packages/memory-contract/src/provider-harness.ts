import { randomBytes } from "node:crypto";
import {
  describeError,
  isSearchableMemory,
  runWithProfile,
  type InitContext,
  type MaybePromise,
  type MemoryProvider,
} from "@hermes/memory-core";
import type { MemoryProviderContractSetup, ResolvedTimeouts } from "./contract-setup.js";
import { providerCallScope } from "./provider-call-scope.js";
import type { Sandbox } from "./sandbox.js";

/** Thrown when a provider call does not settle in time; the message names the call. */
export class ProviderCallTimeoutError extends Error {
  constructor(what: string, ms: number) {
    super(`${what} did not settle within ${ms} ms`);
    this.name = "ProviderCallTimeoutError";
  }
}

/**
 * Await `value` for at most `ms`; the timer is always cleared so it never counts as a leak. Any
 * thenable is bounded, not only a native Promise: `await` adopts a thenable's `then`, so one that
 * never calls back (or whose `then` getter throws) would otherwise stall the run.
 */
export async function withTimeout<T>(value: MaybePromise<T>, ms: number, what: string): Promise<T> {
  let then: unknown;
  try {
    then = value !== null && (typeof value === "object" || typeof value === "function") ? (value as { then?: unknown }).then : undefined;
  } catch (error) {
    throw new Error(`${what} returned a value whose "then" cannot be read: ${describeError(error)}`);
  }
  if (typeof then !== "function") return value;
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      Promise.resolve(value),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new ProviderCallTimeoutError(what, ms)), ms);
      }),
    ]);
  } finally {
    if (timer) clearTimeout(timer);
  }
}

/** `createProvider()` or `initialize()` timeouts after which the harness stops waiting for it (see `create`, `openInstance`). */
const INIT_TIMEOUTS_BEFORE_GIVING_UP = 2;

/** A short random marker for facts the kit writes and later looks for. */
export function distinctiveToken(prefix: string): string {
  return `${prefix}${randomBytes(5).toString("hex")}`;
}

/** One provider instance under test, bound to its profile directory. */
export interface ProviderInstance {
  readonly provider: MemoryProvider;
  readonly hermesHome: string;
  readonly sessionId: string;
  /** Run `fn` against the provider inside its profile scope, bounded by the call timeout. */
  call<T>(what: string, fn: (provider: MemoryProvider) => MaybePromise<T>): Promise<T>;
  /** `shutdown()` then `destroyProvider`; safe to call twice. Rejects if shutdown threw. */
  close(): Promise<void>;
  /** For instances never initialised: `destroyProvider` only, no `shutdown()`. */
  discard(): Promise<void>;
  readonly closed: boolean;
}

/** What a read-back found, per channel. */
export interface ReadBackResult {
  found: boolean;
  bySearch?: boolean;
  byPrefetch?: boolean;
}

/** Options for opening an instance. */
export interface OpenOptions {
  /** Reuse a profile directory (a "restart"); default: a fresh one. */
  hermesHome?: string;
  sessionId?: string;
  /** Extra init context keys (merged over `{hermesHome, platform: "cli"}`). */
  context?: Partial<InitContext>;
}

/**
 * Creates, initialises and tears down provider instances for the clauses: one fresh profile per
 * instance unless a clause reuses one, every call inside `runWithProfile(hermesHome)` and bounded
 * by a timeout, and everything still open closed at the end of the run.
 */
export class ProviderHarness {
  private readonly open = new Set<ProviderInstance>();

  /** `initialize()` calls that timed out so far in this run. */
  private initTimeouts = 0;
  /** `createProvider()` calls (e.g. a package import that never finishes) that timed out so far. */
  private createTimeouts = 0;

  constructor(
    private readonly setup: MemoryProviderContractSetup,
    private readonly sandbox: Sandbox,
    readonly timeouts: ResolvedTimeouts,
    /** Called after every call into the provider settles, with what was called (the built-in check). */
    private readonly afterCall: (what: string) => void = () => undefined,
  ) {}

  /** A new, uninitialised instance (for methods callable before `initialize`). */
  async create(label: string, options: { hermesHome?: string; sessionId?: string } = {}): Promise<ProviderInstance> {
    if (this.createTimeouts >= INIT_TIMEOUTS_BEFORE_GIVING_UP) {
      throw new ProviderCallTimeoutError(
        `createProvider() (not waited for again: it did not settle in ${this.createTimeouts} earlier clauses)`,
        this.timeouts.callMs,
      );
    }
    const hermesHome = options.hermesHome ?? this.sandbox.newHermesHome(label);
    const factoryCtx = { hermesHome };
    const scope = { label };
    let provider: MemoryProvider;
    try {
      provider = await withTimeout(
        providerCallScope.run(scope, () => runWithProfile(hermesHome, () => this.setup.createProvider(factoryCtx))),
        this.timeouts.callMs,
        "createProvider()",
      );
    } catch (error) {
      if (error instanceof ProviderCallTimeoutError) this.createTimeouts++;
      throw error;
    } finally {
      this.afterCall("createProvider()");
    }
    const callMs = this.timeouts.callMs;
    let closed = false;
    const instance: ProviderInstance = {
      provider,
      hermesHome,
      sessionId: options.sessionId ?? distinctiveToken(`${label}-session-`),
      call: async (what, fn) => {
        try {
          return await withTimeout(
            providerCallScope.run(scope, () => runWithProfile(hermesHome, () => fn(provider))),
            callMs,
            what,
          );
        } finally {
          this.afterCall(what);
        }
      },
      close: async () => {
        if (closed) return;
        closed = true;
        this.open.delete(instance);
        try {
          await instance.call("shutdown()", (p) => p.shutdown());
        } finally {
          if (this.setup.destroyProvider) {
            await withTimeout(this.setup.destroyProvider(provider, factoryCtx), callMs, "destroyProvider()");
          }
        }
      },
      discard: async () => {
        if (closed) return;
        closed = true;
        this.open.delete(instance);
        if (this.setup.destroyProvider) {
          await withTimeout(this.setup.destroyProvider(provider, factoryCtx), callMs, "destroyProvider()");
        }
      },
      get closed() {
        return closed;
      },
    };
    this.open.add(instance);
    return instance;
  }

  /**
   * Create and `initialize()` an instance with the standard context. Once `initialize()` has
   * timed out `INIT_TIMEOUTS_BEFORE_GIVING_UP` times, later calls fail at once instead of waiting
   * the full call timeout again in every clause (a provider whose initialize hangs would otherwise
   * make the run last about a minute per 4 clauses).
   */
  async openInstance(label: string, options: OpenOptions = {}): Promise<ProviderInstance> {
    if (this.initTimeouts >= INIT_TIMEOUTS_BEFORE_GIVING_UP) {
      throw new ProviderCallTimeoutError(
        `initialize() (not waited for again: it did not settle in ${this.initTimeouts} earlier clauses)`,
        this.timeouts.callMs,
      );
    }
    const instance = await this.create(label, options);
    const sessionId = instance.sessionId;
    const ctx: InitContext = { platform: "cli", agentContext: "primary", ...options.context, hermesHome: instance.hermesHome };
    try {
      await instance.call("initialize()", (p) => p.initialize(sessionId, ctx));
    } catch (error) {
      if (error instanceof ProviderCallTimeoutError) this.initTimeouts++;
      await instance.close().catch(() => undefined);
      throw error;
    }
    return instance;
  }

  /** Make everything written so far readable: `flush()` when searchable, then `waitForConsistency`. */
  async settle(instance: ProviderInstance): Promise<void> {
    if (isSearchableMemory(instance.provider))
      await instance.call("flush()", (p) => (p as unknown as { flush(): MaybePromise<void> }).flush());
    if (this.setup.waitForConsistency) {
      const wait = this.setup.waitForConsistency.bind(this.setup);
      await instance.call("waitForConsistency()", (p) => wait(p));
    }
  }

  /**
   * Look for `token` through every declared read channel: `search(token)` when search is declared,
   * `prefetch(token)` when recall is declared. Matching is by substring of the returned content.
   */
  async readBack(instance: ProviderInstance, token: string, options: { userId?: string } = {}): Promise<ReadBackResult> {
    const caps = this.setup.capabilities;
    const result: ReadBackResult = { found: false };
    if (caps.search) {
      const provider = instance.provider;
      if (!isSearchableMemory(provider)) {
        throw new Error("capabilities.search is declared but the provider lacks remember/search/get/forget/stats/flush");
      }
      const hits = await instance.call("search()", () =>
        provider.search(token, { limit: 20, ...(options.userId ? { userId: options.userId } : {}) }),
      );
      result.bySearch = Array.isArray(hits) && hits.some((h) => typeof h?.content === "string" && h.content.includes(token));
    }
    if (caps.recall) {
      const text = await instance.call("prefetch()", (p) => p.prefetch(token, { sessionId: instance.sessionId }));
      result.byPrefetch = typeof text === "string" && text.includes(token);
    }
    result.found = result.bySearch === true || result.byPrefetch === true;
    return result;
  }

  /** Close every instance a clause left open; errors are ignored (the clause already reported). */
  async closeAll(): Promise<void> {
    for (const instance of [...this.open]) {
      await instance.close().catch((error: unknown) => describeError(error));
    }
  }
}
