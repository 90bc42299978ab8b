import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HermesMemoryError, type MemoryFilter, type MemoryItem } from "@hermes/memory-core";
import { checkpointText, matchesMemoryFilter, parseMemoryFilter, turnText } from "@hermes/memory-provider-kit";
import { PineconeFake } from "@hermes/pinecone-fake";
import { PineconeRemoteMemory, type PineconeRemoteMemoryOptions } from "./pinecone-remote-store.js";
import { itemIdPrefix } from "./remote-records.js";
import { encodeDocument } from "../embedders/sparse-encoder.js";
import { ConceptEmbedder, CONCEPT_DIMENSIONS } from "../test-support/concept-embedder.js";
import { VectorMemoryProvider } from "../vector-memory-provider.js";

let fake: PineconeFake;
let dir: string;
const open: PineconeRemoteMemory[] = [];

beforeEach(async () => {
  fake = await PineconeFake.start({ dimension: CONCEPT_DIMENSIONS, indexName: "mem", metric: "dotproduct" });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "pinecone-remote-"));
});
afterEach(async () => {
  for (const store of open.splice(0)) await store.close();
  await fake.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function store(extra: Partial<PineconeRemoteMemoryOptions> = {}): PineconeRemoteMemory {
  const s = PineconeRemoteMemory.open({
    apiKey: "test-key",
    indexName: "mem",
    controllerHostUrl: fake.url,
    namespace: "team",
    embedder: new ConceptEmbedder(),
    outboxFile: path.join(dir, "outbox.sqlite"),
    retry: { maxRetries: 1, baseDelayMs: 5, maxDelayMs: 10, random: () => 0.5 },
    ...extra,
  });
  open.push(s);
  return s;
}

async function code(promise: Promise<unknown> | (() => unknown)): Promise<string> {
  try {
    await (typeof promise === "function" ? promise() : promise);
  } catch (error) {
    return error instanceof HermesMemoryError ? error.code : `untyped: ${String(error)}`;
  }
  return "no error";
}

describe("PineconeRemoteMemory: layout", () => {
  it("keeps text, metadata, dense and sparse values in Pinecone, and locally only the (then empty) outbox", async () => {
    const s = store();
    const id = s.remember({
      content: "The launch code is tulip",
      kind: "fact",
      userId: "alice",
      sessionId: "s1",
      tags: ["secret", "ops"],
      metadata: { priority: 3, team: "red", nested: { a: 1 }, gone: null },
    });
    expect(id.startsWith(itemIdPrefix("alice", "s1"))).toBe(true);
    expect(id.split(".")[2]).toBe("fact");
    expect(s.pendingWrites).toBe(1);
    await s.flush();
    expect(s.pendingWrites).toBe(0);
    const stored = fake.namespaces.get("team")!.get(id)!;
    expect(stored.sparseValues).toEqual(encodeDocument("The launch code is tulip"));
    expect(stored.values.reduce((sum, v) => sum + v * v, 0)).toBeCloseTo(1, 5);
    expect(stored.metadata).toMatchObject({
      text: "The launch code is tulip",
      kind: "fact",
      session_id: "s1",
      user_id: "alice",
      tags: ["secret", "ops"],
      meta_priority: 3,
      meta_team: "red",
      meta_nested: '{"a":1}',
    });
    expect(stored.metadata!.meta_gone).toBeUndefined();
    expect(stored.metadata!.expires_at).toBeUndefined();
    expect(typeof stored.metadata!.created_ms).toBe("number");
    expect(typeof stored.metadata!.seq).toBe("number");
    expect(fs.readdirSync(dir).filter((f) => !f.startsWith("outbox.sqlite"))).toEqual([]);

    // Another instance (no shared memory) reads it back as it was given.
    const hit = await store({ outboxFile: path.join(dir, "other.sqlite") }).get(id);
    expect(hit).toMatchObject({
      id,
      content: "The launch code is tulip",
      kind: "fact",
      userId: "alice",
      sessionId: "s1",
      tags: ["secret", "ops"],
      metadata: { priority: 3, team: "red", nested: { a: 1 }, gone: null },
    });
    expect(hit!.expiresAt).toBeUndefined();
  });

  it("refuses an index that is not dotproduct or has another dimension, with a message saying what to create", async () => {
    const cosine = await PineconeFake.start({ dimension: CONCEPT_DIMENSIONS, indexName: "cos" });
    try {
      const s = store({ indexName: "cos", controllerHostUrl: cosine.url, outboxFile: path.join(dir, "cos.sqlite") });
      s.remember({ content: "hello there" });
      const error = await s.flush().catch((e: unknown) => e as HermesMemoryError);
      expect(error).toBeInstanceOf(HermesMemoryError);
      expect((error as HermesMemoryError).message).toMatch(/metric dotproduct/);
      expect(cosine.count("team", "cos")).toBe(0);
      // With the host given (no control-plane check), Pinecone's own refusal is explained the same way.
      const direct = store({ indexName: "cos", host: cosine.url, outboxFile: path.join(dir, "cos2.sqlite") });
      expect(await code(direct.search("hello"))).toBe("PROVIDER_UNAVAILABLE");
    } finally {
      await cosine.close();
    }
    const wide = await PineconeFake.start({ dimension: 16, indexName: "wide", metric: "dotproduct" });
    try {
      const s = store({ indexName: "wide", controllerHostUrl: wide.url, outboxFile: path.join(dir, "wide.sqlite") });
      const error = await s.search("anything").catch((e: unknown) => e as HermesMemoryError);
      expect(HermesMemoryError.hasCode(error, "PROVIDER_UNAVAILABLE")).toBe(true);
      expect((error as Error).message).toMatch(/dimension 16 but the embedder produces 8/);
    } finally {
      await wide.close();
    }
  });

  it("refuses bad input with INVALID_ARGUMENT before anything is queued", async () => {
    const s = store();
    expect(await code(() => s.remember({ content: "  " }))).toBe("INVALID_ARGUMENT");
    expect(await code(() => s.remember({ content: "x".repeat(30_001) }))).toBe("INVALID_ARGUMENT");
    expect(await code(() => s.remember({ content: "ok", metadata: { big: "y".repeat(20_000) }, tags: ["t"] }))).toBe("no error");
    expect(await code(() => s.remember({ content: "z".repeat(25_000), metadata: { big: "y".repeat(20_000) } }))).toBe("INVALID_ARGUMENT");
    expect(await code(() => s.remember({ content: "ok", kind: "note" as never }))).toBe("INVALID_ARGUMENT");
    expect(await code(() => s.remember({ content: "ok", ttlMs: -1 }))).toBe("INVALID_ARGUMENT");
    expect(await code(() => s.remember({ content: "ok" }, { key: "has space" }))).toBe("INVALID_ARGUMENT");
    expect(s.pendingWrites).toBe(1);
    expect(await code(s.search("ok", { tags: { some: ["x"] } } as never))).toBe("INVALID_ARGUMENT");
    expect(await code(s.forgetWhere({}))).toBe("INVALID_ARGUMENT");
    expect(await code(() => store({ alpha: 2, outboxFile: path.join(dir, "a.sqlite") }))).toBe("INVALID_ARGUMENT");
  });
});

describe("PineconeRemoteMemory: search", () => {
  it("finds an item by keyword (sparse) and by meaning (dense), and alpha moves the ranking between them", async () => {
    const writer = store();
    const keyword = writer.remember({ content: "The launch code is tulip" });
    const meaning = writer.remember({ content: "I drive a sedan to work" });
    await writer.flush();
    // A fresh instance has no recent writes in memory: everything comes from Pinecone.
    const reader = store({ outboxFile: path.join(dir, "reader.sqlite") });
    expect((await reader.search("tulips?", { limit: 1 }))[0]!.id).toBe(keyword);
    expect((await reader.search("automobile", { limit: 1 }))[0]!.id).toBe(meaning);

    // "tulip automobile": one item matches the keyword, the other the meaning.
    const lexical = store({ alpha: 0.1, outboxFile: path.join(dir, "lex.sqlite") });
    const semantic = store({ alpha: 0.9, outboxFile: path.join(dir, "sem.sqlite") });
    expect((await lexical.search("tulip automobile")).map((h) => h.id)).toEqual([keyword, meaning]);
    expect((await semantic.search("tulip automobile")).map((h) => h.id)).toEqual([meaning, keyword]);
    const [top] = await lexical.search("tulip automobile");
    expect(top!.score).toBeGreaterThan(0);
  });

  it("returns the best `limit` among the items passing a filter, whatever outranks them outside it", async () => {
    const s = store();
    for (let i = 0; i < 30; i++) s.remember({ content: `sailing boat harbour ocean ${i}`, kind: "turn", sessionId: "loud" });
    const a = s.remember({ content: "a quiet note about the sea", kind: "fact", tags: ["keep"] });
    const b = s.remember({ content: "another fact, food related", kind: "fact", tags: ["keep"] });
    await s.flush();
    const hits = await s.search("sailing ocean", { limit: 2, kind: "fact" });
    expect(hits.map((h) => h.id).sort()).toEqual([a, b].sort());
    expect(hits[0]!.id).toBe(a);
  });

  it("selects exactly the items the kit's filter rules select, for every kind of condition", async () => {
    const s = store();
    const t0 = Date.now();
    const items: Array<MemoryItem & { id?: string; created?: number }> = [
      {
        content: "dog walk one",
        kind: "turn",
        sessionId: "s1",
        userId: "u1",
        tags: ["pets"],
        metadata: { n: 1, color: "red", labels: ["a", "b"] },
      },
      {
        content: "dog walk two",
        kind: "turn",
        sessionId: "s1",
        userId: "u2",
        tags: ["pets", "daily"],
        metadata: { n: 5, color: "blue", ok: true },
      },
      { content: "dog fact", kind: "fact", userId: "u1", tags: ["daily"], metadata: { n: 10, labels: ["b"] } },
      { content: "dog checkpoint", kind: "checkpoint", sessionId: "s2", metadata: { n: "10", color: "red", ok: false } },
      { content: "dog no tags", kind: "fact", sessionId: "s2", userId: "u2" },
    ];
    for (const item of items) {
      item.id = s.remember(item);
      item.created = Date.now();
    }
    await s.flush();
    const filters: MemoryFilter[] = [
      { kind: "turn" },
      { kind: ["fact", "checkpoint"] },
      { sessionId: "s1" },
      { userId: "u2" },
      { tags: { any: ["daily"] } },
      { tags: { all: ["pets", "daily"] } },
      { createdAt: { $gte: t0 - 1000 } },
      { createdAt: { $lt: t0 - 1000 } },
      { metadata: { n: 10 } },
      { metadata: { n: { $gte: 5 } } },
      { metadata: { color: { $ne: "red" } } },
      { metadata: { color: { $in: ["red", "green"] } } },
      { metadata: { color: { $nin: ["red"] } } },
      { metadata: { labels: "b" } },
      { metadata: { labels: { $ne: "a" } } },
      { metadata: { ok: { $exists: true } } },
      { metadata: { ok: { $exists: false } } },
      { metadata: { ok: false } },
      { metadata: { $or: [{ n: { $lt: 2 } }, { color: "blue" }] } },
      { kind: "fact", metadata: { $and: [{ n: { $gt: 1 } }, { labels: { $exists: true } }] } },
      { userId: "u1", sessionId: "s1", tags: { any: ["pets"] } },
    ];
    const reader = store({ outboxFile: path.join(dir, "reader.sqlite") });
    for (const filter of filters) {
      const parsed = parseMemoryFilter(filter);
      const expected = items
        .filter((i) =>
          matchesMemoryFilter(parsed, {
            id: i.id,
            kind: i.kind!,
            sessionId: i.sessionId,
            userId: i.userId,
            tags: i.tags,
            metadata: i.metadata,
            createdAt: i.created!,
          }),
        )
        .map((i) => i.id)
        .sort();
      const got = (await reader.search("dog", { ...filter, limit: 50 })).map((h) => h.id).sort();
      expect({ filter, got }).toEqual({ filter, got: expected });
    }
  });

  it("never returns an expired item, and purgeExpired deletes exactly the expired ones", async () => {
    const s = store();
    const past = s.remember({ content: "pizza coupon", expiresAt: Date.now() - 1000 });
    const rememberedAt = Date.now();
    const soon = s.remember({ content: "pizza tonight", ttlMs: 1500 });
    const later = s.remember({ content: "pizza recipe", ttlMs: 3_600_000 });
    const never = s.remember({ content: "pizza forever" });
    await s.flush();
    const found = async (): Promise<string[]> =>
      (await store({ outboxFile: path.join(dir, `r${Math.random()}.sqlite`) }).search("pizza", { limit: 10 })).map((h) => h.id).sort();
    expect(await found()).toEqual([soon, later, never].sort());
    expect(await s.get(past)).toBeNull();
    expect(Date.now()).toBeLessThan(rememberedAt + 1500); // the first look was before the expiry
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, rememberedAt + 1600 - Date.now())));
    expect(await found()).toEqual([later, never].sort());
    expect((await s.get(later))!.expiresAt).toBeDefined();
    expect(await s.purgeExpired()).toBe(2);
    expect([...fake.namespaces.get("team")!.keys()].sort()).toEqual([later, never].sort());
    expect(await s.purgeExpired()).toBe(0);
  });
});

