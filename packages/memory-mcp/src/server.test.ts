import fs from "node:fs";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { MemoryManager } from "@hermes/memory-core";
import { REMEMBER_TOOL_PROPERTIES } from "@hermes/memory-provider-kit";
import { searchableActionOf } from "./searchable-tools.js";
import { RESOURCE_URIS, createMemoryMcpServer } from "./server.js";
import {
  DuplicatingProvider,
  FilteringProvider,
  ScriptedProvider,
  ToolsOnlyProvider,
  openManager,
  tempHome,
} from "./test-support/providers.js";

let home: { dir: string; cleanup: () => void };
let manager: MemoryManager;
let client: Client;

async function connect(m: MemoryManager, toolTimeoutMs = 5_000, userId?: string): Promise<Client> {
  const server = createMemoryMcpServer(m, {
    hermesHome: home.dir,
    sessionId: "mcp-test",
    toolTimeoutMs,
    ...(userId !== undefined ? { userId } : {}),
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const c = new Client({ name: "test", version: "1.0.0" });
  await c.connect(clientSide);
  return c;
}

function text(result: Awaited<ReturnType<Client["callTool"]>>): string {
  return ((result as CallToolResult).content[0] as { text: string }).text;
}

beforeEach(() => {
  home = tempHome();
});

afterEach(async () => {
  await client?.close();
  await manager?.shutdownAll();
  home.cleanup();
});

describe("createMemoryMcpServer with built-in memory only", () => {
  beforeEach(async () => {
    manager = await openManager(home.dir);
    client = await connect(manager);
  });

  it("lists the memory tool and no search tools", async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(["memory"]);
    expect(tools[0]!.inputSchema.type).toBe("object");
  });

  it("writes MEMORY.md through the memory tool", async () => {
    const result = await client.callTool({
      name: "memory",
      arguments: { action: "add", target: "memory", content: "Deploys happen on Fridays." },
    });
    expect(result.isError).toBeFalsy();
    expect(JSON.parse(text(result))).toMatchObject({ success: true });
    expect(fs.readFileSync(path.join(home.dir, "memories", "MEMORY.md"), "utf8")).toContain("Deploys happen on Fridays.");
    const read = await client.readResource({ uri: RESOURCE_URIS.memory });
    expect((read.contents[0] as { text: string }).text).toContain("Deploys happen on Fridays.");
  });

  it("reports a refused memory write as a tool error", async () => {
    const result = await client.callTool({
      name: "memory",
      arguments: { action: "replace", target: "memory", old_text: "nothing like this", content: "x" },
    });
    expect(result.isError).toBe(true);
  });

  it("lists MEMORY.md, USER.md and the status as resources, the files empty before anything is written", async () => {
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toEqual([RESOURCE_URIS.memory, RESOURCE_URIS.user, RESOURCE_URIS.status]);
    const status = await client.readResource({ uri: RESOURCE_URIS.status });
    expect(JSON.parse((status.contents[0] as { text: string }).text)).toEqual({
      configuredProvider: "builtin",
      activeProvider: "builtin",
      userId: null,
      hermesHome: home.dir,
    });
    const user = await client.readResource({ uri: RESOURCE_URIS.user });
    expect((user.contents[0] as { text: string }).text).toBe("");
    await expect(client.readResource({ uri: "hermes-memory://nope" })).rejects.toThrow(/Unknown resource/);
  });

  it("answers an unknown tool with a tool error", async () => {
    const result = await client.callTool({ name: "search", arguments: { query: "x" } });
    expect(result.isError).toBe(true);
    expect(text(result)).toMatch(/Unknown tool 'search'/);
  });
});

describe("createMemoryMcpServer with a searchable provider", () => {
  let provider: ScriptedProvider;

  beforeEach(async () => {
    provider = new ScriptedProvider();
    manager = await openManager(home.dir, provider);
    client = await connect(manager, 200);
  });

  it("adds search, remember, forget and get next to the provider's own tools, and its stats resource", async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(["memory", "scripted_echo", "search", "remember", "forget", "get"]);
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toContain(RESOURCE_URIS.stats);
  });

  it("remembers, finds and forgets an item", async () => {
    const remembered = JSON.parse(
      text(await client.callTool({ name: "remember", arguments: { content: "The staging database is called tern." } })),
    ) as { id: string };
    expect(provider.items.get(remembered.id)).toMatchObject({
      content: "The staging database is called tern.",
      kind: "fact",
      sessionId: "mcp-test",
    });
    const found = JSON.parse(text(await client.callTool({ name: "search", arguments: { query: "staging" } }))) as {
      hits: Array<{ id: string }>;
    };
    expect(found.hits.map((h) => h.id)).toEqual([remembered.id]);
    const stats = await client.readResource({ uri: RESOURCE_URIS.stats });
    expect(JSON.parse((stats.contents[0] as { text: string }).text)).toMatchObject({ provider: "scripted", items: 1 });
    const forgot = await client.callTool({ name: "forget", arguments: { id: remembered.id } });
    expect(forgot.isError).toBeFalsy();
    expect(provider.items.size).toBe(0);
    expect((await client.callTool({ name: "forget", arguments: { id: remembered.id } })).isError).toBe(true);
  });

  it("rejects invalid arguments with a tool error", async () => {
    const result = await client.callTool({ name: "search", arguments: { query: "x", limit: 500 } });
    expect(result.isError).toBe(true);
    expect(text(result)).toMatch(/limit/);
    expect((await client.callTool({ name: "remember", arguments: {} })).isError).toBe(true);
  });

  it("holds remember to the limits of the providers' own remember tools (text, tag count, tag length)", async () => {
    const remember = (await client.listTools()).tools.find((t) => t.name === "remember")!;
    expect(remember.inputSchema.properties).toMatchObject(REMEMBER_TOOL_PROPERTIES);
    const before = provider.items.size;
    for (const [args, message] of [
      [
        { content: "x".repeat(20_001) },
        /\/content must NOT have more than 20000 characters \(longer text: split it into self-contained facts\)/,
      ],
      [{ content: "ok", tags: Array.from({ length: 17 }, (_, i) => `t${i}`) }, /\/tags must NOT have more than 16 items/],
      [{ content: "ok", tags: ["y".repeat(65)] }, /\/tags\/0 must NOT have more than 64 characters/],
      [{ content: "ok", tags: [""] }, /\/tags\/0 must NOT have fewer than 1 characters/],
      [{ content: "ok", tags: ["a", 7] }, /\/tags\/1 must be string/],
    ] as const) {
      const result = await client.callTool({ name: "remember", arguments: args });
      expect(result.isError).toBe(true);
      expect(text(result)).toMatch(message);
    }
    expect(provider.items.size).toBe(before);
    const longest = JSON.parse(
      text(
        await client.callTool({
          name: "remember",
          arguments: { content: "z".repeat(20_000), tags: Array.from({ length: 16 }, () => "w".repeat(64)) },
        }),
      ),
    ) as { id: string };
    expect(provider.items.get(longest.id)?.content).toHaveLength(20_000);
    // Characters are counted as the providers' tools count them: 20,000 emoji (40,000 UTF-16 units) fit.
    const emoji = JSON.parse(text(await client.callTool({ name: "remember", arguments: { content: "😀".repeat(20_000) } }))) as {
      id: string;
    };
    expect(provider.items.get(emoji.id)?.content).toHaveLength(40_000);
  });

  it("refuses a limit that is not a JSON integer instead of coercing it", async () => {
    for (const limit of [true, [3], "5", null]) {
      const result = await client.callTool({ name: "search", arguments: { query: "x", limit } });
      expect(result.isError, JSON.stringify(limit)).toBe(true);
      expect(text(result)).toMatch(/'limit' must be an integer from 1 to 50/);
    }
  });

  it("returns at most the default its search schema documents when a call gives no limit, and at most the documented maximum", async () => {
    const limit = (await client.listTools()).tools.find((t) => t.name === "search")!.inputSchema.properties!.limit as {
      description: string;
      maximum: number;
    };
    const documented = Number(/\(default (\d+)\)/.exec(limit.description)?.[1]);
    expect(documented).toBe(10);
    for (let i = 0; i < limit.maximum + 5; i++) await provider.remember({ content: `harbour note ${i}` });
    const search = async (args: Record<string, unknown>) =>
      JSON.parse(text(await client.callTool({ name: "search", arguments: { query: "harbour", ...args } }))) as { hits: unknown[] };
    expect((await search({})).hits).toHaveLength(documented);
    expect((await search({ limit: limit.maximum })).hits).toHaveLength(limit.maximum);
  });

  it("refuses an argument its tool does not name (a misspelt filter never widens a search), a userId included", async () => {
    for (const [name, args, key] of [
      ["search", { query: "x", sessionid: "s1" }, "sessionid"],
      ["search", { query: "x", userId: "bob" }, "userId"],
      ["remember", { content: "x", tag: ["a"] }, "tag"],
      ["get", { id: "m1", user: "bob" }, "user"],
    ] as const) {
      const result = await client.callTool({ name, arguments: args });
      expect(result.isError, key).toBe(true);
      expect(text(result)).toContain(`unknown argument '${key}'; ${name} takes `);
    }
    expect(provider.items.size).toBe(0);
  });

  it("takes an item id as text or as a whole number, as its schema says", async () => {
    const id = (await client.listTools()).tools.find((t) => t.name === "get")!.inputSchema.properties!.id as { type: unknown };
    expect(id.type).toEqual(["string", "integer"]);
    const result = await client.callTool({ name: "get", arguments: { id: 404 } });
    expect(result.isError).toBe(true);
    expect(JSON.parse(text(result))).toMatchObject({ success: false, id: "404", error: expect.stringMatching(/No item '404'/) });
  });

  it("says what went wrong when forget finds no such item", async () => {
    const result = await client.callTool({ name: "forget", arguments: { id: "m404" } });
    expect(result.isError).toBe(true);
    expect(JSON.parse(text(result))).toMatchObject({ success: false, id: "m404", error: expect.stringMatching(/No item 'm404'.*search/) });
  });

  it("survives a provider that throws: tool errors, then normal service", async () => {
    provider.behaviour = "throw";
    for (const [name, args] of [
      ["search", { query: "x" }],
      ["remember", { content: "y" }],
      ["forget", { id: "m1" }],
      ["scripted_echo", { text: "hi" }],
    ] as const) {
      const result = await client.callTool({ name, arguments: args });
      expect(result.isError, name).toBe(true);
      expect(text(result)).toMatch(/exploded/);
    }
    await expect(client.readResource({ uri: RESOURCE_URIS.stats })).rejects.toThrow(/exploded/);
    provider.behaviour = "ok";
    expect((await client.callTool({ name: "scripted_echo", arguments: { text: "hi" } })).isError).toBeFalsy();
    expect(
      (await client.callTool({ name: "memory", arguments: { action: "add", target: "memory", content: "Still works." } })).isError,
    ).toBeFalsy();
  });

  it("survives a provider that hangs: each call times out as a tool error", async () => {
    provider.behaviour = "hang";
    for (const [name, args] of [
      ["search", { query: "x" }],
      ["remember", { content: "y" }],
      ["scripted_echo", { text: "hi" }],
    ] as const) {
      const result = await client.callTool({ name, arguments: args });
      expect(result.isError, name).toBe(true);
      expect(text(result)).toMatch(/did not finish within 200 ms/);
    }
    await expect(client.readResource({ uri: RESOURCE_URIS.stats })).rejects.toThrow(/did not finish/);
    expect((await client.listTools()).tools.length).toBe(6);
  });
});

