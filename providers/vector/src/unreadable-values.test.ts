import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { HermesMemoryError } from "@hermes/memory-core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runExport, runReindex, runStats, type CliIo } from "./cli.js";
import { Sidecar } from "./local/sidecar.js";
import { VectorMemoryProvider } from "./vector-memory-provider.js";

let home: string;
beforeEach(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), "vector-unreadable-"));
});
afterEach(() => {
  fs.rmSync(home, { recursive: true, force: true });
});

/** The stored text of the second turn. */
const DUSK = "User: when does the harbour close?\nAssistant: at dusk";

/** Bytes that are not UTF-8 (and not JSON). */
const GARBAGE = Buffer.from([0xff, 0xfe, 0x00, 0x7b]);

const ctx = () => ({ hermesHome: home, providerName: "vector" });

function io(): CliIo & { out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, stdout: (t) => void out.push(t), stderr: (t) => void err.push(t), isTTY: false };
}

async function open(hybrid = true): Promise<VectorMemoryProvider> {
  const provider = new VectorMemoryProvider({ hybrid, env: {} });
  await provider.initialize("s2", { hermesHome: home, platform: "cli" });
  return provider;
}

/** A sidecar with two turns and three facts (tags, metadata); returns its file and the facts' ids by text. */
async function writeSidecar(): Promise<{ file: string; ids: Record<string, string> }> {
  const p = await open();
  p.syncTurn("the harbour lantern is lit", "a harbour ferry leaves", { sessionId: "s1" });
  p.syncTurn("when does the harbour close?", "at dusk", { sessionId: "s1" });
  p.remember({ content: "harbour boats are blue", kind: "fact", tags: ["blue"], metadata: { project: "sea" } });
  p.remember({ content: "harbour walks at dawn", kind: "fact", tags: ["green"], metadata: { project: "land" } });
  p.remember({ content: "harbour crane is old", kind: "fact", tags: ["grey"], metadata: { project: "sea" } });
  await p.flush();
  await p.shutdown();
  const file = path.join(home, "memory", "vector", "sidecar.sqlite");
  const db = new Database(file, { readonly: true });
  const ids = Object.fromEntries(
    (db.prepare(`SELECT text, id FROM records`).all() as Array<{ text: string; id: string }>).map((r) => [r.text, r.id]),
  );
  db.close();
  return { file, ids };
}

/** Write `value` into `column` of the row with this text, as another program would (`unguarded`: it drops the session index, which refuses metadata SQLite cannot read). */
function overwrite(file: string, text: string, column: string, value: unknown, unguarded = false): void {
  const db = new Database(file);
  try {
    if (unguarded) {
      const triggers = db.prepare(`SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'records_%'`).all() as Array<{
        name: string;
        sql: string;
      }>;
      db.exec(`DROP INDEX records_turns_by_session; ${triggers.map((t) => `DROP TRIGGER ${t.name};`).join(" ")}`);
      db.prepare(`UPDATE records SET ${column} = ? WHERE text = ?`).run(value, text);
      for (const t of triggers) db.exec(t.sql);
    } else {
      db.prepare(`UPDATE records SET ${column} = ? WHERE text = ?`).run(value, text);
    }
  } finally {
    db.close();
  }
}

/** `typeof` of every stored source and filter column, and the row count. */
function storedTypes(file: string): { rows: number; odd: unknown[] } {
  const db = new Database(file, { readonly: true });
  try {
    const rows = db.prepare(`SELECT COUNT(*) FROM records`).pluck().get() as number;
    const odd = db
      .prepare(
        `SELECT key FROM records WHERE typeof(namespace) <> 'text' OR typeof(id) <> 'text' OR typeof(text) <> 'text' OR typeof(metadata) <> 'text'
           OR NOT json_valid(metadata) OR json_type(metadata) <> 'object' OR typeof(tags) <> 'text' OR NOT json_valid(tags) OR typeof(user_meta) <> 'text' OR NOT json_valid(user_meta)`,
      )
      .pluck()
      .all();
    return { rows, odd };
  } finally {
    db.close();
  }
}

async function expectStorageFailed(fn: () => unknown, pattern: RegExp): Promise<void> {
  let caught: unknown;
  try {
    await fn();
  } catch (error) {
    caught = error;
  }
  expect(HermesMemoryError.isInstance(caught), String(caught)).toBe(true);
  expect(caught).toMatchObject({ code: "STORAGE_FAILED" });
  expect((caught as Error).message).toMatch(pattern);
}

