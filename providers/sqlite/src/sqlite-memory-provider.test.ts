import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HermesMemoryError, isSearchableMemory, runWithProfile } from "@hermes/memory-core";
import { SqliteMemoryProvider, formatRecall } from "./sqlite-memory-provider.js";
import { register } from "./index.js";
import { V2_SCHEMA_SQL } from "./test-support/v2-schema.js";
import { until } from "@hermes/test-support";

let home: string;
const open: SqliteMemoryProvider[] = [];

async function makeProvider(
  options: ConstructorParameters<typeof SqliteMemoryProvider>[0] = {},
  ctx: Record<string, unknown> = {},
): Promise<SqliteMemoryProvider> {
  const provider = new SqliteMemoryProvider(options);
  await provider.initialize("s1", { hermesHome: home, ...ctx });
  open.push(provider);
  return provider;
}

beforeEach(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), "sqlite-provider-"));
});
afterEach(async () => {
  for (const p of open.splice(0)) await p.shutdown();
  fs.rmSync(home, { recursive: true, force: true });
});

describe("SqliteMemoryProvider basics", () => {
  it("is named sqlite, advertises checkpoint API v2, is available without opening anything", () => {
    const provider = new SqliteMemoryProvider();
    expect(provider.name).toBe("sqlite");
    expect(provider.preCompressCheckpointApiVersion).toBe(2);
    expect(provider.isAvailable()).toBe(true);
    expect(provider.unavailableReason()).toBe("");
    expect(fs.readdirSync(home)).toEqual([]);
    expect(isSearchableMemory(provider)).toBe(true);
  });

  it("register(ctx) registers one provider instance", () => {
    const registered: unknown[] = [];
    register({ registerMemoryProvider: (p) => registered.push(p), registerSkill: () => {}, providerName: "sqlite", hermesHome: home });
    expect(registered).toHaveLength(1);
    expect(registered[0]).toBeInstanceOf(SqliteMemoryProvider);
  });

  it("creates the database at $HERMES_HOME/memory/sqlite.db with WAL, NORMAL sync and busy_timeout >= 5000", async () => {
    const provider = await makeProvider();
    const stats = provider.stats();
    expect(stats.location).toBe(path.join(home, "memory", "sqlite.db"));
    const db = provider.memoryStore!.db;
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(db.pragma("synchronous", { simple: true })).toBe(1);
    expect(Number(db.pragma("busy_timeout", { simple: true }))).toBeGreaterThanOrEqual(5000);
    expect(db.pragma("user_version", { simple: true })).toBe(6);
  });

  it("migrates a v1 database (insert trigger) without double indexing", async () => {
    const file = path.join(home, "v1.db");
    const db = new Database(file);
    db.exec(V2_SCHEMA_SQL);
    db.exec(`CREATE TRIGGER items_ai AFTER INSERT ON items BEGIN
      INSERT INTO items_fts(rowid, content, speaker) VALUES (new.id, new.content, new.speaker); END;`);
    db.prepare(`INSERT INTO items (kind, content, digest, created_at) VALUES ('fact', 'written by v1', 'd1', 1)`).run();
    db.pragma("user_version = 1");
    db.close();
    const p = await makeProvider({ path: file });
    p.remember({ content: "written by v3" });
    expect(p.memoryStore!.db.pragma("user_version", { simple: true })).toBe(6);
    expect(p.memoryStore!.doctor()).toMatchObject({ ok: true, ftsConsistent: true, items: 2 });
    expect(
      p
        .search("written")
        .map((h) => h.content)
        .sort(),
    ).toEqual(["written by v1", "written by v3"]);
  });

  it("refuses a database with a newer schema and leaves it untouched", async () => {
    const file = path.join(home, "future.db");
    const db = new Database(file);
    db.exec("CREATE TABLE x(a); INSERT INTO x VALUES (1);");
    db.pragma("user_version = 99");
    db.close();
    const before = fs.readFileSync(file);
    const provider = new SqliteMemoryProvider({ path: file });
    const error = await provider.initialize("s", { hermesHome: home }).catch((e: unknown) => e);
    expect(HermesMemoryError.hasCode(error, "SCHEMA_TOO_NEW")).toBe(true);
    expect((error as Error).message).toMatch(/Upgrade @hermes\/memory-sqlite/);
    expect(fs.readFileSync(file).equals(before)).toBe(true);
    expect(fs.existsSync(`${file}-wal`)).toBe(false);
  });

  it("reads memory.sqlite.* through core's readConfig when constructed without options", async () => {
    fs.writeFileSync(
      path.join(home, "config.yaml"),
      "memory:\n  provider: sqlite\n  sqlite:\n    path: $HERMES_HOME/custom/mem.db\n    prefetch_limit: 2\n",
    );
    const provider = await makeProvider();
    expect(provider.stats().location).toBe(path.join(home, "custom", "mem.db"));
    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  sqlite:\n    prefetch_limit: 1\n");
    const limited = await makeProvider();
    limited.remember({ content: "alpha one" });
    limited.remember({ content: "alpha two" });
    expect(limited.prefetch("alpha", { sessionId: "s1" }).split("\n- ")).toHaveLength(2);
  });

  it("search_thread: false gives the store's ranker no pool helper thread, at any store size", async () => {
    // The helper starts at 200,000 items, too many to write here: the ranker's threshold says it.
    const threshold = (provider: SqliteMemoryProvider) =>
      (provider as unknown as { store: { layered: { helperMinRows: number } } }).store.layered.helperMinRows;
    expect(threshold(await makeProvider())).toBe(200_000);
    expect(threshold(await makeProvider({ path: path.join(home, "off.db"), searchThread: false }))).toBe(Infinity);
  });

  it("rejects invalid settings with INVALID_CONFIG", async () => {
    const provider = new SqliteMemoryProvider({ prefetchLimit: 0 });
    const error = await provider.initialize("s", { hermesHome: home }).catch((e: unknown) => e);
    expect(HermesMemoryError.hasCode(error, "INVALID_CONFIG")).toBe(true);
    expect((error as Error).message).toContain("prefetch_limit");
  });

  it("backupPaths() lists the database only when it lies outside $HERMES_HOME", () => {
    expect(runWithProfile(home, () => new SqliteMemoryProvider().backupPaths())).toEqual([]);
    const outside = path.join(os.tmpdir(), "elsewhere", "m.db");
    expect(runWithProfile(home, () => new SqliteMemoryProvider({ path: outside }).backupPaths())).toEqual([outside]);
  });

  it("has a config schema without secrets and a static system prompt naming the tools", () => {
    const provider = new SqliteMemoryProvider();
    const asked = provider
      .getConfigSchema()
      .filter((f) => !f.advanced)
      .map((f) => f.key);
    expect(asked).toEqual(["path", "prefetch_limit", "prefetch_max_chars", "recency_half_life_days"]);
    expect(
      provider
        .getConfigSchema()
        .filter((f) => f.advanced)
        .map((f) => f.key),
    ).toEqual(["flush_interval_ms", "write_batch_size", "search_thread"]);
    expect(provider.getConfigSchema().some((f) => f.secret)).toBe(false);
    const block = provider.systemPromptBlock();
    for (const tool of ["sqlite_memory_search", "sqlite_memory_remember", "sqlite_memory_forget", "sqlite_memory_list"])
      expect(block).toContain(tool);
  });
});