describe("createMemoryMcpServer with a provider that supports filters and expiry", () => {
  let provider: FilteringProvider;

  beforeEach(async () => {
    provider = new FilteringProvider();
    manager = await openManager(home.dir, provider);
    client = await connect(manager, 2_000);
  });

  it("offers the filter keys on search and ttlMs/expiresAt on remember, but no userId filter", async () => {
    const { tools } = await client.listTools();
    const search = tools.find((t) => t.name === "search")!;
    expect(Object.keys(search.inputSchema.properties ?? {})).toEqual(expect.arrayContaining(["tags", "createdAt", "metadata", "kind"]));
    expect(search.inputSchema.properties).not.toHaveProperty("userId");
    const remember = tools.find((t) => t.name === "remember")!;
    expect(Object.keys(remember.inputSchema.properties ?? {})).toEqual(expect.arrayContaining(["ttlMs", "expiresAt"]));
  });

  it("passes filters to the provider and returns only the matching items", async () => {
    await provider.remember({ content: "Pay rent on the first", tags: ["home"], metadata: { priority: 2 } });
    await provider.remember({ content: "Pay the team invoice", tags: ["work"], metadata: { priority: 5 } });
    const found = JSON.parse(
      text(
        await client.callTool({
          name: "search",
          arguments: { query: "pay", tags: { any: ["work"] }, metadata: { priority: { $gte: 3 } }, kind: ["fact"] },
        }),
      ),
    ) as { hits: Array<{ content: string }> };
    expect(found.hits.map((h) => h.content)).toEqual(["Pay the team invoice"]);
    expect(provider.lastSearch).toMatchObject({ tags: { any: ["work"] }, metadata: { priority: { $gte: 3 } }, kind: ["fact"] });
  });

  it("reports a malformed filter as a tool error naming the key", async () => {
    const result = await client.callTool({ name: "search", arguments: { query: "pay", metadata: { priority: { $regex: "x" } } } });
    expect(result.isError).toBe(true);
    expect(text(result)).toMatch(/unknown operator/);
  });

  it("passes ttlMs to remember and refuses a bad one", async () => {
    const ok = await client.callTool({ name: "remember", arguments: { content: "Short-lived note", ttlMs: 60_000 } });
    expect(ok.isError).toBeFalsy();
    const id = (JSON.parse(text(ok)) as { id: string }).id;
    expect(provider.items.get(id)).toMatchObject({ ttlMs: 60_000 });
    const bad = await client.callTool({ name: "remember", arguments: { content: "x", ttlMs: -5 } });
    expect(bad.isError).toBe(true);
    expect(text(bad)).toMatch(/ttlMs/);
  });
});

