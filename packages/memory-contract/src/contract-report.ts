import type { ContractGroup } from "./clauses.js";

/** Outcome of one clause. */
export type ClauseStatus = "pass" | "fail" | "skip";

/** The result of one clause, as returned by `runMemoryProviderContract` and printed by the CLI. */
export interface ContractResult {
  /** Stable clause id, e.g. `C-TOOLS-2`. */
  id: string;
  group: ContractGroup;
  title: string;
  status: ClauseStatus;
  /** Why it failed or was skipped (absent on pass, or a short note). */
  reason?: string;
  /** One-line troubleshooting hint for the clause. */
  hint: string;
  /** Wall-clock time spent on the clause, in milliseconds. */
  durationMs: number;
}

/** Counts per status. */
export interface ContractSummary {
  pass: number;
  fail: number;
  skip: number;
  total: number;
}

/** Everything one contract run found out. */
export interface ContractReport {
  /** The provider name from the setup. */
  provider: string;
  results: ContractResult[];
  summary: ContractSummary;
  /** True when no clause failed. */
  ok: boolean;
}

/** Count results per status. */
export function summarizeResults(results: readonly ContractResult[]): ContractSummary {
  const summary: ContractSummary = { pass: 0, fail: 0, skip: 0, total: results.length };
  for (const r of results) summary[r.status] += 1;
  return summary;
}
