import { searchCapabilities } from "@hermes/memory-core";
import { fail, pass, type ContractContext } from "../clause-runner.js";
import { distinctiveToken, type ProviderInstance } from "../provider-harness.js";
import { mentions, searchableClause } from "./searchable-support.js";
import { runUserBoundaryClause } from "./user-boundary-clause.js";

interface ProfileRun {
  label: string;
  token: string;
  writer?: ProviderInstance;
  hermesHome?: string;
}

/** ISOLATION: concurrent profiles and, when declared, users never see each other's data. */
export async function runIsolationGroup(ctx: ContractContext): Promise<void> {
  const { harness } = ctx;

  await ctx.clause("C-ISOLATION-1", async () => {
    const runs: ProfileRun[] = [
      { label: "profile-a", token: distinctiveToken("profilea") },
      { label: "profile-b", token: distinctiveToken("profileb") },
    ];
    // Both profiles write at the same time, interleaved at every await (runWithProfile per call).
    await Promise.all(
      runs.map(async (run) => {
        const writer = await harness.openInstance(run.label);
        run.writer = writer;
        run.hermesHome = writer.hermesHome;
        for (let i = 0; i < 3; i++) {
          await writer.call("syncTurn()", (p) =>
            p.syncTurn(`Turn ${i} of ${run.label}: remember ${run.token}`, `Remembered ${run.token}`, { sessionId: writer.sessionId }),
          );
        }
        await writer.close();
      }),
    );
    const problems: string[] = [];
    await Promise.all(
      runs.map(async (run, i) => {
        const other = runs[1 - i]!;
        const reader = await harness.openInstance(`${run.label}-reader`, { hermesHome: run.hermesHome! });
        try {
          await harness.settle(reader);
          if (!(await harness.readBack(reader, run.token)).found) problems.push(`${run.label} cannot read its own data`);
          const leaked = await harness.readBack(reader, other.token);
          if (leaked.found) {
            const via = [leaked.bySearch ? "search" : "", leaked.byPrefetch ? "prefetch" : ""].filter(Boolean).join(" and ");
            problems.push(`${run.label} sees ${other.label}'s data through ${via}`);
          }
        } finally {
          await reader.close();
        }
      }),
    );
    return problems.length > 0 ? fail(problems.sort().join("; ")) : pass();
  });

  await ctx.clause("C-ISOLATION-2", async () => {
    const hermesHome = ctx.sandbox.newHermesHome("users");
    const users = [
      { userId: "contract-user-1", token: distinctiveToken("usera") },
      { userId: "contract-user-2", token: distinctiveToken("userb") },
    ];
    for (const user of users) {
      const writer = await harness.openInstance(user.userId, { hermesHome, context: { userId: user.userId } });
      try {
        await writer.call("syncTurn()", (p) =>
          p.syncTurn(`My marker is ${user.token}`, `Noted ${user.token}`, { sessionId: writer.sessionId }),
        );
      } finally {
        await writer.close();
      }
    }
    const problems: string[] = [];
    for (const [i, user] of users.entries()) {
      const other = users[1 - i]!;
      const reader = await harness.openInstance(`${user.userId}-reader`, { hermesHome, context: { userId: user.userId } });
      try {
        await harness.settle(reader);
        if (!(await harness.readBack(reader, user.token, { userId: user.userId })).found)
          problems.push(`${user.userId} cannot read its own data`);
        if ((await harness.readBack(reader, other.token, { userId: user.userId })).found)
          problems.push(`${user.userId} sees ${other.userId}'s data`);
      } finally {
        await reader.close();
      }
    }
    return problems.length > 0 ? fail(problems.join("; ")) : pass();
  });

  // One instance (its own ctx.userId is user b) writes for users a and b; b's items match the query
  // better, so a provider that searches its own user instead of the requested one returns them.
  const userA = "contract-user-a";
  const userB = "contract-user-b";
  await searchableClause(
    ctx,
    "C-ISOLATION-3",
    "two-users",
    async (probe) => {
      const topic = distinctiveToken("sharedtopic");
      const tokenA = distinctiveToken("usera");
      const tokensB = [distinctiveToken("userb"), distinctiveToken("userb"), distinctiveToken("userb")];
      const idA = await probe.remember({ content: `${topic} note of user a: ${tokenA}`, userId: userA });
      const idsB: string[] = [];
      for (const token of tokensB)
        idsB.push(await probe.remember({ content: `${topic} ${topic} ${topic} note of user b: ${token}`, userId: userB }));
      await probe.settle();
      const problems: string[] = [];
      const forA = await probe.search(topic, { userId: userA, limit: 3 });
      if (!mentions(forA, tokenA)) problems.push("search(q, {userId: a}) does not return a's item");
      if (tokensB.some((t) => mentions(forA, t)) || forA.some((h) => h.userId === userB))
        problems.push("search(q, {userId: a}) returns b's items");
      const forB = await probe.search(topic, { userId: userB, limit: 10 });
      if (mentions(forB, tokenA) || forB.some((h) => h.userId === userA)) problems.push("search(q, {userId: b}) returns a's item");
      if (!tokensB.every((t) => mentions(forB, t))) problems.push("search(q, {userId: b}) does not return all of b's items");
      if (problems.length > 0) return fail(problems.join("; "));
      if (!searchCapabilities(probe.memory).erasure) return pass("forgetWhere({userId}) not tried: the provider does not declare erasure");
      const erased = await probe.instance.call("forgetWhere({userId: a})", () => probe.memory.forgetWhere!({ userId: userA }));
      if (erased !== 1) problems.push(`forgetWhere({userId: a}) returned ${JSON.stringify(erased)}, not 1 (a had one item)`);
      await probe.settle();
      const afterB = await probe.search(topic, { userId: userB, limit: 10 });
      if (!tokensB.every((t) => mentions(afterB, t)))
        problems.push("after forgetWhere({userId: a}) search no longer returns all of b's items");
      for (const id of idsB)
        if ((await probe.get(id)) === null) problems.push(`after forgetWhere({userId: a}) get() no longer returns b's item ${id}`);
      if ((await probe.get(idA)) !== null) problems.push("after forgetWhere({userId: a}) get() still returns a's item");
      return problems.length > 0 ? fail(problems.join("; ")) : pass();
    },
    { context: { userId: userB } },
  );

  await runUserBoundaryClause(ctx);
}
