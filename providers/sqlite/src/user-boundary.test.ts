/**
 * The user boundary of the model tools: a session opened for a user reaches only that user's items
 * through every tool; another user's id is answered exactly like an id that was never used. The
 * host's SearchableMemory calls keep naming their userId themselves.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openMemory } from "@hermes/memory-core";
import { SqliteMemoryProvider } from "./index.js";

let home: string;
const open: SqliteMemoryProvider[] = [];

beforeEach(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), "sqlite-user-boundary-"));
});
afterEach(async () => {
  for (const p of open.splice(0)) await p.shutdown();
  fs.rmSync(home, { recursive: true, force: true });
});

/** A session on the shared home, opened for `userId` (none: a session without a user). */
async function session(userId?: string): Promise<SqliteMemoryProvider> {
  const provider = new SqliteMemoryProvider();
  await provider.initialize(`session-of-${userId ?? "nobody"}`, { hermesHome: home, ...(userId ? { userId } : {}) });
  open.push(provider);
  return provider;
}

function tool(provider: SqliteMemoryProvider, name: string, args: Record<string, unknown>): string {
  return provider.handleToolCall(name, args);
}

/** The answer with every standalone occurrence of `id` replaced, so answers about two ids compare. */
function withoutId(answer: string, id: string): string {
  return answer.replace(new RegExp(`(?<![0-9A-Za-z])${id}(?![0-9A-Za-z])`, "g"), "<id>");
}

interface BobsItems {
  ids: string[];
  words: string[];
}

/** Bob's items: a fact through the API, a fact through his remember tool, a turn through syncTurn. */
async function storeBobsItems(bob: SqliteMemoryProvider): Promise<BobsItems> {
  const api = bob.remember({ content: "Bob's pelican budget is 4400", kind: "fact", userId: "bob" });
  const viaTool = JSON.parse(tool(bob, "sqlite_memory_remember", { content: "Bob's heron password is swordfish" })) as { id: string };
  bob.syncTurn("My kestrel locker code is 7731", "Noted.", { sessionId: "session-of-bob" });
  await bob.flush();
  const turn = bob.search("kestrel", { userId: "bob" })[0]!;
  return { ids: [api, viaTool.id, turn.id], words: ["pelican", "heron", "kestrel"] };
}

describe("sqlite tools in a session opened for a user", () => {
  it("list only that user's items", async () => {
    const bob = await session("bob");
    const bobs = await storeBobsItems(bob);
    const alice = await session("alice");
    alice.remember({ content: "Alice's own note about the garden", userId: "alice" });

    const listed = tool(alice, "sqlite_memory_list", { limit: 100 });
    expect(JSON.parse(listed)).toMatchObject({ count: 1, items: [{ content: "Alice's own note about the garden" }] });
    for (const word of bobs.words) expect(listed).not.toContain(word);
    for (const kind of ["turn", "fact", "checkpoint"]) {
      const ofKind = tool(alice, "sqlite_memory_list", { kind, limit: 100 });
      for (const word of bobs.words) expect(ofKind).not.toContain(word);
    }
    // Bob still lists his own.
    expect(JSON.parse(tool(bob, "sqlite_memory_list", {})).count).toBe(3);
  });

  it("answer forget of another user's id byte for byte like a never-used id, and delete nothing", async () => {
    const bob = await session("bob");
    const bobs = await storeBobsItems(bob);
    const alice = await session("alice");
    const neverUsed = "987654";
    const unknown = withoutId(tool(alice, "sqlite_memory_forget", { id: neverUsed }), neverUsed);
    expect(JSON.parse(unknown)).toHaveProperty("error");
    for (const id of bobs.ids) {
      expect(withoutId(tool(alice, "sqlite_memory_forget", { id }), id)).toBe(unknown);
      // The schema also takes the id as a number.
      expect(withoutId(tool(alice, "sqlite_memory_forget", { id: Number(id) }), id)).toBe(unknown);
    }
    for (const id of bobs.ids) expect(bob.get(id)).toMatchObject({ id, userId: "bob" });
    expect(bob.stats().items).toBe(3);
  });

  it("search none of another user's items, with or without a userId argument", async () => {
    const bob = await session("bob");
    const bobs = await storeBobsItems(bob);
    const alice = await session("alice");
    for (const word of bobs.words) {
      expect(JSON.parse(tool(alice, "sqlite_memory_search", { query: word }))).toEqual({ results: [], count: 0 });
      // Asking for bob is refused, in the same words as asking for a user who never stored anything.
      const asBob = tool(alice, "sqlite_memory_search", { query: word, userId: "bob" });
      expect(JSON.parse(asBob)).toHaveProperty("error");
      expect(asBob).toBe(tool(alice, "sqlite_memory_search", { query: word, userId: "nobody-at-all" }));
    }
    for (const id of bobs.ids) {
      expect(tool(alice, "sqlite_memory_search", { query: id })).not.toContain("Bob's");
    }
  });

  it("store what the remember tool saves under the session's user", async () => {
    const alice = await session("alice");
    const { id } = JSON.parse(tool(alice, "sqlite_memory_remember", { content: "Alice waters the ferns on Sundays" })) as { id: string };
    expect(alice.get(id)).toMatchObject({ userId: "alice", sessionId: "session-of-alice" });
    const bob = await session("bob");
    expect(tool(bob, "sqlite_memory_list", {})).not.toContain("ferns");
    expect(JSON.parse(tool(bob, "sqlite_memory_search", { query: "ferns" })).count).toBe(0);
    // The same text remembered by bob is bob's own fact, not alice's id.
    const bobs = JSON.parse(tool(bob, "sqlite_memory_remember", { content: "Alice waters the ferns on Sundays" })) as { id: string };
    expect(bobs.id).not.toBe(id);
  });

  it("do not reach items stored without a user, as search and recall do not", async () => {
    const nobody = await session();
    const unowned = nobody.remember({ content: "An unowned note about the quarry" });
    const alice = await session("alice");
    expect(tool(alice, "sqlite_memory_list", {})).not.toContain("quarry");
    expect(JSON.parse(tool(alice, "sqlite_memory_search", { query: "quarry" })).count).toBe(0);
    expect(await alice.prefetch("quarry", { sessionId: "session-of-alice" })).toBe("");
    expect(withoutId(tool(alice, "sqlite_memory_forget", { id: unowned }), unowned)).toBe(
      withoutId(tool(alice, "sqlite_memory_forget", { id: "987654" }), "987654"),
    );
    expect(nobody.get(unowned)).not.toBeNull();
  });
});

