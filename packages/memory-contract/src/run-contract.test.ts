import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import {
  BadConfigProvider,
  BadToolNameProvider,
  BlockingSyncProvider,
  DuplicatingCheckpointProvider,
  FetchInIsAvailableProvider,
  HomeWritingProvider,
  LeakyProfileProvider,
  SlowIsAvailableProvider,
  HangingInitializeProvider,
  NeverSettlingThenableProvider,
  SubagentWritingProvider,
  NoFlushOnSessionEndProvider,
  NoFlushOnSessionSwitchProvider,
  IgnoresTurnAuthorProvider,
  UnlabelledCheckpointProvider,
  QueryKeyedPrefetchCacheProvider,
  SwallowingCheckpointProvider,
  ThrowingToolProvider,
  TimerLeakProvider,
  WholeTranscriptCheckpointProvider,
} from "./__fixtures__/broken-providers.js";
import { MinimalProvider } from "./__fixtures__/minimal-provider.js";
import {
  EmptyScopeErasesAllProvider,
  ErasureLeavesTextProvider,
  IgnoresCreatedAtProvider,
  LenientFilterProvider,
  SlowFlushV2Provider,
  IgnoresExpiryProvider,
  IgnoresRequestedUserProvider,
  PostFilterTopKProvider,
  SearchableV2Provider,
  UpdateKeepsOldTextProvider,
  NegativeSearchCacheProvider,
  UncheckedItemsProvider,
  DefaultingLimitProvider,
  WholeStoreErasureProvider,
} from "./__fixtures__/searchable-v2-provider.js";
import {
  ForgetToolProvider,
  LeakySearchToolProvider,
  LeakyToolsOnlyProvider,
  OracleForgetToolProvider,
  ToolsOnlyProvider,
  UnscopedForgetToolProvider,
} from "./__fixtures__/user-boundary-providers.js";
import { CONTRACT_CLAUSES } from "./clauses.js";
import type { ContractCapabilities, MemoryProviderContractSetup } from "./contract-setup.js";
import type { ContractReport } from "./contract-report.js";
import { runMemoryProviderContract } from "./run-contract.js";

const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), "__fixtures__");

const ALL_CAPABILITIES: ContractCapabilities = {
  tools: true,
  recall: true,
  checkpoint: true,
  search: true,
  sessionSwitch: true,
  mirrorsBuiltinWrites: true,
  userScoping: true,
};

function setupFor(Provider: new () => MinimalProvider, extra: Partial<MemoryProviderContractSetup> = {}): MemoryProviderContractSetup {
  return { name: "minimal", createProvider: () => new Provider(), capabilities: ALL_CAPABILITIES, ...extra };
}

function ids(report: ContractReport, status: "pass" | "fail" | "skip"): string[] {
  return report.results.filter((r) => r.status === status).map((r) => r.id);
}

function failures(report: ContractReport): string {
  return report.results
    .filter((r) => r.status === "fail")
    .map((r) => `${r.id}: ${r.reason}`)
    .join("\n");
}

const MANIFEST_IDS = ["C-MANIFEST-1", "C-MANIFEST-2", "C-MANIFEST-3", "C-MANIFEST-4"];
const V2_IDS = ["C-FILTERS-1", "C-FILTERS-2", "C-FILTERS-3", "C-EXPIRY-1", "C-ERASURE-1", "C-ERASURE-2", "C-ERASURE-3", "C-UPDATE-1"];

describe("runMemoryProviderContract on a provider returning a thenable that never settles", () => {
  it("bounds it like a Promise: the run finishes and the recall clauses fail naming prefetch()", async () => {
    const report = await runMemoryProviderContract(setupFor(NeverSettlingThenableProvider, { timeouts: { callMs: 300 } }));
    const failed = report.results.filter((r) => r.status === "fail");
    expect(failed.length).toBeGreaterThan(0);
    expect(failed.some((r) => /prefetch\(\) did not settle within 300 ms/.test(r.reason ?? ""))).toBe(true);
  }, 60_000);
});

