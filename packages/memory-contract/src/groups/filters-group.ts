import type { MemoryFilter, MemoryItem, MemorySearchOptions } from "@hermes/memory-core";
import { fail, pass, type ClauseOutcome, type ContractContext } from "../clause-runner.js";
import { distinctiveToken } from "../provider-harness.js";
import { refusalProblem, searchableClause, sleep, type SearchableProbe } from "./searchable-support.js";

const USER = "contract-filter-user";
const OTHER_USER = "contract-filter-other";

/** One filter and the labels of the items it must select. */
interface FilterCase {
  filter: MemoryFilter;
  expected: string[];
  /** The case names its own userId instead of the default one. */
  ownUser?: boolean;
}

/** C-FILTERS-1: each filter key (and their combinations) selects exactly the items it names. */
async function everyFilterKeySelects(probe: SearchableProbe): Promise<ClauseOutcome> {
  const token = distinctiveToken("filterkey");
  const s1 = distinctiveToken("filtersession");
  const s2 = distinctiveToken("filtersession");
  const early: Record<string, Omit<MemoryItem, "content">> = {
    a: {
      kind: "fact",
      sessionId: s1,
      userId: USER,
      tags: ["red", "blue"],
      metadata: { color: "red", n: 1, flags: ["x", "y"], ok: true },
    },
    b: { kind: "turn", sessionId: s1, userId: USER, tags: ["blue"], metadata: { color: "blue", n: 5 } },
    c: { kind: "checkpoint", sessionId: s2, userId: USER, tags: ["green"], metadata: { color: "green", n: 10, ok: false } },
    d: { kind: "fact", sessionId: s2, userId: USER, metadata: { n: "5" } },
    o: { kind: "fact", sessionId: s2, userId: OTHER_USER, tags: ["red"], metadata: { color: "red", n: 1 } },
  };
  const late: Record<string, Omit<MemoryItem, "content">> = {
    e: { kind: "fact", sessionId: s1, userId: USER, tags: ["red"], metadata: { color: "red", n: 7 } },
  };
  const labelOf = new Map<string, string>();
  const write = async (items: Record<string, Omit<MemoryItem, "content">>): Promise<void> => {
    for (const [label, item] of Object.entries(items)) {
      labelOf.set(await probe.remember({ ...item, content: `Filter probe item ${label} carries ${token}.` }), label);
    }
    await probe.settle();
  };
  await write(early);
  // Items written after `boundary` are the only ones created at or after it.
  await sleep(25);
  const boundary = new Date().toISOString();
  await sleep(25);
  await write(late);

  const cases: FilterCase[] = [
    { filter: { kind: "fact" }, expected: ["a", "d", "e"] },
    { filter: { kind: ["turn", "checkpoint"] }, expected: ["b", "c"] },
    { filter: { sessionId: s1 }, expected: ["a", "b", "e"] },
    { filter: { userId: OTHER_USER }, expected: ["o"], ownUser: true },
    { filter: { tags: { any: ["red", "green"] } }, expected: ["a", "c", "e"] },
    { filter: { tags: { all: ["red", "blue"] } }, expected: ["a"] },
    { filter: { createdAt: { $gte: boundary } }, expected: ["e"] },
    { filter: { createdAt: { $lt: boundary } }, expected: ["a", "b", "c", "d"] },
    { filter: { metadata: { color: "red" } }, expected: ["a", "e"] },
    { filter: { metadata: { n: { $eq: 5 } } }, expected: ["b"] },
    { filter: { metadata: { n: { $ne: 5 } } }, expected: ["a", "c", "d", "e"] },
    { filter: { metadata: { n: { $in: [1, 10] } } }, expected: ["a", "c"] },
    { filter: { metadata: { color: { $nin: ["red", "blue"] } } }, expected: ["c", "d"] },
    { filter: { metadata: { n: { $gt: 5 } } }, expected: ["c", "e"] },
    { filter: { metadata: { n: { $gte: 5 } } }, expected: ["b", "c", "e"] },
    { filter: { metadata: { n: { $lt: 5 } } }, expected: ["a"] },
    { filter: { metadata: { n: { $lte: 5 } } }, expected: ["a", "b"] },
    { filter: { metadata: { ok: { $exists: true } } }, expected: ["a", "c"] },
    { filter: { metadata: { ok: { $exists: false } } }, expected: ["b", "d", "e"] },
    { filter: { metadata: { ok: false } }, expected: ["c"] },
    { filter: { metadata: { flags: "y" } }, expected: ["a"] },
    { filter: { metadata: { $or: [{ color: "green" }, { n: 7 }] } }, expected: ["c", "e"] },
    { filter: { metadata: { $and: [{ color: "red" }, { n: { $gt: 1 } }] } }, expected: ["e"] },
    { filter: { kind: "fact", tags: { any: ["red"] }, metadata: { n: { $lt: 5 } } }, expected: ["a"] },
  ];
  const problems: string[] = [];
  for (const { filter, expected, ownUser } of cases) {
    const options: MemorySearchOptions = { ...(ownUser ? {} : { userId: USER }), ...filter, limit: 20 };
    const hits = await probe.search(token, options);
    const got = [...new Set(hits.map((h) => labelOf.get(String(h.id)) ?? `unknown id ${String(h.id)}`))].sort();
    if (got.join(",") !== [...expected].sort().join(",")) {
      problems.push(`${JSON.stringify(filter)} returned [${got.join(", ")}] instead of [${expected.join(", ")}]`);
    }
  }
  if (problems.length > 0) return fail(`${problems.length} of ${cases.length} filtered searches were wrong: ${problems.join("; ")}`);
  return pass(`${cases.length} filters`);
}

