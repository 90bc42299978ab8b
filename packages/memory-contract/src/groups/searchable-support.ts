import {
  HermesMemoryError,
  describeError,
  isSearchableMemory,
  searchCapabilities,
  type MemoryHit,
  type MemoryItem,
  type MemorySearchOptions,
  type SearchableMemory,
} from "@hermes/memory-core";
import { getClause, type DeclaredCapability } from "../clauses.js";
import { ownValue } from "../intrinsics.js";
import { skip, type ClauseOutcome, type ContractContext } from "../clause-runner.js";
import type { OpenOptions, ProviderInstance } from "../provider-harness.js";

/** The instance's provider as `SearchableMemory`; throws when `capabilities.search` was declared for a provider that is not. */
export function searchableOf(instance: ProviderInstance): SearchableMemory {
  const provider = instance.provider;
  if (!isSearchableMemory(provider)) {
    throw new Error("capabilities.search is declared but the provider lacks remember/search/get/forget/stats/flush");
  }
  return provider;
}

/**
 * Why `clauseId` cannot run against this provider: the capabilities the clause needs that the
 * provider does not declare in `capabilities()` (read with core's `searchCapabilities`).
 */
export function undeclaredReason(clauseId: string, memory: SearchableMemory): string | undefined {
  const needed = (ownValue(getClause(clauseId), "declares") as DeclaredCapability[] | undefined) ?? [];
  if (needed.length === 0) return undefined;
  const declared = searchCapabilities(memory);
  const missing = needed.filter((c) => !declared[c]);
  if (missing.length === 0) return undefined;
  return `the provider does not declare ${missing.join(", ")} in capabilities() (or lacks the method it needs)`;
}

/** One initialised instance seen as `SearchableMemory`, with the calls the v2 clauses make. */
export class SearchableProbe {
  readonly memory: SearchableMemory;

  constructor(
    private readonly ctx: ContractContext,
    readonly instance: ProviderInstance,
  ) {
    this.memory = searchableOf(instance);
  }

  remember(item: MemoryItem): Promise<string> {
    return this.instance.call("remember()", () => this.memory.remember(item));
  }

  async search(query: string, options: MemorySearchOptions): Promise<MemoryHit[]> {
    const hits = await this.instance.call(`search(${JSON.stringify(options)})`, () => this.memory.search(query, options));
    if (!Array.isArray(hits)) throw new Error(`search() resolved to ${typeof hits}, not a list of hits`);
    return hits;
  }

  get(id: string): Promise<MemoryHit | null> {
    return this.instance.call("get()", () => this.memory.get(id));
  }

  /** flush() and waitForConsistency, so everything written so far is searchable. */
  settle(): Promise<void> {
    return this.ctx.harness.settle(this.instance);
  }
}

/**
 * Run clause `id` on a fresh instance: skipped with the reason when the provider does not declare
 * the capabilities the clause needs, otherwise `body` decides. The instance is always closed.
 */
export function searchableClause(
  ctx: ContractContext,
  id: string,
  label: string,
  body: (probe: SearchableProbe) => Promise<ClauseOutcome>,
  options: OpenOptions = {},
): Promise<ClauseOutcome> {
  return ctx.clause(id, async () => {
    const instance = await ctx.harness.openInstance(label, options);
    try {
      const probe = new SearchableProbe(ctx, instance);
      const reason = undeclaredReason(id, probe.memory);
      if (reason !== undefined) return skip(reason);
      return await body(probe);
    } finally {
      await instance.close();
    }
  });
}

/** True when some hit's content contains `token`. */
export function mentions(hits: readonly MemoryHit[], token: string): boolean {
  return hits.some((h) => typeof h?.content === "string" && h.content.includes(token));
}

/**
 * What a call expected to be refused did: `null` when it threw a `HermesMemoryError` with code
 * INVALID_ARGUMENT, otherwise a description of what happened instead.
 */
export async function refusalProblem(call: () => Promise<unknown>): Promise<string | null> {
  try {
    const value = await call();
    return `was accepted (resolved to ${JSON.stringify(value)?.slice(0, 80) ?? "undefined"})`;
  } catch (error) {
    if (HermesMemoryError.hasCode(error, "INVALID_ARGUMENT")) return null;
    const code = HermesMemoryError.isInstance(error) ? `HermesMemoryError ${error.code}` : "an untyped error";
    return `threw ${code} instead of INVALID_ARGUMENT: ${describeError(error)}`;
  }
}

/** Resolve after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
