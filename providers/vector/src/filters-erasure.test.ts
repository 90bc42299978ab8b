import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { HermesMemoryError, searchCapabilities } from "@hermes/memory-core";
import { PineconeFake } from "@hermes/pinecone-fake";
import { VectorMemoryProvider, type VectorMemoryProviderOptions } from "./vector-memory-provider.js";
import { PineconeVectorStore } from "./pinecone/pinecone-vector-store.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

function tempHome(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-vector-filters-"));
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function startFake(): Promise<PineconeFake> {
  const fake = await PineconeFake.start({ dimension: 128, indexName: "mem" });
  cleanups.push(() => fake.close());
  return fake;
}

type Mode = { name: string; options(): Promise<VectorMemoryProviderOptions>; fake?: PineconeFake };

const local: Mode = { name: "local store", options: async () => ({}) };
const pinecone: Mode = {
  name: "pinecone store (loopback fake)",
  async options() {
    const fake = await startFake();
    this.fake = fake;
    return {
      store: "pinecone",
      pineconeIndex: "mem",
      pineconeControllerUrl: fake.url,
      env: { PINECONE_API_KEY: "test-key" },
      maxRetries: 0,
    };
  },
};

async function open(mode: Mode, extra: VectorMemoryProviderOptions = {}, ctx: Record<string, unknown> = {}): Promise<VectorMemoryProvider> {
  const provider = new VectorMemoryProvider({ env: {}, dimensions: 128, ...(await mode.options()), ...extra });
  await provider.initialize("s1", { hermesHome: tempHome(), agentIdentity: "work", userId: "alice", ...ctx });
  cleanups.push(() => provider.shutdown().catch(() => undefined));
  return provider;
}

const contents = (hits: Array<{ content: string }>): string => hits.map((h) => h.content).join(" | ");

describe.each([local, pinecone])("VectorMemoryProvider filters, expiry, erasure and update ($name)", (mode) => {
  it("declares all four capabilities", async () => {
    const p = await open(mode);
    expect(searchCapabilities(p)).toEqual({ filters: true, expiry: true, erasure: true, update: true });
  });

  it("returns the best matches among the items passing the filter, not a post-filtered top-k", async () => {
    const p = await open(mode);
    for (let i = 0; i < 60; i++)
      p.remember({ content: `alpha alpha alpha report number ${i}`, tags: ["common"], metadata: { priority: i % 3 } });
    p.remember({ content: "a short alpha note", tags: ["rare", "blue"], metadata: { priority: 7, team: "infra", labels: ["x", "y"] } });
    p.remember({ content: "alpha checkpoint text", kind: "checkpoint", sessionId: "s9", tags: ["rare"], metadata: { priority: 9 } });
    await p.flush();
    const rare = await p.search("alpha", { limit: 1, tags: { any: ["rare"] }, kind: "fact" });
    expect(contents(rare)).toBe("a short alpha note");
    expect(rare[0]!.tags).toEqual(["rare", "blue"]);
    expect(contents(await p.search("alpha", { limit: 5, tags: { all: ["rare", "blue"] } }))).toBe("a short alpha note");
    expect(
      contents(await p.search("alpha", { limit: 5, metadata: { priority: { $gte: 7 } } }))
        .split(" | ")
        .sort(),
    ).toEqual(["a short alpha note", "alpha checkpoint text"]);
    expect(contents(await p.search("alpha", { limit: 5, metadata: { $or: [{ team: "infra" }, { labels: { $in: ["z"] } }] } }))).toBe(
      "a short alpha note",
    );
    expect(contents(await p.search("alpha", { limit: 5, kind: ["checkpoint"], sessionId: "s9" }))).toBe("alpha checkpoint text");
    const wide = await p.search("alpha", { limit: 10, metadata: { priority: { $ne: 0 } } });
    expect(wide).toHaveLength(10);
    expect(wide.every((h) => h.metadata.priority !== 0)).toBe(true);
    expect(await p.search("alpha", { limit: 5, createdAt: { $lt: "2000-01-01T00:00:00Z" } })).toEqual([]);
    expect(await p.search("alpha", { limit: 5, createdAt: { $gte: Date.now() - 60_000 }, tags: { any: ["rare"] } })).toHaveLength(2);
    // Vector side alone: the passing item is found although 60 others are closer to the query.
    const vectorOnly = await open(mode, { hybrid: false });
    for (let i = 0; i < 60; i++) vectorOnly.remember({ content: `alpha alpha alpha report number ${i}`, tags: ["common"] });
    vectorOnly.remember({ content: "a short alpha note", tags: ["rare"] });
    await vectorOnly.flush();
    expect(contents(await vectorOnly.search("alpha alpha alpha", { limit: 1, tags: { any: ["rare"] } }))).toBe("a short alpha note");
    await expect(p.search("alpha", { metadata: { priority: { $like: 1 } } } as never)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(p.search("alpha", { tag: "x" } as never)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  });

  it("never returns expired items (search, get, prefetch, tools) and purges them", async () => {
    const p = await open(mode);
    const gone = p.remember({ content: "the vault combination is 31-07-19", expiresAt: Date.now() - 1000, tags: ["vault"] });
    const soon = p.remember({ content: "the vault courier arrives at noon", ttlMs: 60_000, tags: ["vault"] });
    await p.flush();
    const hits = await p.search("vault combination courier", { limit: 5 });
    expect(contents(hits)).toBe("the vault courier arrives at noon");
    expect(Date.parse(hits[0]!.expiresAt!)).toBeGreaterThan(Date.now());
    expect(await p.get(gone)).toBeNull();
    expect((await p.get(soon))?.expiresAt).toBe(hits[0]!.expiresAt);
    expect(await p.prefetch("vault combination", { sessionId: "s1" })).not.toContain("31-07-19");
    expect(await p.handleToolCall("vector_memory_search", { query: "vault combination" })).not.toContain("31-07-19");
    expect(() => p.remember({ content: "x", ttlMs: 5, expiresAt: Date.now() })).toThrow(/expiresAt or ttlMs/);
    expect(await p.purgeExpired()).toBe(1);
    expect((await p.stats()).items).toBe(1);
    if (mode.fake) expect(mode.fake.count("work:alice")).toBe(1);
  });

  it("purgeExpired removes every expired item when there are more than one Pinecone delete request (1,000 ids) holds", async () => {
    const p = await open(mode);
    for (let i = 0; i < 1001; i++) p.remember({ content: `expired note ${i}`, expiresAt: Date.now() - 1000 });
    const kept = [p.remember({ content: "still valid one", ttlMs: 3_600_000 }), p.remember({ content: "still valid two" })];
    await p.flush();
    expect((await p.stats()).items).toBe(1003);
    expect(await p.purgeExpired()).toBe(1001);
    expect((await p.stats()).items).toBe(2);
    if (mode.fake) expect([...(mode.fake.namespaces.get("work:alice")?.keys() ?? [])].sort()).toEqual([...kept].sort());
    expect(await p.purgeExpired()).toBe(0);
  }, 60_000);

  it("purges expired items lazily after a search, without blocking it", async () => {
    const p = await open(mode);
    p.remember({ content: "a fleeting thought about kites", ttlMs: 1 });
    await p.flush();
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(await p.search("kites", { limit: 3 })).toEqual([]);
    expect((await p.stats()).items).toBe(1);
    const deadline = Date.now() + 5000;
    while ((await p.stats()).items > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect((await p.stats()).items).toBe(0);
  });

  it("forgetWhere erases every copy: rows, FTS, later turns' context, vectors, recall cache; empty scopes are refused", async () => {
    const p = await open(mode, { hybrid: true });
    p.remember({ content: "my secret zebra passphrase is moonbeam", kind: "turn", sessionId: "chat", tags: ["secret"] });
    p.remember({ content: "ok, understood", kind: "turn", sessionId: "chat" });
    p.remember({ content: "keep this zebra fact about stripes", tags: ["keep"] });
    await p.flush();
    p.queuePrefetch("zebra passphrase", { sessionId: "s1" });
    await expect(p.forgetWhere({})).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(p.forgetWhere({ tagz: ["x"] } as never)).rejects.toBeInstanceOf(HermesMemoryError);
    expect(await p.forgetWhere({ tags: { any: ["secret"] } })).toBe(1);
    expect(contents(await p.search("moonbeam passphrase", { limit: 5 }))).not.toContain("moonbeam");
    // Neither the erased turn nor the next turn's stored context of it is found by its words.
    const moonbeam = await p.search("moonbeam", { limit: 5 });
    expect(moonbeam.every((h) => h.metadata.scores && (h.metadata.scores as { bm25: number | null }).bm25 === null)).toBe(true);
    expect(contents(moonbeam)).not.toContain("moonbeam");
    expect(await p.prefetch("zebra passphrase", { sessionId: "s1" })).not.toContain("moonbeam");
    expect((await p.search("zebra", { limit: 5 }))[0]!.content).toBe("keep this zebra fact about stripes");
    const vectorOnly = await open(mode, { hybrid: false });
    vectorOnly.remember({ content: "alpha bravo charlie", tags: ["a"] });
    vectorOnly.remember({ content: "delta echo foxtrot", tags: ["b"] });
    await vectorOnly.flush();
    const [target] = await vectorOnly.search("alpha bravo charlie", { limit: 1 });
    expect(await vectorOnly.forgetWhere({ ids: [target!.id] })).toBe(1);
    expect(contents(await vectorOnly.search("alpha bravo charlie", { limit: 5 }))).toBe("delta echo foxtrot");
    expect(await vectorOnly.get(target!.id)).toBeNull();
    if (mode.fake) expect(mode.fake.count("work:alice")).toBe(1);
  });

  it("erasing a turn (forgetWhere by id, or forget) also erases the checkpoint copies of its messages, and nothing else", async () => {
    const p = await open(mode, { hybrid: true });
    p.syncTurn("My badge pin is quokkaflume.", "Noted the pin.", { sessionId: "s1" });
    p.syncTurn("Lunch is at noon.", "Noted the lunch.", { sessionId: "s1" });
    await p.flush();
    await p.onPreCompress(
      [
        { role: "user", content: "My badge pin is quokkaflume." },
        { role: "assistant", content: "Noted the pin." },
        { role: "user", content: "Lunch is at noon." },
      ],
      { requireCheckpoint: true },
    );
    await p.flush();
    const pinned = (await p.search("quokkaflume badge pin", { limit: 10 })).filter((h) => h.content.includes("quokkaflume"));
    expect(pinned.map((h) => h.kind).sort()).toEqual(["checkpoint", "turn"]);
    const turn = pinned.find((h) => h.kind === "turn")!;
    // The turn, its user message and its assistant message.
    expect(await p.forgetWhere({ ids: [turn.id] })).toBe(3);
    expect(contents(await p.search("quokkaflume badge pin", { limit: 10 }))).not.toMatch(/quokkaflume|Noted the pin/);
    const lunch = (await p.search("lunch noon", { limit: 10 })).filter((h) => h.content.includes("Lunch is at noon"));
    expect(lunch.map((h) => h.kind).sort()).toEqual(["checkpoint", "turn"]);
    expect(await p.forget(lunch.find((h) => h.kind === "turn")!.id)).toBe(true);
    expect(contents(await p.search("lunch noon", { limit: 10 }))).not.toContain("Lunch is at noon");
  });

  it("update re-embeds and re-indexes content and replaces tags, metadata and expiry", async () => {
    const p = await open(mode, { hybrid: false });
    const id = p.remember({ content: "the cat sleeps on the red sofa", tags: ["home"], metadata: { room: "living" }, ttlMs: 60_000 });
    p.remember({ content: "unrelated weather report", tags: ["news"] });
    await p.flush();
    expect(
      await p.update(id, { content: "quantum physics lecture notes", tags: ["study"], metadata: { room: "library" }, expiresAt: null }),
    ).toBe(true);
    expect(await p.update("no-such-id", { tags: ["x"] })).toBe(false);
    await expect(p.update(id, { colour: "red" } as never)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    const vectorHits = await p.search("cat sleeps red sofa", { limit: 5 });
    expect(contents(vectorHits)).not.toContain("cat");
    const [hit] = await p.search("quantum physics lecture", { limit: 1 });
    expect(hit).toMatchObject({ id, content: "quantum physics lecture notes", tags: ["study"] });
    expect(hit!.metadata.room).toBe("library");
    expect(hit!.expiresAt).toBeUndefined();
    expect(await p.search("quantum", { limit: 5, tags: { any: ["home"] } })).toEqual([]);
    const hybrid = await open(mode, { hybrid: true });
    const other = hybrid.remember({ content: "the cat sleeps on the red sofa" });
    await hybrid.flush();
    await hybrid.update(other, { content: "a brand new sentence" });
    const sofa = await hybrid.search("sofa", { limit: 5 });
    expect(sofa.map((h) => (h.metadata.scores as { bm25: number | null }).bm25)).toEqual([null]);
    expect(contents(sofa)).toBe("a brand new sentence");
  });

  it("keeps two users of one instance apart: search, writes and forgetWhere", async () => {
    const p = await open(mode);
    p.remember({ content: "alice likes green tea in the morning", userId: "alice" });
    p.remember({ content: "bob likes green tea in the morning, green tea all day, green tea", userId: "bob" });
    await p.flush();
    const alice = await p.search("green tea", { userId: "alice", limit: 5 });
    expect(contents(alice)).toBe("alice likes green tea in the morning");
    expect(contents(await p.search("green tea", { userId: "bob", limit: 5 }))).toContain("bob likes");
    expect(contents(await p.search("green tea", { userId: "bob", limit: 5 }))).not.toContain("alice");
    if (mode.fake) {
      expect(mode.fake.count("work:alice")).toBe(1);
      expect(mode.fake.count("work:bob")).toBe(1);
    }
    expect(await p.forgetWhere({ userId: "bob" })).toBe(1);
    expect(await p.search("green tea", { userId: "bob", limit: 5 })).toEqual([]);
    expect(contents(await p.search("green tea", { userId: "alice", limit: 5 }))).toBe("alice likes green tea in the morning");
    if (mode.fake) expect(mode.fake.count("work:bob")).toBe(0);
  });

  it("accepts filter keys in the search tool and refuses malformed ones as a tool error", async () => {
    const p = await open(mode);
    p.remember({ content: "ticket about the login page", tags: ["bug"], metadata: { severity: 3 } });
    p.remember({ content: "ticket about the login copy", tags: ["docs"], metadata: { severity: 1 } });
    await p.flush();
    const out = JSON.parse(
      await p.handleToolCall("vector_memory_search", { query: "login ticket", tags: { any: ["bug"] }, metadata: { severity: { $gt: 2 } } }),
    ) as {
      results: Array<{ content: string; tags?: string[] }>;
    };
    expect(out.results.map((r) => r.content)).toEqual(["ticket about the login page"]);
    expect(out.results[0]!.tags).toEqual(["bug"]);
    const bad = JSON.parse(await p.handleToolCall("vector_memory_search", { query: "login", metadata: { severity: { $regex: "x" } } })) as {
      error?: string;
    };
    expect(bad.error).toMatch(/unknown operator/);
  });
});

describe("Pinecone mode specifics", () => {
  it("writes the filterable fields into the Pinecone record metadata", async () => {
    const p = await open(pinecone);
    const id = p.remember({
      content: "release notes for 2.0",
      tags: ["release", "notes"],
      metadata: { version: 2, channel: "stable", nested: { a: 1 } },
      ttlMs: 60_000,
    });
    await p.flush();
    const store = new PineconeVectorStore({ apiKey: "test-key", indexName: "mem", controllerHostUrl: pinecone.fake!.url, dimensions: 128 });
    const record = (await store.fetch([id], { namespace: "work:alice" })).get(id)!;
    expect(record.metadata).toMatchObject({
      kind: "fact",
      tags: ["release", "notes"],
      meta_version: 2,
      meta_channel: "stable",
      text: "release notes for 2.0",
    });
    expect(typeof record.metadata!.created_ms).toBe("number");
    expect(typeof record.metadata!.expires_at).toBe("number");
    // Values Pinecone cannot hold as they are are filterable as their JSON text (the remote layout writes the same).
    expect(record.metadata!.meta_nested).toBe('{"a":1}');
  });

  it("records written before the filter fields are found by filtered vector queries after reindex", async () => {
    const home = tempHome();
    const fakeOptions = await pinecone.options();
    const fake = pinecone.fake!;
    const first = new VectorMemoryProvider({ env: {}, dimensions: 128, ...fakeOptions, hybrid: false });
    await first.initialize("s1", { hermesHome: home, agentIdentity: "work", userId: "alice" });
    first.remember({ content: "apollo launch checklist", metadata: { project: "apollo" } });
    await first.shutdown();
    // The layout of earlier versions: no created_ms and no meta_ fields.
    for (const record of fake.namespaces.get("work:alice")!.values()) {
      for (const key of Object.keys(record.metadata ?? {}))
        if (key === "created_ms" || key.startsWith("meta_")) delete record.metadata![key];
    }
    const p = new VectorMemoryProvider({ env: {}, dimensions: 128, ...fakeOptions, hybrid: false });
    await p.initialize("s1", { hermesHome: home, agentIdentity: "work", userId: "alice" });
    cleanups.push(() => p.shutdown());
    expect(await p.search("apollo launch checklist", { limit: 3, metadata: { project: "apollo" } })).toEqual([]);
    expect(await p.reindex()).toMatchObject({ items: 1 });
    expect(contents(await p.search("apollo launch checklist", { limit: 3, metadata: { project: "apollo" } }))).toBe(
      "apollo launch checklist",
    );
  });

  it("a queued write of an erased item is never sent later (outbox)", async () => {
    const p = await open(pinecone);
    const fake = pinecone.fake!;
    fake.failNext(500, 2);
    const id = p.remember({ content: "draft that must never reach pinecone" });
    await expect(p.flush()).rejects.toMatchObject({ code: "STORAGE_FAILED" });
    expect(p.undeliveredWrites).toBe(1);
    expect(await p.forgetWhere({ ids: [id] })).toBe(1);
    expect(p.undeliveredWrites).toBe(0);
    await p.flush();
    expect(fake.count("work:alice")).toBe(0);
    expect(await p.search("draft pinecone", { limit: 5 })).toEqual([]);
  });
});

describe("Local store after every vector was erased", () => {
  it("reopens cleanly many times once every item was removed (no index of tombstones is loaded)", async () => {
    const home = tempHome();
    const ids: string[] = [];
    for (let round = 0; round < 8; round++) {
      const p = new VectorMemoryProvider({ env: {}, dimensions: 64 });
      await p.initialize("s1", { hermesHome: home });
      if (round === 0) {
        for (let i = 0; i < 5; i++) ids.push(p.remember({ content: `item ${i} about lighthouses` }));
        await p.flush();
      } else if (ids.length > 0) {
        expect(await p.forgetWhere({ ids: [ids.shift()!] })).toBe(1);
      }
      await p.shutdown();
    }
    const p = new VectorMemoryProvider({ env: {}, dimensions: 64 });
    await p.initialize("s1", { hermesHome: home });
    cleanups.push(() => p.shutdown());
    expect((await p.stats()).items).toBe(0);
  });
});
