import { fail, pass, type ContractContext } from "../clause-runner.js";
import { distinctiveToken } from "../provider-harness.js";

/** RECALL: a fact from one session comes back through prefetch after a restart. */
export async function runRecallGroup(ctx: ContractContext): Promise<void> {
  await ctx.clause("C-RECALL-1", async () => {
    const { harness } = ctx;
    const token = distinctiveToken("heliotrope");
    const first = await harness.openInstance("recall-first");
    try {
      await first.call("syncTurn()", (p) =>
        p.syncTurn(
          `The secret codename for project Heliotrope is ${token}.`,
          `Understood: the codename for project Heliotrope is ${token}.`,
          { sessionId: first.sessionId },
        ),
      );
    } finally {
      await first.close();
    }
    const second = await harness.openInstance("recall-second", { hermesHome: first.hermesHome });
    try {
      await harness.settle(second);
      const query = "What is the secret codename for project Heliotrope?";
      const text = await second.call("prefetch()", (p) => p.prefetch(query, { sessionId: second.sessionId }));
      if (typeof text === "string" && text.includes(token)) return pass();
      // Cache-based providers answer from queuePrefetch; give them the host's warm-up call once.
      await second.call("queuePrefetch()", (p) => p.queuePrefetch(query, { sessionId: second.sessionId }));
      const warmed = await second.call("prefetch()", (p) => p.prefetch(query, { sessionId: second.sessionId }));
      if (typeof warmed === "string" && warmed.includes(token)) return pass("found only after queuePrefetch()");
      return fail(`prefetch(${JSON.stringify(query)}) in a new session after restart did not return the fact (got ${JSON.stringify(String(warmed).slice(0, 120))})`);
    } finally {
      await second.close();
    }
  });
}