describe("PineconeRemoteMemory: purging more than one query's worth", () => {
  it("purgeExpired removes every expired item when there are more than one query (topK 1,000) finds", async () => {
    const s = store();
    for (let i = 0; i < 1001; i++) s.remember({ content: `expired coupon ${i}`, expiresAt: Date.now() - 1000 });
    const kept = [s.remember({ content: "valid coupon", ttlMs: 3_600_000 }), s.remember({ content: "coupon forever" })];
    await s.flush();
    expect(fake.count("team")).toBe(1003);
    expect(await s.purgeExpired()).toBe(1001);
    expect([...fake.namespaces.get("team")!.keys()].sort()).toEqual([...kept].sort());
    expect(await s.purgeExpired()).toBe(0);
  }, 60_000);
});

describe("PineconeRemoteMemory: erasure and update", () => {
  it("forget(id) deletes one item; forgetWhere erases by user, by user and session, by other conditions and by ids, returning the count", async () => {
    const s = store();
    const ids = {
      a1: s.remember({ content: "alice session one", userId: "alice", sessionId: "s1", kind: "turn" }),
      a2: s.remember({ content: "alice session one again", userId: "alice", sessionId: "s1", kind: "turn" }),
      a3: s.remember({ content: "alice session two", userId: "alice", sessionId: "s2", kind: "fact", tags: ["x"] }),
      a4: s.remember({ content: "alice no session", userId: "alice", kind: "fact" }),
      b1: s.remember({ content: "bob session one", userId: "bob", sessionId: "s1", kind: "turn", tags: ["x"] }),
      n1: s.remember({ content: "nobody", kind: "checkpoint", tags: ["x"] }),
    };
    await s.flush();
    expect(await s.forget(ids.a2)).toBe(true);
    expect(await s.forget(ids.a2)).toBe(false);
    expect(await s.forgetWhere({ userId: "alice", sessionId: "s1" })).toBe(1);
    expect(await s.forgetWhere({ tags: { any: ["x"] }, kind: ["fact", "turn"] })).toBe(2); // a3, b1
    expect(await s.forgetWhere({ ids: [ids.n1, "u-.s-.fact.missing"] })).toBe(1);
    expect([...fake.namespaces.get("team")!.keys()]).toEqual([ids.a4]);
    // The last item of the namespace: only with confirmAll (or by its id).
    await expect(s.forgetWhere({ userId: "alice" })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: expect.stringMatching(/matches all 1 item of the store/),
    });
    expect(fake.count("team")).toBe(1);
    expect(await s.forgetWhere({ userId: "alice", confirmAll: true })).toBe(1);
    expect(fake.count("team")).toBe(0);
    expect(await s.search("alice", { limit: 10 })).toEqual([]);
    const stats = await s.stats();
    expect(stats).toMatchObject({ items: 0, byKind: { turn: 0, fact: 0, checkpoint: 0 }, pendingWrites: 0 });
  });

  it("erasing a turn also erases the checkpoint copies of its messages in its session, and nothing else", async () => {
    const s = store();
    const turn = s.remember({
      content: turnText("My badge pin is quokkaflume.", "Noted the pin."),
      userId: "alice",
      sessionId: "s1",
      kind: "turn",
    });
    const other = s.remember({
      content: turnText("Lunch is at noon.", "Noted the lunch."),
      userId: "alice",
      sessionId: "s1",
      kind: "turn",
    });
    for (const [role, text] of [
      ["user", "My badge pin is quokkaflume."],
      ["assistant", "Noted the pin."],
      ["user", "Lunch is at noon."],
    ] as const) {
      s.remember({ content: checkpointText(role, text), userId: "alice", sessionId: "s1", kind: "checkpoint" });
    }
    // Same text in another session is not a copy of this turn.
    s.remember({ content: checkpointText("assistant", "Noted the pin."), userId: "alice", sessionId: "s2", kind: "checkpoint" });
    await s.flush();
    expect(await s.forgetWhere({ ids: [turn] })).toBe(3);
    const left = (await s.search("quokkaflume pin", { limit: 10 })).map((h) => `${h.sessionId}: ${h.content}`);
    expect(left.join(" | ")).not.toContain("quokkaflume");
    expect(left.filter((h) => h.includes("Noted the pin"))).toEqual(["s2: Assistant: Noted the pin."]);
    expect(fake.count("team")).toBe(3);
    expect(await s.forget(other)).toBe(true);
    expect(fake.count("team")).toBe(1);
  });

  it("update re-indexes new text (old keyword gone, new found) and replaces tags, metadata and expiry", async () => {
    const s = store();
    const id = s.remember({ content: "the password is tulip", tags: ["a"], metadata: { v: 1 }, ttlMs: 3_600_000 });
    await s.flush();
    expect(await s.update(id, { content: "the password is orchid", tags: ["b"], metadata: { v: 2 }, expiresAt: null })).toBe(true);
    expect(await s.update("u-.s-.fact.nope", { content: "x" })).toBe(false);
    const reader = store({ outboxFile: path.join(dir, "reader.sqlite") });
    // The only item is still the nearest, but nothing of "tulip" is left in it.
    expect((await reader.search("tulip"))[0]!.score).toBe(0);
    const [hit] = await reader.search("orchid");
    expect(hit!.score).toBeGreaterThan(0.3);
    expect(hit).toMatchObject({ id, content: "the password is orchid", tags: ["b"], metadata: { v: 2 } });
    expect(hit!.expiresAt).toBeUndefined();
    expect(await reader.search("orchid", { metadata: { v: 1 } })).toEqual([]);
    expect(await code(s.update(id, { colour: "red" } as never))).toBe("INVALID_ARGUMENT");
  });

  it("stats counts items by kind and sessions from the ids, with the location and pending writes", async () => {
    const s = store();
    s.remember({ content: "t1", kind: "turn", sessionId: "s1" });
    s.remember({ content: "t2", kind: "turn", sessionId: "s1" });
    s.remember({ content: "t3", kind: "turn", sessionId: "s2", userId: "u" });
    s.remember({ content: "f1", kind: "fact" });
    await s.flush();
    expect(await s.stats()).toMatchObject({
      items: 4,
      byKind: { turn: 3, fact: 1, checkpoint: 0 },
      sessions: 2,
      location: "pinecone:mem/team",
      pendingWrites: 0,
      layout: "remote",
    });
  });
});

