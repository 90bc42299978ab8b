import { describeError } from "@hermes/memory-core";
import { CONTRACT_CLAUSES, type ContractGroup } from "./clauses.js";
import { ClauseRunner, fail, type ContractContext } from "./clause-runner.js";
import { BuiltinWatch } from "./builtin-watch.js";
import { ChildProcessWatch } from "./child-processes.js";
import {
  normalizeOptions,
  normalizeSetup,
  resolveTimeouts,
  type ContractRunOptions,
  type MemoryProviderContractSetup,
} from "./contract-setup.js";
import { summarizeResults, type ContractReport } from "./contract-report.js";
import { runCheckpointGroup } from "./groups/checkpoint-group.js";
import { runConfigGroup } from "./groups/config-group.js";
import { runErasureGroup } from "./groups/erasure-group.js";
import { runExpiryGroup } from "./groups/expiry-group.js";
import { runFiltersGroup } from "./groups/filters-group.js";
import { runHooksGroup } from "./groups/hooks-group.js";
import { runIdentityGroup } from "./groups/identity-group.js";
import { runInitGroup } from "./groups/init-group.js";
import { runIsolationGroup } from "./groups/isolation-group.js";
import { runLifecycleGroup, runWholeRunClauses } from "./groups/lifecycle-group.js";
import { runManifestGroup } from "./groups/manifest-group.js";
import { runRecallGroup } from "./groups/recall-group.js";
import { runToolsGroup } from "./groups/tools-group.js";
import { runUpdateGroup } from "./groups/update-group.js";
import { ProviderHarness } from "./provider-harness.js";
import { Sandbox } from "./sandbox.js";
import { captureStrayErrors } from "./stray-errors.js";

const GROUP_RUNNERS: Array<[ContractGroup, (ctx: ContractContext) => Promise<void>]> = [
  ["MANIFEST", runManifestGroup],
  ["IDENTITY", runIdentityGroup],
  ["INIT", runInitGroup],
  ["TOOLS", runToolsGroup],
  ["CONFIG", runConfigGroup],
  ["HOOKS", runHooksGroup],
  ["RECALL", runRecallGroup],
  ["ISOLATION", runIsolationGroup],
  ["FILTERS", runFiltersGroup],
  ["EXPIRY", runExpiryGroup],
  ["ERASURE", runErasureGroup],
  ["UPDATE", runUpdateGroup],
  ["CHECKPOINT", runCheckpointGroup],
  ["LIFECYCLE", runLifecycleGroup],
];

// Process-wide state (HOME, cwd, network functions) is swapped during a run, so runs never overlap.
let runQueue: Promise<unknown> = Promise.resolve();

/**
 * Run every contract clause against the provider described by `setup` and return the results;
 * never throws for provider misbehaviour (that is a `fail` result). Framework-free: the vitest
 * adapter and the CLI both call it.
 *
 * While it runs, `HOME`/`USERPROFILE` and the working directory point into a temp sandbox,
 * `HERMES_HOME` is unset, and network functions are briefly trapped; everything is restored
 * before it resolves. Concurrent calls in one process are serialised.
 */
export function runMemoryProviderContract(setup: MemoryProviderContractSetup, options: ContractRunOptions = {}): Promise<ContractReport> {
  const run = runQueue.then(() => runExclusive(setup, options));
  runQueue = run.catch(() => undefined);
  return run;
}

async function runExclusive(givenSetup: MemoryProviderContractSetup, givenOptions: ContractRunOptions): Promise<ContractReport> {
  // Built-ins changed before the run (e.g. when the CLI imported the package) are put back first.
  const builtins = new BuiltinWatch();
  builtins.check("before the run, e.g. while the provider package was imported");
  const setup = normalizeSetup(givenSetup);
  const options = normalizeOptions(givenOptions);
  const children = new ChildProcessWatch();
  children.start();
  const runner = new ClauseRunner(setup, options, (id) => builtins.check(`during ${id}`));
  const sandbox = Sandbox.create();
  const harness = new ProviderHarness(setup, sandbox, resolveTimeouts(setup.timeouts), (what) =>
    builtins.check(runner.current ? `in ${what} during ${runner.current}` : `in ${what}`),
  );
  const ctx: ContractContext = {
    setup,
    options,
    sandbox,
    harness,
    clause: (id, body) => runner.run(id, body),
  };
  // A provider's uncaught exception or unhandled rejection fails the clause running, not the process.
  const releaseStrayErrors = captureStrayErrors();
  try {
    sandbox.enter();
    try {
      for (const [group, runGroup] of GROUP_RUNNERS) {
        try {
          await runGroup(ctx);
        } catch (error) {
          // A group-level failure (e.g. createProvider threw) fails every clause it did not reach.
          for (const clause of CONTRACT_CLAUSES.filter((c) => c.group === group && c.wholeRun !== true)) {
            runner.recordIfMissing(clause, fail(`could not run: ${describeError(error)}`));
          }
        }
      }
      await harness.closeAll();
    } finally {
      sandbox.dispose();
    }
    // Last, once every instance is closed: what the whole run did to built-ins and processes.
    await runWholeRunClauses(ctx, { builtins, children });
  } finally {
    children.stop();
    releaseStrayErrors();
  }
  const results = runner.list(CONTRACT_CLAUSES);
  const summary = summarizeResults(results);
  return { provider: setup.name, results, summary, ok: summary.fail === 0 };
}
