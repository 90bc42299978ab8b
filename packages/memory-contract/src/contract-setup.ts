import type { MaybePromise, MemoryProvider } from "@hermes/memory-core";

/** What the kit hands `createProvider`: the fresh, empty profile directory of this instance. */
export interface ProviderFactoryContext {
  /** A fresh temp directory used as `$HERMES_HOME` for this instance (shared on "restart"). */
  hermesHome: string;
}

/**
 * What the provider supports. A clause that needs an undeclared capability is reported as
 * `skip` with the reason; it is never silently passed.
 */
export interface ContractCapabilities {
  /** `getToolSchemas()` returns at least one tool. */
  tools: boolean;
  /** `prefetch()` recalls stored turns. */
  recall: boolean;
  /** Checkpoint API v2 (`preCompressCheckpointApiVersion = 2`). */
  checkpoint: boolean;
  /** Implements `SearchableMemory` (`search`, `stats`, `flush`…). */
  search: boolean;
  /** `onSessionSwitch` is implemented. */
  sessionSwitch: boolean;
  /** `onMemoryWrite` stores mirrored built-in memory writes. */
  mirrorsBuiltinWrites: boolean;
  /** Items are scoped by `ctx.userId`. Default false. */
  userScoping?: boolean;
}

/** Limits the kit applies. All in milliseconds. */
export interface ContractTimeouts {
  /** Upper bound for one `syncTurn` call in the burst (default 10). */
  syncTurnMs?: number;
  /** Upper bound for any other single provider call before it counts as hung (default 15000). */
  callMs?: number;
  /** How long handles may take to close after shutdown (default 2000). */
  handleGraceMs?: number;
}

/** Extra information handed to `breakStorage`. */
export interface BreakStorageContext {
  provider: MemoryProvider;
  hermesHome: string;
}

/**
 * The setup object a provider author passes to `describeMemoryProviderContract` (or
 * `runMemoryProviderContract`). Only `name`, `createProvider` and `capabilities` are required.
 */
export interface MemoryProviderContractSetup {
  /** The provider's name; `provider.name` must equal it. */
  name: string;
  /**
   * Return a NEW, uninitialised provider instance. Called many times; the kit calls
   * `initialize(sessionId, {hermesHome, ...})` itself. Instances sharing `hermesHome` simulate a
   * restart of the same profile.
   */
  createProvider(ctx: ProviderFactoryContext): MaybePromise<MemoryProvider>;
  /** Extra clean-up after the kit called `shutdown()` (close pools, stop fake servers). */
  destroyProvider?(provider: MemoryProvider, ctx: ProviderFactoryContext): MaybePromise<void>;
  capabilities: ContractCapabilities;
  /** The provider's package directory: enables the MANIFEST clauses. */
  packageDir?: string;
  /**
   * Called before the kit reads back what it wrote (eventually consistent backends wait for
   * indexing here). Runs after `flush()` when the provider has it.
   */
  waitForConsistency?(provider: MemoryProvider): MaybePromise<void>;
  /**
   * Make the provider's storage fail (for C-CHECKPOINT-4), e.g. close its database handle.
   * Without it, the kit replaces the `hermesHome` directory by a plain file, which only reaches
   * providers that open their files per write.
   */
  breakStorage?(ctx: BreakStorageContext): MaybePromise<void>;
  /** Clause ids to skip, with the reason reported (e.g. `{"C-CHECKPOINT-4": "needs a server"}`). */
  skip?: Record<string, string>;
  timeouts?: ContractTimeouts;
}

/** Options of one contract run. */
export interface ContractRunOptions {
  /** Run only these clause ids (or group names); the others are reported as skipped. */
  only?: string[];
}

/** Resolved limits with defaults applied. */
export interface ResolvedTimeouts {
  syncTurnMs: number;
  callMs: number;
  handleGraceMs: number;
}

/** Apply the documented defaults to `timeouts`. */
export function resolveTimeouts(timeouts: ContractTimeouts | undefined): ResolvedTimeouts {
  return {
    syncTurnMs: timeouts?.syncTurnMs ?? 10,
    callMs: timeouts?.callMs ?? 15_000,
    handleGraceMs: timeouts?.handleGraceMs ?? 2_000,
  };
}