describe("runMemoryProviderContract with a createProvider() that never settles (a package import that hangs)", () => {
  it("waits the call timeout twice, then fails the remaining clauses at once", async () => {
    const started = Date.now();
    const report = await runMemoryProviderContract({
      name: "minimal",
      capabilities: ALL_CAPABILITIES,
      timeouts: { callMs: 1_000 },
      createProvider: () => new Promise<never>(() => {}),
    });
    const gaveUp = report.results.filter((r) => r.status === "fail" && /createProvider\(\) \(not waited for again/.test(r.reason ?? ""));
    expect(gaveUp.length).toBeGreaterThan(10);
    expect(Date.now() - started).toBeLessThan(15_000);
  }, 60_000);
});

describe("runMemoryProviderContract on a provider whose initialize() never settles", () => {
  it("waits the call timeout twice, then fails the remaining clauses at once, naming initialize()", async () => {
    const started = Date.now();
    const report = await runMemoryProviderContract(setupFor(HangingInitializeProvider, { timeouts: { callMs: 1_000 } }));
    const elapsed = Date.now() - started;
    const timedOut = report.results.filter(
      (r) => r.status === "fail" && /initialize\(\) did not settle within 1000 ms/.test(r.reason ?? ""),
    );
    const gaveUp = report.results.filter((r) => r.status === "fail" && /not waited for again/.test(r.reason ?? ""));
    // The first two waits (and any clause that calls initialize() itself) time out; the rest do not wait.
    expect(timedOut.length).toBeGreaterThanOrEqual(2);
    expect(timedOut.length).toBeLessThanOrEqual(4);
    expect(gaveUp.length).toBeGreaterThan(10);
    // Two waits of 1 s, not one per clause (about 40 clauses need an initialised provider).
    expect(elapsed).toBeLessThan(15_000);
  }, 60_000);
});

describe("runMemoryProviderContract on the correct minimal provider", { timeout: 30_000 }, () => {
  it("passes every clause, skipping only MANIFEST without a package dir and the v2 clauses it does not declare", async () => {
    const report = await runMemoryProviderContract(setupFor(MinimalProvider));
    expect(failures(report)).toBe("");
    expect(ids(report, "skip")).toEqual([...MANIFEST_IDS, ...V2_IDS]);
    for (const id of V2_IDS) {
      expect(report.results.find((r) => r.id === id)?.reason, id).toMatch(
        /^the provider does not declare (filters|expiry|erasure|update) in capabilities\(\)/,
      );
    }
    // Two users on one instance needs only search; the forgetWhere half says why it did not run.
    expect(report.results.find((r) => r.id === "C-ISOLATION-3")).toMatchObject({
      status: "pass",
      reason: "forgetWhere({userId}) not tried: the provider does not declare erasure",
    });
    expect(report.results.map((r) => r.id)).toEqual(CONTRACT_CLAUSES.map((c) => c.id));
    expect(report.ok).toBe(true);
    expect(report.summary).toMatchObject({ fail: 0, skip: MANIFEST_IDS.length + V2_IDS.length, total: CONTRACT_CLAUSES.length });
    for (const r of report.results) expect(r.hint.length).toBeGreaterThan(10);
  });

  it("gives C-EXPIRY-1 a longer ttlMs when writing and flushing outlasts the first one", async () => {
    const report = await runMemoryProviderContract(setupFor(SlowFlushV2Provider), { only: ["C-EXPIRY-1"] });
    expect(failures(report)).toBe("");
    expect(report.results.find((r) => r.id === "C-EXPIRY-1")).toMatchObject({
      status: "pass",
      reason: expect.stringMatching(/^ttlMs \d+: writing and flushing took longer than 1500 ms$/),
    });
  }, 30_000);

  it("passes every clause of a provider declaring the SearchableMemory v2 capabilities", async () => {
    const report = await runMemoryProviderContract(setupFor(SearchableV2Provider));
    expect(failures(report)).toBe("");
    expect(ids(report, "skip")).toEqual(MANIFEST_IDS);
    for (const id of [...V2_IDS, "C-ISOLATION-3"]) expect(report.results.find((r) => r.id === id)?.status, id).toBe("pass");
    expect(report.results.find((r) => r.id === "C-ISOLATION-3")?.reason).toBeUndefined();
  });

  it("passes C-ISOLATION-4 with a forget tool that looks an id up together with the session's user", async () => {
    const report = await runMemoryProviderContract(setupFor(ForgetToolProvider), { only: ["TOOLS", "C-ISOLATION-4"] });
    expect(failures(report)).toBe("");
    expect(report.results.find((r) => r.id === "C-ISOLATION-4")).toMatchObject({
      status: "pass",
      reason: expect.stringMatching(
        /^\d+ tool call\(s\) in contract-boundary-intruder's session at 3 item\(s\) of contract-boundary-owner$/,
      ),
    });
  });

  it("runs C-ISOLATION-4 through the provider's own tools when search is not declared, reading back by recall", async () => {
    const toolsOnly = { ...ALL_CAPABILITIES, search: false };
    const report = await runMemoryProviderContract(setupFor(ToolsOnlyProvider, { capabilities: toolsOnly }), { only: ["C-ISOLATION-4"] });
    expect(report.results.find((r) => r.id === "C-ISOLATION-4")).toMatchObject({
      status: "pass",
      reason: expect.stringMatching(
        /^\d+ tool call\(s\) in contract-boundary-intruder's session at 3 item\(s\) of contract-boundary-owner; answers for the owner's ids were not compared/,
      ),
    });
    const leaky = await runMemoryProviderContract(setupFor(LeakyToolsOnlyProvider, { capabilities: toolsOnly }), {
      only: ["C-ISOLATION-4"],
    });
    expect(leaky.results.find((r) => r.id === "C-ISOLATION-4")).toMatchObject({
      status: "fail",
      reason: expect.stringMatching(
        /^minimal_search\(\{"query":"ownerword[0-9a-f]+"\}\) in contract-boundary-intruder's session answered with the text of the owner's item/,
      ),
    });
  });

  it("skips C-ISOLATION-4 when the setup does not declare userScoping", async () => {
    const report = await runMemoryProviderContract(
      setupFor(MinimalProvider, { capabilities: { ...ALL_CAPABILITIES, userScoping: false } }),
      { only: ["C-ISOLATION-4"] },
    );
    expect(report.results.find((r) => r.id === "C-ISOLATION-4")).toMatchObject({
      status: "skip",
      reason: "setup declares capabilities.userScoping: false",
    });
  });

  it("runs the MANIFEST clauses from the package dir", async () => {
    const report = await runMemoryProviderContract(setupFor(MinimalProvider, { packageDir: path.join(fixtures, "minimal-package") }), {
      only: ["MANIFEST"],
    });
    const manifest = report.results.filter((r) => r.group === "MANIFEST");
    expect(failures(report)).toBe("");
    expect(manifest.map((r) => r.status)).toEqual(["pass", "pass", "pass", "pass"]);
  });

  it("reports undeclared capabilities as skipped with the reason", async () => {
    const report = await runMemoryProviderContract(
      setupFor(MinimalProvider, {
        capabilities: { tools: false, recall: true, checkpoint: false, search: false, sessionSwitch: false, mirrorsBuiltinWrites: false },
      }),
      { only: ["TOOLS", "CHECKPOINT", "HOOKS"] },
    );
    expect(failures(report)).toBe("");
    const tools1 = report.results.find((r) => r.id === "C-TOOLS-1");
    expect(tools1).toMatchObject({ status: "skip", reason: "setup declares capabilities.tools: false" });
    expect(report.results.find((r) => r.id === "C-CHECKPOINT-2")?.reason).toContain("capabilities.checkpoint");
    expect(report.results.find((r) => r.id === "C-HOOKS-5")?.reason).toContain("capabilities.sessionSwitch");
    // Read-back clauses still run through prefetch when search is not declared.
    expect(report.results.find((r) => r.id === "C-HOOKS-2")?.status).toBe("pass");
  });

  it("honours setup.skip with the given reason", async () => {
    const report = await runMemoryProviderContract(setupFor(MinimalProvider, { skip: { "C-IDENTITY-1": "not today" } }), {
      only: ["IDENTITY"],
    });
    expect(report.results.find((r) => r.id === "C-IDENTITY-1")).toMatchObject({
      status: "skip",
      reason: "skipped by setup.skip: not today",
    });
    expect(report.results.find((r) => r.id === "C-IDENTITY-2")?.status).toBe("pass");
  });

  it("restores HOME, cwd and HERMES_HOME after the run", async () => {
    const before = { home: process.env.HOME, cwd: process.cwd(), hermes: process.env.HERMES_HOME };
    await runMemoryProviderContract(setupFor(MinimalProvider), { only: ["INIT"] });
    expect({ home: process.env.HOME, cwd: process.cwd(), hermes: process.env.HERMES_HOME }).toEqual(before);
  });
});

// Each case runs the whole contract (about 2 s on an idle 2-core machine): the default 5 s per test
// left too little room when the machine is busy, so the bound is 30 s.
describe("runMemoryProviderContract catches broken providers", { timeout: 30_000 }, () => {
  afterAll(() => TimerLeakProvider.clearLeaks());

  const cases: Array<{ mistake: string; Provider: new () => MinimalProvider; fails: string[] }> = [
    { mistake: "a blocking syncTurn", Provider: BlockingSyncProvider, fails: ["C-HOOKS-1"] },
    { mistake: "a fetch in isAvailable", Provider: FetchInIsAvailableProvider, fails: ["C-IDENTITY-3"] },
    { mistake: "an isAvailable that blocks for over a second", Provider: SlowIsAvailableProvider, fails: ["C-IDENTITY-2"] },
    { mistake: "a write to HOME", Provider: HomeWritingProvider, fails: ["C-INIT-2"] },
    { mistake: "a leaky profile (global static storage)", Provider: LeakyProfileProvider, fails: ["C-ISOLATION-1"] },
    { mistake: "a duplicating checkpoint", Provider: DuplicatingCheckpointProvider, fails: ["C-CHECKPOINT-2", "C-CHECKPOINT-3"] },
    { mistake: "a whole-transcript checkpoint key", Provider: WholeTranscriptCheckpointProvider, fails: ["C-CHECKPOINT-3"] },
    { mistake: "a checkpoint that swallows storage errors", Provider: SwallowingCheckpointProvider, fails: ["C-CHECKPOINT-4"] },
    { mistake: "a tool schema with a bad name", Provider: BadToolNameProvider, fails: ["C-TOOLS-1"] },
    { mistake: "tool calls that throw", Provider: ThrowingToolProvider, fails: ["C-TOOLS-2", "C-TOOLS-6"] },
    { mistake: "a timer kept alive", Provider: TimerLeakProvider, fails: ["C-LIFECYCLE-3"] },
    { mistake: "a secret without envVar and a default outside choices", Provider: BadConfigProvider, fails: ["C-CONFIG-2", "C-CONFIG-3"] },
    { mistake: "writes in a subagent context", Provider: SubagentWritingProvider, fails: ["C-HOOKS-4"] },
    { mistake: "an onSessionEnd that does not flush", Provider: NoFlushOnSessionEndProvider, fails: ["C-HOOKS-7"] },
    { mistake: "an onSessionSwitch that does not flush", Provider: NoFlushOnSessionSwitchProvider, fails: ["C-HOOKS-8"] },
    { mistake: "a turn label that ignores turnAuthor", Provider: IgnoresTurnAuthorProvider, fails: ["C-HOOKS-9"] },
    { mistake: "checkpoint messages stored without their role label", Provider: UnlabelledCheckpointProvider, fails: ["C-CHECKPOINT-5"] },
    { mistake: "a prefetch cache keyed by query text alone", Provider: QueryKeyedPrefetchCacheProvider, fails: ["C-RECALL-2"] },
    { mistake: "filters applied to the unfiltered top-k", Provider: PostFilterTopKProvider, fails: ["C-FILTERS-2"] },
    { mistake: "a createdAt range left out of the search", Provider: IgnoresCreatedAtProvider, fails: ["C-FILTERS-1"] },
    { mistake: "malformed filters searched unfiltered instead of refused", Provider: LenientFilterProvider, fails: ["C-FILTERS-3"] },
    { mistake: "an empty forgetWhere scope that erases everything", Provider: EmptyScopeErasesAllProvider, fails: ["C-ERASURE-2"] },
    {
      mistake: "a forgetWhere scope matching every item erased without confirmAll",
      Provider: WholeStoreErasureProvider,
      fails: ["C-ERASURE-3"],
    },
    {
      mistake: "a search that ignores the requested userId and searches its own",
      Provider: IgnoresRequestedUserProvider,
      fails: ["C-ISOLATION-3"],
    },
    { mistake: "a forgetWhere that leaves the erased text searchable", Provider: ErasureLeavesTextProvider, fails: ["C-ERASURE-1"] },
    { mistake: "expiry accepted but ignored", Provider: IgnoresExpiryProvider, fails: ["C-EXPIRY-1"] },
    { mistake: "an update that keeps serving the old text", Provider: UpdateKeepsOldTextProvider, fails: ["C-UPDATE-1"] },
    {
      mistake: "a search that keeps answering nothing for a query that once found nothing",
      Provider: NegativeSearchCacheProvider,
      fails: ["C-RECALL-3"],
    },
    { mistake: "malformed remember() items accepted unchecked", Provider: UncheckedItemsProvider, fails: ["C-RECALL-4"] },
    { mistake: "a search limit it cannot use replaced by the default", Provider: DefaultingLimitProvider, fails: ["C-RECALL-5"] },
    { mistake: "a search tool that searches every user's items", Provider: LeakySearchToolProvider, fails: ["C-ISOLATION-4"] },
    { mistake: "a forget tool that deletes another user's item", Provider: UnscopedForgetToolProvider, fails: ["C-ISOLATION-4"] },
    { mistake: "a forget tool that says another user's item exists", Provider: OracleForgetToolProvider, fails: ["C-ISOLATION-4"] },
  ];

  for (const { mistake, Provider, fails } of cases) {
    it(`fails exactly ${fails.join(" + ")} for ${mistake}`, async () => {
      const report = await runMemoryProviderContract(setupFor(Provider));
      expect(ids(report, "fail"), failures(report)).toEqual(fails);
      for (const id of fails) {
        const result = report.results.find((r) => r.id === id)!;
        expect(result.reason, id).toBeTruthy();
        expect(result.hint, id).toBeTruthy();
      }
      expect(report.ok).toBe(false);
    });
  }
});