describe("PineconeRemoteMemory: outages", () => {
  it("keeps writes Pinecone did not acknowledge in the outbox: flush() names them with STORAGE_FAILED, a reopened store sends them", async () => {
    const s = store();
    fake.failNext(503, 1_000_000);
    const ids = [s.remember({ content: "survives the outage" }), s.remember({ content: "and so does this", kind: "turn", sessionId: "x" })];
    const error = await s.flush().catch((e: unknown) => e);
    expect(HermesMemoryError.hasCode(error, "STORAGE_FAILED")).toBe(true);
    expect((error as Error).message).toMatch(
      /2 writes are not acknowledged by Pinecone yet; they are kept in the outbox .*outbox\.sqlite.*HTTP 503/,
    );
    expect(await code(s.forget(ids[0]!))).toBe("STORAGE_FAILED");
    expect(await code(s.search("outage"))).toBe("STORAGE_FAILED");
    expect(await s.close()).toBe(2);
    expect(fake.count("team")).toBe(0);

    fake.clearFaults();
    const reopened = store();
    expect(reopened.pendingWrites).toBe(2);
    await reopened.flush();
    expect(reopened.pendingWrites).toBe(0);
    expect([...fake.namespaces.get("team")!.keys()].sort()).toEqual([...ids].sort());
    expect((await reopened.search("outage"))[0]!.id).toBe(ids[0]);
  });

  it("a write answered 429 with Retry-After waits what Pinecone asks (within maxDelayMs) and is then acknowledged", async () => {
    const s = store({ retry: { maxRetries: 1, baseDelayMs: 5, maxDelayMs: 5000, random: () => 0.5 } });
    await s.stats(); // the index identity is checked before the write is timed
    fake.failNext(429, 1, "/vectors/upsert", "Too many requests", { "retry-after": "1" });
    const id = s.remember({ content: "sent after the rate limit" });
    const started = Date.now();
    await s.flush();
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(s.pendingWrites).toBe(0);
    expect([...fake.namespaces.get("team")!.keys()]).toContain(id);
  });

  it("delivers what the outbox holds to the namespace it was written for, also after reopening with another namespace", async () => {
    fake.failNext(503, 1_000_000, "/vectors/upsert");
    const first = store({ namespace: "first" });
    const id = first.remember({ content: "queued for the first namespace" });
    expect(await first.close()).toBe(1);
    fake.clearFaults();
    const second = store({ namespace: "second" });
    await second.flush();
    expect([...(fake.namespaces.get("first")?.keys() ?? [])]).toEqual([id]);
    expect(fake.count("second")).toBe(0);
  });

  it("serves its own fresh writes while Pinecone's query index lags, but not an item another process deleted", async () => {
    fake.lagQueries = true;
    const s = store();
    const id = s.remember({ content: "the harbour master is Quint" });
    await s.flush();
    expect((await s.search("harbour master"))[0]!.id).toBe(id);
    expect(await store({ outboxFile: path.join(dir, "other.sqlite") }).search("harbour master")).toEqual([]);
    // Deleted elsewhere: the cached copy is checked against Pinecone and dropped.
    fake.namespaces.get("team")!.delete(id);
    expect(await s.search("harbour master")).toEqual([]);
  });
});

