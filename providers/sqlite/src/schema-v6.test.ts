import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { clipContext, turnDateText } from "@hermes/memory-provider-kit/sqlite";
import { closeDatabase, openDatabase, refillIndex, type Db } from "./database.js";
import { MemoryStore, type NewItem } from "./memory-store.js";
import { CONTEXT_COLUMNS } from "./test-support/context-columns.js";
import { seededRandom } from "@hermes/test-support";

let dir: string;
const opened: Db[] = [];

function open(file: string): { db: Db; store: MemoryStore } {
  const db = openDatabase(file);
  opened.push(db);
  return { db, store: new MemoryStore(db, file) };
}

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sqlite-v6-"));
});
afterEach(() => {
  for (const db of opened.splice(0)) if (db.open) closeDatabase(db);
  fs.rmSync(dir, { recursive: true, force: true });
});

const WEIGHTS = "1, 0.25, 0.3, 0.15, 0.25";
const FTS_COLUMNS = "content, speaker, prev1, prev2, session_date";

interface ItemRow {
  id: number;
  kind: string;
  session_id: string | null;
  speaker: string;
  content: string;
  metadata: string;
  created_at: number;
}

/**
 * A contentless index `ref_fts` built from scratch beside `items_fts`, its values computed here
 * from the items as they are now: each turn's context is the start of the two turns before it in
 * its session (by id), its date the kit's `turnDateText` of its metadata. Independent of the
 * stored previous-turn ids and of every trigger.
 */
function buildReference(db: Db): void {
  db.exec(`DROP TABLE IF EXISTS ref_fts;
    CREATE VIRTUAL TABLE ref_fts USING fts5(${FTS_COLUMNS}, content = '', tokenize = 'porter unicode61 remove_diacritics 2');`);
  const rows = db.prepare(`SELECT id, kind, session_id, speaker, content, metadata, created_at FROM items ORDER BY id`).all() as ItemRow[];
  const bySession = new Map<string, string[]>();
  const insert = db.prepare(`INSERT INTO ref_fts(rowid, ${FTS_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)`);
  for (const row of rows) {
    let prev1 = "";
    let prev2 = "";
    if (row.kind === "turn" && row.session_id !== null && row.session_id !== "") {
      const before = bySession.get(row.session_id) ?? [];
      prev1 = clipContext(before[0] ?? "");
      prev2 = clipContext(before[1] ?? "");
      bySession.set(row.session_id, [row.content, ...before].slice(0, 2));
    }
    const date = turnDateText(row.kind, JSON.parse(row.metadata) as Record<string, unknown>, row.created_at);
    insert.run(row.id, row.content, row.speaker, prev1, prev2, date);
  }
}

/** Every match of `queries` in `table` with its BM25 score (the provider's weights), by rowid. */
function ranking(db: Db, table: string, queries: readonly string[]): string[] {
  const statement = db.prepare(`SELECT rowid, bm25(${table}, ${WEIGHTS}) FROM ${table} WHERE ${table} MATCH ? ORDER BY rowid`).raw(true);
  const out: string[] = [];
  for (const query of queries)
    for (const [rowid, score] of statement.all(query) as Array<[number, number]>) out.push(`${query} #${rowid} ${score.toPrecision(12)}`);
  return out;
}

/** The index compared with one built from scratch: matches and BM25 scores, and the length records. */
function indexDifferences(
  db: Db,
  queries: readonly string[],
): { ranking: [string[], string[]]; docsize: [unknown, unknown]; entries: [number, number] } {
  buildReference(db);
  const docsize = (table: string) => db.prepare(`SELECT id, hex(sz) FROM ${table}_docsize ORDER BY id`).raw(true).all();
  return {
    ranking: [ranking(db, "items_fts", queries), ranking(db, "ref_fts", queries)],
    docsize: [docsize("items_fts"), docsize("ref_fts")],
    entries: [
      Number(db.prepare(`SELECT COUNT(*) FROM items_fts_docsize`).pluck().get()),
      Number(db.prepare(`SELECT COUNT(*) FROM items`).pluck().get()),
    ],
  };
}

function expectIndexExact(db: Db, queries: readonly string[]): void {
  const diff = indexDifferences(db, queries);
  expect(diff.ranking[1].length).toBeGreaterThan(0);
  expect(diff.ranking[0]).toEqual(diff.ranking[1]);
  expect(diff.docsize[0]).toEqual(diff.docsize[1]);
  expect(diff.entries[0]).toBe(diff.entries[1]);
}

