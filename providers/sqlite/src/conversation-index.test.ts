import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openDatabase } from "./database.js";
import { MemoryStore } from "./memory-store.js";
import { seededRandom } from "@hermes/test-support";
import { writeV2File } from "./test-support/v2-schema.js";
import { downgradeToV4 } from "./test-support/v4-schema.js";
import { CONTEXT_COLUMNS } from "./test-support/context-columns.js";

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sqlite-v3-"));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

const DAY = Date.UTC(2023, 4, 8, 13, 56);

/** A version-2 store with two sessions (interleaved), a turn without session, a fact and a checkpoint. */
function writeV2Store(file: string): void {
  const rows: Array<{ kind: string; session: string | null; speaker: string; content: string; metadata?: object; digest?: string }> = [
    {
      kind: "turn",
      session: "a",
      speaker: "Caroline",
      content: 'Caroline said, "Where did you go hiking?"',
      metadata: { date: "1:56 pm on 8 May, 2023" },
    },
    { kind: "turn", session: "b", speaker: "Mel", content: 'Mel said, "I painted a sunset"' },
    {
      kind: "turn",
      session: "a",
      speaker: "Mel",
      content: 'Mel said, "Yes, last Saturday!"',
      metadata: { date: "1:56 pm on 8 May, 2023" },
    },
    { kind: "fact", session: null, speaker: "", content: "The user likes tea", digest: "f1" },
    {
      kind: "turn",
      session: "a",
      speaker: "Caroline",
      content: 'Caroline said, "Sounds great"',
      metadata: { date: "1:56 pm on 8 May, 2023" },
    },
    { kind: "turn", session: null, speaker: "", content: "a turn without a session" },
    { kind: "checkpoint", session: "b", speaker: "user", content: "user: remember the sunset", digest: "c1" },
    { kind: "turn", session: "b", speaker: "Caroline", content: 'Caroline said, "Lovely colours"' },
  ];
  writeV2File(
    file,
    rows.map((r, i) => ({ ...r, metadata: JSON.stringify(r.metadata ?? {}), createdAt: DAY + i * 1000 })),
  );
}

