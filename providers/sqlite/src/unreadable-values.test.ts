import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { HermesMemoryError } from "@hermes/memory-core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { doctorCommand, exportCommand, vacuumCommand, withProvider, type CommandContext } from "./commands.js";
import { SqliteMemoryProvider } from "./sqlite-memory-provider.js";
import { writeV2File } from "./test-support/v2-schema.js";

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sqlite-unreadable-"));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Bytes that are not UTF-8 (and not JSON). */
const GARBAGE = Buffer.from([0xff, 0xfe, 0x00, 0x7b]);

/** JSON cut off, as UTF-8 bytes. */
const TRUNCATED = Buffer.from('{"project":"sea","n":');

/** Raw values of every column the repair covers, by id. */
function rawValues(file: string): Array<Record<string, unknown>> {
  const db = new Database(file, { readonly: true });
  try {
    return db
      .prepare(
        `SELECT id, typeof(session_id) AS ts, typeof(speaker) AS tsp, typeof(content) AS tc, typeof(tags) AS tt, typeof(metadata) AS tm,
                session_id, speaker, content, tags, metadata FROM items ORDER BY id`,
      )
      .all() as Array<Record<string, unknown>>;
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

describe("values SQLite's JSON functions cannot read", () => {
  it("a v2 file with BLOB or non-JSON metadata, tags and text is migrated to readable text, keeping every original; search and filters work", async () => {
    const file = path.join(dir, "old.db");
    writeV2File(file, [
      { kind: "turn", session: "s", speaker: "ann", content: "the harbour lantern", createdAt: 1 },
      { kind: "turn", session: "s", speaker: "bob", content: "a harbour ferry", createdAt: 2 },
      { kind: "fact", session: null, content: "likes harbour walks", metadata: "not json at all", createdAt: 3 },
      { kind: "fact", session: null, content: "harbour boats are blue", metadata: '{"project":"sea"}', createdAt: 4 },
      { kind: "turn", session: "s", speaker: "cy", content: "after the harbour ferry", createdAt: 5 },
    ]);
    const old = new Database(file);
    // Written by an older version or another program: JSON as a BLOB, bytes that are not UTF-8,
    // text columns as BLOBs.
    old
      .prepare(`UPDATE items SET metadata = ?, tags = ? WHERE id = 1`)
      .run(Buffer.from('{"project":"sea","n":1}'), Buffer.from('["work"]'));
    old.prepare(`UPDATE items SET tags = ?, speaker = ? WHERE id = 2`).run(GARBAGE, Buffer.from("bob"));
    old.prepare(`UPDATE items SET metadata = ?, session_id = ? WHERE id = 5`).run(GARBAGE, Buffer.from("s"));
    old.close();

    const provider = new SqliteMemoryProvider({ path: file });
    await provider.initialize("after-upgrade", { hermesHome: dir, platform: "cli" });
    try {
      expect(
        provider
          .search("harbour", { limit: 10 })
          .map((h) => h.id)
          .sort(),
      ).toEqual(["1", "2", "3", "4", "5"]);
      expect(
        provider
          .search("harbour", { metadata: { project: "sea" } })
          .map((h) => h.id)
          .sort(),
      ).toEqual(["1", "4"]);
      expect(provider.search("harbour", { tags: { any: ["work"] } }).map((h) => h.id)).toEqual(["1"]);
      expect(provider.search("ferry", { sessionId: "s" }).map((h) => h.id)).toEqual(expect.arrayContaining(["2", "5"]));
      expect(provider.get("1")).toMatchObject({ metadata: { project: "sea", n: 1 }, tags: ["work"] });
      // Originals that were not readable are kept in metadata: text as text, other bytes in base64.
      expect(provider.get("2")!.metadata).toEqual({ hermesUnreadable: { tags: { base64: GARBAGE.toString("base64") } } });
      expect(provider.get("3")!.metadata).toEqual({ hermesUnreadable: { metadata: { text: "not json at all" } } });
      expect(provider.get("5")!.metadata).toEqual({ hermesUnreadable: { metadata: { base64: GARBAGE.toString("base64") } } });
      expect(provider.memoryStore!.doctor()).toMatchObject({ ok: true, ftsConsistent: true, items: 5 });
    } finally {
      await provider.shutdown();
    }
    const rows = rawValues(file);
    expect(rows).toHaveLength(5);
    for (const row of rows)
      expect([row.ts === "null" ? "text" : row.ts, row.tsp, row.tc, row.tt, row.tm]).toEqual(["text", "text", "text", "text", "text"]);
    expect(rows.map((r) => [r.session_id, r.speaker, r.tags])).toEqual([
      ["s", "ann", '["work"]'],
      ["s", "bob", "[]"],
      [null, "", "[]"],
      [null, "", "[]"],
      ["s", "cy", "[]"],
    ]);
  });

  it("in a current file, a value another program wrote unreadably fails search and erasure as STORAGE_FAILED naming the item and the repair; reads keep it; vacuum repairs it", async () => {
    const ctx: CommandContext = { hermesHome: dir, providerName: "sqlite", io: { stdout: () => {}, stderr: () => {}, isTTY: false } };
    let dbFile = "";
    await withProvider(ctx, (p) => {
      p.remember({ content: "the lighthouse keeper", kind: "fact", metadata: { project: "sea" } });
      p.remember({ content: "lighthouse lamps need oil", kind: "fact", metadata: { project: "land" } });
      p.remember({ content: "a quiet lighthouse evening", kind: "turn", sessionId: "s1" });
      dbFile = p.memoryStore!.file;
    });
    const other = new Database(dbFile);
    // Cut-off JSON as a BLOB: a metadata filter has to read it.
    other.prepare(`UPDATE items SET metadata = ? WHERE id = 2`).run(TRUNCATED);
    other.prepare(`UPDATE items SET speaker = ? WHERE id = 3`).run(Buffer.from("dana"));
    other.close();

    await withProvider(ctx, async (p) => {
      const repair = /id 2, 3\b.*hermes-memory sqlite vacuum/;
      // A hit whose speaker is a BLOB (SQLite: "JSON cannot hold BLOB values").
      await expectStorageFailed(() => p.search("quiet evening"), repair);
      await expectStorageFailed(() => p.search("keeper lamps", { metadata: { project: "sea" } }), repair);
      await expectStorageFailed(() => p.countWhere({ metadata: { project: "sea" } }), repair);
      await expectStorageFailed(() => p.forgetWhere({ metadata: { project: "sea" } }), repair);
      // Nothing was erased; reads show what a repair will store, original bytes included.
      expect(p.get("1")?.content).toBe("the lighthouse keeper");
      expect(p.get("2")!.metadata).toEqual({ hermesUnreadable: { metadata: { text: TRUNCATED.toString() } } });
      expect(p.list({ limit: 10 }).find((i) => i.id === "3")?.speaker).toBe("dana");
    });
    const exported: string[] = [];
    await exportCommand({ ...ctx, io: { stdout: (t) => exported.push(t), stderr: () => {}, isTTY: false } }, undefined);
    expect(exported.map((l) => JSON.parse(l) as Record<string, unknown>)).toMatchObject([
      { content: "the lighthouse keeper", metadata: { project: "sea" } },
      { content: "lighthouse lamps need oil", metadata: { hermesUnreadable: { metadata: { text: TRUNCATED.toString() } } } },
      { content: "a quiet lighthouse evening", speaker: "dana" },
    ]);
    const before = await doctorCommand(ctx, { json: true });
    expect(before.ok).toBe(false);
    expect(before.problems.join("\n")).toMatch(/item\(s\) 2, 3 .*hermes-memory sqlite vacuum/);

    await vacuumCommand(ctx, { json: true });
    expect(await doctorCommand(ctx, { json: true })).toMatchObject({ ok: true, ftsConsistent: true, items: 3 });
    await withProvider(ctx, (p) => {
      expect(p.search("quiet evening").map((h) => h.id)).toEqual(["3"]);
      expect(
        p
          .search("keeper lamps")
          .map((h) => h.id)
          .sort(),
      ).toEqual(["1", "2"]);
      expect(p.search("keeper lamps", { metadata: { project: "sea" } }).map((h) => h.id)).toEqual(["1"]);
      expect(p.search("dana").map((h) => h.id)).toEqual(["3"]);
      expect(p.get("2")!.metadata).toEqual({ hermesUnreadable: { metadata: { text: TRUNCATED.toString() } } });
    });
    expect(rawValues(dbFile).map((r) => [r.tsp, r.tm])).toEqual([
      ["text", "text"],
      ["text", "text"],
      ["text", "text"],
    ]);
  });

  it("metadata nested deeper than SQLite's JSON functions read (1001 levels) is unreadable too: doctor lists it, vacuum repairs it, filters work again", async () => {
    const ctx: CommandContext = { hermesHome: dir, providerName: "sqlite", io: { stdout: () => {}, stderr: () => {}, isTTY: false } };
    let dbFile = "";
    await withProvider(ctx, (p) => {
      p.remember({ content: "the lighthouse keeper", kind: "fact", metadata: { project: "sea" } });
      p.remember({ content: "lighthouse lamps need oil", kind: "fact", metadata: { project: "land" } });
      dbFile = p.memoryStore!.file;
    });
    const deep = `{"project":"sea","a":${"[".repeat(1001)}${"]".repeat(1001)}}`;
    const other = new Database(dbFile);
    other.prepare(`UPDATE items SET metadata = ? WHERE id = 2`).run(deep);
    other.close();
    await withProvider(ctx, async (p) => {
      await expectStorageFailed(() => p.search("keeper lamps", { metadata: { project: "sea" } }), /id 2\b.*hermes-memory sqlite vacuum/);
      expect(p.get("2")!.metadata).toEqual({ hermesUnreadable: { metadata: { text: deep } } });
    });
    expect((await doctorCommand(ctx, { json: true })).problems.join("\n")).toMatch(/item\(s\) 2 /);
    await vacuumCommand(ctx, { json: true });
    await withProvider(ctx, (p) => {
      expect(p.search("keeper lamps", { metadata: { project: "sea" } }).map((h) => h.id)).toEqual(["1"]);
    });
  });
});