describe("SearchableMemory", () => {
  it("remember/search/get/forget/stats round-trip with stable ids and score order", async () => {
    const p = await makeProvider();
    const a = p.remember({ content: "The user's cat is named Miso", kind: "fact", tags: ["pets"] });
    const b = p.remember({ content: "Deployment runs on Kubernetes in eu-west-1", kind: "fact" });
    const c = p.remember({ content: "We talked about the cat's vet appointment", kind: "turn", sessionId: "s9" });
    expect(new Set([a, b, c]).size).toBe(3);
    const hits = p.search("cat name", { limit: 10 });
    expect(hits.map((h) => h.id)).toContain(a);
    expect(hits[0]!.id).toBe(a);
    for (let i = 1; i < hits.length; i++) expect(hits[i - 1]!.score).toBeGreaterThanOrEqual(hits[i]!.score);
    expect(p.search("cat name", { limit: 10 }).map((h) => h.id)).toEqual(hits.map((h) => h.id));
    expect(p.search("cat", { kind: "turn" }).map((h) => h.id)).toEqual([c]);
    expect(p.search("cat", { sessionId: "s9" }).map((h) => h.id)).toEqual([c]);
    expect(p.get(a)).toMatchObject({ id: a, kind: "fact", content: "The user's cat is named Miso" });
    expect(p.get("nope")).toBeNull();
    expect(p.stats()).toMatchObject({ items: 3, byKind: { turn: 1, fact: 2, checkpoint: 0 }, sessions: 1 });
    expect(p.forget(a)).toBe(true);
    expect(p.forget(a)).toBe(false);
    expect(p.get(a)).toBeNull();
    expect(p.search("Miso")).toEqual([]);
  });

  it("prefers a named speaker's own turns", async () => {
    const p = await makeProvider();
    const bob = p.remember({ kind: "turn", sessionId: "s", content: "I started learning the violin", metadata: { speaker: "Bob" } });
    const ann = p.remember({ kind: "turn", sessionId: "t", content: "I started learning the violin", metadata: { speaker: "Ann" } });
    expect(p.search("What instrument is Ann learning? violin").map((h) => h.id)).toEqual([ann, bob]);
    expect(p.search("What instrument is Bob learning? violin").map((h) => h.id)).toEqual([bob, ann]);
  });

  it("never reuses the id of a forgotten item", async () => {
    const p = await makeProvider();
    const first = p.remember({ content: "temporary note" });
    expect(p.forget(first)).toBe(true);
    const second = p.remember({ content: "another note" });
    expect(second).not.toBe(first);
    expect(p.get(first)).toBeNull();
  });

  it("deduplicates facts by content digest and returns the existing id", async () => {
    const p = await makeProvider();
    const first = p.remember({ content: "Prefers dark mode" });
    expect(p.remember({ content: "Prefers dark mode" })).toBe(first);
    expect(p.stats().items).toBe(1);
  });

  it("rejects empty content with INVALID_ARGUMENT", async () => {
    const p = await makeProvider();
    expect(() => p.remember({ content: "  " })).toThrow(/content must be text with at least one non-blank character/);
  });

  it("indexes neighbouring turns of the same session, so a turn is found through its context", async () => {
    const p = await makeProvider();
    p.remember({ kind: "turn", sessionId: "s", content: 'Ann said, "I finally adopted a puppy from the shelter"' });
    const reply = p.remember({ kind: "turn", sessionId: "s", content: 'Bob said, "That is wonderful, what breed is it?"' });
    p.remember({ kind: "turn", sessionId: "other", content: 'Cy said, "Breed standards are strict"' });
    const hits = p.search("puppy breed");
    expect(hits.map((h) => h.id)).toContain(reply);
  });
});