const WORDS = [
  "harbour",
  "lighthouse",
  "pottery",
  "violin",
  "garden",
  "ferry",
  "museum",
  "puppy",
  "festival",
  "marathon",
  "bakery",
  "river",
];
const FILLER = ["we", "went", "to", "the", "last", "weekend", "really", "fun", "with", "friends", "again"];
const QUERIES = [
  ...WORDS,
  ...WORDS.slice(0, 4).map((w) => `prev1 : ${w}`),
  ...WORDS.slice(4, 8).map((w) => `prev2 : ${w}`),
  "session_date : may",
  "speaker : gina",
  "weekend OR friends",
];

/** A random sequence of writes, edits and erasures over a few sessions and users. */
function churn(store: MemoryStore, random: () => number, steps: number): void {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const text = () => {
    const words = Array.from({ length: 3 + Math.floor(random() * 12) }, () => (random() < 0.35 ? pick(WORDS) : pick(FILLER)));
    // Now and then a turn longer than the context cut, with words past it.
    if (random() < 0.15)
      words.push(
        ..."and then very very very very very very very very very very long story".split(" "),
        ...Array.from({ length: 30 }, () => pick(WORDS)),
      );
    return words.join(" ") + (random() < 0.3 ? "?" : ".");
  };
  const ids = () => store.db.prepare(`SELECT id FROM items ORDER BY id`).pluck().all() as number[];
  let now = 1_700_000_000_000;
  for (let step = 0; step < steps; step++) {
    now += 60_000;
    const r = random();
    if (r < 0.5) {
      const batch: NewItem[] = Array.from({ length: 1 + Math.floor(random() * 4) }, () => {
        const session = `s${Math.floor(random() * 5)}`;
        const kind = random() < 0.85 ? "turn" : "fact";
        return {
          kind,
          sessionId: session,
          userId: pick(["u1", "u2", "u3"]),
          speaker: pick(["Gina", "Jon", "Caroline"]),
          content: text(),
          createdAt: now,
          metadata: random() < 0.5 ? { date: pick(["8 May, 2023", "9 June, 2023"]) } : {},
          expiresAt: random() < 0.2 ? now + Math.floor(random() * 20) * 60_000 : null,
        };
      });
      store.insertMany(batch);
    } else if (r < 0.65) {
      const all = ids();
      if (all.length > 0) store.update(String(pick(all)), { content: text() });
    } else if (r < 0.72) {
      const all = ids();
      if (all.length > 0) store.update(String(pick(all)), { metadata: { date: pick(["1 July, 2024", "2 August, 2024"]) } });
    } else if (r < 0.85) {
      const all = ids();
      if (all.length > 0) store.forget(String(pick(all)));
    } else if (r < 0.9) {
      store.purgeExpired(now);
    } else if (r < 0.94) {
      store.forgetWhere({ filter: { userId: pick(["u1", "u2", "u3"]), sessionId: `s${Math.floor(random() * 5)}` }, confirmAll: true });
    } else if (r < 0.97) {
      // Several turns of one session in one statement (consecutive ones included).
      const all = ids();
      const from = pick(all.length > 0 ? all : [0]);
      store.forgetWhere({
        filter: {
          ids: all
            .filter((id) => id >= from)
            .slice(0, 3)
            .map(String),
        },
        confirmAll: false,
      });
    } else {
      store.forgetWhere({ filter: { userId: pick(["u1", "u2", "u3"]) }, confirmAll: true });
    }
  }
}

