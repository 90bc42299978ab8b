/**
 * The user boundary: a server started for one user (`--user alice`) acts only within that user's
 * items of the real SQLite provider. Bob's items, stored through the provider's API, cannot be
 * found, read or forgotten through any tool, and an id of Bob's is answered exactly like an id that
 * was never used. Driven by the MCP SDK's own client over stdio to the built binary.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openMemory, type MemoryProvider, type SearchableMemory } from "@hermes/memory-core";
import { tempHome } from "./test-support/providers.js";
import { PACKAGE_DIR, binTransport } from "./test-support/raw-stdio.js";

let home: { dir: string; cleanup: () => void };
let client: Client | undefined;

beforeEach(() => {
  home = tempHome();
});

afterEach(async () => {
  await client?.close();
  client = undefined;
  home.cleanup();
});

/** Run `work` on the SQLite provider of `home`, opened for `userId`, through the public API. */
async function withSqlite<T>(userId: string, work: (provider: MemoryProvider & SearchableMemory) => Promise<T>): Promise<T> {
  const manager = await openMemory({
    sessionId: `api-${userId}`,
    hermesHome: home.dir,
    cwd: PACKAGE_DIR,
    provider: "sqlite",
    userId,
    strict: true,
  });
  try {
    return await work(manager.getProvider("sqlite") as MemoryProvider & SearchableMemory);
  } finally {
    await manager.shutdownAll();
  }
}

async function connectAs(user: string): Promise<Client> {
  const { transport } = binTransport(home.dir, ["--provider", "sqlite", "--user", user]);
  const c = new Client({ name: "user-boundary", version: "1.0.0" });
  await c.connect(transport);
  return c;
}

async function call(name: string, args: Record<string, unknown>): Promise<{ isError: boolean; body: Record<string, unknown> }> {
  const result = (await client!.callTool({ name, arguments: args })) as CallToolResult;
  const text = result.content.map((c) => (c as { text: string }).text).join("");
  return { isError: result.isError === true, body: JSON.parse(text) as Record<string, unknown> };
}

/** An answer with the id it names replaced, so answers for two ids can be compared. */
function withoutId(answer: { isError: boolean; body: Record<string, unknown> }, id: string): string {
  return JSON.stringify(answer).split(JSON.stringify(id).slice(1, -1)).join("<id>");
}

describe("a server for one user", () => {
  it("cannot find, get or forget another user's items, and answers for their ids as for ids never used", async () => {
    const bobIds = await withSqlite("bob", async (provider) => {
      const ids = [
        await provider.remember({ content: "Bob's locker combination is cormorant 4417.", userId: "bob" }),
        await provider.remember({ content: "Bob parks on level cormorant.", userId: "bob", kind: "fact" }),
      ];
      await provider.flush();
      return ids.map(String);
    });
    const neverUsed = String(Number(bobIds[1]) + 1000);

    client = await connectAs("alice");
    const mine = await call("remember", { content: "Alice's locker is by the cormorant mural." });
    expect(mine.isError, JSON.stringify(mine)).toBe(false);
    const aliceId = String(mine.body.id);

    const found = await call("search", { query: "cormorant locker", limit: 50 });
    expect(found.isError).toBe(false);
    expect((found.body.hits as Array<{ id: string }>).map((h) => String(h.id))).toEqual([aliceId]);

    for (const bobId of bobIds) {
      for (const tool of ["get", "forget"]) {
        const theirs = await call(tool, { id: bobId });
        const nobodys = await call(tool, { id: neverUsed });
        expect(theirs.isError, `${tool} ${bobId}`).toBe(true);
        expect(withoutId(theirs, bobId), tool).toBe(withoutId(nobodys, neverUsed));
      }
    }
    expect((await call("get", { id: aliceId })).body).toMatchObject({
      hit: { id: aliceId, content: "Alice's locker is by the cormorant mural." },
    });

    // The generic tools are the only way in: the provider's own copies of them are not offered.
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).not.toEqual(expect.arrayContaining(["sqlite_memory_search"]));
    expect(names).not.toContain("sqlite_memory_forget");
    await client.close();
    client = undefined;

    // Bob's items are untouched; Alice's item is hers.
    await withSqlite("bob", async (provider) => {
      for (const id of bobIds) expect(await provider.get(id), id).toMatchObject({ userId: "bob" });
      expect(await provider.get(aliceId)).toMatchObject({ userId: "alice" });
    });
  }, 60_000);

  it("forgets the user's own items", async () => {
    client = await connectAs("alice");
    const { body } = await call("remember", { content: "Alice waters the ferns on Mondays." });
    const id = String(body.id);
    expect(await call("forget", { id })).toMatchObject({ isError: false, body: { success: true, id } });
    expect((await call("get", { id })).isError).toBe(true);
    expect((await call("search", { query: "ferns" })).body.hits).toEqual([]);
  }, 30_000);

  it("refuses a user id that is blank or has control characters, before serving", async () => {
    for (const user of ["", "  ", "ali\nce"]) {
      await expect(connectAs(user)).rejects.toThrow();
    }
  }, 30_000);
});
