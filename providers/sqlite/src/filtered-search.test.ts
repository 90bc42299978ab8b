import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HermesMemoryError, type MemoryFilter, type MemoryKind } from "@hermes/memory-core";
import { matchesMemoryFilter, parseMemoryFilter } from "@hermes/memory-provider-kit";
import { planRanking } from "@hermes/memory-provider-kit/sqlite";
import { SqliteMemoryProvider } from "./sqlite-memory-provider.js";
import { seededRandom } from "@hermes/test-support";

let home: string;
const open: SqliteMemoryProvider[] = [];

async function makeProvider(ctx: Record<string, unknown> = {}): Promise<SqliteMemoryProvider> {
  const provider = new SqliteMemoryProvider({ path: path.join(home, "m.db") });
  await provider.initialize("s0", { hermesHome: home, ...ctx });
  open.push(provider);
  return provider;
}

beforeEach(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), "sqlite-filter-"));
});
afterEach(async () => {
  for (const p of open.splice(0)) await p.shutdown();
  fs.rmSync(home, { recursive: true, force: true });
});

const T0 = Date.UTC(2026, 0, 1);

interface Seed {
  content: string;
  kind: MemoryKind;
  userId: string;
  sessionId?: string;
  tags: string[];
  metadata: Record<string, unknown>;
  createdAt: number;
}

/**
 * Facts about a harbour: the best matches for "harbour lighthouse" (both words, short text) all
 * belong to user b and carry no useful tag; the items of user a mention the words once among
 * filler, so an unfiltered top-k holds only b's items and a post-filtered top-k would be empty.
 */
function seedItems(): Seed[] {
  const random = seededRandom(7);
  const items: Seed[] = [];
  for (let i = 0; i < 40; i++) {
    items.push({
      content: `harbour lighthouse ${"and ".repeat(i)}${i}`,
      kind: "fact",
      userId: "b",
      sessionId: `sb${i % 3}`,
      tags: ["noise"],
      metadata: { project: "zeus", priority: 9, team: ["red"] },
      createdAt: T0 + i * 1000,
    });
  }
  const projects = ["apollo", "hermes", "athena"];
  for (let i = 0; i < 60; i++) {
    const filler = Array.from({ length: 5 + i }, () => ["quiet", "morning", "coffee", "notes", "plan"][Math.floor(random() * 5)]).join(" ");
    items.push({
      content: `${i % 2 === 0 ? "harbour" : "lighthouse"} ${filler} entry ${i}`,
      kind: (["fact", "checkpoint", "turn"] as const)[i % 3]!,
      userId: "a",
      // Turns without a session have no neighbours: each item's score is its own.
      ...(i % 3 === 2 ? {} : { sessionId: `sa${i % 4}` }),
      tags: i % 5 === 0 ? ["work", "urgent"] : i % 5 === 1 ? ["work"] : [],
      metadata: {
        project: projects[i % 3]!,
        priority: i % 10,
        ...(i % 4 === 0 ? { archived: true } : {}),
        team: i % 6 === 0 ? ["blue", "green"] : ["green"],
      },
      createdAt: T0 + 100_000 + i * 1000,
    });
  }
  return items;
}

/** Store the items directly (explicit creation times) and return their ids in order. */
function store(provider: SqliteMemoryProvider, items: readonly Seed[]): string[] {
  return provider.memoryStore!.insertMany(items.map((s) => ({ ...s })));
}

