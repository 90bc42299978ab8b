import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HermesMemoryError } from "@hermes/memory-core";
import { SqliteMemoryProvider } from "./sqlite-memory-provider.js";
import { forgetCommand, type CommandContext } from "./commands.js";
import { until } from "@hermes/test-support";
import { CONTEXT_COLUMNS } from "./test-support/context-columns.js";

let home: string;
let file: string;
const open: SqliteMemoryProvider[] = [];

async function makeProvider(ctx: Record<string, unknown> = {}): Promise<SqliteMemoryProvider> {
  const provider = new SqliteMemoryProvider({ path: file });
  await provider.initialize("sa", { hermesHome: home, ...ctx });
  open.push(provider);
  return provider;
}

beforeEach(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), "sqlite-erase-"));
  file = path.join(home, "memory.db");
});
afterEach(async () => {
  for (const p of open.splice(0)) await p.shutdown();
  fs.rmSync(home, { recursive: true, force: true });
});

/** Where `word` still appears in stored text: items' own text, later turns' context, the FTS index. */
function copies(db: Database.Database, word: string): Record<string, number> {
  const like = `%${word}%`;
  return {
    content: Number(db.prepare(`SELECT COUNT(*) FROM items WHERE content LIKE ?`).pluck().get(like)),
    context: Number(
      db.prepare(`SELECT COUNT(*) FROM (SELECT ${CONTEXT_COLUMNS} FROM items) WHERE prev1 LIKE ? OR prev2 LIKE ?`).pluck().get(like, like),
    ),
    fts: Number(db.prepare(`SELECT COUNT(*) FROM items_fts WHERE items_fts MATCH ?`).pluck().get(`"${word}"`)),
  };
}

const NONE = { content: 0, context: 0, fts: 0 };

/** Bytes of the database file and its WAL, as stored on disk. */
function rawBytes(): Buffer {
  return Buffer.concat([file, `${file}-wal`].filter((f) => fs.existsSync(f)).map((f) => fs.readFileSync(f)));
}

/** User a's conversation mentions the secret word; user b's does not. */
async function seedConversation(provider: SqliteMemoryProvider): Promise<void> {
  provider.syncTurn("My locker code is zanzibarquux.", "Noted, I will remember it.", { sessionId: "sa" });
  provider.syncTurn("Also buy oat milk.", "Added to the list.", { sessionId: "sa" });
  provider.syncTurn("And bread.", "Bread too.", { sessionId: "sa" });
  await provider.flush();
  await provider.onPreCompress([{ role: "user", content: "My locker code is zanzibarquux." }], { requireCheckpoint: true });
  provider.remember({ content: "User b likes the harbour", userId: "b", sessionId: "sb" });
  provider.remember({ content: "b said the milk was sour", kind: "turn", userId: "b", sessionId: "sb" });
}