describe("createMemoryMcpServer with a provider without filters", () => {
  it("keeps the plain search schema and refuses filter keys with a tool error", async () => {
    manager = await openManager(home.dir, new ScriptedProvider());
    client = await connect(manager, 2_000);
    const { tools } = await client.listTools();
    expect(tools.find((t) => t.name === "search")!.inputSchema.properties).not.toHaveProperty("tags");
    const result = await client.callTool({ name: "search", arguments: { query: "x", tags: { any: ["a"] } } });
    expect(result.isError).toBe(true);
    expect(text(result)).toMatch(/needs a provider that supports filters/);
  });
});

describe("createMemoryMcpServer offers one tool per action", () => {
  it("lists the generic tools instead of a searchable provider's own tools for the same actions, and keeps its other tools", async () => {
    const provider = new DuplicatingProvider();
    manager = await openManager(home.dir, provider);
    client = await connect(manager, 2_000);
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(["memory", "dup_memory_list", "dup_profile", "search", "remember", "forget", "get"]);
    // The generic tool answers, not the provider's tool of the same name.
    const remembered = await client.callTool({ name: "remember", arguments: { content: "Kept by the generic tool." } });
    expect(JSON.parse(text(remembered))).toMatchObject({ success: true });
    expect(provider.toolCalls).toEqual([]);
    for (const [hidden, generic] of [
      ["dup_memory_search", "search"],
      ["dup_forget", "forget"],
      ["memory_get", "get"],
    ] as const) {
      const result = await client.callTool({ name: hidden, arguments: { id: "1", query: "x" } });
      expect(result.isError, hidden).toBe(true);
      expect(text(result)).toMatch(new RegExp(`Unknown tool '${hidden}': this server offers '${generic}'`));
    }
    expect(provider.toolCalls).toEqual([]);
    expect(JSON.parse(text(await client.callTool({ name: "dup_profile", arguments: {} })))).toEqual({ tool: "dup_profile" });
  });

  it("keeps every tool of a provider that is not searchable, whatever its names", async () => {
    manager = await openManager(home.dir, new ToolsOnlyProvider());
    client = await connect(manager, 2_000);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["memory", "tools_search", "tools_remember"]);
    expect(JSON.parse(text(await client.callTool({ name: "tools_search", arguments: {} })))).toEqual({ tool: "tools_search" });
  });
});