const FILTERS: Array<[string, MemoryFilter]> = [
  ["one kind", { kind: "checkpoint" }],
  ["several kinds", { kind: ["fact", "turn"] }],
  ["sessionId", { sessionId: "sa1" }],
  ["userId", { userId: "a" }],
  ["tags.any", { tags: { any: ["urgent", "missing"] } }],
  ["tags.all", { tags: { all: ["work", "urgent"] } }],
  ["createdAt range", { createdAt: { $gte: new Date(T0 + 110_000).toISOString(), $lt: T0 + 130_000 } }],
  ["metadata $eq shorthand", { metadata: { project: "apollo" } }],
  ["metadata $ne", { metadata: { project: { $ne: "zeus" } } }],
  ["metadata $in", { metadata: { project: { $in: ["hermes", "athena"] } } }],
  ["metadata $nin", { metadata: { project: { $nin: ["zeus", "apollo"] } } }],
  ["metadata $gt/$lte", { metadata: { priority: { $gt: 2, $lte: 5 } } }],
  ["metadata $gte/$lt", { metadata: { priority: { $gte: 7, $lt: 9 } } }],
  ["metadata $exists", { metadata: { archived: { $exists: true } } }],
  ["metadata $exists false", { metadata: { archived: { $exists: false }, team: "blue" } }],
  ["metadata list element", { metadata: { team: "blue" } }],
  ["metadata $or/$and", { metadata: { $or: [{ project: "hermes" }, { $and: [{ priority: { $lt: 2 } }, { archived: true }] }] } }],
  [
    "everything at once",
    { userId: "a", kind: ["fact", "checkpoint", "turn"], tags: { any: ["work"] }, metadata: { priority: { $gte: 0 } } },
  ],
];

describe("filtered search (FTS5 bm25 path)", () => {
  it("returns the best matches among the items passing each filter, never a filtered remainder of the unfiltered top-k", async () => {
    const provider = await makeProvider();
    const items = seedItems();
    const ids = store(provider, items);
    const byId = new Map(ids.map((id, i) => [id, items[i]!]));
    // Unfiltered, the best 10 are all user b's items: post-filtering them would leave nothing.
    expect(provider.search("harbour lighthouse", { limit: 10 }).every((h) => h.userId === "b")).toBe(true);

    for (const [name, filter] of FILTERS) {
      const parsed = parseMemoryFilter(filter);
      const passing = ids.filter((id) => {
        const s = byId.get(id)!;
        return matchesMemoryFilter(parsed, {
          id,
          kind: s.kind,
          sessionId: s.sessionId,
          userId: s.userId,
          tags: s.tags,
          metadata: s.metadata,
          createdAt: s.createdAt,
        });
      });
      expect(passing.length, name).toBeGreaterThan(3);
      // Facts and checkpoints only contain a query word; turns may also be found through neighbours
      // (which must pass too), so compare the complete result with the JS evaluation of the filter.
      const all = provider.search("harbour lighthouse", { ...filter, limit: 1000 });
      expect(all.map((h) => h.id).sort(), name).toEqual([...passing].sort());
      // The best 3 among the passing items are the first 3 of the complete filtered ranking.
      const top = provider.search("harbour lighthouse", { ...filter, limit: 3 });
      expect(
        top.map((h) => h.id),
        name,
      ).toEqual(all.slice(0, 3).map((h) => h.id));
    }
  });

  it("returns tags and expiresAt on hits and from get()", async () => {
    const provider = await makeProvider();
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    const id = provider.remember({ content: "the boat leaves at noon", tags: ["travel"], expiresAt });
    const plain = provider.remember({ content: "the boat is blue" });
    const [hit] = provider.search("boat noon", { limit: 1 });
    expect(hit).toMatchObject({ id, tags: ["travel"], expiresAt });
    expect(provider.get(id)).toMatchObject({ id, tags: ["travel"], expiresAt });
    const other = provider.get(plain)!;
    expect("tags" in other || "expiresAt" in other).toBe(false);
  });

  it("a neighbour gets a share of a match's score only when it passes the filter too", async () => {
    const provider = await makeProvider();
    const [, answer] = store(provider, [
      { content: "Where did you moor the sailboat?", kind: "turn", userId: "a", sessionId: "s", tags: [], metadata: {}, createdAt: T0 },
      {
        content: "Next to the red crane, pier four.",
        kind: "turn",
        userId: "a",
        sessionId: "s",
        tags: [],
        metadata: { private: true },
        createdAt: T0 + 1,
      },
      { content: "Thanks, see you there.", kind: "turn", userId: "a", sessionId: "s", tags: [], metadata: {}, createdAt: T0 + 2 },
    ]);
    // Unfiltered, the answer is found through the question before it.
    expect(provider.search("sailboat moor", { limit: 5 }).map((h) => h.id)).toContain(answer);
    const hits = provider.search("sailboat moor", { metadata: { private: { $ne: true } }, limit: 5 });
    expect(hits.length).toBeGreaterThan(0);
    expect(hits.map((h) => h.id)).not.toContain(answer);
  });

  it("refuses hostile or malformed filters with INVALID_ARGUMENT and injects nothing", async () => {
    const provider = await makeProvider();
    store(provider, seedItems());
    const before = provider.stats().items;
    const bad: unknown[] = [
      { kind: "bogus" },
      { kind: [] },
      { tags: "work" },
      { tags: { some: ["work"] } },
      { createdAt: { $gte: "not a time" } },
      { createdAt: { $after: 1 } },
      { metadata: { project: { $regex: ".*" } } },
      { metadata: { $where: "1=1" } },
      { metadata: { 'a"); DROP TABLE items; --': 1 } },
      { metadata: { priority: { $gt: "5" } } },
      { metadata: { project: { $in: "apollo" } } },
      { metadata: { project: null } },
      { sessionId: "" },
      { userId: 42 },
      { sessionID: "sa1" },
      { ids: ["1"] },
      { metadata: nested(20) },
    ];
    for (const filter of bad) {
      let error: unknown;
      try {
        provider.search("harbour", filter as MemoryFilter);
      } catch (e) {
        error = e;
      }
      expect(HermesMemoryError.hasCode(error, "INVALID_ARGUMENT"), JSON.stringify(filter).slice(0, 80)).toBe(true);
    }
    // Text that looks like SQL is only ever a bound value or a quoted JSON path.
    expect(provider.search("harbour", { metadata: { project: "' OR 1=1 --" } })).toEqual([]);
    expect(provider.search("harbour", { metadata: { "x') OR 1=1 --": "y" } })).toEqual([]);
    expect(provider.search("harbour", { sessionId: "' OR '1'='1" })).toEqual([]);
    expect(provider.search("harbour", { tags: { any: ["') OR 1=1 --"] } })).toEqual([]);
    expect(provider.stats().items).toBe(before);
  });
});