describe("forgetWhere", () => {
  it("erases a user's items from every copy: items, FTS index, later turns' context, checkpoints, prefetch cache and cached last turns", async () => {
    const provider = await makeProvider({ userId: "a" });
    await seedConversation(provider);
    const db = provider.memoryStore!.db;
    expect(copies(db, "zanzibarquux")).toEqual({ content: 2, context: 2, fts: 4 });
    // A queued recall holding the secret.
    provider.queuePrefetch("locker code", { sessionId: "sa" });
    // The queued recall runs on an immediate; one set after it runs after it.
    await new Promise((resolve) => setImmediate(resolve));
    expect(provider.prefetch("locker code", { sessionId: "sa" })).toContain("zanzibarquux");

    expect(await provider.forgetWhere({ userId: "a" })).toBe(4);
    expect(copies(db, "zanzibarquux")).toEqual(NONE);
    expect(provider.search("zanzibarquux locker")).toEqual([]);
    expect(provider.prefetch("locker code", { sessionId: "sa" })).toBe("");
    // The session's next turn does not take the erased turns as its context.
    provider.syncTurn("What was my code again?", "I do not know.", { sessionId: "sa" });
    await provider.flush();
    expect(copies(db, "zanzibarquux")).toEqual(NONE);
    expect(copies(db, "bread")).toEqual(NONE);
    // User b's items stay.
    expect(provider.search("harbour milk", { userId: "b" })).toHaveLength(2);
    expect(provider.memoryStore!.doctor()).toMatchObject({ ok: true, ftsConsistent: true });
  });

  it("erases by ids, sessionId and any filter; refreshes the context of surviving turns; refuses an empty or malformed scope", async () => {
    const provider = await makeProvider();
    const ids = provider.memoryStore!.insertMany(
      ["one alpha", "two bravo", "three charlie", "four delta", "five echo"].map((content, i) => ({
        kind: "turn" as const,
        content,
        sessionId: "s",
        tags: i % 2 === 0 ? ["even"] : [],
      })),
    );
    const fact = provider.remember({ content: "a fact with a tag", tags: ["even"], sessionId: "other" });
    for (const scope of [{}, { ids: [] }, { userId: "" }, { bogus: 1 }, { metadata: { $where: "1" } }]) {
      await expect(provider.forgetWhere(scope as never)).rejects.toThrow(HermesMemoryError);
      await provider.forgetWhere(scope as never).catch((error: unknown) => {
        expect((error as HermesMemoryError).code).toBe("INVALID_ARGUMENT");
      });
    }
    expect(provider.stats().items).toBe(6);
    expect(await provider.forgetWhere({ ids: [ids[1]!, "999", "not-an-id"] })).toBe(1);
    // Two turns of the session in one statement: the survivors take their context from survivors.
    expect(
      await provider.forgetWhere({
        sessionId: "s",
        tags: { any: ["even"] },
        createdAt: { $gte: 0 },
        metadata: { missing: { $exists: false } },
        kind: "turn",
      }),
    ).toBe(3);
    const db = provider.memoryStore!.db;
    expect(db.prepare(`SELECT content, ${CONTEXT_COLUMNS} FROM items WHERE session_id = 's' ORDER BY id`).raw(true).all()).toEqual([
      ["four delta", "", ""],
    ]);
    expect(provider.get(fact)).not.toBeNull();
    expect(await provider.forgetWhere({ tags: { all: ["even"] } })).toBe(1);
    expect(await provider.forgetWhere({ ids: [fact] })).toBe(0);
    expect(provider.memoryStore!.doctor()).toMatchObject({ ok: true, ftsConsistent: true, items: 1 });
  });

  it("erasing a turn by id also erases the checkpoint copies of its messages in its session, and nothing else", async () => {
    const p = await makeProvider();
    p.syncTurn("My badge pin is quokkaflume.", "Noted the pin.", { sessionId: "sa", turnAuthor: { id: "u1", name: "Dana" } });
    p.syncTurn("Lunch is at noon.", "Noted the lunch.", { sessionId: "sa" });
    await p.flush();
    await p.onPreCompress(
      [
        { role: "user", content: "My badge pin is quokkaflume." },
        { role: "assistant", content: "Noted the pin." },
        { role: "user", content: "Lunch is at noon." },
      ],
      { requireCheckpoint: true },
    );
    const turn = p.search("quokkaflume", { kind: "turn" })[0]!;
    expect(p.search("quokkaflume", { kind: "checkpoint" })).toHaveLength(1);
    // The turn, its user message and its assistant message: three items.
    expect(await p.forgetWhere({ ids: [turn.id] })).toBe(3);
    expect(p.search("quokkaflume")).toEqual([]);
    expect(p.search("pin")).toEqual([]);
    expect(p.search("lunch noon", { kind: "checkpoint" })).toHaveLength(1);
    expect(p.search("lunch noon", { kind: "turn" })).toHaveLength(1);
    // forget(id) erases the same way.
    expect(p.forget(p.search("lunch noon", { kind: "turn" })[0]!.id)).toBe(true);
    expect(p.search("lunch noon")).toEqual([]);
  });

  it("forget --compact removes the erased text from the database file and the WAL", async () => {
    const ctx: CommandContext = {
      hermesHome: home,
      providerName: "sqlite",
      providerOptions: { path: file },
      io: { stdout: () => {}, stderr: () => {}, isTTY: false },
    };
    const seeded = await makeProvider({ userId: "a" });
    for (let i = 0; i < 200; i++) seeded.remember({ content: `filler fact number ${i} about ordinary things`, userId: "b" });
    await seedConversation(seeded);
    seeded.remember({ content: "the vault phrase is qwertyplinth", userId: "a", sessionId: "sa", tags: ["secret"] });
    await seeded.shutdown();
    expect(rawBytes().includes("zanzibarquux")).toBe(true);
    expect(rawBytes().includes("qwertyplinth")).toBe(true);

    const result = await forgetCommand(ctx, undefined, { user: "a", yes: true, compact: true, json: true });
    expect(result).toMatchObject({ erased: 5, forgotten: true, compact: { walTruncated: true } });
    expect(rawBytes().includes("zanzibarquux")).toBe(false);
    expect(rawBytes().includes("qwertyplinth")).toBe(false);
    const provider = await makeProvider();
    expect(provider.search("zanzibarquux qwertyplinth")).toEqual([]);
    expect(provider.stats().items).toBe(202);
  });
});