describe("schema v6: contentless index kept exact", () => {
  it("after random inserts, edits, forgets, expiries and erasures the index equals one built from scratch", () => {
    const { db, store } = open(path.join(dir, "memory.db"));
    const random = seededRandom(61);
    for (let round = 0; round < 4; round++) {
      churn(store, random, 120);
      expectIndexExact(db, QUERIES);
      expect(store.doctor()).toMatchObject({ ok: true, ftsConsistent: true });
    }
    expect(Number(db.prepare(`SELECT COUNT(*) FROM items WHERE kind = 'turn'`).pluck().get())).toBeGreaterThan(50);
  });

  it("the comparison notices a trigger that removes a turn's entry with a wrong value", () => {
    const { db, store } = open(path.join(dir, "memory.db"));
    // Sabotage: the next turns' entries are removed without their second previous turn's text.
    const sql = db.prepare(`SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'items_bd_context'`).pluck().get() as string;
    const ctx2 = sql.indexOf("COALESCE((SELECT substr(ctx.content", sql.indexOf("n.prev_id") + 1);
    const broken = `${sql.slice(0, ctx2)}''${sql.slice(sql.indexOf("n.prev2_id), '')", ctx2) + "n.prev2_id), '')".length)}`;
    expect(broken).not.toBe(sql);
    db.exec(`DROP TRIGGER items_bd_context; ${broken}`);
    // FTS5 either notices the damage itself (SQLITE_CORRUPT on a later change) or ranks differently.
    let noticed = false;
    try {
      churn(store, seededRandom(61), 120);
      const diff = indexDifferences(db, QUERIES);
      noticed =
        JSON.stringify(diff.ranking[0]) !== JSON.stringify(diff.ranking[1]) ||
        JSON.stringify(diff.docsize[0]) !== JSON.stringify(diff.docsize[1]);
    } catch (error) {
      noticed = /malformed|corrupt/i.test(String(error));
    }
    expect(noticed).toBe(true);
  });

  it("refillIndex indexes every item again, and doctor counts index entries against items", () => {
    const { db, store } = open(path.join(dir, "memory.db"));
    churn(store, seededRandom(7), 150);
    // An entry for a row that does not exist (left behind by a broken delete).
    db.exec(`INSERT INTO items_fts(rowid, content) VALUES (99999999, 'ghost harbour')`);
    const report = store.doctor();
    expect(report.ok).toBe(false);
    expect(report.ftsConsistent).toBe(false);
    expect(report.problems.join("\n")).toMatch(/FTS index holds (\d+) entries for (\d+) items.*hermes-memory sqlite vacuum/);
    const steps: number[] = [];
    db.transaction(() => refillIndex(db, (rows) => steps.push(rows))).immediate();
    expect(steps.reduce((a, b) => a + b, 0)).toBe(Number(db.prepare(`SELECT COUNT(*) FROM items`).pluck().get()));
    expectIndexExact(db, QUERIES);
    expect(store.doctor()).toMatchObject({ ok: true, ftsConsistent: true });
    // vacuum does the same.
    db.exec(`INSERT INTO items_fts(rowid, content) VALUES (99999999, 'ghost harbour')`);
    store.vacuum();
    expectIndexExact(db, QUERIES);
    expect(store.doctor()).toMatchObject({ ok: true, ftsConsistent: true });
  });

  it("items keep no context text: the FTS table is contentless and items has no prev1/prev2", () => {
    const { db } = open(path.join(dir, "memory.db"));
    const columns = db.prepare(`SELECT name FROM pragma_table_info('items')`).pluck().all();
    expect(columns).not.toContain("prev1");
    expect(columns).not.toContain("prev2");
    expect(columns).toEqual(expect.arrayContaining(["prev_id", "prev2_id", "session_date"]));
    expect(db.prepare(`SELECT sql FROM sqlite_master WHERE name = 'items_fts'`).pluck().get()).toMatch(/content = ''/);
    expect(db.prepare(`SELECT COUNT(*) FROM sqlite_master WHERE name = 'items_fts_content'`).pluck().get()).toBe(0);
  });
});