function nested(depth: number): Record<string, unknown> {
  let node: Record<string, unknown> = { priority: 1 };
  for (let i = 0; i < depth; i++) node = { $or: [node] };
  return node;
}

describe("filtered search (layered ranker path, large store)", () => {
  it("returns the best matches among the passing items when a query word is common", async () => {
    const provider = await makeProvider();
    const items: Seed[] = [];
    // 5,000 items, about 2,400 with "harbour" (over 2,000, under half): the layered ranker ranks "harbour lighthouse".
    for (let i = 0; i < 5000; i++) {
      const decoy = i % 50 === 0;
      const mine = !decoy && i % 97 === 5;
      items.push({
        content: decoy
          ? `harbour lighthouse ${i}`
          : mine
            ? `harbour notes about the lighthouse keeper and a long walk ${i}`
            : i % 20 < 9
              ? `harbour day ${i}`
              : `market day ${i}`,
        kind: "fact",
        userId: mine ? "a" : "b",
        sessionId: "s",
        tags: mine ? ["mine"] : [],
        metadata: { n: i },
        createdAt: T0 + i,
      });
    }
    const ids = store(provider, items);
    const db = provider.memoryStore!.db;
    const df = (term: string) => Number(db.prepare(`SELECT COUNT(*) FROM items_fts WHERE items_fts MATCH ?`).pluck().get(`"${term}"`));
    expect(planRanking(["harbour", "lighthouse"], 5000, df)?.mode).toBe("layered");

    const mine = ids.filter((_, i) => items[i]!.userId === "a");
    expect(mine.length).toBeGreaterThan(40);
    const unfiltered = provider.search("harbour lighthouse", { limit: 20 });
    expect(unfiltered.filter((h) => h.userId === "a")).toEqual([]);
    for (const filter of [
      { userId: "a" },
      { tags: { any: ["mine"] } },
      { metadata: { n: { $in: items.flatMap((s, i) => (s.userId === "a" ? [i] : [])) } } },
    ] as MemoryFilter[]) {
      const hits = provider.search("harbour lighthouse", { ...filter, limit: 10 });
      expect(hits).toHaveLength(10);
      expect(hits.every((h) => mine.includes(h.id))).toBe(true);
    }
    // Passing items that hold only the word found in most items ("harbour day …") are still found:
    // never fewer hits than there are passing matches.
    const commonOnly = items.flatMap((s, i) => (s.content.startsWith("harbour day") && i % 7 === 0 ? [i] : [])).slice(0, 6);
    const hits = provider.search("harbour lighthouse", { metadata: { n: { $in: commonOnly } }, limit: 10 });
    expect(hits.map((h) => h.content).sort()).toEqual(commonOnly.map((i) => items[i]!.content).sort());
  });
});