describe("update", () => {
  it("re-indexes new content, refreshes later turns' context and replaces tags, metadata and expiry", async () => {
    const provider = await makeProvider();
    const [first, second, third] = provider.memoryStore!.insertMany([
      { kind: "turn", content: "we met at the harbour", sessionId: "s" },
      { kind: "turn", content: "second", sessionId: "s" },
      { kind: "turn", content: "third", sessionId: "s" },
    ]);
    expect(
      provider.update(first!, {
        content: "we met at the station",
        tags: ["place"],
        metadata: { where: "station" },
        expiresAt: Date.now() + 60_000,
      }),
    ).toBe(true);
    expect(provider.search("harbour")).toEqual([]);
    expect(provider.search("station").map((h) => h.id)).toEqual(expect.arrayContaining([first, second, third]));
    const db = provider.memoryStore!.db;
    expect(
      db
        .prepare(`SELECT COUNT(*) FROM (SELECT ${CONTEXT_COLUMNS} FROM items) WHERE prev1 LIKE '%harbour%' OR prev2 LIKE '%harbour%'`)
        .pluck()
        .get(),
    ).toBe(0);
    const hit = provider.get(first!)!;
    expect(hit).toMatchObject({ content: "we met at the station", tags: ["place"], metadata: { where: "station" } });
    expect(Date.parse(hit.expiresAt!)).toBeGreaterThan(Date.now());
    // Keys left out keep their value; expiresAt null removes the expiry.
    expect(provider.update(first!, { expiresAt: null })).toBe(true);
    const after = provider.get(first!)!;
    expect(after.expiresAt).toBeUndefined();
    expect(after).toMatchObject({ content: "we met at the station", tags: ["place"], metadata: { where: "station" } });
    expect(provider.update(first!, { tags: [] })).toBe(true);
    expect(provider.get(first!)!.tags).toBeUndefined();
    expect(provider.update("999999", { content: "x" })).toBe(false);
    expect(provider.update("nonsense", { content: "x" })).toBe(false);
    expect(provider.memoryStore!.doctor()).toMatchObject({ ok: true, ftsConsistent: true });
  });

  it("refuses a fact update whose content another fact already has, changing nothing; validates changes", async () => {
    const provider = await makeProvider();
    const tea = provider.remember({ content: "likes green tea" });
    const coffee = provider.remember({ content: "likes black coffee", tags: ["drinks"] });
    let error: unknown;
    try {
      provider.update(coffee, { content: "likes green tea", tags: ["changed"] });
    } catch (e) {
      error = e;
    }
    expect(HermesMemoryError.hasCode(error, "INVALID_ARGUMENT")).toBe(true);
    expect((error as Error).message).toContain(`fact ${tea}`);
    expect(provider.get(coffee)).toMatchObject({ content: "likes black coffee", tags: ["drinks"] });
    // The updated fact is keyed by its new content: remembering that content again returns it.
    expect(provider.update(coffee, { content: "likes oolong" })).toBe(true);
    expect(provider.remember({ content: "likes oolong" })).toBe(coffee);
    expect(provider.remember({ content: "likes black coffee" })).not.toBe(coffee);
    for (const bad of [null, { content: "" }, { tags: "x" }, { metadata: [1] }, { expiresAt: "soon" }, { kind: "turn" }]) {
      expect(() => provider.update(tea, bad as never)).toThrow(/update\(\)/);
    }
  });
});

