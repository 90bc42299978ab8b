import { isSearchableMemory, runWithProfile } from "@hermes/memory-core";
import { fail, pass, type ClauseOutcome, type ContractContext } from "../clause-runner.js";
import { distinctiveToken, withTimeout, type ProviderInstance } from "../provider-harness.js";

/** The stored texts (search hits of kind `turn`) containing `token`. */
async function storedTexts(instance: ProviderInstance, token: string): Promise<string[]> {
  const provider = instance.provider;
  if (!isSearchableMemory(provider)) throw new Error("capabilities.search is declared but the provider is not SearchableMemory");
  const hits = await instance.call("search()", () => provider.search(token, { limit: 20 }));
  return (Array.isArray(hits) ? hits : []).filter((h) => typeof h?.content === "string" && h.content.includes(token)).map((h) => h.content);
}

/** How many syncTurn calls the burst makes. */
export const SYNC_BURST_SIZE = 200;

interface BurstState {
  hermesHome: string;
  instance: ProviderInstance;
  tokens: string[];
}

/** Close `instance`, reopen its profile and read every token back; returns the missing ones. */
async function missingAfterRestart(ctx: ContractContext, instance: ProviderInstance, tokens: readonly string[]): Promise<string[]> {
  if (!instance.closed) await instance.close();
  const reopened = await ctx.harness.openInstance("restart", { hermesHome: instance.hermesHome });
  try {
    await ctx.harness.settle(reopened);
    const missing: string[] = [];
    for (const token of tokens) {
      if (!(await ctx.harness.readBack(reopened, token)).found) missing.push(token);
    }
    return missing;
  } finally {
    await reopened.close();
  }
}