describe("searchableActionOf", () => {
  it("reads a provider's tool as a generic action only when its whole name is the action after the provider's name and memory_", () => {
    expect(searchableActionOf("sqlite_memory_search", "sqlite")).toBe("search");
    expect(searchableActionOf("vector_memory_forget", "vector")).toBe("forget");
    expect(searchableActionOf("my_mem_get", "my-mem")).toBe("get");
    expect(searchableActionOf("my_mem_remember", "my.mem")).toBe("remember");
    expect(searchableActionOf("memory_search", "sqlite")).toBe("search");
    expect(searchableActionOf("search", "sqlite")).toBe("search");
    for (const name of [
      "sqlite_memory_list",
      "sqlite_memory_search_all",
      "other_memory_search",
      "sqlite_research",
      "honcho_profile",
      "memory",
      "sqlite_memory_",
    ]) {
      expect(searchableActionOf(name, "sqlite"), name).toBeNull();
    }
  });
});

describe("createMemoryMcpServer for one user, on a provider without erasure", () => {
  it("reads, finds and forgets only that user's items, and answers for another user's id as for an unused one", async () => {
    const provider = new ScriptedProvider();
    manager = await openManager(home.dir, provider);
    const bobs = await provider.remember({ content: "Bob's bike lock code is 2231.", userId: "bob" });
    client = await connect(manager, 2_000, "alice");
    const mine = JSON.parse(text(await client.callTool({ name: "remember", arguments: { content: "Alice's bike is blue." } }))) as {
      id: string;
    };
    expect(provider.items.get(mine.id)).toMatchObject({ userId: "alice", sessionId: "mcp-test" });
    expect(
      (
        JSON.parse(text(await client.callTool({ name: "search", arguments: { query: "bike" } }))) as { hits: Array<{ id: string }> }
      ).hits.map((h) => h.id),
    ).toEqual([mine.id]);
    for (const tool of ["get", "forget"]) {
      const theirs = await client.callTool({ name: tool, arguments: { id: bobs } });
      const unused = await client.callTool({ name: tool, arguments: { id: "m999" } });
      expect(theirs.isError).toBe(true);
      expect(text(theirs).replaceAll(bobs, "<id>")).toBe(text(unused).replaceAll("m999", "<id>"));
    }
    expect(provider.items.has(bobs)).toBe(true);
    expect((await client.callTool({ name: "forget", arguments: { id: mine.id } })).isError).toBeFalsy();
    expect(provider.items.has(mine.id)).toBe(false);
    // The store's counts cover every user, so a server for one user does not offer them.
    expect((await client.listResources()).resources.map((r) => r.uri)).not.toContain(RESOURCE_URIS.stats);
    await expect(client.readResource({ uri: RESOURCE_URIS.stats })).rejects.toThrow(/Unknown resource/);
  });
});
