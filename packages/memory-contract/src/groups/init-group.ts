import { describeError, type InitContext } from "@hermes/memory-core";
import { fail, pass, type ClauseOutcome, type ContractContext } from "../clause-runner.js";
import { distinctiveToken } from "../provider-harness.js";
import type { FsWriteWatch } from "../fs-write-watch.js";
import { diffSnapshots, type FileSnapshot } from "../sandbox.js";
import { sampleArguments } from "../tool-schema-checks.js";
import { describeSandboxPath, watchWritesOf, writesOutside } from "../write-detection.js";

/** INIT: tolerant initialize(), no writes outside hermesHome during a normal session. */
export async function runInitGroup(ctx: ContractContext): Promise<void> {
  const { harness } = ctx;

  await ctx.clause("C-INIT-1", async () => {
    const attempts: Array<[string, Omit<InitContext, "hermesHome">]> = [
      ["only hermesHome", {}],
      [
        "unknown keys",
        {
          platform: "telegram",
          agentContext: "primary",
          futureOption: { nested: [1, 2, 3] },
          statusCallback: () => undefined,
          chatType: "group",
          threadId: "thread-1",
          toolsOnly: false,
        },
      ],
    ];
    for (const [label, extra] of attempts) {
      const instance = await harness.create("init-context");
      try {
        const ctxArg = { ...extra, hermesHome: instance.hermesHome } as InitContext;
        await instance.call("initialize()", (p) => p.initialize(instance.sessionId, ctxArg));
      } catch (error) {
        await instance.close().catch(() => undefined);
        return fail(`initialize() with ${label} threw: ${describeError(error)}`);
      }
      await instance.close();
    }
    return pass();
  });

  await ctx.clause("C-INIT-2", async () => {
    const hermesHome = ctx.sandbox.newHermesHome("init-writes");
    const before = ctx.sandbox.snapshot([hermesHome]);
    const watch = watchWritesOf("init-writes");
    watch.start();
    try {
      return await checkSessionWrites(ctx, hermesHome, before, watch);
    } finally {
      watch.stop();
    }
  });
}

/** A normal session (init, sync, prefetch, a tool call, session end, shutdown), then the write check. */
async function checkSessionWrites(
  ctx: ContractContext,
  hermesHome: string,
  before: FileSnapshot,
  watch: FsWriteWatch,
): Promise<ClauseOutcome> {
  const { harness } = ctx;
  const instance = await harness.openInstance("init-writes", { hermesHome });
  const token = distinctiveToken("initwrite");
  await instance.call("syncTurn()", (p) =>
    p.syncTurn(`Please remember ${token}`, `Remembered ${token}`, { sessionId: instance.sessionId }),
  );
  await instance.call("prefetch()", (p) => p.prefetch(`what about ${token}`, { sessionId: instance.sessionId }));
  if (ctx.setup.capabilities.tools) {
    const schemas = instance.provider.getToolSchemas();
    const first = schemas[0];
    if (first) {
      await instance
        .call("handleToolCall()", (p) => p.handleToolCall(first.name, sampleArguments(first.parameters), { sessionId: instance.sessionId }))
        .catch(() => undefined);
    }
  }
  await instance.call("onSessionEnd()", (p) => p.onSessionEnd([{ role: "user", content: `Please remember ${token}` }]));
  await instance.close();
  const changed = diffSnapshots(before, ctx.sandbox.snapshot([hermesHome]));
  const outside = writesOutside(ctx.sandbox, hermesHome, changed, watch.written);
  if (outside.length > 0) {
    const shown = outside.slice(0, 5).map((p) => describeSandboxPath(ctx.sandbox, p));
    return fail(`wrote outside hermesHome: ${shown.join(", ")}${outside.length > 5 ? ` (+${outside.length - 5} more)` : ""}`);
  }
  return pass(ctx.sandbox.cwdSandboxed ? undefined : "cwd could not be sandboxed in this worker; only HOME and the sandbox were watched");
}
