/**
 * Two users never share memory because their ids look alike: ids that differ only in characters a
 * Pinecone namespace does not keep (`a b` and `a_b`, `alice+work@x.com` and `alice_work@x.com`)
 * get namespaces of their own, in every layout, and no namespace grows past Pinecone's 512 bytes
 * whatever the id. What one of them stored is, for the other, exactly what a user who never wrote
 * anything sees: through the tools, recall, search, counting and erasure.
 */
import { randomUUID } from "node:crypto";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { VectorMemoryProviderOptions } from "../index.js";
import { renderNamespace } from "../vector-config.js";
import { cleanupsAfterEach, layoutsWithFakes, openSession, tempHome, withoutId, type Session } from "../test-support/layouts.js";

const cleanups = cleanupsAfterEach();
const LAYOUTS = layoutsWithFakes("lookalike", 64);

/** Pairs of user ids that rendered to one namespace before: the first stores, the second looks. */
const LOOKALIKES: Array<[string, string]> = [
  ["a b", "a_b"],
  ["a_b", "a b"],
  ["alice+work@x.com", "alice_work@x.com"],
  ["zoë", "zo_"],
];

describe.each(LAYOUTS)("users whose ids look alike ($name layout)", (layout) => {
  let options: VectorMemoryProviderOptions;
  let home: string;

  const session = (userId: string): Promise<Session> => openSession(cleanups, options, home, path.basename(home), userId);

  /** What `userId` stores in a session of theirs: a fact through the API (with and without userId), one through the tool, a turn. */
  async function storeItems(userId: string, word: string): Promise<string[]> {
    const s = await session(userId);
    const ids = [
      s.remember({ content: `The ${word} budget is 4400`, kind: "fact", userId }),
      s.remember({ content: `The ${word} locker opens on Mondays`, kind: "fact" }),
      (JSON.parse(await s.handleToolCall("vector_memory_remember", { content: `The ${word} password is swordfish` })) as { id: string }).id,
    ];
    s.syncTurn(`Where is my ${word} kept?`, "In the shed.", { sessionId: `session-of-${userId}` });
    await s.flush();
    const turn = (await s.search(`${word} kept shed`, { userId, kind: "turn" }))[0];
    expect(turn, "the turn is stored").toBeDefined();
    ids.push(turn!.id);
    await s.close();
    return ids;
  }

  /** Everything `userId`'s session answers about `word` and `ids`, with the ids masked. */
  async function answers(userId: string, word: string, ids: string[]): Promise<unknown> {
    const s = await session(userId);
    const out = {
      tool: await s.handleToolCall("vector_memory_search", { query: word }),
      toolTurns: await s.handleToolCall("vector_memory_search", { query: `${word} kept shed`, kind: "turn" }),
      recall: await s.prefetch(`what about the ${word}?`, { sessionId: `session-of-${userId}` }),
      search: (await s.search(word, { userId })).map((h) => h.id),
      counted: await s.countWhere({ userId }),
      forget: [] as string[],
    };
    for (const id of ids) out.forget.push(withoutId(await s.handleToolCall("vector_memory_forget", { id }), id));
    await s.close();
    return out;
  }

  it.each(LOOKALIKES)(
    "what %j stores, %j neither sees, recalls, lists nor forgets: its answers are a never-used user's",
    async (owner, other) => {
      options = layout.options();
      home = tempHome(cleanups, "vector-lookalike-");
      const word = "pelican";
      const ids = await storeItems(owner, word);
      const stranger = `stranger-${randomUUID()}`;
      const nobody = await answers(
        stranger,
        word,
        ids.map(() => `fact-${randomUUID()}`),
      );
      expect(JSON.stringify(nobody)).not.toContain(word);
      expect(await answers(other, word, ids)).toEqual(nobody);

      // The owner still has every item, and reaches them through their own tools.
      const back = await session(owner);
      for (const id of ids) expect(await back.get(id), id).not.toBeNull();
      expect(JSON.parse(await back.handleToolCall("vector_memory_search", { query: word })).count).toBe(4);
      expect(await back.countWhere({ userId: owner })).toBe(4);
      await back.close();
    },
  );

  it("keeps both users' items apart when both store (each sees only their own)", async () => {
    options = layout.options();
    home = tempHome(cleanups, "vector-lookalike-");
    const first = await storeItems("alice+work@x.com", "heron");
    const second = await storeItems("alice_work@x.com", "kestrel");
    for (const [user, own, theirs, theirIds] of [
      ["alice+work@x.com", "heron", "kestrel", second],
      ["alice_work@x.com", "kestrel", "heron", first],
    ] as const) {
      const s = await session(user);
      expect(JSON.parse(await s.handleToolCall("vector_memory_search", { query: own })).count).toBe(4);
      expect(await s.handleToolCall("vector_memory_search", { query: theirs })).not.toContain(theirs);
      expect(await s.prefetch(`the ${theirs}`, { sessionId: "x" })).not.toContain(theirs);
      expect(await s.countWhere({ userId: user })).toBe(4);
      for (const id of theirIds) expect(JSON.parse(await s.handleToolCall("vector_memory_forget", { id }))).toHaveProperty("error");
      await s.close();
    }
    const owner = await session("alice+work@x.com");
    for (const id of [...first, ...second]) expect(await owner.get(id), id).not.toBeNull();
    await owner.close();
  });

  it("serves a user whose id is 4,000 characters (8,000 UTF-8 bytes) long, and another that shares all but its last", async () => {
    options = layout.options();
    home = tempHome(cleanups, "vector-lookalike-");
    const long = `u${"ü".repeat(3_999)}`;
    const ids = await storeItems(long, "osprey");
    const twin = `${long.slice(0, -1)}v`;
    const s = await session(twin);
    expect(await s.handleToolCall("vector_memory_search", { query: "osprey" })).not.toContain("osprey");
    expect(await s.countWhere({ userId: twin })).toBe(0);
    await s.close();
    const back = await session(long);
    for (const id of ids) expect(await back.get(id), id).not.toBeNull();
    expect(await back.countWhere({ userId: long })).toBe(4);
    await back.close();
    const fakeIndex = layout.fake()?.index(layout.name === "pinecone remote" ? "lookalike-remote" : "lookalike");
    for (const namespace of fakeIndex?.namespaces.keys() ?? [])
      expect(Buffer.byteLength(namespace), namespace.slice(0, 80)).toBeLessThanOrEqual(512);
  });
});