describe("read your writes", () => {
  it("finds a word written right after a search that found nothing, in a small and in a large store", async () => {
    for (const size of [50, 2_500]) {
      const provider = await makeProvider({ path: path.join(home, `rw-${size}.db`) });
      for (let i = 0; i < size; i++) provider.remember({ kind: "fact", content: `fact number ${i} about tea and biscuits` });
      expect(provider.search("zeppelin")).toEqual([]);
      const id = provider.remember({ kind: "fact", content: "I once flew in a zeppelin" });
      expect(provider.search("zeppelin").map((h) => h.id)).toEqual([id]);
      // A word every item holds (no BM25 weight) still finds items once it is the only word.
      expect(provider.search("tea", { limit: 3 })).toHaveLength(3);
    }
  });
});

describe("syncTurn and the write queue", () => {
  it("returns immediately, writes in the background and keeps session order", async () => {
    const p = await makeProvider({ flushIntervalMs: 5 });
    for (let i = 0; i < 50; i++) p.syncTurn(`question ${i}`, `answer ${i}`, { sessionId: "s1" });
    expect(p.stats().pending).toBe(50);
    await until(() => p.stats().pending === 0);
    const items = p.list({ limit: 100 }).reverse();
    expect(items.map((i) => i.content)).toEqual(Array.from({ length: 50 }, (_, i) => `User: question ${i}\nAssistant: answer ${i}`));
    expect(items.every((i) => i.kind === "turn" && i.sessionId === "s1")).toBe(true);
  });

  it("flush() drains the queue so turns are searchable", async () => {
    const p = await makeProvider({ flushIntervalMs: 60_000 });
    p.syncTurn("my favourite colour is teal", "noted", { sessionId: "s1", turnAuthor: { id: "u1", name: "Dana" } });
    await p.flush();
    const [hit] = p.search("favourite colour");
    expect(hit?.content).toContain("Dana: my favourite colour is teal");
    expect(hit?.metadata).toMatchObject({ authorId: "u1", authorName: "Dana" });
  });

  it.each(["cron", "subagent"])("skips writes when agentContext is %s", async (agentContext) => {
    const p = await makeProvider({}, { agentContext });
    p.syncTurn("secret plan", "ok", { sessionId: "s1" });
    await p.flush();
    expect(p.stats().items).toBe(0);
  });

  it("shutdown() drains the queue and is idempotent", async () => {
    const p = new SqliteMemoryProvider({ flushIntervalMs: 60_000 });
    await p.initialize("s1", { hermesHome: home });
    p.syncTurn("persist me", "sure", { sessionId: "s1" });
    await p.shutdown();
    await p.shutdown();
    const db = new Database(path.join(home, "memory", "sqlite.db"), { readonly: true });
    expect((db.prepare("SELECT COUNT(*) AS n FROM items").get() as { n: number }).n).toBe(1);
    db.close();
  });

  it("onSessionSwitch and onSessionEnd flush", async () => {
    const p = await makeProvider({ flushIntervalMs: 60_000 });
    p.syncTurn("one", "a", { sessionId: "s1" });
    expect(await p.onSessionSwitch("s2", { parentSessionId: "s1", reset: false, rewound: false })).toBe(true);
    expect(p.stats().pending).toBe(0);
    p.syncTurn("two", "b", { sessionId: "s2" });
    await p.onSessionEnd([]);
    expect(p.stats()).toMatchObject({ pending: 0, items: 2, sessions: 2 });
  });
});

