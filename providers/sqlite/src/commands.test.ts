import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Command } from "commander";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  doctorCommand,
  exportCommand,
  forgetCommand,
  importCommand,
  listCommand,
  migrateCommand,
  purgeCommand,
  searchCommand,
  statsCommand,
  vacuumCommand,
  withProvider,
  type CommandContext,
} from "./commands.js";
import { registerCli } from "./cli.js";
import { writeV2File } from "./test-support/v2-schema.js";

let home: string;
let out: string[];
let ctx: CommandContext;

beforeEach(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), "sqlite-cli-"));
  out = [];
  ctx = { hermesHome: home, providerName: "sqlite", io: { stdout: (t) => out.push(t), stderr: (t) => out.push(t), isTTY: false } };
  await withProvider(ctx, (p) => {
    p.remember({ content: "Alice prefers green tea in the morning", kind: "fact", tags: ["pref"] });
    p.remember({ content: "We discussed the Kubernetes migration", kind: "turn", sessionId: "s1", metadata: { speaker: "Alice" } });
    p.remember({ content: "Checkpoint: billing moved to Postgres", kind: "checkpoint", sessionId: "s1" });
  });
});
afterEach(() => {
  fs.rmSync(home, { recursive: true, force: true });
});

describe("CLI commands", () => {
  it("stats reports counts, location and size (text and --json)", async () => {
    const stats = await statsCommand(ctx, { json: true });
    expect(stats).toMatchObject({
      items: 3,
      byKind: { turn: 1, fact: 1, checkpoint: 1 },
      location: path.join(home, "memory", "sqlite.db"),
    });
    expect(JSON.parse(out.pop()!)).toMatchObject({ items: 3 });
    await statsCommand(ctx);
    expect(out.pop()).toMatch(/items: +3 \(turns 1, facts 1, checkpoints 1\)/);
  });

  it("search ranks hits and honours --limit and --kind", async () => {
    const hits = await searchCommand(ctx, "green tea", { limit: "5", json: true });
    expect(hits[0]?.content).toContain("green tea");
    expect(await searchCommand(ctx, "Postgres Kubernetes tea", { kind: "fact" })).toHaveLength(1);
    await expect(searchCommand(ctx, "x", { limit: "zero" })).rejects.toThrow(/--limit/);
    await expect(searchCommand(ctx, "x", { kind: "bogus" })).rejects.toThrow(/--kind/);
    await searchCommand(ctx, "nothing-matches-this");
    expect(out.pop()).toBe("No matches.");
  });

  it("list shows newest first; forget deletes by id", async () => {
    const items = await listCommand(ctx, { json: true });
    expect(items.map((i) => i.kind)).toEqual(["checkpoint", "turn", "fact"]);
    expect(await forgetCommand(ctx, items[0]!.id)).toEqual({ id: items[0]!.id, erased: 1, forgotten: true });
    await expect(forgetCommand(ctx, items[0]!.id)).rejects.toMatchObject({
      code: "ITEM_NOT_FOUND",
      message: expect.stringContaining(`No item with id ${items[0]!.id}`),
    });
    expect((await listCommand(ctx, { kind: "checkpoint" })).length).toBe(0);
  });

  it("export writes JSONL; import into another profile is idempotent by digest", async () => {
    const file = path.join(home, "dump.jsonl");
    expect(await exportCommand(ctx, file, { json: true })).toEqual({ count: 3, file });
    const lines = fs
      .readFileSync(file, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatchObject({ kind: "fact", tags: ["pref"] });
    expect(lines.every((l) => typeof l.digest === "string" && typeof l.createdAt === "string")).toBe(true);

    const other = fs.mkdtempSync(path.join(os.tmpdir(), "sqlite-cli-b-"));
    try {
      const ctxB = { ...ctx, hermesHome: other };
      fs.appendFileSync(file, 'not json\n{"content": "hand-written fact"}\n');
      expect(await importCommand(ctxB, file, { json: true })).toMatchObject({ imported: 4, skipped: 0, invalid: 1 });
      expect(await importCommand(ctxB, file, { json: true })).toMatchObject({ imported: 0, skipped: 4, invalid: 1 });
      expect((await statsCommand(ctxB)).items).toBe(4);
      const exportedB: string[] = [];
      await exportCommand({ ...ctxB, io: { stdout: (t) => exportedB.push(t), stderr: () => {}, isTTY: false } }, undefined);
      expect(exportedB).toHaveLength(4);
      expect((await searchCommand(ctxB, "Kubernetes migration"))[0]?.content).toBe("We discussed the Kubernetes migration");
    } finally {
      fs.rmSync(other, { recursive: true, force: true });
    }
    await expect(importCommand(ctx, path.join(home, "missing.jsonl"))).rejects.toThrow(/Cannot read/);
  });

  // SQLite's JSON functions refuse a document nested 1000 levels deep, so one such item made every
  // metadata-filtered search fail ("malformed JSON"); import reports the line instead of storing it.
  it("import refuses metadata nested too deep for SQLite's JSON functions, and metadata filters keep working", async () => {
    const file = path.join(home, "deep.jsonl");
    let deep = "1";
    for (let i = 0; i < 1500; i++) deep = `{"x":${deep}}`;
    fs.writeFileSync(
      file,
      `{"content":"deeply nested zebra note","metadata":{"d":${deep}}}\n{"content":"plain zebra note","metadata":{"project":"a"}}\n`,
    );
    const result = await importCommand(ctx, file, { json: true });
    expect(result).toMatchObject({ imported: 1, invalid: 1 });
    expect(result.errors[0]).toMatch(/^line 1: .*more than 64 levels deep/);
    await withProvider(ctx, async (p) => {
      expect((await p.search("zebra", { metadata: { project: "a" } })).map((h) => h.content)).toEqual(["plain zebra note"]);
    });
  });

  it("vacuum and doctor report a healthy database", async () => {
    const result = await vacuumCommand(ctx, { json: true });
    expect(result.afterBytes).toBeGreaterThan(0);
    const report = await doctorCommand(ctx, { json: true });
    expect(report).toMatchObject({ ok: true, integrity: "ok", ftsConsistent: true, schemaVersion: 6, journalMode: "wal", items: 3 });
  });

  it("doctor detects an FTS index out of sync", async () => {
    await withProvider(ctx, (p) => {
      // Simulate corruption of the index only: delete an FTS row behind the triggers' back.
      p.memoryStore!.db.exec("DROP TRIGGER items_bd; DELETE FROM items WHERE kind = 'fact';");
    });
    const report = await doctorCommand(ctx);
    expect(report.ok).toBe(false);
    expect(report.ftsConsistent).toBe(false);
    expect(out.pop()).toMatch(/PROBLEMS/);
  });

  it("registerCli adds every subcommand with --json and runs them", async () => {
    const root = new Command("hermes-memory").exitOverride();
    const sqlite = root.command("sqlite");
    registerCli(sqlite, { hermesHome: home, providerName: "sqlite" });
    const names = sqlite.commands.map((c) => c.name());
    expect(names).toEqual(["stats", "search", "list", "forget", "purge", "export", "import", "migrate", "vacuum", "doctor"]);
    for (const c of sqlite.commands) expect(c.options.some((o) => o.long === "--json")).toBe(true);
    const writes: string[] = [];
    const original = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((chunk: string) => (writes.push(String(chunk)), true)) as typeof process.stdout.write;
    const previous = process.exitCode;
    try {
      await root.parseAsync(["node", "hermes-memory", "sqlite", "stats", "--json"]);
      expect(JSON.parse(writes.join(""))).toMatchObject({ items: 3 });
      await root.parseAsync(["node", "hermes-memory", "sqlite", "forget", "999999", "--json"]);
      expect(process.exitCode).toBe(1);
      process.exitCode = 0;
      writes.length = 0;
      await root.parseAsync([
        "node",
        "hermes-memory",
        "sqlite",
        "forget",
        "--session",
        "s1",
        "--kind",
        "turn",
        "--filter",
        '{"createdAt":{"$gte":0}}',
        "--yes",
        "--compact",
        "--json",
      ]);
      expect(JSON.parse(writes.join(""))).toMatchObject({ erased: 1, forgotten: true, compact: { walTruncated: true } });
      expect(process.exitCode).toBe(0);
    } finally {
      process.stdout.write = original;
      process.exitCode = previous;
    }
  });

  it("migrate brings a previous-schema database to the current one, keeping every item", async () => {
    const file = path.join(home, "memory", "sqlite.db");
    fs.rmSync(file);
    writeV2File(
      file,
      Array.from({ length: 45_000 }, (_, i) => ({
        kind: "turn",
        session: `s${i % 300}`,
        content: i === 4321 ? "the lighthouse keeper waved" : `turn ${i} about something else`,
        createdAt: 1_700_000_000_000 + i,
      })),
    );

    const result = await migrateCommand({ ...ctx, io: { ...ctx.io!, isTTY: false } }, { json: true });
    expect(result).toMatchObject({ path: file, fromVersion: 2, toVersion: 6, migrated: true, items: 45_000 });
    expect(JSON.parse(out.pop()!)).toMatchObject({ migrated: true, items: 45_000 });
    // Context now links each turn to the ones before it in its session (every 300th row is the same session).
    const hits = await searchCommand(ctx, "lighthouse keeper", { limit: "5", json: true });
    expect(hits.map((h) => Number(h.id))).toEqual(expect.arrayContaining([4322, 4622, 4922]));
    expect(await doctorCommand(ctx, { json: true })).toMatchObject({ ok: true, ftsConsistent: true, items: 45_000, schemaVersion: 6 });

    // Already current: nothing to do, said so.
    expect(await migrateCommand(ctx)).toMatchObject({ fromVersion: 6, toVersion: 6, migrated: false });
    expect(out.pop()).toMatch(/already at schema v6 \(45000 item\(s\)\)/);
  });

  it("migrate reports progress in steps up to the total", async () => {
    const { openDatabase } = await import("./database.js");
    const file = path.join(home, "v2.db");
    writeV2File(
      file,
      Array.from({ length: 25_000 }, (_, i) => ({ kind: "turn", session: `s${i % 9}`, content: `t${i}`, createdAt: i })),
    );
    const seen: Array<[number, number]> = [];
    const db = openDatabase(file, { onMigrationProgress: (done, total) => seen.push([done, total]) });
    db.close();
    // v3 dates and indexes every row and fills every turn, v5 fills every turn, v6 indexes every row.
    expect(seen[0]).toEqual([0, 125_000]);
    expect(seen.at(-1)).toEqual([125_000, 125_000]);
    expect(seen.length).toBeGreaterThan(4);
    for (let i = 1; i < seen.length; i++) expect(seen[i]![0]).toBeGreaterThan(seen[i - 1]![0]);
    // A second open has nothing to migrate and reports nothing.
    const again: unknown[] = [];
    openDatabase(file, { onMigrationProgress: (...a) => again.push(a) }).close();
    expect(again).toEqual([]);
  });

  it("migrate refuses a file that is not a SQLite database with STORAGE_FAILED and leaves it as it was", async () => {
    const file = path.join(home, "memory", "sqlite.db");
    fs.writeFileSync(file, "not a database at all, just text\n".repeat(200));
    const before = fs.readFileSync(file);
    await expect(migrateCommand(ctx, { json: true })).rejects.toMatchObject({ code: "STORAGE_FAILED" });
    expect(fs.readFileSync(file).equals(before)).toBe(true);
  });

  it("migrate without a database creates none", async () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), "sqlite-cli-empty-"));
    try {
      const result = await migrateCommand({ ...ctx, hermesHome: empty }, { json: true });
      expect(result).toMatchObject({ fromVersion: 0, migrated: false });
      expect(fs.existsSync(path.join(empty, "memory", "sqlite.db"))).toBe(false);
    } finally {
      fs.rmSync(empty, { recursive: true, force: true });
    }
  });
});