describe("schema v2 → v5 migration (context columns, expiry, then previous-turn ids)", () => {
  it("keeps every item and fills each turn's context and date", () => {
    const file = path.join(dir, "m.db");
    writeV2Store(file);
    const before = new Database(file, { readonly: true });
    const oldRows = before
      .prepare(`SELECT id, kind, session_id, user_id, speaker, content, tags, metadata, digest, created_at FROM items ORDER BY id`)
      .all();
    before.close();

    const db = openDatabase(file);
    try {
      expect(db.pragma("user_version", { simple: true })).toBe(6);
      const newRows = db
        .prepare(`SELECT id, kind, session_id, user_id, speaker, content, tags, metadata, digest, created_at FROM items ORDER BY id`)
        .all();
      expect(newRows).toEqual(oldRows);
      const context = db.prepare(`SELECT id, ${CONTEXT_COLUMNS}, session_date FROM items ORDER BY id`).raw(true).all();
      expect(context).toEqual([
        [1, "", "", "1:56 pm on 8 May, 2023"],
        [2, "", "", "8 May 2023"],
        [3, 'Caroline said, "Where did you go hiking?"', "", "1:56 pm on 8 May, 2023"],
        [4, "", "", ""],
        [5, 'Mel said, "Yes, last Saturday!"', 'Caroline said, "Where did you go hiking?"', "1:56 pm on 8 May, 2023"],
        [6, "", "", "8 May 2023"],
        [7, "", "", ""],
        [8, 'Mel said, "I painted a sunset"', "", "8 May 2023"],
      ]);
      const store = new MemoryStore(db, file);
      expect(store.doctor()).toMatchObject({ ok: true, ftsConsistent: true, items: 8 });
      // The answer is found through the question before it, now part of its own document.
      const hits = store.search("hiking", { limit: 5 }).map((h) => h.id);
      expect(hits).toContain("3");
      // New turns continue the session's context after the migration.
      const [id] = store.insertMany([{ kind: "turn", sessionId: "a", speaker: "Mel", content: 'Mel said, "It was fun"' }]);
      expect(db.prepare(`SELECT ${CONTEXT_COLUMNS} FROM items WHERE id = ?`).raw(true).get(Number(id))).toEqual([
        'Caroline said, "Sounds great"',
        'Mel said, "Yes, last Saturday!"',
      ]);
    } finally {
      db.close();
    }
  });

  it("forgetting a turn removes its text from the context of the turns after it", () => {
    const file = path.join(dir, "m.db");
    const db = openDatabase(file);
    try {
      const store = new MemoryStore(db, file);
      const ids = store.insertMany([
        { kind: "turn", sessionId: "s", content: "first secretword" },
        { kind: "turn", sessionId: "s", content: "second" },
        { kind: "turn", sessionId: "s", content: "third" },
        { kind: "turn", sessionId: "s", content: "fourth" },
      ]);
      expect(store.search("secretword", { limit: 10 }).length).toBeGreaterThan(1);
      expect(store.forget(ids[0]!)).toBe(true);
      expect(store.search("secretword", { limit: 10 })).toEqual([]);
      expect(db.prepare(`SELECT ${CONTEXT_COLUMNS} FROM items WHERE id = ?`).raw(true).get(Number(ids[2]))).toEqual(["second", ""]);
      expect(store.forget(ids[2]!)).toBe(true);
      expect(db.prepare(`SELECT ${CONTEXT_COLUMNS} FROM items WHERE id = ?`).raw(true).get(Number(ids[3]))).toEqual(["second", ""]);
      expect(store.doctor()).toMatchObject({ ok: true, ftsConsistent: true, items: 2 });
    } finally {
      db.close();
    }
  });

  it("a turn's context includes turns another connection wrote to the same session", () => {
    const file = path.join(dir, "m.db");
    const db1 = openDatabase(file);
    const db2 = openDatabase(file);
    try {
      const a = new MemoryStore(db1, file);
      const b = new MemoryStore(db2, file);
      a.insertMany([{ kind: "turn", sessionId: "s", content: "one" }]);
      b.insertMany([{ kind: "turn", sessionId: "s", content: "two" }]);
      const [id] = a.insertMany([{ kind: "turn", sessionId: "s", content: "three" }]);
      expect(db1.prepare(`SELECT ${CONTEXT_COLUMNS} FROM items WHERE id = ?`).raw(true).get(Number(id))).toEqual(["two", "one"]);
    } finally {
      db1.close();
      db2.close();
    }
  });

  it("fills context in the migration exactly as new writes fill it (long, non-BMP and odd texts)", () => {
    const rng = seededRandom(7);
    const pick = (xs: string[]) => xs[Math.floor(rng() * xs.length)]!;
    const words = ["hiking", "sunset", "\u{1F600}", "caf\u00e9", "x".repeat(150), "pottery", "\u4e2d\u6587", "\u{1F9D1}\u200d\u{1F373}"];
    const items: Array<{ session: string | null; content: string; metadata: string; createdAt: number }> = [];
    for (let i = 0; i < 400; i++) {
      const n = 1 + Math.floor(rng() * 60);
      const content = Array.from({ length: n }, () => pick(words)).join(" ");
      const metadata = pick(['{"date":"7 June, 2023"}', "{}", "not json", '{"date":""}', "[1,2]", '{"date":5}']);
      items.push({
        session: pick(["a", "b", "c", "", "d"]) || (rng() < 0.5 ? null : ""),
        content,
        metadata,
        createdAt: DAY + i * 3_600_000,
      });
    }
    const migratedFile = path.join(dir, "migrated.db");
    writeV2File(
      migratedFile,
      items.map((it) => ({ kind: "turn", session: it.session, content: it.content, metadata: it.metadata, createdAt: it.createdAt })),
    );

    const freshFile = path.join(dir, "fresh.db");
    const fresh = openDatabase(freshFile);
    const migrated = openDatabase(migratedFile);
    try {
      const store = new MemoryStore(fresh, freshFile);
      for (const it of items) {
        let metadata: Record<string, unknown> = {};
        try {
          const parsed = JSON.parse(it.metadata) as unknown;
          if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) metadata = parsed as Record<string, unknown>;
        } catch {
          // stored as {} by the API; the migration reads the raw text and falls back the same way
        }
        store.insertMany([{ kind: "turn", sessionId: it.session ?? undefined, content: it.content, metadata, createdAt: it.createdAt }]);
      }
      const columns = `SELECT id, ${CONTEXT_COLUMNS}, session_date FROM items ORDER BY id`;
      expect(migrated.prepare(columns).raw(true).all()).toEqual(fresh.prepare(columns).raw(true).all());
      expect(new MemoryStore(migrated, migratedFile).doctor()).toMatchObject({ ok: true, ftsConsistent: true, items: items.length });
    } finally {
      fresh.close();
      migrated.close();
    }
  });

  it("editing a turn's text refreshes the context of the two turns after it", () => {
    const file = path.join(dir, "m.db");
    const db = openDatabase(file);
    try {
      const store = new MemoryStore(db, file);
      const ids = store.insertMany([
        { kind: "turn", sessionId: "s", content: "we met at the harbour" },
        { kind: "turn", sessionId: "s", content: "second" },
        { kind: "turn", sessionId: "s", content: "third" },
        { kind: "turn", sessionId: "s", content: "fourth" },
      ]);
      expect(store.search("harbour", { limit: 10 }).map((h) => h.id)).toEqual(expect.arrayContaining([ids[0], ids[1], ids[2]]));
      db.prepare(`UPDATE items SET content = ? WHERE id = ?`).run("we met at the station", Number(ids[0]));
      expect(store.search("harbour", { limit: 10 })).toEqual([]);
      expect(store.search("station", { limit: 10 }).map((h) => h.id)).toEqual(expect.arrayContaining([ids[0], ids[1], ids[2]]));
      expect(db.prepare(`SELECT ${CONTEXT_COLUMNS} FROM items WHERE id = ?`).raw(true).get(Number(ids[2]))).toEqual([
        "second",
        "we met at the station",
      ]);
      expect(db.prepare(`SELECT ${CONTEXT_COLUMNS} FROM items WHERE id = ?`).raw(true).get(Number(ids[3]))).toEqual(["third", "second"]);
      expect(store.doctor()).toMatchObject({ ok: true, ftsConsistent: true, items: 4 });
    } finally {
      db.close();
    }
  });

  it("a read-only open of a store with the previous schema says to open it once with write access", () => {
    const file = path.join(dir, "m.db");
    writeV2Store(file);
    expect(() => openDatabase(file, { readonly: true })).toThrow(/schema version 2.*open it once with write access/s);
    // Nothing was changed by the refused open.
    const raw = new Database(file, { readonly: true });
    expect(raw.pragma("user_version", { simple: true })).toBe(2);
    raw.close();
  });

  it("migrates a database written by the released 0.1.0 through its public API, keeping every item", async () => {
    const { SqliteMemoryProvider } = await import("./sqlite-memory-provider.js");
    const fixture = fileURLToPath(new URL("./test-support/fixtures/release-0.1.0.db", import.meta.url));
    const file = path.join(dir, "memory.db");
    fs.copyFileSync(fixture, file);
    const columns = `SELECT id, kind, session_id, user_id, speaker, content, tags, metadata, digest, created_at FROM items ORDER BY id`;
    const raw = new Database(file, { readonly: true });
    expect(raw.pragma("user_version", { simple: true })).toBe(2);
    const before = raw.prepare(columns).all();
    raw.close();
    expect(before).toHaveLength(11);

    const provider = new SqliteMemoryProvider({ path: file });
    await provider.initialize("after-upgrade", { hermesHome: dir, platform: "cli" });
    try {
      const db = new Database(file, { readonly: true });
      try {
        expect(db.pragma("user_version", { simple: true })).toBe(6);
        expect(db.prepare(columns).all()).toEqual(before);
        // v4: no item of the release expires; the expiry and user indexes exist.
        expect(db.prepare(`SELECT COUNT(*) FROM items WHERE expires_at IS NULL`).pluck().get()).toBe(11);
        expect(
          db
            .prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND name IN ('items_expires', 'items_user') ORDER BY name`)
            .pluck()
            .all(),
        ).toEqual(["items_expires", "items_user"]);
        const context = (id: number) =>
          db.prepare(`SELECT ${CONTEXT_COLUMNS}, session_date FROM items WHERE id = ?`).raw(true).get(id) as string[] | undefined;
        expect(context(2)).toEqual(['Caroline said, "Where did you go hiking last weekend?"', "", "1:56 pm on 8 May, 2023"]);
        expect(context(6)![0]).toBe('Caroline said, "Great, you always wanted to try that!"');
        expect(context(7)).toEqual(["", "", ""]);
      } finally {
        db.close();
      }
      // The answer is found through the question it follows; facts and checkpoints are still found.
      const ids = (q: string) => provider.search(q, { limit: 5 }).map((h) => h.id);
      expect(ids("hiking")).toEqual(expect.arrayContaining(["1", "2"]));
      expect(ids("green tea")).toContain("7");
      expect(ids("billing Postgres")).toEqual(expect.arrayContaining(["10", "11"]));
      expect(provider.memoryStore!.doctor()).toMatchObject({ ok: true, ftsConsistent: true, items: 11, schemaVersion: 6 });
      // New turns of an upgraded session take their context from the turns written by the release.
      provider.syncTurn("Her name is Biscuit.", "Biscuit, got it.", { sessionId: "s3" });
      await provider.flush();
      expect(ids("dog name")).toEqual(expect.arrayContaining(["9", "12"]));
    } finally {
      await provider.shutdown();
    }
  });
});

describe("schema v3 → v5 migration", () => {
  /** A v3 store: today's schema without what v4 added (expires_at and its two indexes). */
  function writeV3Store(file: string): void {
    const db = openDatabase(file);
    const store = new MemoryStore(db, file);
    store.insertMany([
      { kind: "turn", sessionId: "s", userId: "a", content: "we walked along the harbour" },
      { kind: "turn", sessionId: "s", userId: "a", content: "and then had lunch" },
      { kind: "fact", userId: "b", content: "b likes sailing", tags: ["hobby"] },
    ]);
    downgradeToV4(db);
    db.exec(`DROP INDEX items_expires; DROP INDEX items_user; ALTER TABLE items DROP COLUMN expires_at;`);
    db.pragma("user_version = 3");
    db.close();
  }

  it("adds expires_at (NULL for every item) and the indexes, keeping every item, its context and its index entry", () => {
    const file = path.join(dir, "v3.db");
    writeV3Store(file);
    const raw = new Database(file, { readonly: true });
    const all = (context: string) =>
      `SELECT id, kind, session_id, user_id, speaker, content, tags, metadata, digest, created_at, ${context}, session_date FROM items ORDER BY id`;
    const before = raw.prepare(all("prev1, prev2")).all();
    expect(raw.pragma("user_version", { simple: true })).toBe(3);
    expect(raw.prepare(`SELECT COUNT(*) FROM pragma_table_info('items') WHERE name = 'expires_at'`).pluck().get()).toBe(0);
    raw.close();

    const db = openDatabase(file);
    try {
      expect(db.pragma("user_version", { simple: true })).toBe(6);
      expect(db.prepare(all(CONTEXT_COLUMNS)).all()).toEqual(before);
      expect(db.prepare(`SELECT COUNT(*) FROM items WHERE expires_at IS NULL`).pluck().get()).toBe(3);
      // Expired-item lookups and erasure by user use the new partial indexes.
      const plan = (sql: string) =>
        (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as Array<{ detail: string }>).map((r) => r.detail).join("; ");
      expect(plan(`SELECT 1 FROM items WHERE expires_at <= 5 LIMIT 1`)).toMatch(/items_expires/);
      expect(plan(`SELECT id FROM items i WHERE i.user_id = 'a'`)).toMatch(/items_user/);
      const store = new MemoryStore(db, file);
      expect(store.doctor()).toMatchObject({ ok: true, ftsConsistent: true, items: 3, schemaVersion: 6 });
      expect(store.search("harbour lunch", { limit: 5 }).map((h) => h.id)).toEqual(expect.arrayContaining(["1", "2"]));
      const [id] = store.insertMany([{ kind: "fact", content: "expiring fact", expiresAt: Date.now() + 60_000 }]);
      expect(store.get(id!)?.expiresAt).toBeDefined();
    } finally {
      db.close();
    }
  });
});

/** Each turn's previous-turn ids and question flag as the session's turns say they are now. */
function expectedLinks(db: Database.Database): unknown[] {
  return db
    .prepare(
      `SELECT i.id,
         (SELECT p.id FROM items p WHERE p.session_id = i.session_id AND p.kind = 'turn' AND p.id < i.id AND i.kind = 'turn' AND i.session_id <> '' ORDER BY p.id DESC LIMIT 1),
         (SELECT p.id FROM items p WHERE p.session_id = i.session_id AND p.kind = 'turn' AND p.id < i.id AND i.kind = 'turn' AND i.session_id <> '' ORDER BY p.id DESC LIMIT 1 OFFSET 1),
         CASE WHEN i.kind = 'turn' AND (instr(i.content, '?') > 0 OR instr(i.content, '？') > 0) THEN 1 ELSE 0 END
       FROM items i ORDER BY i.id`,
    )
    .raw(true)
    .all();
}
const storedLinks = (db: Database.Database) => db.prepare(`SELECT id, prev_id, prev2_id, asks FROM items ORDER BY id`).raw(true).all();

describe("schema v4 → v5 migration (previous-turn ids stored with each turn)", () => {
  it("migrates a database written by the v4 package, keeping every item, and fills the ids and flags as new writes do", async () => {
    const { SqliteMemoryProvider } = await import("./sqlite-memory-provider.js");
    const fixture = fileURLToPath(new URL("./test-support/fixtures/schema-v4.db", import.meta.url));
    const file = path.join(dir, "memory.db");
    fs.copyFileSync(fixture, file);
    const columns = (context: string) =>
      `SELECT id, kind, session_id, user_id, speaker, content, tags, metadata, digest, created_at, ${context}, session_date, expires_at FROM items ORDER BY id`;
    // The index holds what it held: the same matches with the same BM25 scores.
    const ranked = `SELECT rowid, bm25(items_fts, 1, 0.25, 0.3, 0.15, 0.25) FROM items_fts WHERE items_fts MATCH 'lighthouse OR dog OR pottery OR tea OR saturday OR may OR caroline' ORDER BY rowid`;
    const raw = new Database(file, { readonly: true });
    expect(raw.pragma("user_version", { simple: true })).toBe(4);
    const before = raw.prepare(columns("prev1, prev2")).all();
    const fts = raw.prepare(ranked).raw(true).all();
    expect(fts.length).toBeGreaterThan(5);
    raw.close();
    expect(before).toHaveLength(11);

    const provider = new SqliteMemoryProvider({ path: file });
    await provider.initialize("after-upgrade", { hermesHome: dir, platform: "cli" });
    try {
      const db = provider.memoryStore!.db;
      expect(db.pragma("user_version", { simple: true })).toBe(6);
      expect(db.prepare(columns(CONTEXT_COLUMNS)).all()).toEqual(before);
      expect(db.prepare(ranked).raw(true).all()).toEqual(fts);
      expect(storedLinks(db)).toEqual(expectedLinks(db));
      // The fixture's sessions: s1 (1–3), s2 (4–6), s3 (8, 9: two syncTurn pairs stored as turns).
      expect(db.prepare(`SELECT prev_id, prev2_id FROM items WHERE id = 3`).raw(true).get()).toEqual([2, 1]);
      expect(db.prepare(`SELECT asks FROM items WHERE id = 1`).pluck().get()).toBe(1);
      expect(provider.memoryStore!.doctor()).toMatchObject({ ok: true, ftsConsistent: true, items: 11, schemaVersion: 6 });
      // New turns of a migrated session point at the turns the v4 package wrote.
      provider.syncTurn("Her name is Biscuit.", "Biscuit, got it.", { sessionId: "s1" });
      await provider.flush();
      expect(storedLinks(db)).toEqual(expectedLinks(db));
      const newest = db
        .prepare(`SELECT id, prev_id, prev2_id FROM items WHERE session_id = 's1' ORDER BY id DESC LIMIT 1`)
        .raw(true)
        .get() as number[];
      expect(newest[1]).toBe(3);
      // The answer is still found through the question it follows.
      expect(provider.search("hiking", { limit: 5 }).map((h) => h.id)).toEqual(expect.arrayContaining(["1", "2"]));
    } finally {
      await provider.shutdown();
    }
  });

  it("keeps the ids and flags equal to what the sessions say through inserts, deletes and edits from two connections", () => {
    const file = path.join(dir, "links.db");
    const a = openDatabase(file);
    const b = openDatabase(file);
    try {
      const storeA = new MemoryStore(a, file);
      const storeB = new MemoryStore(b, file);
      const random = seededRandom(11);
      const ids: string[] = [];
      for (let round = 0; round < 300; round++) {
        const store = random() < 0.5 ? storeA : storeB;
        const r = random();
        if (r < 0.6 || ids.length < 5) {
          const session = random() < 0.1 ? undefined : `s${Math.floor(random() * 4)}`;
          const kind = random() < 0.85 ? "turn" : "fact";
          const [id] = store.insertMany([{ kind, sessionId: session, content: `round ${round}${random() < 0.3 ? " why?" : ""}` }]);
          ids.push(id!);
        } else if (r < 0.85) {
          const [id] = ids.splice(Math.floor(random() * ids.length), 1);
          store.forget(id!);
        } else {
          const id = ids[Math.floor(random() * ids.length)]!;
          store.update(id, { content: `edited ${round}${random() < 0.5 ? "？" : ""}` });
        }
        expect(storedLinks(a), `round ${round}`).toEqual(expectedLinks(a));
      }
    } finally {
      b.close();
      a.close();
    }
  });
});