/** What C-HOOKS-1 leaves for C-HOOKS-2: the burst's instance and tokens, closed at the group's end. */
interface HooksShared {
  burst?: BurstState;
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

/** C-HOOKS-1: a burst of `syncTurn` calls each returns within the limit. */
async function syncTurnBurstDoesNotBlock(ctx: ContractContext, shared: HooksShared): Promise<ClauseOutcome> {
  const { harness } = ctx;
  const limit = harness.timeouts.syncTurnMs;
  const instance = await harness.openInstance("hooks-burst");
  const burst: BurstState = { hermesHome: instance.hermesHome, instance, tokens: [] };
  shared.burst = burst;
  const durations: number[] = [];
  // Allow 5% stragglers (GC pauses on a busy machine) but nothing pathological.
  const allowedSlow = Math.floor(SYNC_BURST_SIZE * 0.05);
  const hardCap = Math.max(100, limit * 10);
  let slow = 0;
  for (let i = 0; i < SYNC_BURST_SIZE; i++) {
    const token = distinctiveToken(`burst${i}x`);
    const user = `Burst turn ${i}: please remember the marker ${token}`;
    const assistant = `Stored marker ${token}.`;
    const started = performance.now();
    const returned = runWithProfile(instance.hermesHome, () =>
      instance.provider.syncTurn(user, assistant, {
        sessionId: instance.sessionId,
        messages: [
          { role: "user", content: user },
          { role: "assistant", content: assistant },
        ],
      }),
    );
    await withTimeout(returned, harness.timeouts.callMs, "syncTurn()");
    const elapsed = performance.now() - started;
    durations.push(elapsed);
    burst.tokens.push(token);
    if (elapsed > limit) slow += 1;
    // Once the verdict is certain, stop: a blocking provider would otherwise cost seconds.
    if (slow > allowedSlow || elapsed > hardCap) break;
  }
  const sorted = [...durations].sort((a, b) => a - b);
  const p95 = percentile(sorted, 95);
  const max = sorted[sorted.length - 1] ?? 0;
  const stats = `p50 ${percentile(sorted, 50).toFixed(2)} ms, p95 ${p95.toFixed(2)} ms, max ${max.toFixed(2)} ms over ${durations.length} calls`;
  if (slow > allowedSlow) return fail(`${slow} of ${durations.length} syncTurn calls took longer than ${limit} ms (${stats})`);
  if (max > hardCap) return fail(`a syncTurn call took ${max.toFixed(1)} ms, over the ${hardCap} ms cap (${stats})`);
  return pass(stats);
}

/** C-HOOKS-2: a sample of the burst's turns is found after shutdown and restart. */
async function burstTurnsPersist(ctx: ContractContext, shared: HooksShared): Promise<ClauseOutcome> {
  const { harness } = ctx;
  let state = shared.burst;
  if (!state || state.tokens.length === 0) {
    const instance = await harness.openInstance("hooks-persist");
    state = { hermesHome: instance.hermesHome, instance, tokens: [] };
    for (let i = 0; i < 5; i++) {
      const token = distinctiveToken(`persist${i}x`);
      await instance.call("syncTurn()", (p) => p.syncTurn(`Remember ${token}`, `Stored ${token}`, { sessionId: instance.sessionId }));
      state.tokens.push(token);
    }
  }
  const t = state.tokens;
  const sample = [
    ...new Set([t[0], t[Math.floor(t.length / 4)], t[Math.floor(t.length / 2)], t[Math.floor((3 * t.length) / 4)], t[t.length - 1]]),
  ].filter((x): x is string => x !== undefined);
  const missing = await missingAfterRestart(ctx, state.instance, sample);
  if (missing.length > 0) {
    return fail(
      `${missing.length} of ${sample.length} sampled turns (of ${t.length} synced) were not found after shutdown and restart: ${missing.join(", ")}`,
    );
  }
  return pass(`${sample.length} sampled turns of ${t.length} found after restart`);
}

/** C-HOOKS-3: a turn synced without `messages` is found after restart. */
async function turnWithoutMessagesPersists(ctx: ContractContext): Promise<ClauseOutcome> {
  const { harness } = ctx;
  const instance = await harness.openInstance("hooks-legacy");
  const token = distinctiveToken("legacy");
  try {
    await instance.call("syncTurn() without messages", (p) =>
      p.syncTurn(`Old-style turn with marker ${token}`, `Noted ${token}`, { sessionId: instance.sessionId }),
    );
  } catch (error) {
    await instance.close().catch(() => undefined);
    throw error;
  }
  const missing = await missingAfterRestart(ctx, instance, [token]);
  return missing.length > 0 ? fail("a turn synced without messages was not found after restart") : pass();
}

/** C-HOOKS-4: a subagent's turns are not stored. */
async function subagentTurnsNotStored(ctx: ContractContext): Promise<ClauseOutcome> {
  const { harness } = ctx;
  const instance = await harness.openInstance("hooks-subagent", {
    context: { agentContext: "subagent", parentSessionId: "contract-parent-session" },
  });
  const token = distinctiveToken("subagent");
  await instance.call("syncTurn()", (p) =>
    p.syncTurn(`Subagent turn with marker ${token}`, `Subagent noted ${token}`, { sessionId: instance.sessionId }),
  );
  await instance.call("onSessionEnd()", (p) => p.onSessionEnd([{ role: "user", content: `Subagent turn with marker ${token}` }]));
  const missing = await missingAfterRestart(ctx, instance, [token]);
  return missing.length === 0 ? fail("a turn synced with agentContext 'subagent' was stored (found after restart)") : pass();
}

/** C-HOOKS-5: turns before and after a resume and a reset are found after restart. */
async function turnsAroundSessionSwitchesPersist(ctx: ContractContext): Promise<ClauseOutcome> {
  const { harness } = ctx;
  const instance = await harness.openInstance("hooks-switch");
  const tokens = [distinctiveToken("switch0x"), distinctiveToken("switch1x"), distinctiveToken("switch2x")];
  const sessions = [instance.sessionId, distinctiveToken("resumed-session-"), distinctiveToken("new-session-")];
  try {
    await instance.call("syncTurn()", (p) => p.syncTurn(`Before switch ${tokens[0]}`, "ok", { sessionId: sessions[0]! }));
    const resumed = await instance.call("onSessionSwitch()", (p) =>
      p.onSessionSwitch(sessions[1]!, { parentSessionId: sessions[0]!, reset: false, rewound: false, reason: "resume" }),
    );
    if (resumed === false) return fail("onSessionSwitch(reason: resume) returned false");
    await instance.call("syncTurn()", (p) => p.syncTurn(`After resume ${tokens[1]}`, "ok", { sessionId: sessions[1]! }));
    const reset = await instance.call("onSessionSwitch()", (p) =>
      p.onSessionSwitch(sessions[2]!, { parentSessionId: sessions[1]!, reset: true, rewound: false, reason: "new_session" }),
    );
    if (reset === false) return fail("onSessionSwitch(reset: true) returned false");
    await instance.call("syncTurn()", (p) => p.syncTurn(`After reset ${tokens[2]}`, "ok", { sessionId: sessions[2]! }));
  } catch (error) {
    await instance.close().catch(() => undefined);
    throw error;
  }
  const missing = await missingAfterRestart(ctx, instance, tokens);
  return missing.length > 0 ? fail(`turns around session switches missing after restart: ${missing.join(", ")}`) : pass();
}

/** C-HOOKS-6: a mirrored built-in memory write is found after restart. */
async function mirroredWritePersists(ctx: ContractContext): Promise<ClauseOutcome> {
  const { harness } = ctx;
  const instance = await harness.openInstance("hooks-mirror");
  const token = distinctiveToken("mirror");
  await instance.call("onMemoryWrite()", (p) =>
    p.onMemoryWrite("add", "memory", `The user prefers the ${token} layout`, {
      writeOrigin: "tool",
      sessionId: instance.sessionId,
      toolName: "memory",
      platform: "cli",
    }),
  );
  const missing = await missingAfterRestart(ctx, instance, [token]);
  return missing.length > 0 ? fail("a mirrored built-in memory write was not found after restart") : pass();
}

/**
 * C-HOOKS-7: `onSessionEnd` is the flush point a host relies on before it may exit: a fresh
 * instance on the same profile finds the turns while the first one is still open (no shutdown, no
 * flush from the kit).
 */
async function sessionEndIsAFlushPoint(ctx: ContractContext): Promise<ClauseOutcome> {
  const { harness } = ctx;
  const instance = await harness.openInstance("hooks-session-end");
  const tokens = [distinctiveToken("sessend0x"), distinctiveToken("sessend1x"), distinctiveToken("sessend2x")];
  let fresh: ProviderInstance | undefined;
  try {
    for (const token of tokens) {
      await instance.call("syncTurn()", (p) =>
        p.syncTurn(`Remember the marker ${token}`, `Stored ${token}`, { sessionId: instance.sessionId }),
      );
    }
    await instance.call("onSessionEnd()", (p) =>
      p.onSessionEnd(
        tokens.flatMap((token) => [
          { role: "user", content: `Remember the marker ${token}` },
          { role: "assistant", content: `Stored ${token}` },
        ]),
      ),
    );
    fresh = await harness.openInstance("hooks-session-end-fresh", { hermesHome: instance.hermesHome });
    // Settling the fresh instance flushes only its own (empty) queue.
    await harness.settle(fresh);
    const missing: string[] = [];
    for (const token of tokens) if (!(await harness.readBack(fresh, token)).found) missing.push(token);
    return missing.length > 0
      ? fail(
          `${missing.length} of ${tokens.length} turns synced before onSessionEnd() were not found by a fresh instance on the same profile (no shutdown): ${missing.join(", ")}`,
        )
      : pass(`${tokens.length} turns found by a fresh instance after onSessionEnd()`);
  } finally {
    await fresh?.close().catch(() => undefined);
    await instance.close().catch(() => undefined);
  }
}

/** C-HOOKS-8: turns synced before `onSessionSwitch` are found by a fresh instance (no shutdown). */
async function sessionSwitchIsAFlushPoint(ctx: ContractContext): Promise<ClauseOutcome> {
  const { harness } = ctx;
  const instance = await harness.openInstance("hooks-switch-durable");
  const tokens = [distinctiveToken("swdur0x"), distinctiveToken("swdur1x")];
  let fresh: ProviderInstance | undefined;
  try {
    for (const token of tokens) {
      await instance.call("syncTurn()", (p) =>
        p.syncTurn(`Remember the marker ${token}`, `Stored ${token}`, { sessionId: instance.sessionId }),
      );
    }
    const next = distinctiveToken("next-session-");
    const switched = await instance.call("onSessionSwitch()", (p) =>
      p.onSessionSwitch(next, { parentSessionId: instance.sessionId, reset: true, rewound: false, reason: "new_session" }),
    );
    if (switched === false) return fail("onSessionSwitch(reset: true) returned false");
    fresh = await harness.openInstance("hooks-switch-durable-fresh", { hermesHome: instance.hermesHome });
    // Settling the fresh instance flushes only its own (empty) queue.
    await harness.settle(fresh);
    const missing: string[] = [];
    for (const token of tokens) if (!(await harness.readBack(fresh, token)).found) missing.push(token);
    return missing.length > 0
      ? fail(
          `${missing.length} of ${tokens.length} turns synced before onSessionSwitch() were not found by a fresh instance on the same profile (no shutdown): ${missing.join(", ")}`,
        )
      : pass(`${tokens.length} turns found by a fresh instance after onSessionSwitch()`);
  } finally {
    await fresh?.close().catch(() => undefined);
    await instance.close().catch(() => undefined);
  }
}

/** C-HOOKS-9: a turn is stored as `<author>: <user>\nAssistant: <assistant>`. */
async function turnStoredWithItsAuthor(ctx: ContractContext): Promise<ClauseOutcome> {
  const { harness } = ctx;
  const instance = await harness.openInstance("hooks-turn-author");
  try {
    const named = distinctiveToken("authored");
    const anonymous = distinctiveToken("anonymous");
    await instance.call("syncTurn()", (p) =>
      p.syncTurn(`  I planted ${named} tulips  `, `Noted: ${named} tulips`, {
        sessionId: instance.sessionId,
        turnAuthor: { id: "u-7", name: "  Caroline " },
      }),
    );
    await instance.call("syncTurn()", (p) =>
      p.syncTurn(`I planted ${anonymous} roses`, `Noted: ${anonymous} roses`, { sessionId: instance.sessionId }),
    );
    await harness.settle(instance);
    const expected: Array<[string, string]> = [
      [named, `Caroline: I planted ${named} tulips\nAssistant: Noted: ${named} tulips`],
      [anonymous, `User: I planted ${anonymous} roses\nAssistant: Noted: ${anonymous} roses`],
    ];
    for (const [token, text] of expected) {
      const stored = await storedTexts(instance, token);
      if (stored.length === 0) return fail(`search(${JSON.stringify(token)}) found no stored turn`);
      if (!stored.includes(text)) return fail(`the turn is stored as ${JSON.stringify(stored[0])}, expected ${JSON.stringify(text)}`);
    }
    return pass();
  } finally {
    await instance.close().catch(() => undefined);
  }
}

/** HOOKS: non-blocking syncTurn, persistence, legacy calls, subagent context, switches, mirrors. */
export async function runHooksGroup(ctx: ContractContext): Promise<void> {
  const shared: HooksShared = {};
  try {
    await ctx.clause("C-HOOKS-1", () => syncTurnBurstDoesNotBlock(ctx, shared));
    await ctx.clause("C-HOOKS-2", () => burstTurnsPersist(ctx, shared));
    await ctx.clause("C-HOOKS-3", () => turnWithoutMessagesPersists(ctx));
    await ctx.clause("C-HOOKS-4", () => subagentTurnsNotStored(ctx));
    await ctx.clause("C-HOOKS-5", () => turnsAroundSessionSwitchesPersist(ctx));
    await ctx.clause("C-HOOKS-6", () => mirroredWritePersists(ctx));
    await ctx.clause("C-HOOKS-7", () => sessionEndIsAFlushPoint(ctx));
    await ctx.clause("C-HOOKS-8", () => sessionSwitchIsAFlushPoint(ctx));
    await ctx.clause("C-HOOKS-9", () => turnStoredWithItsAuthor(ctx));
  } finally {
    const burst = shared.burst;
    if (burst && !burst.instance.closed) await burst.instance.close().catch(() => undefined);
  }
}