describe("CLI: scoped forget, purge, search --filter", () => {
  const seedUsers = () =>
    withProvider(ctx, (p) => {
      p.remember({ content: "alpha note of user a", userId: "a", sessionId: "sa", tags: ["work"] });
      p.remember({ content: "alpha plan of user a", kind: "turn", userId: "a", sessionId: "sa" });
      p.remember({ content: "alpha note of user b", userId: "b", sessionId: "sb", tags: ["work"], metadata: { project: "apollo" } });
    });

  it("a scope wider than one id asks first (with the count) and refuses without a confirmation or --yes", async () => {
    await seedUsers();
    // No way to ask and no --yes: refused, nothing erased.
    await expect(forgetCommand(ctx, undefined, { user: "a" })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: expect.stringMatching(/2 item\(s\).*--yes/),
    });
    const questions: string[] = [];
    const asking = (answer: boolean): CommandContext => ({
      ...ctx,
      io: { ...ctx.io!, confirm: async (q: string) => (questions.push(q), answer) },
    });
    await expect(forgetCommand(asking(false), undefined, { user: "a" })).rejects.toThrow(/--yes/);
    expect(questions).toEqual(["Erase 2 item(s) permanently?"]);
    expect((await searchCommand(ctx, "alpha", { json: true })).length).toBe(3);
    expect(await forgetCommand(asking(true), undefined, { user: "a", json: true })).toMatchObject({ erased: 2, forgotten: true });
    expect((await searchCommand(ctx, "alpha", { json: true })).map((h) => h.userId)).toEqual(["b"]);
    // An empty scope is refused; a scope matching nothing erases nothing and does not ask.
    await expect(forgetCommand(ctx, undefined, {})).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    expect(await forgetCommand(ctx, undefined, { session: "nowhere" })).toMatchObject({ erased: 0, forgotten: false });
    await expect(forgetCommand(ctx, undefined, { filter: "{not json", yes: true })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(forgetCommand(ctx, undefined, { filter: '{"metadata":{"x":{"$regex":"."}}}', yes: true })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
    });
  });

  it("--kind, --tag, --session and --filter combine; --yes skips the question", async () => {
    await seedUsers();
    expect(await forgetCommand(ctx, undefined, { tag: "work", filter: '{"metadata":{"project":"apollo"}}', yes: true })).toMatchObject({
      erased: 1,
    });
    expect(await forgetCommand(ctx, undefined, { session: "sa", kind: "turn", yes: true })).toMatchObject({ erased: 1 });
    await forgetCommand(ctx, undefined, { session: "sa", yes: true });
    expect(out.pop()).toBe("Erased 1 item(s).");
    expect((await searchCommand(ctx, "alpha", { json: true })).length).toBe(0);
  });

  it("a scope matching every item is refused without --all, even with --yes; --all erases them, and alone every item", async () => {
    await expect(forgetCommand(ctx, undefined, { filter: '{"createdAt":{"$gte":0}}', yes: true })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: expect.stringMatching(/matches all 3 item\(s\) of the database; nothing was erased\. Add --all/),
    });
    await expect(forgetCommand(ctx, undefined, { filter: '{"metadata":{"x":{"$nin":[]}}}', yes: true })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
    });
    expect((await statsCommand(ctx, { json: true })).items).toBe(3);
    expect(await forgetCommand(ctx, undefined, { kind: "turn", yes: true })).toMatchObject({ erased: 1 });
    expect(await forgetCommand(ctx, undefined, { filter: '{"createdAt":{"$gte":0}}', all: true, yes: true })).toMatchObject({ erased: 2 });
    await withProvider(ctx, (p) => void p.remember({ content: "one more" }));
    expect(await forgetCommand(ctx, undefined, { all: true, yes: true })).toMatchObject({ erased: 1 });
  });

  it("search --filter restricts the items searched; purge deletes expired items", async () => {
    await seedUsers();
    const hits = await searchCommand(ctx, "alpha", { filter: '{"tags":{"any":["work"]},"userId":"b"}', json: true });
    expect(hits.map((h) => h.content)).toEqual(["alpha note of user b"]);
    await expect(searchCommand(ctx, "alpha", { filter: '{"tags":"work"}' })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await withProvider(ctx, (p) => {
      p.remember({ content: "expired note", expiresAt: Date.now() - 1000 });
    });
    expect(await purgeCommand(ctx, { json: true })).toEqual({ purged: 1 });
    expect(await purgeCommand(ctx)).toEqual({ purged: 0 });
    expect(out.pop()).toBe("Purged 0 expired item(s).");
  });

  it("export and import carry expiresAt", async () => {
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
    await withProvider(ctx, (p) => {
      p.remember({ content: "visa appointment on friday", expiresAt });
    });
    const file = path.join(home, "dump.jsonl");
    await exportCommand(ctx, file, { json: true });
    const record = fs
      .readFileSync(file, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l))
      .find((r) => r.content.startsWith("visa"));
    expect(record.expiresAt).toBe(expiresAt);
    const other = fs.mkdtempSync(path.join(os.tmpdir(), "sqlite-cli-c-"));
    try {
      await importCommand({ ...ctx, hermesHome: other }, file, { json: true });
      const [hit] = await searchCommand({ ...ctx, hermesHome: other }, "visa appointment", { json: true });
      expect(hit?.expiresAt).toBe(expiresAt);
    } finally {
      fs.rmSync(other, { recursive: true, force: true });
    }
  });
});