/** C-FILTERS-2: filtering happens before the top-k, so better-matching items that fail the filter never crowd out passing ones. */
async function filteringPrecedesTopK(probe: SearchableProbe): Promise<ClauseOutcome> {
  const token = distinctiveToken("filtertopk");
  // Thirty items that match the query better than any passing one, then three passing items of
  // falling relevance: the filtered top 2 is quiet-1 and quiet-2.
  for (let i = 0; i < 30; i++) {
    await probe.remember({ content: `${token} ${token} ${token} ${token} busy ${i}`, userId: USER, metadata: { lane: "busy" } });
  }
  const quiet = new Map<string, string>();
  const quietTexts = [
    `${token} ${token} ${token} quiet one`,
    `${token} ${token} quiet two and a few more words`,
    `${token} quiet three with many unrelated words about gardens, rivers, trains, mountains and long winter evenings`,
  ];
  for (const [i, content] of quietTexts.entries())
    quiet.set(await probe.remember({ content, userId: USER, metadata: { lane: "quiet" } }), `quiet-${i + 1}`);
  await probe.settle();
  const hits = await probe.search(token, { userId: USER, metadata: { lane: "quiet" }, limit: 2 });
  const labels = hits.map((h) => quiet.get(String(h.id)) ?? `a non-passing item (${JSON.stringify(h.content.slice(0, 40))})`);
  if (hits.length !== 2 || labels.some((l) => !l.startsWith("quiet-"))) {
    return fail(
      `search(limit 2, metadata.lane = "quiet") returned [${labels.join(", ")}]; 3 items pass the filter, so it must return 2 of them (30 better-matching items fail it)`,
    );
  }
  if (!labels.includes("quiet-1")) return fail(`the filtered top 2 was [${labels.join(", ")}] without quiet-1, the best passing match`);
  return pass();
}

/** C-FILTERS-3: a malformed filter is refused with a typed error, never ignored. */
async function malformedFiltersRefused(probe: SearchableProbe): Promise<ClauseOutcome> {
  const token = distinctiveToken("filterbad");
  await probe.remember({ content: `Malformed filter probe ${token}`, userId: USER, metadata: { n: 1 } });
  await probe.settle();
  const malformed: Array<Record<string, unknown>> = [
    { colour: "red" },
    { kind: "note" },
    { tags: { any: [] } },
    { tags: { some: ["red"] } },
    { createdAt: { $gte: "not a time" } },
    { metadata: { n: { $regex: "1" } } },
    { metadata: { n: { $gt: "1" } } },
    { metadata: { $or: [] } },
    { metadata: { n: { $in: 1 } } },
  ];
  const problems: string[] = [];
  for (const filter of malformed) {
    const problem = await refusalProblem(() => probe.search(token, { userId: USER, ...filter } as MemorySearchOptions));
    if (problem) problems.push(`${JSON.stringify(filter)} ${problem}`);
  }
  return problems.length > 0 ? fail(problems.join("; ")) : pass(`${malformed.length} malformed filters refused`);
}

/** FILTERS: every filter key, filtering before the top-k, and refusal of malformed filters. */
export async function runFiltersGroup(ctx: ContractContext): Promise<void> {
  await searchableClause(ctx, "C-FILTERS-1", "filters-keys", everyFilterKeySelects);
  await searchableClause(ctx, "C-FILTERS-2", "filters-top-k", filteringPrecedesTopK);
  await searchableClause(ctx, "C-FILTERS-3", "filters-malformed", malformedFiltersRefused);
}