describe("two users on one provider instance", () => {
  it("search and erasure by userId never reach the other user's items; prefetch shows only the session user's items", async () => {
    const provider = await makeProvider();
    const aIds = [
      provider.remember({ content: "user a keeps a sailboat in the harbour", userId: "a", sessionId: "sa" }),
      provider.remember({ content: "user a walks to the harbour on sundays", kind: "turn", userId: "a", sessionId: "sa" }),
    ];
    const bIds = [
      provider.remember({ content: "harbour harbour sailboat harbour", userId: "b", sessionId: "sb" }),
      provider.remember({ content: "sailboat harbour", kind: "turn", userId: "b", sessionId: "sb" }),
      provider.remember({ content: "b's sailboat in the harbour", kind: "checkpoint", userId: "b", sessionId: "sb" }),
    ];
    // b's items are the better matches.
    expect(provider.search("harbour sailboat", { limit: 1 })[0]!.userId).toBe("b");
    const forA = provider.search("harbour sailboat", { userId: "a", limit: 10 });
    expect(forA.map((h) => h.id).sort()).toEqual([...aIds].sort());

    const recallA = provider.prefetch("harbour sailboat", { sessionId: "sa" });
    expect(recallA).toContain("user a keeps a sailboat");
    expect(recallA).not.toMatch(/harbour harbour|b's sailboat|^sailboat harbour/m);
    const recallB = provider.prefetch("harbour sailboat", { sessionId: "sb" });
    expect(recallB).not.toContain("user a");

    expect(await provider.forgetWhere({ userId: "a" })).toBe(2);
    for (const id of aIds) expect(provider.get(id)).toBeNull();
    for (const id of bIds) expect(provider.get(id)).not.toBeNull();
    expect(
      provider
        .search("harbour sailboat", { limit: 10 })
        .map((h) => h.id)
        .sort(),
    ).toEqual([...bIds].sort());
  });
});

describe("sqlite_memory_search tool filters", () => {
  it("takes the filter keys, validates them (errors come back as the tool's JSON error) and searches as the host's user", async () => {
    const provider = await makeProvider({ userId: "a" });
    provider.remember({ content: "ferry timetable for monday", userId: "a", tags: ["travel"], metadata: { city: "oslo" } });
    provider.remember({ content: "ferry tickets", userId: "a", tags: ["receipts"] });
    provider.remember({ content: "ferry ferry timetable", userId: "b", tags: ["travel"] });
    const schema = provider.getToolSchemas().find((s) => s.name === "sqlite_memory_search")!;
    expect(Object.keys((schema.parameters as { properties: object }).properties)).toEqual([
      "query",
      "limit",
      "kind",
      "sessionId",
      "userId",
      "tags",
      "createdAt",
      "metadata",
    ]);
    const call = (args: Record<string, unknown>) =>
      JSON.parse(provider.handleToolCall("sqlite_memory_search", args)) as {
        results?: Array<{ content: string; tags?: string[] }>;
        error?: string;
      };

    expect(call({ query: "ferry", tags: { any: ["travel"] }, metadata: { city: { $in: ["oslo", "bergen"] } } }).results).toEqual([
      expect.objectContaining({ content: "ferry timetable for monday", tags: ["travel"] }),
    ]);
    // The host's user is always applied: b's better match is not found, and asking for b is refused.
    expect(call({ query: "ferry timetable" }).results!.map((r) => r.content)).not.toContain("ferry ferry timetable");
    expect(call({ query: "ferry", userId: "b" }).error).toMatch(/own user/);
    // Schema violations and what the parser refuses both come back as JSON errors.
    expect(call({ query: "ferry", tags: { some: ["x"] } }).error).toMatch(/Invalid arguments/);
    expect(call({ query: "ferry", metadata: { city: { $regex: "o.*" } } }).error).toMatch(/unknown operator/);
    expect(call({ query: "ferry", createdAt: { $gte: "yesterday" } }).error).toMatch(/createdAt/);
  });
});
