/**
 * The user boundary of the model tools, in every layout: a session opened for a user reaches only
 * that user's items through every tool; another user's id is answered exactly like an id that was
 * never used. The host's SearchableMemory calls keep naming their userId themselves.
 */
import { randomUUID } from "node:crypto";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { VectorMemoryProvider, type VectorMemoryProviderOptions } from "./index.js";
import {
  cleanupsAfterEach,
  layoutsWithFakes,
  openSession,
  tempHome,
  withoutId,
  type Session,
  type TestLayout,
} from "./test-support/layouts.js";

const cleanups = cleanupsAfterEach();

interface Layout extends TestLayout {
  /** An id of the same shape as `id` that no item ever had. */
  neverUsed(id: string): string;
}

const sidecarNeverUsed = (id: string): string => `${id.split("-")[0]}-${randomUUID()}`;
const LAYOUTS: Layout[] = layoutsWithFakes("boundary", 64).map((layout) => ({
  ...layout,
  // Remote ids are `u<user>.s<session>.<kind>.<key>`: a fresh key.
  neverUsed:
    layout.name === "pinecone remote" ? (id: string) => `${id.split(".").slice(0, 3).join(".")}.${randomUUID()}` : sidecarNeverUsed,
}));

describe.each(LAYOUTS)("vector tools ($name layout)", (layout) => {
  let options: VectorMemoryProviderOptions;
  let home: string;

  /** A session on the shared home (and namespace), opened for `userId` (none: a session without a user). */
  const session = (userId?: string): Promise<Session> => openSession(cleanups, options, home, path.basename(home), userId);

  async function tool(provider: VectorMemoryProvider, name: string, args: Record<string, unknown>): Promise<string> {
    return provider.handleToolCall(name, args);
  }

  /** Bob's items, stored in a session of his that is closed again: a fact through the API, one through his tool, a turn. */
  async function storeBobsItems(): Promise<{ ids: string[]; words: string[] }> {
    const bob = await session("bob");
    const api = bob.remember({ content: "Bob's pelican budget is 4400", kind: "fact", userId: "bob" });
    const viaTool = JSON.parse(await tool(bob, "vector_memory_remember", { content: "Bob's heron password is swordfish" })) as {
      id: string;
    };
    bob.syncTurn("My kestrel locker code is 7731", "Noted.", { sessionId: "session-of-bob" });
    await bob.flush();
    const turn = (await bob.search("kestrel locker", { userId: "bob", kind: "turn" }))[0]!;
    await bob.close();
    return { ids: [api, viaTool.id, turn.id], words: ["pelican", "heron", "kestrel"] };
  }

  async function bobStillHas(ids: string[]): Promise<void> {
    const bob = await session("bob");
    for (const id of ids) expect(await bob.get(id), id).toMatchObject({ id, userId: "bob" });
  }

  it.each([false, true])(
    "search none of another user's items (a userId argument for them refused like one for nobody); custom template without {user}: %s",
    async (sharedNamespace) => {
      options = { ...layout.options(), ...(sharedNamespace ? { pineconeNamespaceTemplate: "{profile}" } : {}) };
      home = tempHome(cleanups, "vector-user-boundary-");
      const bobs = await storeBobsItems();
      const alice = await session("alice");
      await alice.flush();
      for (const word of bobs.words) {
        const found = await tool(alice, "vector_memory_search", { query: word });
        for (const other of bobs.words) expect(found).not.toContain(other);
        for (const id of bobs.ids) expect(found).not.toContain(id);
        const asBob = await tool(alice, "vector_memory_search", { query: word, userId: "bob" });
        expect(JSON.parse(asBob)).toHaveProperty("error");
        expect(asBob).toBe(await tool(alice, "vector_memory_search", { query: word, userId: "nobody-at-all" }));
        // Recall in alice's session does not show bob's items either.
        expect(await alice.prefetch(word, { sessionId: "session-of-alice" })).not.toContain("Bob's");
      }
    },
  );

  it("answers forget of another user's id byte for byte like a never-used id, and deletes nothing", async () => {
    options = layout.options();
    home = tempHome(cleanups, "vector-user-boundary-");
    const bobs = await storeBobsItems();
    const alice = await session("alice");
    for (const id of bobs.ids) {
      const unused = layout.neverUsed(id);
      const unknown = withoutId(await tool(alice, "vector_memory_forget", { id: unused }), unused);
      expect(JSON.parse(unknown)).toHaveProperty("error");
      expect(withoutId(await tool(alice, "vector_memory_forget", { id }), id)).toBe(unknown);
    }
    await alice.close();
    await bobStillHas(bobs.ids);
  });

  it("stores what the remember tool saves under the session's user", async () => {
    options = layout.options();
    home = tempHome(cleanups, "vector-user-boundary-");
    const alice = await session("alice");
    const { id } = JSON.parse(await tool(alice, "vector_memory_remember", { content: "Alice waters the ferns on Sundays" })) as {
      id: string;
    };
    expect(await alice.get(id)).toMatchObject({ userId: "alice", sessionId: "session-of-alice" });
    await alice.close();
    const bob = await session("bob");
    expect(JSON.parse(await tool(bob, "vector_memory_search", { query: "ferns Sundays" })).count).toBe(0);
    const unused = layout.neverUsed(id);
    expect(withoutId(await tool(bob, "vector_memory_forget", { id }), id)).toBe(
      withoutId(await tool(bob, "vector_memory_forget", { id: unused }), unused),
    );
  });

  it("acts as the user `local` in a session without a user (as its writes and recall do)", async () => {
    options = layout.options();
    home = tempHome(cleanups, "vector-user-boundary-");
    const bobs = await storeBobsItems();
    const nobody = await session();
    const { id } = JSON.parse(await tool(nobody, "vector_memory_remember", { content: "An unowned note about the quarry" })) as {
      id: string;
    };
    expect(await nobody.get(id)).toMatchObject({ userId: "local" });
    expect(JSON.parse(await tool(nobody, "vector_memory_search", { query: "quarry" })).count).toBe(1);
    expect(await tool(nobody, "vector_memory_search", { query: "pelican" })).not.toContain("pelican");
    expect(JSON.parse(await tool(nobody, "vector_memory_search", { query: "pelican", userId: "bob" }))).toHaveProperty("error");
    const unused = layout.neverUsed(bobs.ids[0]!);
    expect(withoutId(await tool(nobody, "vector_memory_forget", { id: bobs.ids[0] }), bobs.ids[0]!)).toBe(
      withoutId(await tool(nobody, "vector_memory_forget", { id: unused }), unused),
    );
    await nobody.close();
    await bobStillHas(bobs.ids);
  });

  it("keeps the explicit userId of the host's SearchableMemory calls: they reach another user's items when they name them", async () => {
    options = layout.options();
    home = tempHome(cleanups, "vector-user-boundary-");
    const bobs = await storeBobsItems();
    const alice = await session("alice");
    expect((await alice.search("pelican budget", { userId: "bob", limit: 1 })).map((h) => h.id)).toEqual([bobs.ids[0]]);
    expect(await alice.update(bobs.ids[1]!, { tags: ["reviewed"] })).toBe(true);
    expect(await alice.forgetWhere({ ids: [bobs.ids[2]!], userId: "bob" })).toBeGreaterThanOrEqual(1);
    expect(await alice.forget(bobs.ids[0]!)).toBe(true);
    await alice.close();
    const bob = await session("bob");
    expect(await bob.get(bobs.ids[0]!)).toBeNull();
    expect(await bob.get(bobs.ids[2]!)).toBeNull();
    expect(await bob.get(bobs.ids[1]!)).toMatchObject({ tags: ["reviewed"] });
  });
});
