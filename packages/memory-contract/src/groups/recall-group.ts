import { fail, pass, type ClauseOutcome, type ContractContext } from "../clause-runner.js";
import { distinctiveToken } from "../provider-harness.js";
import { describeError, type MemoryItem } from "@hermes/memory-core";
import { mentions, refusalProblem, searchableClause, type SearchableProbe } from "./searchable-support.js";

/** C-RECALL-1: a fact from one session comes back through prefetch in a new session after a restart. */
async function factRecalledAfterRestart(ctx: ContractContext): Promise<ClauseOutcome> {
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
    return fail(
      `prefetch(${JSON.stringify(query)}) in a new session after restart did not return the fact (got ${JSON.stringify(String(warmed).slice(0, 120))})`,
    );
  } finally {
    await second.close();
  }
}

/** C-RECALL-2: prefetch is never served another session's cached result. */
async function prefetchCacheKeyedBySession(ctx: ContractContext): Promise<ClauseOutcome> {
  const { harness } = ctx;
  const instance = await harness.openInstance("recall-cache-key");
  try {
    const early = distinctiveToken("cachekeyearly");
    const late = distinctiveToken("cachekeylate");
    const query = "What colour is the project Marigold logo?";
    await instance.call("syncTurn()", (p) =>
      p.syncTurn(`The project Marigold logo colour is ${early}.`, "Noted.", { sessionId: instance.sessionId }),
    );
    await harness.settle(instance);
    // Session A queues the query; then a new turn changes the answer; session B asks the same query.
    await instance.call("queuePrefetch()", (p) => p.queuePrefetch(query, { sessionId: "contract-session-a" }));
    await harness.settle(instance);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await instance.call("syncTurn()", (p) =>
      p.syncTurn(`Correction: the project Marigold logo colour is now ${late}.`, "Noted.", { sessionId: instance.sessionId }),
    );
    await harness.settle(instance);
    const text = await instance.call("prefetch()", (p) => p.prefetch(query, { sessionId: "contract-session-b" }));
    if (typeof text === "string" && text.includes(late)) return pass();
    return fail(
      `prefetch(query) for session B did not include a turn stored after session A queued the same query (got ${JSON.stringify(String(text).slice(0, 160))}): it was served session A's cached result`,
    );
  } finally {
    await instance.close().catch(() => undefined);
  }
}

/** C-RECALL-3: search finds what was written after it found nothing. */
async function searchFindsWhatFollowsAMiss(probe: SearchableProbe): Promise<ClauseOutcome> {
  for (let i = 0; i < 20; i++) await probe.remember({ content: `Filler note ${i} about the weekly team lunch` });
  await probe.settle();
  const token = distinctiveToken("afterthemiss");
  const before = await probe.search(token, { limit: 5 });
  if (mentions(before, token)) return fail(`search(${JSON.stringify(token)}) found the word before any item held it`);
  await probe.remember({ content: `The spare key is kept under the ${token} flowerpot` });
  await probe.settle();
  const after = await probe.search(token, { limit: 5 });
  if (mentions(after, token)) return pass();
  return fail(
    `search(${JSON.stringify(token)}) found nothing after remember() stored an item holding it, because an earlier search for it had found nothing`,
  );
}

/** C-RECALL-4: a malformed item is refused at remember() and never holds up the items around it. */
async function malformedItemsRefused(probe: SearchableProbe): Promise<ClauseOutcome> {
  const circular: Record<string, unknown> = { note: "x" };
  circular.self = circular;
  const malformed: Array<[string, unknown]> = [
    ["null", null],
    ["content 42", { content: 42 }],
    ["blank content", { content: "   " }],
    ["kind 'note'", { content: "A note of an unknown kind", kind: "note" }],
    ["metadata referring to itself", { content: "A note with circular metadata", metadata: circular }],
    ["a BigInt in metadata", { content: "A note with a BigInt", metadata: { n: 10n } }],
  ];
  const problems: string[] = [];
  const accepted: Array<[string, string]> = [];
  for (const [label, item] of malformed) {
    const token = distinctiveToken("aroundbad");
    accepted.push([token, await probe.remember({ content: `The parcel locker code is ${token}` })]);
    const problem = await refusalProblem(() => probe.remember(item as MemoryItem));
    if (problem) problems.push(`${label}: ${problem}`);
  }
  // Flushing must succeed: a refused item was never queued.
  try {
    await probe.settle();
  } catch (error) {
    problems.push(`flush() failed after the malformed items: ${describeError(error)}`);
  }
  for (const [token, id] of accepted) {
    const hit = await probe.get(id).catch(() => null);
    if (!hit || !hit.content.includes(token)) problems.push(`the item remembered as ${id} before a malformed one was not stored`);
  }
  return problems.length > 0
    ? fail(problems.join("; "))
    : pass(`${malformed.length} malformed items refused, ${accepted.length} items around them stored`);
}

/** C-RECALL-5: a search limit it cannot use is refused, never replaced by the default. */
async function unusableSearchLimitRefused(probe: SearchableProbe): Promise<ClauseOutcome> {
  const token = distinctiveToken("limitprobe");
  for (let i = 0; i < 14; i++) await probe.remember({ content: `Limit probe note ${i} about ${token}` });
  await probe.settle();
  const problems: string[] = [];
  const unlimited = await probe.search(token, {});
  if (unlimited.length === 0 || unlimited.length > 10)
    problems.push(`search without a limit returned ${unlimited.length} hits for 14 matching items (expected 1 to 10)`);
  const three = await probe.search(token, { limit: 3 });
  if (three.length !== 3) problems.push(`search with limit 3 returned ${three.length} hits for 14 matching items`);
  for (const limit of [0, -3, Number.NaN, "5"]) {
    const problem = await refusalProblem(() => probe.search(token, { limit: limit as number }));
    if (problem) problems.push(`limit ${typeof limit === "string" ? JSON.stringify(limit) : String(limit)} ${problem}`);
  }
  return problems.length > 0 ? fail(problems.join("; ")) : pass();
}

/**
 * RECALL: a fact from one session comes back through prefetch after a restart; prefetch is never
 * served another session's cached result; search finds what was written after it found nothing;
 * a malformed item is refused at remember() and never holds up the items around it; a search limit
 * it cannot use is refused, never replaced by the default.
 */
export async function runRecallGroup(ctx: ContractContext): Promise<void> {
  await ctx.clause("C-RECALL-1", () => factRecalledAfterRestart(ctx));
  await ctx.clause("C-RECALL-2", () => prefetchCacheKeyedBySession(ctx));
  await searchableClause(ctx, "C-RECALL-3", "recall-after-miss", searchFindsWhatFollowsAMiss);
  await searchableClause(ctx, "C-RECALL-4", "malformed-items", malformedItemsRefused);
  await searchableClause(ctx, "C-RECALL-5", "search-limit", unusableSearchLimitRefused);
}
