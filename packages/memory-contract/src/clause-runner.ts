import { describeError } from "@hermes/memory-core";
import { getClause, type ClauseRequirement, type ContractClause } from "./clauses.js";
import type { ContractRunOptions, MemoryProviderContractSetup } from "./contract-setup.js";
import type { ClauseStatus, ContractResult } from "./contract-report.js";
import type { ProviderHarness } from "./provider-harness.js";
import type { Sandbox } from "./sandbox.js";
import { hasOwn, isArray, ownValue, settingOf } from "./intrinsics.js";
import { takeStrayErrors } from "./stray-errors.js";

/** Longest reason kept in a result; a provider with thousands of tools would otherwise make one clause's reason megabytes long. */
export const MAX_REASON_LENGTH = 4000;

function capReason(reason: string): string {
  if (reason.length <= MAX_REASON_LENGTH) return reason;
  return `${reason.slice(0, MAX_REASON_LENGTH)}… (${reason.length - MAX_REASON_LENGTH} more characters)`;
}

/** What a clause body decides. */
export interface ClauseOutcome {
  status: ClauseStatus;
  reason?: string;
}

/** The clause holds. `note` is shown next to the pass (e.g. what was measured). */
export function pass(note?: string): ClauseOutcome {
  return { status: "pass", reason: note };
}

/** The clause is violated; `reason` says what the provider did. */
export function fail(reason: string): ClauseOutcome {
  return { status: "fail", reason };
}

/** The clause could not be checked; `reason` says why. */
export function skip(reason: string): ClauseOutcome {
  return { status: "skip", reason };
}

/** Why a clause with these requirements is skipped for this setup, or undefined when it runs. */
export function requirementSkipReason(
  requires: readonly ClauseRequirement[] | undefined,
  setup: Pick<MemoryProviderContractSetup, "capabilities" | "packageDir">,
): string | undefined {
  // Own properties only: a field a provider package added to Object.prototype is no setting.
  const capabilities = settingOf(setup, "capabilities");
  const capability = (name: string): unknown => settingOf(capabilities, name);
  for (const req of requires ?? []) {
    if (req === "packageDir") {
      if (!settingOf(setup, "packageDir")) return "setup.packageDir is not given (the hermes-memory-contract CLI sets it)";
    } else if (req === "readBack") {
      if (!capability("search") && !capability("recall")) {
        return "neither capabilities.search nor capabilities.recall is declared, so stored data cannot be read back";
      }
    } else if (!capability(req)) {
      return `setup declares capabilities.${req}: ${String(capability(req) ?? false)}`;
    }
  }
  return undefined;
}

/**
 * Why `clause` is skipped before running anything (capability absent, listed in `setup.skip`, or
 * filtered out by `options.only`), or undefined when it runs. Used by the runner and by the vitest
 * adapter, which turns these into `it.skip`. Clauses that watch the whole run are never skipped
 * here. Only own properties of `setup`, `setup.skip` and `options` are read.
 */
export function staticSkipReason(
  clause: ContractClause,
  setup: Pick<MemoryProviderContractSetup, "capabilities" | "packageDir" | "skip">,
  options: ContractRunOptions = {},
): string | undefined {
  if (ownValue(clause, "wholeRun") === true) return undefined;
  const skipList = settingOf(setup, "skip");
  if (hasOwn(skipList, clause.id)) {
    const explicit = ownValue(skipList, clause.id);
    if (explicit !== undefined) return `skipped by setup.skip: ${String(explicit)}`;
  }
  const only = settingOf(options, "only");
  if (isArray(only) && only.length > 0 && !only.some((o) => o === clause.id || o === clause.group)) {
    return "not selected by options.only";
  }
  return requirementSkipReason(ownValue(clause, "requires") as readonly ClauseRequirement[] | undefined, setup);
}

/** Shared state of one run, handed to every clause group. */
export interface ContractContext {
  readonly setup: MemoryProviderContractSetup;
  readonly options: ContractRunOptions;
  readonly sandbox: Sandbox;
  readonly harness: ProviderHarness;
  /**
   * Run one clause: skipped without calling `body` when its static skip reason applies; a throw
   * from `body` is a failure carrying the error message.
   */
  clause(id: string, body: () => Promise<ClauseOutcome>): Promise<ClauseOutcome>;
}

/** Collects results in clause order. */
export class ClauseRunner {
  private readonly results = new Map<string, ContractResult>();
  /** The id of the clause whose body is running, if any. */
  current: string | undefined;

  constructor(
    private readonly setup: MemoryProviderContractSetup,
    private readonly options: ContractRunOptions,
    /** Called after every clause body, before its outcome is recorded (the built-in check). */
    private readonly afterClause?: (clauseId: string) => void,
  ) {}

  async run(id: string, body: () => Promise<ClauseOutcome>): Promise<ClauseOutcome> {
    const clause = getClause(id);
    const started = performance.now();
    const skipReason = staticSkipReason(clause, this.setup, this.options);
    let outcome: ClauseOutcome;
    if (skipReason !== undefined) {
      outcome = skip(skipReason);
    } else {
      this.current = clause.id;
      try {
        outcome = await body();
      } catch (error) {
        outcome = fail(`threw: ${describeError(error)}`);
      } finally {
        this.current = undefined;
      }
      this.afterClause?.(clause.id);
      // Errors the provider threw from a callback, or promises it left rejected, while this clause ran.
      const strays = takeStrayErrors();
      if (strays.length > 0) {
        const stray = `the provider raised errors outside the calls the kit made (they may come from a callback started earlier): ${strays.join("; ")}`;
        const reason = ownValue(outcome, "reason");
        outcome = fail(outcome.status === "fail" && typeof reason === "string" && reason ? `${reason}; ${stray}` : stray);
      }
    }
    this.record(clause, outcome, performance.now() - started);
    return outcome;
  }

  /** Record an outcome for a clause that could not run at all (e.g. the provider factory threw). */
  recordIfMissing(clause: ContractClause, outcome: ClauseOutcome): void {
    if (this.results.has(clause.id)) return;
    const skipReason = staticSkipReason(clause, this.setup, this.options);
    this.record(clause, skipReason !== undefined ? skip(skipReason) : outcome, 0);
  }

  private record(clause: ContractClause, outcome: ClauseOutcome, durationMs: number): void {
    const result: ContractResult = {
      id: clause.id,
      group: clause.group,
      title: clause.title,
      status: outcome.status,
      hint: clause.hint,
      durationMs: Math.round(durationMs),
    };
    const reason = ownValue(outcome, "reason");
    if (typeof reason === "string") result.reason = capReason(reason);
    this.results.set(clause.id, result);
  }

  /** Results in catalogue order. */
  list(order: readonly ContractClause[]): ContractResult[] {
    return order.map((c) => this.results.get(c.id)).filter((r): r is ContractResult => r !== undefined);
  }
}