describe("prefetch", () => {
  it("returns the top matches as a block within prefetch_max_chars and sets recallStatus", async () => {
    const p = await makeProvider({ prefetchLimit: 2, prefetchMaxChars: 200 });
    for (let i = 0; i < 5; i++) p.remember({ content: `Project Falcon detail number ${i} ${"x".repeat(80)}` });
    const block = p.prefetch("Falcon project", { sessionId: "s1" });
    expect(block.startsWith("## Recalled from SQLite memory")).toBe(true);
    expect(block.length).toBeLessThanOrEqual(200);
    expect(p.recallStatus()).toEqual({ providerLabel: "SQLite memory", count: 2 });
    expect(p.prefetch("zzzz unrelated", { sessionId: "s1" })).toBe("");
    expect(p.recallStatus()).toBeNull();
    expect(p.prefetch("   ", { sessionId: "s1" })).toBe("");
  });

  it("serves a matching query from the queuePrefetch cache", async () => {
    const p = await makeProvider();
    p.remember({ content: "The staging database is postgres 16" });
    p.queuePrefetch("staging database", { sessionId: "s1" });
    const store = p.memoryStore!;
    const original = store.search.bind(store);
    let calls = 0;
    store.search = (...args) => {
      calls++;
      return original(...args);
    };
    await until(() => calls > 0);
    await new Promise((resolve) => setImmediate(resolve));
    const block = p.prefetch("staging database", { sessionId: "s1" });
    expect(block).toContain("postgres 16");
    expect(calls).toBe(1);
    p.prefetch("something else", { sessionId: "s1" });
    expect(calls).toBe(2);
  });

  it("formatRecall never exceeds the budget", () => {
    const hit = { id: "1", content: "y".repeat(5000), kind: "fact" as const, score: 1, createdAt: new Date().toISOString(), metadata: {} };
    for (const max of [60, 100, 500, 2000]) expect(formatRecall([hit, hit], max).length).toBeLessThanOrEqual(max);
    expect(formatRecall([], 100)).toBe("");
  });
});