describe("PineconeRemoteMemory: moving from the sidecar layout", () => {
  it("imports a sidecar-layout export keeping kind, creation time, session, user, tags and metadata; importing twice stores each item once", async () => {
    const home = path.join(dir, "home");
    const old = new VectorMemoryProvider({ env: {}, embedderInstance: new ConceptEmbedder() });
    await old.initialize("s-old", { hermesHome: home, userId: "alice" });
    old.remember({
      content: "I drive a sedan on weekends",
      kind: "fact",
      userId: "alice",
      tags: ["car"],
      metadata: { source_app: "notes", rating: 4 },
    });
    old.remember({ content: "we talked about the harbour", kind: "turn", sessionId: "s-old", userId: "alice" });
    await old.flush();
    const exported = [...old.exportItems()];
    await old.shutdown();
    expect(exported).toHaveLength(2);

    const s = store();
    const ids = await s.importSidecarItems(exported);
    expect(s.pendingWrites).toBe(0);
    expect(await s.importSidecarItems(exported)).toEqual(ids);
    expect(fake.count("team")).toBe(2);
    for (const row of exported) {
      const hit = (await s.get(ids.get(row.id)!))!;
      expect(hit.content).toBe(row.content);
      expect(hit.kind).toBe(row.metadata.kind);
      expect(hit.createdAt).toBe(row.metadata.created_at);
      expect(hit.userId).toBe("alice");
      expect(ids.get(row.id)!.endsWith(`.${row.id}`)).toBe(true);
    }
    const [fact] = await s.search("automobile", {
      userId: "alice",
      kind: "fact",
      tags: { any: ["car"] },
      metadata: { rating: { $gte: 4 } },
    });
    expect(fact).toMatchObject({ content: "I drive a sedan on weekends", tags: ["car"], metadata: { source_app: "notes", rating: 4 } });
    expect(await s.forgetWhere({ userId: "alice", sessionId: "s-old" })).toBe(1);

    const tooLong = { id: "fact-long", namespace: "x", content: "y".repeat(30_001), metadata: { kind: "fact" } };
    const error = await s.importSidecarItems([tooLong]).catch((e: unknown) => e);
    expect(HermesMemoryError.hasCode(error, "INVALID_ARGUMENT")).toBe(true);
    expect((error as Error).message).toMatch(/^Importing item fact-long .*at most 30000 bytes/);
  });
});