describe("sqlite tools in a session without a user (a single-user profile)", () => {
  it("reach every item, whoever stored it", async () => {
    const bob = await session("bob");
    const bobs = await storeBobsItems(bob);
    const nobody = await session();
    nobody.remember({ content: "An unowned note about the quarry" });
    const listed = tool(nobody, "sqlite_memory_list", {});
    expect(JSON.parse(listed).count).toBe(4);
    expect(JSON.parse(tool(nobody, "sqlite_memory_search", { query: "pelican" })).count).toBe(1);
    expect(JSON.parse(tool(nobody, "sqlite_memory_search", { query: "pelican", userId: "bob" })).count).toBe(1);
    expect(JSON.parse(tool(nobody, "sqlite_memory_forget", { id: bobs.ids[0] }))).toEqual({ ok: true, id: bobs.ids[0] });
    expect(bob.get(bobs.ids[0]!)).toBeNull();
  });
});

describe("the host's SearchableMemory calls in a session opened for a user", () => {
  it("keep their explicit userId: they reach another user's items when they name them", async () => {
    const bob = await session("bob");
    const bobs = await storeBobsItems(bob);
    const alice = await session("alice");
    expect(alice.search("pelican", { userId: "bob" }).map((h) => h.id)).toEqual([bobs.ids[0]]);
    expect(alice.get(bobs.ids[1]!)).toMatchObject({ userId: "bob" });
    expect(alice.list({ limit: 10 })).toHaveLength(3);
    expect(alice.update(bobs.ids[1]!, { tags: ["reviewed"] })).toBe(true);
    expect(alice.forget(bobs.ids[2]!)).toBe(true);
    expect(bob.get(bobs.ids[2]!)).toBeNull();
    expect(bob.get(bobs.ids[1]!)).toMatchObject({ tags: ["reviewed"] });
  });
});

describe("a host's session opened with openMemory({ userId })", () => {
  const packageDir = path.resolve(fileURLToPath(new URL("..", import.meta.url)));
  // Needs this package's dist (the root `pnpm test` builds before testing).
  it.skipIf(!fs.existsSync(path.join(packageDir, "dist", "index.js")))("routes the model's tool calls within that user", async () => {
    const project = path.join(home, "project");
    fs.mkdirSync(path.join(project, "node_modules", "@hermes"), { recursive: true });
    fs.writeFileSync(
      path.join(project, "package.json"),
      JSON.stringify({ name: "host", private: true, dependencies: { "@hermes/memory-sqlite": "*" } }),
    );
    fs.symlinkSync(packageDir, path.join(project, "node_modules", "@hermes", "memory-sqlite"), "dir");
    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  provider: sqlite\n");
    const bob = await session("bob");
    const bobs = await storeBobsItems(bob);

    const manager = await openMemory({ hermesHome: home, cwd: project, sessionId: "alice-chat", userId: "alice", strict: true });
    try {
      const listed = await manager.handleToolCall("sqlite_memory_list", {});
      expect(JSON.parse(listed)).toEqual({ items: [], count: 0 });
      const unknown = withoutId(await manager.handleToolCall("sqlite_memory_forget", { id: "987654" }), "987654");
      expect(withoutId(await manager.handleToolCall("sqlite_memory_forget", { id: bobs.ids[0] }), bobs.ids[0]!)).toBe(unknown);
    } finally {
      await manager.shutdownAll();
    }
    expect(bob.get(bobs.ids[0]!)).toMatchObject({ userId: "bob" });
  });
});
