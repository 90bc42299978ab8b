import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { HermesMemoryError, isSearchableMemory } from "@hermes/memory-core";
import { VectorMemoryProvider, type VectorMemoryProviderOptions } from "./vector-memory-provider.js";
import { PineconeFake } from "@hermes/pinecone-fake";
import { register } from "./index.js";
import { HashingEmbedder } from "./embedders/hashing-embedder.js";
import type { Embedder } from "./embedders/embedder.js";
import { MAX_QUERY_CHARS } from "@hermes/memory-provider-kit";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

function tempHome(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-vector-provider-"));
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function open(
  options: VectorMemoryProviderOptions = {},
  ctx: Record<string, unknown> = {},
  home = tempHome(),
): Promise<VectorMemoryProvider> {
  const provider = new VectorMemoryProvider({ env: {}, dimensions: 128, ...options });
  await provider.initialize("s1", { hermesHome: home, ...ctx });
  cleanups.push(() => provider.shutdown());
  return provider;
}

async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe("VectorMemoryProvider (local store)", () => {
  it("registers through register(ctx) and is searchable memory", () => {
    const registered: unknown[] = [];
    register({ registerMemoryProvider: (p) => registered.push(p) });
    expect(registered).toHaveLength(1);
    const p = registered[0] as VectorMemoryProvider;
    expect(p.name).toBe("vector");
    expect(p.isAvailable()).toBe(true);
    expect(p.preCompressCheckpointApiVersion).toBe(2);
    expect(isSearchableMemory(p)).toBe(true);
    expect(p.getToolSchemas().map((t) => t.name)).toEqual(["vector_memory_search", "vector_memory_remember", "vector_memory_forget"]);
  });

  it("hands each search its own hits: changing a hit (lists in its metadata included) changes neither the store nor the next search", async () => {
    const p = await open();
    await p.remember({
      content: "The lighthouse keeper paints the railings blue",
      kind: "turn",
      sessionId: "s1",
      tags: ["coast"],
      metadata: { rooms: ["attic", "lamp room"], owner: { name: "Ida" } },
    });
    await p.flush();
    const first = await p.search("lighthouse railings", { limit: 1 });
    const again = await p.search("lighthouse railings", { limit: 1 });
    expect(again).toEqual(first);
    const hit = first[0]!;
    hit.tags!.push("changed");
    (hit.metadata!.rooms as string[]).push("changed");
    (hit.metadata!.owner as Record<string, unknown>).name = "changed";
    hit.metadata!.added = true;
    const later = await p.search("lighthouse railings", { limit: 1 });
    expect(later).toEqual(again);
    expect(later[0]!.metadata).toMatchObject({ rooms: ["attic", "lamp room"], owner: { name: "Ida" } });
    expect(later[0]!.tags).toEqual(["coast"]);
  });

  it("syncs turns without blocking, then recalls them hybrid with component scores", async () => {
    const p = await open();
    const started = performance.now();
    p.syncTurn("My dog is called Biscuit and loves the beach", "What a lovely name!", { sessionId: "s1" });
    p.syncTurn("I work on the Kubernetes migration at Acme", "Sounds like a big project.", { sessionId: "s1" });
    p.syncTurn("Please remind me to buy oat milk", "Noted.", { sessionId: "s1" });
    expect(performance.now() - started).toBeLessThan(50);
    await p.flush();
    const hits = await p.search("what is my dog's name?", { limit: 3 });
    expect(hits[0]!.content).toContain("Biscuit");
    expect(hits[0]!.kind).toBe("turn");
    expect(hits[0]!.sessionId).toBe("s1");
    const scores = hits[0]!.metadata.scores as Record<string, number | null>;
    expect(scores.vector).toBeGreaterThan(0);
    expect(scores.bm25).toBeGreaterThan(0);
    expect(hits.map((h) => h.score)).toEqual([...hits.map((h) => h.score)].sort((a, b) => b - a));

    p.queuePrefetch("kubernetes migration", { sessionId: "s1" });
    const text = await p.prefetch("kubernetes migration", { sessionId: "s1" });
    expect(text).toContain("Kubernetes migration at Acme");
    expect(p.recallStatus()).toMatchObject({ providerLabel: "vector" });
    const stats = await p.stats();
    expect(stats).toMatchObject({
      items: 3,
      byKind: { turn: 3, fact: 0, checkpoint: 0 },
      store: "local",
      embedder: "hashing-v1",
      dimensions: 128,
    });
  });

  it("keeps prefetch within its character budget", async () => {
    const p = await open({ prefetchMaxChars: 300 });
    for (let i = 0; i < 20; i++) p.remember({ content: `note ${i} about the garden: tomatoes, basil and ${"very long text ".repeat(10)}` });
    await p.flush();
    const text = await p.prefetch("garden tomatoes", { sessionId: "s1" });
    expect(text.length).toBeGreaterThan(0);
    expect(text.length).toBeLessThanOrEqual(300);
  });

  it("skips automatic writes for cron and subagent contexts", async () => {
    const p = await open({}, { agentContext: "cron" });
    p.syncTurn("secret cron chatter", "ok", { sessionId: "s1" });
    p.onMemoryWrite("add", "memory", "cron fact", {});
    await p.flush();
    expect((await p.stats()).items).toBe(0);
  });

  it("remembers, filters by kind and session, gets and forgets by stable id", async () => {
    const p = await open({ hybrid: false });
    const a = p.remember({
      content: "The wifi password is hunter2",
      kind: "fact",
      sessionId: "s1",
      tags: ["home"],
      metadata: { source_app: "notes" },
    });
    const b = p.remember({ content: "We talked about the wifi router", kind: "turn", sessionId: "s2" });
    await p.flush();
    expect((await p.search("wifi", { kind: "fact" })).map((h) => h.id)).toEqual([a]);
    expect((await p.search("wifi", { sessionId: "s2" })).map((h) => h.id)).toEqual([b]);
    const got = await p.get(a);
    expect(got).toMatchObject({
      id: a,
      content: "The wifi password is hunter2",
      kind: "fact",
      metadata: { source_app: "notes", tags: ["home"] },
    });
    expect(await p.forget(a)).toBe(true);
    expect(await p.forget(a)).toBe(false);
    expect(await p.get(a)).toBeNull();
    expect((await p.search("wifi password")).map((h) => h.id)).toEqual([b]);
  });

  it("answers tool calls with JSON strings and validates arguments", async () => {
    const p = await open();
    const stored = JSON.parse(
      await p.handleToolCall("vector_memory_remember", { content: "Alice prefers tea over coffee", tags: ["prefs"] }),
    );
    expect(stored.status).toBe("stored");
    const found = JSON.parse(await p.handleToolCall("vector_memory_search", { query: "does Alice like tea?" }));
    expect(found.results[0].id).toBe(stored.id);
    expect(found.results[0].scores).toHaveProperty("bm25");
    expect(JSON.parse(await p.handleToolCall("vector_memory_search", { query: 42 })).error).toMatch(/Invalid arguments.*query/);
    expect(JSON.parse(await p.handleToolCall("vector_memory_search", { query: "x", bogus: 1 })).error).toMatch(/additional/);
    expect(JSON.parse(await p.handleToolCall("vector_memory_forget", { id: stored.id })).status).toBe("forgotten");
    expect(JSON.parse(await p.handleToolCall("vector_memory_forget", { id: stored.id })).error).toMatch(/No memory item/);
    expect(JSON.parse(await p.handleToolCall("nope", {})).error).toMatch(/does not handle tool nope/);
  });

  it("the remember tool takes text up to 20,000 characters and at most 16 tags of up to 64 characters", async () => {
    const p = await open();
    expect(JSON.parse(await p.handleToolCall("vector_memory_remember", { content: "x".repeat(20_001) })).error).toMatch(
      /content must NOT have more than 20000 characters/,
    );
    expect(
      JSON.parse(await p.handleToolCall("vector_memory_remember", { content: "x", tags: Array.from({ length: 17 }, (_, i) => `t${i}`) }))
        .error,
    ).toMatch(/tags must NOT have more than 16 items/);
    expect(JSON.parse(await p.handleToolCall("vector_memory_remember", { content: "x", tags: ["y".repeat(65)] })).error).toMatch(
      /tags\/0 must NOT have more than 64 characters/,
    );
    expect(
      JSON.parse(
        await p.handleToolCall("vector_memory_remember", {
          content: "z".repeat(20_000),
          tags: Array.from({ length: 16 }, (_, i) => `${i}`.padEnd(64, "w")),
        }),
      ).status,
    ).toBe("stored");
  });

  it("archives checkpoint evidence idempotently by digest (checkpoint API v2)", async () => {
    const p = await open();
    const evidence = [
      { role: "user", content: "Let's plan the Lisbon trip for May" },
      { role: "assistant", content: "Sure: flights, hotel near Alfama, and a day in Sintra." },
    ];
    expect(await p.onPreCompress(evidence, { requireCheckpoint: true })).toBe("");
    expect(await p.onPreCompress(evidence, { requireCheckpoint: true })).toBe("");
    expect((await p.stats()).byKind.checkpoint).toBe(2);
    await p.onPreCompress(
      [...evidence, { role: "user", content: [{ type: "text", text: "Also book the train" }] }, { role: "tool", content: "ignored" }],
      { requireCheckpoint: false },
    );
    expect((await p.stats()).byKind.checkpoint).toBe(3);
    expect((await p.search("Sintra day trip", { kind: "checkpoint" }))[0]!.content).toContain("Sintra");
  });

  it("mirrors built-in memory writes (add, replace, remove)", async () => {
    const p = await open();
    p.onMemoryWrite("add", "user", "User lives in Porto", {});
    await p.flush();
    expect((await p.search("where does the user live", { kind: "fact" }))[0]!.content).toBe("User lives in Porto");
    p.onMemoryWrite("replace", "user", "User lives in Lisbon", { previousContent: "User lives in Porto" });
    await p.flush();
    await waitFor(async () => (await p.stats()).items === 1);
    expect((await p.search("where does the user live"))[0]!.content).toBe("User lives in Lisbon");
    p.onMemoryWrite("remove", "user", "User lives in Lisbon", {});
    await waitFor(async () => (await p.stats()).items === 0);
  });

  it("refuses an index built by another embedder, naming both and the reindex fix; reindex repairs it", async () => {
    const home = tempHome();
    const first = new VectorMemoryProvider({ env: {}, dimensions: 64 });
    await first.initialize("s1", { hermesHome: home });
    first.remember({ content: "a fact about zebras" });
    first.remember({ content: "a fact about volcanoes" });
    await first.shutdown();

    const second = new VectorMemoryProvider({ env: {}, dimensions: 96 });
    const error = await second.initialize("s1", { hermesHome: home }).catch((e: unknown) => e);
    expect(HermesMemoryError.hasCode(error, "EMBEDDING_DIMENSION_MISMATCH")).toBe(true);
    expect((error as Error).message).toMatch(/hashing-v1 \(64 dimensions\).*hashing-v1 \(96 dimensions\).*hermes-memory vector reindex/s);

    const maintenance = new VectorMemoryProvider({ env: {}, dimensions: 96 });
    await maintenance.openForMaintenance(home, { allowReset: true });
    const progress: number[] = [];
    expect(await maintenance.reindex((done) => progress.push(done))).toEqual({ items: 2, namespaces: 1, unembedded: 0 });
    expect(progress.at(-1)).toBe(2);
    await maintenance.shutdown();

    const third = await open({ dimensions: 96 }, {}, home);
    expect((await third.search("zebras"))[0]!.content).toBe("a fact about zebras");
  });

  it("reports what is missing without touching the network", () => {
    const pinecone = new VectorMemoryProvider({ env: {}, store: "pinecone" });
    expect(pinecone.isAvailable()).toBe(false);
    expect(pinecone.unavailableReason()).toMatch(/PINECONE_API_KEY/);
    const withKey = new VectorMemoryProvider({ env: { PINECONE_API_KEY: "k" }, store: "pinecone" });
    expect(withKey.isAvailable()).toBe(true);
    const onnx = new VectorMemoryProvider({ env: {}, embedder: "onnx" });
    expect(onnx.isAvailable()).toBe(false);
    expect(onnx.unavailableReason()).toMatch(/onnx_model_dir/);
  });

  it("ranks hybrid hits with conversational context and the speaker the query names", async () => {
    const p = await open();
    const turn = (content: string, sessionId: string, speaker: string) =>
      p.remember({ content, kind: "turn", sessionId, metadata: { speaker } });
    turn("Guess what I adopted last weekend!", "s1", "Ann");
    turn("No idea, what was it?", "s1", "Bob");
    turn("A greyhound called Pixel.", "s1", "Ann");
    turn("The Berlin marathon is in September.", "s2", "Ann");
    for (const text of ["I repaired my bike.", "The weather was grey.", "Work was busy this week.", "I called my sister yesterday."])
      turn(text, "s3", "Bob");
    turn("The Berlin marathon is in September.", "s4", "Bob");
    await p.flush();

    const adopted = await p.search("What did Ann adopt?", { limit: 5 });
    expect(adopted[0]!.content).toContain("adopted");
    // No shared word with the question: found because it follows the matching turn (its BM25 comes
    // only from the previous turns indexed as its context, weighted below a turn's own words).
    const answer = adopted.findIndex((h) => h.content.includes("greyhound"));
    expect(answer).toBeGreaterThan(0);
    expect(answer).toBeLessThan(3);
    const bm25 = (i: number) => (adopted[i]!.metadata.scores as { bm25: number | null }).bm25;
    expect(bm25(answer)).toBeGreaterThan(0);
    expect(bm25(answer)).toBeLessThan(bm25(0)!);

    const marathon = await p.search("When is Bob's marathon?", { limit: 2 });
    expect(marathon.map((h) => [h.content, h.metadata.speaker])).toEqual([
      ["The Berlin marathon is in September.", "Bob"],
      ["The Berlin marathon is in September.", "Ann"],
    ]);
    // The date a caller passes in metadata is indexed with the turn.
    p.remember({
      content: "We met at the pottery fair.",
      kind: "turn",
      sessionId: "s5",
      metadata: { speaker: "Ann", date: "1:56 pm on 8 May, 2023" },
    });
    await p.flush();
    const may = await p.search("What happened in May 2023?", { limit: 3 });
    expect(may[0]!.content).toBe("We met at the pottery fair.");
    expect((may[0]!.metadata.scores as { bm25: number | null }).bm25).toBeGreaterThan(0);
    // A session filter keeps context from leaking in from other sessions.
    const only = await p.search("What did Ann adopt?", { limit: 10, sessionId: "s3" });
    expect(only.every((h) => h.sessionId === "s3")).toBe(true);
  });
});

describe("VectorMemoryProvider (pinecone store, loopback fake)", () => {
  async function startFake(): Promise<PineconeFake> {
    const fake = await PineconeFake.start({ dimension: 128, indexName: "mem" });
    cleanups.push(() => fake.close());
    return fake;
  }
  const pineconeOptions = (fake: PineconeFake, extra: VectorMemoryProviderOptions = {}): VectorMemoryProviderOptions => ({
    store: "pinecone",
    pineconeIndex: "mem",
    pineconeControllerUrl: fake.url,
    env: { PINECONE_API_KEY: "test-key" },
    maxRetries: 2,
    ...extra,
  });

  it("isolates profiles and users by namespace", async () => {
    const fake = await startFake();
    const home = tempHome();
    const alice = await open(pineconeOptions(fake), { agentIdentity: "work", userId: "alice" }, home);
    const bob = await open(pineconeOptions(fake), { agentIdentity: "work", userId: "bob" }, tempHome());
    const personal = await open(pineconeOptions(fake), { agentIdentity: "personal", userId: "alice" }, tempHome());
    alice.syncTurn("my locker code is 4711", "noted", { sessionId: "s1" });
    bob.syncTurn("my locker code is 1234", "noted", { sessionId: "s1" });
    personal.syncTurn("my bike lock code is 9999", "noted", { sessionId: "s1" });
    await Promise.all([alice.flush(), bob.flush(), personal.flush()]);
    expect(fake.count("work:alice")).toBe(1);
    expect(fake.count("work:bob")).toBe(1);
    expect(fake.count("personal:alice")).toBe(1);
    const aliceHits = await alice.search("locker code", { limit: 5 });
    expect(aliceHits.map((h) => h.content).join()).toContain("4711");
    expect(aliceHits.map((h) => h.content).join()).not.toMatch(/1234|9999/);
    expect((await bob.search("code", { limit: 5 })).map((h) => h.content).join()).not.toMatch(/4711|9999/);
  });

  it("indexes turns with their session's previous turns and their date, as the local store does", async () => {
    const fake = await startFake();
    const p = await open(pineconeOptions(fake));
    p.remember({ content: "Guess what I adopted last weekend!", kind: "turn", sessionId: "s1", metadata: { date: "3 July 2023" } });
    p.remember({ content: "A greyhound called Pixel.", kind: "turn", sessionId: "s1", metadata: { date: "3 July 2023" } });
    p.remember({ content: "The weather was grey.", kind: "turn", sessionId: "s2", metadata: { date: "9 August 2023" } });
    await p.flush();
    const adopted = await p.search("adopted", { limit: 5 });
    const pixel = adopted.find((h) => h.content.includes("Pixel"));
    expect((pixel?.metadata.scores as { bm25: number | null } | undefined)?.bm25).toBeGreaterThan(0);
    const july = await p.search("July", { limit: 5 });
    expect(
      july
        .filter((h) => (h.metadata.scores as { bm25: number | null }).bm25 !== null)
        .map((h) => h.content)
        .sort(),
    ).toEqual(["A greyhound called Pixel.", "Guess what I adopted last weekend!"]);
  });

  it("moves every item from the local store to Pinecone with reindex", async () => {
    const fake = await startFake();
    const home = tempHome();
    const local = new VectorMemoryProvider({ env: {}, dimensions: 128 });
    await local.initialize("s1", { hermesHome: home, userId: "u1" });
    for (let i = 0; i < 70; i++) local.remember({ content: `item number ${i} about topic ${i % 7}`, userId: i % 2 ? "u1" : "u2" });
    await local.shutdown();

    const maintenance = new VectorMemoryProvider({ ...pineconeOptions(fake), dimensions: 128 });
    await maintenance.openForMaintenance(home, { user: "u1", allowReset: true });
    expect(await maintenance.reindex()).toEqual({ items: 70, namespaces: 2, unembedded: 0 });
    await maintenance.shutdown();
    expect([...fake.namespaces.values()].reduce((n, m) => n + m.size, 0)).toBe(70);
    expect(fake.namespaces.size).toBe(2);

    const remote = await open({ ...pineconeOptions(fake), dimensions: 128 }, { userId: "u1" }, home);
    const hits = await remote.search("item number 13", { limit: 3 });
    expect(hits[0]!.content).toBe("item number 13 about topic 6");
    expect((await remote.stats()).store).toBe("pinecone");
  });

  it("degrades gracefully on repeated 500s: tool error strings, bounded prefetch, no crash", async () => {
    const fake = await startFake();
    const p = await open(pineconeOptions(fake, { prefetchTimeoutMs: 300, hybrid: false }));
    await p.handleToolCall("vector_memory_remember", { content: "fine before the outage" });
    fake.failNext(500, 10_000);
    const result = JSON.parse(await p.handleToolCall("vector_memory_search", { query: "outage" }));
    expect(result.error).toMatch(/Pinecone query .* failed \(HTTP 500\)/);
    expect(JSON.parse(await p.handleToolCall("vector_memory_remember", { content: "during the outage" })).error).toMatch(/HTTP 500/);
    const started = Date.now();
    expect(await p.prefetch("outage", { sessionId: "s1" })).toBe("");
    expect(Date.now() - started).toBeLessThan(1500);
    p.syncTurn("background write during outage", "ok", { sessionId: "s1" });
    // Not acknowledged by Pinecone: flush rejects and names how many writes wait in the outbox.
    const failed = await p.flush().catch((e: unknown) => e);
    expect(HermesMemoryError.hasCode(failed, "STORAGE_FAILED")).toBe(true);
    expect((failed as Error).message).toMatch(
      /1 writes are not acknowledged by Pinecone yet; they are kept in the outbox .*outbox\.sqlite/,
    );
    expect(
      await p.onPreCompress([{ role: "user", content: "must be archived" }], { requireCheckpoint: true }).catch((e: unknown) => e),
    ).toBeInstanceOf(Error);
    fake.clearFaults();
    p.syncTurn("after the outage", "ok", { sessionId: "s1" });
    await p.flush();
    // The turn that failed during the outage was re-sent from the outbox.
    expect(fake.count(p.namespaceFor())).toBe(3);
    // The remember that reported an error left nothing behind.
    expect((await p.search("during the outage")).map((h) => h.content)).not.toContain("during the outage");
  });

  it("turns a 401 into a clear setup message", async () => {
    const fake = await startFake();
    const p = await open(pineconeOptions(fake, { env: { PINECONE_API_KEY: "wrong" } }));
    const result = JSON.parse(await p.handleToolCall("vector_memory_remember", { content: "x" }));
    expect(result.error).toMatch(/rejected the API key \(401\).*PINECONE_API_KEY/);
    const again = JSON.parse(await p.handleToolCall("vector_memory_search", { query: "x" }));
    expect(again.error).toMatch(/401/);
  });

  it("recalls a turn synced a moment ago before Pinecone's index catches up", async () => {
    const fake = await startFake();
    fake.lagQueries = true;
    const p = await open(pineconeOptions(fake, { hybrid: false }));
    p.syncTurn("the meeting moved to Thursday 3pm", "ok", { sessionId: "s1" });
    await p.flush();
    expect(await p.prefetch("when is the meeting", { sessionId: "s1" })).toContain("Thursday 3pm");
  });
});

describe("VectorMemoryProvider: malformed items", () => {
  // A malformed item used to be queued, fail to embed, and hold up every write queued with it
  // (all were reported lost at shutdown). Each is now refused before anything is queued.
  it("refuses a malformed item with INVALID_ARGUMENT and stores every item accepted around it", async () => {
    const provider = await open();
    const hostile: unknown[] = [
      null,
      5,
      {},
      { content: 5 },
      { content: "   " },
      { content: "x", kind: "bogus" },
      { content: "x", tags: [1] },
      { content: "x", metadata: "text" },
      { content: "x", metadata: { n: 1n } },
      { content: "x", sessionId: 7 },
    ];
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    hostile.push({ content: "x", metadata: cyclic });
    const accepted: string[] = [];
    for (const [i, item] of hostile.entries()) {
      accepted.push(provider.remember({ content: `accepted before ${i} zebra`, kind: "fact" }));
      let error: unknown;
      try {
        provider.remember(item as never);
      } catch (e) {
        error = e;
      }
      expect(HermesMemoryError.hasCode(error, "INVALID_ARGUMENT"), `item ${i}`).toBe(true);
    }
    await provider.flush();
    for (const id of accepted) expect((await provider.get(id))?.content).toMatch(/^accepted before \d+ zebra$/);
    expect((await provider.stats()).items).toBe(accepted.length);
    expect(provider.undeliveredWrites).toBe(0);
  });

  it("answers get and forget of a non-text id with null and false, and syncTurn without options", async () => {
    const provider = await open();
    expect(await provider.get({} as never)).toBeNull();
    expect(await provider.get("" as never)).toBeNull();
    expect(await provider.forget(null as never)).toBe(false);
    provider.syncTurn("Where do we deploy?", "eu-west-1, as agreed", undefined as never);
    await provider.flush();
    expect((await provider.search("deploy", { limit: 1 }))[0]?.content).toMatch(/eu-west-1/);
  });
});

describe("VectorMemoryProvider: long queries", () => {
  it("embeds only the part of a query the keyword side reads (MAX_QUERY_CHARS characters)", async () => {
    const inner = new HashingEmbedder({ dimensions: 64 });
    const embedded: number[] = [];
    const spy: Embedder = {
      id: "hashing-v1",
      dimensions: 64,
      embed: (texts) => {
        embedded.push(...texts.map((t) => t.length));
        return inner.embed(texts);
      },
    };
    const provider = await open({ embedderInstance: spy, dimensions: 64 });
    provider.remember({ content: "The zeppelin hangar is in Friedrichshafen", kind: "fact" });
    await provider.flush();
    embedded.length = 0;
    const hits = await provider.search(`zeppelin hangar ${"pasted text ".repeat(100_000)}`, { limit: 3 });
    expect(hits[0]?.content).toMatch(/zeppelin hangar/);
    expect(embedded).toEqual([MAX_QUERY_CHARS]);
  });
});