describe("schema v5 → v6 migration", () => {
  const fixture = fileURLToPath(new URL("./test-support/fixtures/schema-v5.db", import.meta.url));
  const ITEM_COLUMNS = `id, kind, session_id, user_id, speaker, content, tags, metadata, digest, created_at, session_date, expires_at, prev_id, prev2_id, asks`;

  it("migrates a store written by the v5 package: every item kept, the same context, the same matches and BM25 scores", () => {
    const file = path.join(dir, "memory.db");
    fs.copyFileSync(fixture, file);
    const raw = new Database(file, { readonly: true });
    expect(raw.pragma("user_version", { simple: true })).toBe(5);
    const items = raw.prepare(`SELECT ${ITEM_COLUMNS}, prev1, prev2 FROM items ORDER BY id`).all();
    const v5Ranking = ranking(raw, "items_fts", QUERIES);
    raw.close();
    expect(items.length).toBeGreaterThan(80);
    expect(v5Ranking.length).toBeGreaterThan(50);

    const progress: Array<[number, number]> = [];
    const db = openDatabase(file, { onMigrationProgress: (done, total) => progress.push([done, total]) });
    opened.push(db);
    expect(db.pragma("user_version", { simple: true })).toBe(6);
    expect(progress[0]).toEqual([0, items.length]);
    expect(progress.at(-1)).toEqual([items.length, items.length]);
    expect(db.prepare(`SELECT ${ITEM_COLUMNS}, ${CONTEXT_COLUMNS} FROM items ORDER BY id`).all()).toEqual(items);
    expect(ranking(db, "items_fts", QUERIES)).toEqual(v5Ranking);
    expectIndexExact(db, QUERIES);
    const store = new MemoryStore(db, file);
    expect(store.doctor()).toMatchObject({ ok: true, ftsConsistent: true, items: items.length, schemaVersion: 6 });
  });

  it("searches the migrated store exactly like a store written fresh under v6 with the same items", () => {
    const file = path.join(dir, "memory.db");
    fs.copyFileSync(fixture, file);
    const migrated = open(file);
    const fresh = open(path.join(dir, "fresh.db"));
    const rows = migrated.db.prepare(`SELECT * FROM items ORDER BY id`).all() as Array<
      ItemRow & { user_id: string | null; tags: string; digest: string | null; expires_at: number | null }
    >;
    // The same items with the same ids: the fixture's gaps are filled with facts erased at the end
    // (ranking reads the largest id as the store's size).
    const nextId = fresh.db.prepare(`SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'items'), 0) + 1`).pluck();
    let filler = 0;
    for (const r of rows) {
      while (Number(nextId.get()) < r.id) fresh.store.insertMany([{ kind: "fact", content: `filler ${filler++}` }]);
      const [id] = fresh.store.insertMany([
        {
          kind: r.kind as NewItem["kind"],
          content: r.content,
          sessionId: r.session_id ?? undefined,
          userId: r.user_id ?? undefined,
          speaker: r.speaker,
          tags: JSON.parse(r.tags) as string[],
          metadata: JSON.parse(r.metadata) as Record<string, unknown>,
          digest: r.digest ?? undefined,
          createdAt: r.created_at,
          expiresAt: r.expires_at,
        },
      ]);
      expect(Number(id)).toBe(r.id);
    }
    fresh.db.exec(`DELETE FROM items WHERE content LIKE 'filler %' AND kind = 'fact'`);
    expect(fresh.db.prepare(`SELECT id FROM items ORDER BY id`).pluck().all()).toEqual(rows.map((r) => r.id));
    const byContent = (db: Db, query: string) =>
      db
        .prepare(
          `SELECT i.content, bm25(items_fts, ${WEIGHTS}) FROM items_fts f JOIN items i ON i.id = f.rowid WHERE items_fts MATCH ? ORDER BY 2, i.id`,
        )
        .raw(true)
        .all(query)
        .map((row) => {
          const [content, score] = row as [string, number];
          return `${content} ${score.toPrecision(12)}`;
        });
    for (const query of QUERIES) expect(byContent(migrated.db, query)).toEqual(byContent(fresh.db, query));
    const hits = (store: MemoryStore, query: string) =>
      store.search(query, { limit: 10 }).map((h) => `${h.content} ${h.score.toPrecision(10)}`);
    for (const query of [
      "where did you go hiking by the harbour?",
      "pottery class",
      "the puppy at the festival",
      "green tea",
      "ferry late",
      "museum river weekend",
    ]) {
      expect(hits(migrated.store, query)).toEqual(hits(fresh.store, query));
    }
  });

  it("a failing migration rolls back: the v5 store is left as it was", () => {
    const file = path.join(dir, "memory.db");
    fs.copyFileSync(fixture, file);
    // A view over the old context column makes dropping it fail, after the new index is filled.
    const raw = new Database(file);
    raw.exec(`CREATE VIEW items_context AS SELECT prev1 FROM items`);
    const count = raw.prepare(`SELECT COUNT(*) FROM items`).pluck().get();
    const v5Ranking = ranking(raw, "items_fts", QUERIES);
    raw.close();
    let failed: unknown;
    try {
      openDatabase(file).close();
    } catch (error) {
      failed = error;
    }
    expect(failed).toMatchObject({ code: "STORAGE_FAILED" });
    const check = new Database(file, { readonly: true });
    expect(check.pragma("user_version", { simple: true })).toBe(5);
    expect(check.prepare(`SELECT COUNT(*) FROM items`).pluck().get()).toBe(count);
    expect(check.prepare(`SELECT COUNT(*) FROM pragma_table_info('items') WHERE name IN ('prev1', 'prev2')`).pluck().get()).toBe(2);
    expect(check.prepare(`SELECT sql FROM sqlite_master WHERE name = 'items_fts'`).pluck().get()).toMatch(/content = 'items'/);
    expect(ranking(check, "items_fts", QUERIES)).toEqual(v5Ranking);
    check.close();
  });
});
