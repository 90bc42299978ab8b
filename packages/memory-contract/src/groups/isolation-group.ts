import { fail, pass, type ContractContext } from "../clause-runner.js";
import { distinctiveToken, type ProviderInstance } from "../provider-harness.js";

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
        await writer.call("syncTurn()", (p) => p.syncTurn(`My marker is ${user.token}`, `Noted ${user.token}`, { sessionId: writer.sessionId }));
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
        if (!(await harness.readBack(reader, user.token, { userId: user.userId })).found) problems.push(`${user.userId} cannot read its own data`);
        if ((await harness.readBack(reader, other.token, { userId: user.userId })).found) problems.push(`${user.userId} sees ${other.userId}'s data`);
      } finally {
        await reader.close();
      }
    }
    return problems.length > 0 ? fail(problems.join("; ")) : pass();
  });
}