describe("renderNamespace", () => {
  it("keeps the namespace of ids made of the characters it always kept", () => {
    expect(renderNamespace("{profile}:{user}", "team", "alice_work@x.com")).toBe("team:alice_work@x.com");
    expect(renderNamespace("{profile}:{user}", "team", "U123.x-y:z")).toBe("team:U123.x-y:z");
  });

  it("gives different ids different namespaces, each at most 512 UTF-8 bytes", () => {
    const ids = [
      "a b",
      "a_b",
      "a~b",
      "a~20b",
      "a~7Eb",
      "a%20b",
      "a+b",
      "a\u0000b",
      "ä",
      "a\u00e4",
      "a\u0061\u0308",
      "\uD800",
      "\uD801",
      "\uFFFD",
      "\uD83D\uDE00",
      `${"x".repeat(200)}\uD800`,
      `${"x".repeat(200)}\uD801`,
      "",
      " ",
      "_",
      "~",
      "~~",
      "x".repeat(128),
      "x".repeat(129),
      "x".repeat(5000),
      `${"x".repeat(5000)}y`,
    ];
    for (let i = 0; i < 200; i++) ids.push(randomUUID().replace(/-/g, () => " +/~_%"[i % 6]!));
    const seen = new Map<string, string>();
    for (const id of ids) {
      const namespace = renderNamespace("{profile}:{user}", "team", id);
      expect(Buffer.byteLength(namespace)).toBeLessThanOrEqual(512);
      expect(namespace).toMatch(/^[A-Za-z0-9._:@~-]+$/);
      expect(seen.get(namespace) ?? id, `${JSON.stringify(id)} and ${JSON.stringify(seen.get(namespace))} share ${namespace}`).toBe(id);
      seen.set(namespace, id);
    }
  });

  it("keeps a long profile and template within 512 bytes", () => {
    expect(Buffer.byteLength(renderNamespace("{profile}:{user}", "p".repeat(2000), "u".repeat(2000)))).toBeLessThanOrEqual(512);
    expect(renderNamespace("{profile}:{user}", "p".repeat(300), "alice")).toBe(`${"p".repeat(300)}:alice`);
  });
});
