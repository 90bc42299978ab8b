import type { MaybePromise, MemoryProvider } from "@hermes/memory-core";
import { nullObject, ownKeys, ownValue, settingOf } from "./intrinsics.js";

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

/** Apply the documented defaults to `timeouts` (its fields inherited from `Object.prototype` are ignored). */
export function resolveTimeouts(timeouts: ContractTimeouts | undefined): ResolvedTimeouts {
  const field = (key: keyof ContractTimeouts, fallback: number): number => {
    const value = settingOf(timeouts, key);
    return typeof value === "number" ? value : fallback;
  };
  return {
    syncTurnMs: field("syncTurnMs", 10),
    callMs: field("callMs", 15_000),
    handleGraceMs: field("handleGraceMs", 2_000),
  };
}

const SETUP_KEYS = [
  "name",
  "createProvider",
  "destroyProvider",
  "capabilities",
  "packageDir",
  "waitForConsistency",
  "breakStorage",
  "skip",
  "timeouts",
] as const;
const CAPABILITY_KEYS = ["tools", "recall", "checkpoint", "search", "sessionSwitch", "mirrorsBuiltinWrites", "userScoping"] as const;
const TIMEOUT_KEYS = ["syncTurnMs", "callMs", "handleGraceMs"] as const;

function copyFields<T extends object>(source: unknown, keys: readonly string[]): T {
  const out = nullObject<Record<string, unknown>>();
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    const value = settingOf(source, key);
    if (value !== undefined) out[key] = value;
  }
  return out as T;
}

/**
 * The setup as the run uses it: objects without a prototype holding only the documented fields,
 * read from the given objects and their own prototypes but never from `Object.prototype`, so
 * fields a provider package added there (`skip`, `timeouts`, `userScoping`…) change nothing.
 * Functions are bound to the original setup object.
 */
export function normalizeSetup(setup: MemoryProviderContractSetup): MemoryProviderContractSetup {
  const out = copyFields<Record<string, unknown>>(setup, SETUP_KEYS);
  for (const key of ["createProvider", "destroyProvider", "waitForConsistency", "breakStorage"] as const) {
    const fn = out[key];
    if (typeof fn === "function") out[key] = fn.bind(setup);
  }
  out.capabilities = copyFields(out.capabilities, CAPABILITY_KEYS);
  if (out.timeouts !== undefined) out.timeouts = copyFields(out.timeouts, TIMEOUT_KEYS);
  if (out.skip !== undefined) {
    const skip = nullObject<Record<string, string>>();
    const keys = ownKeys(out.skip as object);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      const reason = ownValue(out.skip, key as PropertyKey);
      if (typeof key === "string" && reason !== undefined) skip[key] = String(reason);
    }
    out.skip = skip;
  }
  return out as unknown as MemoryProviderContractSetup;
}

/** The run options as the run uses them (own fields only, `only` copied). */
export function normalizeOptions(options: ContractRunOptions): ContractRunOptions {
  const out = nullObject<ContractRunOptions>();
  const only = settingOf(options, "only");
  if (Array.isArray(only)) out.only = only.filter((o): o is string => typeof o === "string");
  return out;
}