describe("expiry", () => {
  it("purgeExpired removes every expired item when there are more than one batch (2,000) of them", async () => {
    const provider = await makeProvider();
    // Remembered and purged without yielding to the event loop, so no background purge takes a part.
    for (let i = 0; i < 2001; i++) provider.remember({ content: `expired note ${i}`, expiresAt: Date.now() - 1000 });
    const kept = [provider.remember({ content: "still valid one", ttlMs: 3_600_000 }), provider.remember({ content: "still valid two" })];
    expect(provider.stats().items).toBe(2003);
    expect(await provider.purgeExpired()).toBe(2001);
    expect(provider.stats().items).toBe(2);
    expect(
      provider
        .list({ limit: 10 })
        .map((i) => i.id)
        .sort(),
    ).toEqual([...kept].sort());
    expect(await provider.purgeExpired()).toBe(0);
  });

  it("never returns expired items (search, get, list, tools, prefetch), purges them, and validates expiry input", async () => {
    const provider = await makeProvider();
    // Long enough to be found before it expires however busy the machine is.
    const soon = provider.remember({ content: "the parking spot is level three", ttlMs: 1000 });
    // At or after the moment it expires.
    const soonExpired = Date.now() + 1000;
    const later = provider.remember({ content: "the parking ticket is in the glovebox", expiresAt: new Date(Date.now() + 3_600_000) });
    const past = provider.remember({ content: "the parking meter was broken", expiresAt: "2020-01-01T00:00:00Z" });
    expect(provider.prefetch("parking", { sessionId: "sa" })).toContain("level three");
    provider.queuePrefetch("parking", { sessionId: "sa" });
    // The queued prefetch runs first on the loop's next turn (its setImmediate was queued before
    // this one) and caches a recall that may still hold `soon`; then the clock passes its expiry.
    await new Promise((resolve) => setImmediate(resolve));
    await until(() => Date.now() > soonExpired);

    expect(provider.search("parking").map((h) => h.id)).toEqual([later]);
    expect(provider.get(soon)).toBeNull();
    expect(provider.get(past)).toBeNull();
    expect(provider.list({ limit: 10 }).map((i) => i.id)).toEqual([later]);
    expect(provider.prefetch("parking", { sessionId: "sa" })).not.toContain("level three");
    const tool = JSON.parse(provider.handleToolCall("sqlite_memory_search", { query: "parking" })) as {
      results: Array<{ id: string; expiresAt?: string }>;
    };
    expect(tool.results.map((r) => r.id)).toEqual([later]);
    expect(tool.results[0]!.expiresAt).toBeDefined();
    const listed = JSON.parse(provider.handleToolCall("sqlite_memory_list", {})) as { items: Array<{ id: string }> };
    expect(listed.items.map((i) => i.id)).toEqual([later]);
    expect(provider.update(soon, { expiresAt: null })).toBe(false);

    // The background purge after opening may already have taken some of them (it runs on the
    // event loop, at a time that depends on the machine's load); together nothing expired is left.
    await provider.purgeExpired();
    expect(provider.stats().items).toBe(1);
    provider.remember({ content: "another expired note", expiresAt: Date.now() - 1 });
    provider.remember({ content: "one more expired note", expiresAt: new Date(Date.now() - 1000) });
    expect(provider.stats().items).toBe(3);
    expect(await provider.purgeExpired()).toBe(2);
    expect(await provider.purgeExpired()).toBe(0);
    expect(provider.stats().items).toBe(1);

    for (const bad of [{ ttlMs: 0 }, { ttlMs: -5 }, { ttlMs: "1000" }, { expiresAt: "tomorrow-ish" }, { expiresAt: 1, ttlMs: 1 }]) {
      expect(() => provider.remember({ content: "x", ...(bad as object) })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    }
    expect(provider.capabilities()).toEqual({ filters: true, expiry: true, erasure: true, update: true });
  });

  it("an expired turn passes no score to its neighbours and is never a neighbour hit", async () => {
    const provider = await makeProvider();
    const [question, answer] = provider.memoryStore!.insertMany([
      { kind: "turn", content: "Where did you moor the sailboat?", sessionId: "s" },
      { kind: "turn", content: "Next to the red crane.", sessionId: "s", expiresAt: Date.now() - 1 },
    ]);
    const hits = provider.search("sailboat moor").map((h) => h.id);
    expect(hits).toEqual([question]);
    expect(hits).not.toContain(answer);
  });

  it("purges expired items in the background soon after opening", async () => {
    const first = await makeProvider();
    // Expires after the first provider's own purge (right after it opened) has run.
    first.remember({ content: "short-lived note", ttlMs: 1000 });
    const expired = Date.now() + 1000;
    first.remember({ content: "lasting note" });
    await first.shutdown();
    await until(() => Date.now() > expired);
    const raw = () => {
      const db = new Database(file, { readonly: true });
      try {
        return Number(db.prepare(`SELECT COUNT(*) FROM items`).pluck().get());
      } finally {
        db.close();
      }
    };
    expect(raw()).toBe(2);
    await makeProvider();
    await until(() => raw() === 1);
  });

  it("purges in short steps: at most 64 items per step, again on later write ticks while more are left", async () => {
    const first = await makeProvider();
    const expiresAt = Date.now() + 1000;
    first.memoryStore!.insertMany(Array.from({ length: 150 }, (_, i) => ({ kind: "fact" as const, content: `note ${i}`, expiresAt })));
    await first.shutdown();
    await until(() => Date.now() > expiresAt);
    const provider = await makeProvider();
    const db = provider.memoryStore!.db;
    const left = () => Number(db.prepare(`SELECT COUNT(*) FROM items`).pluck().get());
    await until(() => left() === 150 - 64);
    provider.syncTurn("hello", "hi", { sessionId: "sa" });
    await provider.flush();
    expect(left()).toBe(150 - 128 + 1);
    provider.syncTurn("again", "hi", { sessionId: "sa" });
    await provider.flush();
    expect(left()).toBe(2);
  });
});