describe("onPreCompress (checkpoint API v2)", () => {
  const evidence = [
    { role: "user", content: "Let's use Postgres for the billing service" },
    { role: "assistant", content: "Agreed, Postgres with logical replication" },
  ];

  it("archives evidence idempotently by digest and returns a short note", async () => {
    const p = await makeProvider();
    const note = await p.onPreCompress(evidence, { requireCheckpoint: true });
    expect(note).toContain("archived 2 message(s)");
    await p.onPreCompress(evidence, { requireCheckpoint: true });
    await p.onPreCompress([...evidence, { role: "user", content: [{ type: "text", text: "and Redis for caching" }] }], {
      requireCheckpoint: false,
    });
    expect(p.stats().byKind.checkpoint).toBe(3);
    expect(p.search("billing Postgres", { kind: "checkpoint" })).toHaveLength(2);
    expect(await p.onPreCompress([{ role: "system", content: "ignored" }], { requireCheckpoint: true })).toBe("");
  });

  it("also flushes queued turns before returning", async () => {
    const p = await makeProvider({ flushIntervalMs: 60_000 });
    p.syncTurn("queued turn", "reply", { sessionId: "s1" });
    await p.onPreCompress(evidence, { requireCheckpoint: true });
    expect(p.stats()).toMatchObject({ pending: 0, byKind: { turn: 1, checkpoint: 2 } });
  });

  it("throws when the database refuses writes, and nothing else crashes", async () => {
    const p = await makeProvider({ flushIntervalMs: 1 });
    p.remember({ content: "stored before the disk went read-only" });
    p.memoryStore!.db.pragma("query_only = ON"); // what SQLite reports for a read-only disk
    await expect(p.onPreCompress(evidence, { requireCheckpoint: true })).rejects.toThrow(/checkpoint failed/);
    expect(() => p.syncTurn("still fine", "ok", { sessionId: "s1" })).not.toThrow();
    expect(p.prefetch("read-only disk", { sessionId: "s1" })).toContain("stored before");
    expect(JSON.parse(p.handleToolCall("sqlite_memory_remember", { content: "x" }))).toHaveProperty("error");
    p.onMemoryWrite("add", "memory", "mirrored while read-only", {});
    await expect(p.flush()).rejects.toThrow(/could not write 1 queued item\(s\)/);
    // The queued turn is not reported as stored: shutdown closes, then says it is lost.
    await expect(p.shutdown()).rejects.toThrow(/shutdown: 1 queued item\(s\) could not be written and are lost/);
    await p.shutdown(); // idempotent once closed
  });

  it("with an unwritable location: initialize fails clearly, hooks stay safe, onPreCompress throws", async () => {
    const blocker = path.join(home, "not-a-dir");
    fs.writeFileSync(blocker, "");
    const p = new SqliteMemoryProvider({ path: path.join(blocker, "m.db") });
    await expect(p.initialize("s", { hermesHome: home })).rejects.toThrow(/cannot open/);
    expect(() => p.syncTurn("u", "a", { sessionId: "s" })).not.toThrow();
    expect(p.prefetch("anything", { sessionId: "s" })).toBe("");
    expect(JSON.parse(p.handleToolCall("sqlite_memory_search", { query: "x" }))).toHaveProperty("error");
    await expect(p.onPreCompress(evidence, { requireCheckpoint: true })).rejects.toThrow(HermesMemoryError);
    await p.shutdown();
  });

  it("a closed database is left in rollback-journal mode (a read-only mount can open it without a -shm file)", async () => {
    const file = path.join(home, "j.db");
    const first = new SqliteMemoryProvider({ path: file });
    await first.initialize("s", { hermesHome: home });
    first.remember({ content: "journal mode check" });
    await first.shutdown();
    expect(fs.existsSync(`${file}-shm`)).toBe(false);
    const raw = new Database(file, { readonly: true });
    expect(raw.pragma("journal_mode", { simple: true })).toBe("delete");
    raw.close();
  });

  it.skipIf(process.getuid?.() === 0)("with a read-only directory: recall works, onPreCompress throws", async () => {
    const dir = path.join(home, "ro");
    const first = new SqliteMemoryProvider({ path: path.join(dir, "m.db") });
    await first.initialize("s", { hermesHome: home });
    first.remember({ content: "kept on a read-only disk" });
    await first.shutdown();
    fs.chmodSync(path.join(dir, "m.db"), 0o444);
    fs.chmodSync(dir, 0o555);
    try {
      const p = new SqliteMemoryProvider({ path: path.join(dir, "m.db") });
      await p.initialize("s", { hermesHome: home });
      expect(p.search("read-only disk")).toHaveLength(1);
      await expect(p.onPreCompress(evidence, { requireCheckpoint: true })).rejects.toThrow();
      await p.shutdown();
    } finally {
      fs.chmodSync(dir, 0o755);
    }
  });
});