describe("vector sidecar values that cannot be read as text or JSON", () => {
  it("reads BLOB ids and texts, non-object metadata and unreadable filter columns as a repair stores them; reindex repairs them and keeps every original", async () => {
    const { file, ids } = await writeSidecar();
    overwrite(file, "harbour boats are blue", "text", GARBAGE);
    overwrite(file, "harbour walks at dawn", "id", Buffer.from(ids["harbour walks at dawn"]!));
    overwrite(file, "harbour walks at dawn", "tags", GARBAGE);
    overwrite(file, "harbour crane is old", "metadata", Buffer.from('{"kind":"fact","tags":["grey"],"extra":"{\\"project\\":\\"sea\\"}"}'));
    overwrite(file, "harbour crane is old", "user_meta", "not json");
    overwrite(file, DUSK, "metadata", "[1,2]", true);

    for (const hybrid of [true, false]) {
      const p = await open(hybrid);
      try {
        const hits = await p.search("harbour", { limit: 10 });
        expect(hits.every((h) => typeof h.id === "string" && typeof h.content === "string")).toBe(true);
        expect(hits.map((h) => h.id)).toEqual(expect.arrayContaining([ids["harbour walks at dawn"], ids["harbour crane is old"]]));
        const garbled = hits.find((h) => h.id === ids["harbour boats are blue"]);
        expect(garbled?.content).toBe("\uFFFD\uFFFD\u0000{");
        expect(garbled?.metadata.hermesUnreadable).toEqual({ text: { base64: GARBAGE.toString("base64") } });
        expect((await p.search("harbour", { tags: { any: ["blue"] } })).map((h) => h.id)).toEqual([ids["harbour boats are blue"]]);
      } finally {
        await p.shutdown();
      }
    }
    const p = await open();
    try {
      // A BLOB id is found by its text; metadata that is not an object reads as {} with the original kept.
      expect(await p.get(ids["harbour walks at dawn"]!)).toMatchObject({ content: "harbour walks at dawn", tags: ["green"] });
      expect((await p.get(ids[DUSK]!))?.metadata).toMatchObject({ hermesUnreadable: { metadata: { text: "[1,2]" } } });
      expect((await p.stats()).items).toBe(5);
    } finally {
      await p.shutdown();
    }
    const exported = io();
    expect(await runExport(ctx(), undefined, {}, exported)).toBe(0);
    const items = exported.out.map((l) => JSON.parse(l) as { id: string; content: string; metadata: Record<string, unknown> });
    expect(items).toHaveLength(5);
    expect(items.find((i) => i.id === ids["harbour walks at dawn"])?.content).toBe("harbour walks at dawn");

    const reindexed = io();
    expect(await runReindex(ctx(), {}, reindexed), reindexed.err.join("")).toBe(0);
    expect(storedTypes(file)).toEqual({ rows: 5, odd: [] });
    const after = await open();
    try {
      // Filter columns are computed again from the metadata: the grey and green items pass their filters again.
      expect((await after.search("harbour", { tags: { any: ["green"] } })).map((h) => h.id)).toEqual([ids["harbour walks at dawn"]]);
      expect((await after.search("harbour", { metadata: { project: "sea" } })).map((h) => h.id).sort()).toEqual(
        [ids["harbour boats are blue"], ids["harbour crane is old"]].sort(),
      );
      expect((await after.get(ids["harbour boats are blue"]!))?.metadata.hermesUnreadable).toEqual({
        text: { base64: GARBAGE.toString("base64") },
      });
      expect((await after.get(ids[DUSK]!))?.metadata.hermesUnreadable).toEqual({ metadata: { text: "[1,2]" } });
    } finally {
      await after.shutdown();
    }
  });

  it("metadata SQLite cannot read fails search, filters and erasure as STORAGE_FAILED naming the item and the repair; reads, export and stats work; reindex repairs it", async () => {
    const { file, ids } = await writeSidecar();
    overwrite(file, "harbour crane is old", "metadata", GARBAGE, true);
    const crane = ids["harbour crane is old"]!;
    const repair = new RegExp(`id "${crane}".*hermes-memory vector reindex`);
    const p = await open();
    try {
      await expectStorageFailed(() => p.search("harbour crane"), repair);
      // Filters over the metadata (kind, session) read every row's.
      await expectStorageFailed(() => p.search("harbour", { kind: "fact" }), repair);
      await expectStorageFailed(() => p.countWhere({ sessionId: "s1" }), repair);
      await expectStorageFailed(() => p.forgetWhere({ sessionId: "s1" }), repair);
      expect((await p.get(crane))?.metadata).toMatchObject({ hermesUnreadable: { metadata: { base64: GARBAGE.toString("base64") } } });
      expect(await p.stats()).toMatchObject({ items: 5, sessions: 1, byKind: { turn: 2, fact: 2 } });
    } finally {
      await p.shutdown();
    }
    const stats = io();
    expect(await runStats(ctx(), { json: true }, stats)).toBe(0);
    const exported = io();
    expect(await runExport(ctx(), undefined, {}, exported)).toBe(0);
    expect(exported.out).toHaveLength(5);

    expect(await runReindex(ctx(), {}, io())).toBe(0);
    expect(storedTypes(file)).toEqual({ rows: 5, odd: [] });
    const after = await open();
    try {
      expect((await after.search("harbour crane")).map((h) => h.id)).toContain(crane);
      expect(await after.forgetWhere({ sessionId: "s1" })).toBe(2);
      expect((await after.get(crane))?.metadata.hermesUnreadable).toEqual({ metadata: { base64: GARBAGE.toString("base64") } });
    } finally {
      await after.shutdown();
    }
    // The repair recreated the session index another program dropped.
    const db = new Database(file, { readonly: true });
    expect(db.prepare(`SELECT name FROM sqlite_master WHERE name = 'records_turns_by_session'`).pluck().get()).toBe(
      "records_turns_by_session",
    );
    db.close();
  });

  it("migrating an older file first makes its values readable (it failed on metadata that is not JSON), keeping every row and original", () => {
    const file = path.join(home, "sidecar.sqlite");
    const v1 = new Database(file);
    v1.exec(`
      CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE records (key INTEGER PRIMARY KEY, namespace TEXT NOT NULL, id TEXT NOT NULL, text TEXT NOT NULL DEFAULT '',
        metadata TEXT NOT NULL DEFAULT '{}', vector BLOB, UNIQUE (namespace, id));
      PRAGMA user_version = 1;
    `);
    const insert = v1.prepare(`INSERT INTO records (namespace, id, text, metadata) VALUES (?, ?, ?, ?)`);
    insert.run("ns", "a", "the first harbour turn", '{"kind":"turn","session_id":"s"}');
    insert.run("ns", "b", "not json harbour", "not json");
    insert.run("ns", Buffer.from("c"), Buffer.from("a blob harbour"), GARBAGE);
    // A BLOB id whose text another row of its namespace already has: both rows stay.
    insert.run("ns", Buffer.from("a"), "a second a", "{}");
    insert.run("ns", "d", "the next harbour turn", '{"kind":"turn","session_id":"s"}');
    v1.close();

    const sidecar = Sidecar.open(file);
    try {
      expect(sidecar.db.pragma("user_version", { simple: true })).toBe(7);
      const rows = [...sidecar.iterate("ns")];
      expect(rows.map((r) => [r.id, r.text])).toEqual([
        ["a", "the first harbour turn"],
        ["b", "not json harbour"],
        ["c", "a blob harbour"],
        ["a~4", "a second a"],
        ["d", "the next harbour turn"],
      ]);
      expect(rows[1]!.metadata.hermesUnreadable).toEqual({ metadata: { text: "not json" } });
      expect(rows[2]!.metadata.hermesUnreadable).toEqual({ metadata: { base64: GARBAGE.toString("base64") } });
      expect(rows[3]!.metadata.hermesUnreadable).toEqual({ id: { text: "a" } });
      expect(
        sidecar
          .keywordSearch("ns", "harbour", 10)
          .map((h) => h.id)
          .sort(),
      ).toEqual(["a", "b", "c", "d"]);
      // Context of the next turn in its session is the first one.
      expect(sidecar.db.prepare(`SELECT prev1 FROM records WHERE id = 'd'`).pluck().get()).toBe("the first harbour turn");
    } finally {
      sidecar.close();
    }
  });
});
