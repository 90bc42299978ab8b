import { beforeAll, describe, it } from "vitest";
import { CONTRACT_CLAUSES } from "./clauses.js";
import { staticSkipReason } from "./clause-runner.js";
import type { ContractRunOptions, MemoryProviderContractSetup } from "./contract-setup.js";
import type { ContractReport } from "./contract-report.js";
import { rebaselineBuiltins } from "./builtin-watch.js";
import { runMemoryProviderContract } from "./run-contract.js";

export type { MemoryProviderContractSetup, ContractCapabilities, ContractTimeouts, ProviderFactoryContext } from "./contract-setup.js";

/** Options of `describeMemoryProviderContract`. */
export interface DescribeContractOptions extends ContractRunOptions {
  /** Timeout of the whole contract run (it runs once, in `beforeAll`). Default 120000 ms. */
  timeoutMs?: number;
}

/**
 * Declare the memory provider contract as vitest tests: one `describe` for the provider and one
 * `it` per clause, named `C-XXX-N title`. The whole contract runs once in `beforeAll`; each `it`
 * then reports its clause. Clauses whose capability the setup declares absent become `it.skip`
 * with the reason in the name; a failing clause throws its reason and troubleshooting hint.
 *
 * Call it at the top level of a test file (it registers tests; it does not run them itself).
 */
export function describeMemoryProviderContract(setup: MemoryProviderContractSetup, options: DescribeContractOptions = {}): void {
  describe(`memory provider contract: ${setup.name}`, () => {
    let report: ContractReport | undefined;
    let runError: unknown;

    beforeAll(async () => {
      try {
        // Built-ins are judged from here on: what the test file set up before is its own business.
        rebaselineBuiltins();
        report = await runMemoryProviderContract(setup, options);
      } catch (error) {
        runError = error;
      }
    }, options.timeoutMs ?? 120_000);

    for (const clause of CONTRACT_CLAUSES) {
      const name = `${clause.id} ${clause.title}`;
      const skipReason = staticSkipReason(clause, setup, options);
      if (skipReason !== undefined) {
        it.skip(`${name} (skipped: ${skipReason})`, () => undefined);
        continue;
      }
      it(name, (testContext) => {
        if (runError !== undefined) throw runError;
        const result = report?.results.find((r) => r.id === clause.id);
        if (!result) throw new Error(`${clause.id} produced no result; the contract run did not complete`);
        if (result.status === "skip") testContext.skip(result.reason);
        if (result.status === "fail") {
          const error = new Error(`${clause.id} failed: ${result.reason ?? "no reason given"}\nHint: ${result.hint}`);
          error.stack = error.message;
          throw error;
        }
      });
    }
  });
}