describe("onMemoryWrite mirrors built-in writes", () => {
  it("add and replace store facts; remove deletes the fact identified by previousContent", async () => {
    const p = await makeProvider();
    p.onMemoryWrite("add", "user", "Prefers metric units", { writeOrigin: "tool" });
    expect(p.search("metric units", { kind: "fact" })).toHaveLength(1);
    p.onMemoryWrite("replace", "user", "Prefers imperial units", { previousContent: "Prefers metric units" });
    expect(p.search("metric", { kind: "fact" })).toHaveLength(0);
    expect(p.search("imperial", { kind: "fact" })).toHaveLength(1);
    p.onMemoryWrite("remove", "user", "", { previousContent: "Prefers imperial units" });
    expect(p.stats().byKind.fact).toBe(0);
    p.onMemoryWrite("add", "memory", "   ", {});
    p.onMemoryWrite("remove", "memory", "whatever", {});
    expect(p.stats().items).toBe(0);
  });

  it("a removed fact is not served from a recall cached before the removal", async () => {
    const p = await makeProvider();
    p.onMemoryWrite("add", "user", "Allergic to hazelnuts", {});
    p.queuePrefetch("hazelnuts allergy", { sessionId: "s1" });
    await until(() => p.prefetch("hazelnuts allergy", { sessionId: "s1" }).includes("hazelnuts"));
    p.queuePrefetch("hazelnuts allergy", { sessionId: "s1" });
    // The queued recall runs on an immediate; one set after it runs after it.
    await new Promise((resolve) => setImmediate(resolve));
    p.onMemoryWrite("remove", "user", "", { previousContent: "Allergic to hazelnuts" });
    expect(p.prefetch("hazelnuts allergy", { sessionId: "s1" })).not.toContain("hazelnuts");
  });
});

describe("tools", () => {
  it("exposes exactly the four prefixed tools", () => {
    expect(new SqliteMemoryProvider().getToolSchemas().map((t) => t.name)).toEqual([
      "sqlite_memory_search",
      "sqlite_memory_remember",
      "sqlite_memory_forget",
      "sqlite_memory_list",
    ]);
  });

  it("remember, search, list and forget through handleToolCall", async () => {
    const p = await makeProvider();
    const saved = JSON.parse(p.handleToolCall("sqlite_memory_remember", { content: "Office is in Lisbon", tags: ["work"] }));
    expect(saved).toMatchObject({ ok: true });
    const found = JSON.parse(p.handleToolCall("sqlite_memory_search", { query: "where is the office", limit: 3 }));
    expect(found.results[0]).toMatchObject({ id: saved.id, kind: "fact", content: "Office is in Lisbon" });
    const listed = JSON.parse(p.handleToolCall("sqlite_memory_list", { kind: "fact" }));
    expect(listed.items[0]).toMatchObject({ id: saved.id, tags: ["work"] });
    expect(JSON.parse(p.handleToolCall("sqlite_memory_forget", { id: saved.id }))).toEqual({ ok: true, id: saved.id });
    expect(JSON.parse(p.handleToolCall("sqlite_memory_forget", { id: saved.id })).error).toMatch(/no memory item/);
  });

  it("the remember tool takes text up to 20,000 characters and at most 16 tags of up to 64 characters", async () => {
    const p = await makeProvider();
    expect(JSON.parse(p.handleToolCall("sqlite_memory_remember", { content: "x".repeat(20_001) })).error).toMatch(
      /content must NOT have more than 20000 characters/,
    );
    expect(
      JSON.parse(p.handleToolCall("sqlite_memory_remember", { content: "x", tags: Array.from({ length: 17 }, (_, i) => `t${i}`) })).error,
    ).toMatch(/tags must NOT have more than 16 items/);
    expect(JSON.parse(p.handleToolCall("sqlite_memory_remember", { content: "x", tags: ["y".repeat(65)] })).error).toMatch(
      /tags\/0 must NOT have more than 64 characters/,
    );
    expect(
      JSON.parse(
        p.handleToolCall("sqlite_memory_remember", {
          content: "z".repeat(20_000),
          tags: Array.from({ length: 16 }, (_, i) => `${i}`.padEnd(64, "w")),
        }),
      ),
    ).toMatchObject({ ok: true });
  });

  it("returns schema violations and unknown tools as error strings, never throwing", async () => {
    const p = await makeProvider();
    const bad: Array<[string, unknown]> = [
      ["sqlite_memory_search", {}],
      ["sqlite_memory_search", { query: "" }],
      ["sqlite_memory_search", { query: "x", limit: 0 }],
      ["sqlite_memory_search", { query: "x", kind: "nope" }],
      ["sqlite_memory_remember", { content: 42 }],
      ["sqlite_memory_remember", { content: "x", extra: true }],
      ["sqlite_memory_forget", {}],
      ["sqlite_memory_list", { limit: "ten" }],
      ["unknown_tool", {}],
    ];
    for (const [name, args] of bad) {
      const out = p.handleToolCall(name, args as Record<string, unknown>);
      expect(typeof out).toBe("string");
      expect(JSON.parse(out)).toHaveProperty("error");
    }
  });
});
