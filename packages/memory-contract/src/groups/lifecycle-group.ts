import { describeError, type MemoryProvider } from "@hermes/memory-core";
import { describeBuiltinChanges, type BuiltinWatch } from "../builtin-watch.js";
import type { ChildProcessWatch } from "../child-processes.js";
import { fail, pass, skip, type ContractContext } from "../clause-runner.js";
import { distinctiveToken, type ProviderInstance } from "../provider-harness.js";
import { providerCallScope } from "../provider-call-scope.js";
import { ResourceTracker } from "../resource-tracker.js";
import { sampleArguments } from "../tool-schema-checks.js";

async function exercise(instance: ProviderInstance): Promise<void> {
  const token = distinctiveToken("lifecycle");
  await instance.call("syncTurn()", (p) => p.syncTurn(`Lifecycle marker ${token}`, "ok", { sessionId: instance.sessionId }));
  await instance.call("prefetch()", (p) => p.prefetch(`Lifecycle marker ${token}`, { sessionId: instance.sessionId }));
}

/** LIFECYCLE: idempotent shutdown, harmless late calls, no handles left behind. */
export async function runLifecycleGroup(ctx: ContractContext): Promise<void> {
  const { harness } = ctx;

  await ctx.clause("C-LIFECYCLE-1", async () => {
    const instance = await harness.openInstance("lifecycle-idempotent");
    await exercise(instance);
    await instance.close();
    try {
      await instance.call("second shutdown()", (p) => p.shutdown());
    } catch (error) {
      return fail(`the second shutdown() threw: ${describeError(error)}`);
    }
    return pass();
  });

  await ctx.clause("C-LIFECYCLE-2", async () => {
    const instance = await harness.openInstance("lifecycle-late-calls");
    await exercise(instance);
    await instance.close();
    const late: Array<[string, (p: MemoryProvider) => unknown]> = [
      ["syncTurn()", (p) => p.syncTurn("late turn", "late answer", { sessionId: instance.sessionId })],
      ["prefetch()", (p) => p.prefetch("late query", { sessionId: instance.sessionId })],
      ["queuePrefetch()", (p) => p.queuePrefetch("late query", { sessionId: instance.sessionId })],
      ["onSessionEnd()", (p) => p.onSessionEnd([{ role: "user", content: "late" }])],
      ["systemPromptBlock()", (p) => p.systemPromptBlock()],
    ];
    if (ctx.setup.capabilities.tools) {
      const first = instance.provider.getToolSchemas()[0];
      if (first) late.push([`handleToolCall(${first.name})`, (p) => p.handleToolCall(first.name, sampleArguments(first.parameters), {})]);
    }
    // A v2 checkpoint after shutdown may legitimately throw (it cannot be durable); v1 must not.
    if (instance.provider.preCompressCheckpointApiVersion !== 2) {
      late.push(["onPreCompress()", (p) => p.onPreCompress([{ role: "user", content: "late" }], { requireCheckpoint: false })]);
    }
    const problems: string[] = [];
    for (const [what, fn] of late) {
      try {
        await instance.call(`${what} after shutdown`, fn);
      } catch (error) {
        problems.push(`${what} threw: ${describeError(error)}`);
      }
    }
    return problems.length > 0 ? fail(`after shutdown: ${problems.join("; ")}`) : pass();
  });

  await ctx.clause("C-LIFECYCLE-3", async () => {
    const label = "lifecycle-handles";
    const tracker = new ResourceTracker(() => providerCallScope.getStore()?.label === label);
    tracker.start();
    try {
      const instance = await harness.openInstance(label);
      await exercise(instance);
      await instance.close();
      const left = await tracker.settle(harness.timeouts.handleGraceMs);
      if (left.length > 0) {
        return fail(
          `${harness.timeouts.handleGraceMs} ms after shutdown, resources the provider created still keep the process alive: ${left.join(", ")}`,
        );
      }
      return pass();
    } finally {
      tracker.stop();
    }
  });
}

/**
 * The LIFECYCLE clauses that watch the whole run, run after every instance is closed:
 * C-LIFECYCLE-4 (built-ins unchanged; the watch has already put back what it could) and
 * C-LIFECYCLE-5 (no process the run started still running; the kit stops those it finds).
 */
export async function runWholeRunClauses(
  ctx: ContractContext,
  watches: { builtins: BuiltinWatch; children: ChildProcessWatch },
): Promise<void> {
  const { builtins, children } = watches;

  await ctx.clause("C-LIFECYCLE-4", async () => {
    builtins.check("at the end of the run");
    const changes = builtins.changes();
    if (changes.length === 0) return pass();
    return fail(
      `the provider changed ${changes.length} built-in ${changes.length === 1 ? "property" : "properties"}: ${describeBuiltinChanges(changes)}`,
    );
  });

  await ctx.clause("C-LIFECYCLE-5", async () => {
    if (children.unsupportedReason !== undefined) return skip(children.unsupportedReason);
    const left = await children.settle(ctx.harness.timeouts.handleGraceMs);
    if (left.length === 0) return pass();
    const stopped = await children.stopAll(left);
    return fail(
      `${left.length} child ${left.length === 1 ? "process" : "processes"} the provider started still ran ${ctx.harness.timeouts.handleGraceMs} ms after shutdown; the kit stopped ${left.length === 1 ? "it" : "them"}: ${stopped.join("; ")}`,
    );
  });
}
