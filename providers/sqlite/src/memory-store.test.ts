import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { NEIGHBOUR_WEIGHTS, nextTurnShare } from "@hermes/memory-provider-kit/sqlite";
import { rowsInFileAlone, until } from "@hermes/test-support";
import { openDatabase, type Db } from "./database.js";
import { MemoryStore, type NewItem } from "./memory-store.js";

// The kit's write thresholds (internal to it, not exported): a WAL checkpoint after this many items
// written, and a store below SMALL_INDEX_ITEMS items keeps its index in at most SMALL_INDEX_SEGMENTS segments.
const CHECKPOINT_ITEMS = 256;
const SMALL_INDEX_ITEMS = 1000;
const SMALL_INDEX_SEGMENTS = 4;

let dir: string;
let db: Db;
let store: MemoryStore;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sqlite-store-"));
  db = openDatabase(path.join(dir, "m.db"));
  store = new MemoryStore(db, path.join(dir, "m.db"));
});
afterEach(() => {
  store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe("MemoryStore search in a large store", () => {
  it("ranks by relevance when a query word is in most items: all query words beat newer single-word matches", () => {
    const items: NewItem[] = [];
    for (let i = 0; i < 3000; i++) {
      // "routine" is in every item (common), "weather" and "report" in 1 % each; item 11 has all three.
      const extra = i === 10 ? " weather report" : i % 100 === 50 ? " weather" : i % 100 === 60 ? " report" : "";
      // One session per turn: this test is about word rarity, not about context from previous turns.
      items.push({ kind: "turn", sessionId: `s${i}`, content: `User: routine update number ${i}${extra}` });
    }
    const ids = store.insertMany(items);
    const hits = store.search("routine weather report", { limit: 5 });
    expect(hits[0]!.id).toBe(ids[10]);
    expect(hits.slice(1).every((h) => /weather|report/.test(h.content))).toBe(true);
    // A word the store has never seen does not hide the others.
    expect(store.search("routine xylophone", { limit: 2 })).toHaveLength(2);
    expect(store.search("xylophone", { limit: 2 })).toEqual([]);
    // Filters apply to the ranked candidates.
    const inSession = store.search("routine weather", { limit: 5, sessionId: "s20" });
    expect(inSession.length).toBeGreaterThan(0);
    expect(inSession.every((h) => h.sessionId === "s20")).toBe(true);
  });

  it("ranks a query of only common words by relevance, not by age", () => {
    const items: NewItem[] = [];
    // Both words are in more than 2,000 of 6,000 items; only the oldest 2,100 items have both, and
    // 500 newer items have one of them.
    for (let i = 0; i < 6000; i++) {
      const text = i < 2100 ? "routine status" : i < 2500 ? "routine" : i < 2600 ? "status" : "plain";
      items.push({ kind: "turn", content: `${text} note ${i}` });
    }
    store.insertMany(items);
    const hits = store.search("routine status", { limit: 5 });
    expect(hits).toHaveLength(5);
    expect(hits.every((h) => h.content.startsWith("routine status note"))).toBe(true);
  });

  it("passes a turn's score to its neighbours in the same session only", () => {
    const [q] = store.insertMany([{ kind: "turn", sessionId: "a", content: "Where did you go camping last summer?" }]);
    const [answer] = store.insertMany([{ kind: "turn", sessionId: "a", content: "Up north by the lake, it was lovely" }]);
    store.insertMany([{ kind: "turn", sessionId: "b", content: "Unrelated chatter about invoices" }]);
    const hits = store.search("camping trip", { limit: 5 });
    expect(hits.map((h) => h.id)).toEqual([q, answer]);
    expect(hits[0]!.score).toBeGreaterThan(hits[1]!.score);
  });

  it("passes a larger share to the next turn after a question than after a statement", () => {
    const turn = (sessionId: string, content: string): string => store.insertMany([{ kind: "turn", sessionId, content }])[0]!;
    const asked = turn("a", "You went camping by the lake?");
    const afterQuestion = turn("a", "Yes, up north, it was lovely");
    const told = turn("b", "You went camping by the lake.");
    const afterStatement = turn("b", "Yes, up north, it was lovely");
    const score = new Map(store.search("camping", { limit: 10 }).map((h) => [h.id, h.score]));
    expect(score.get(asked)).toBeCloseTo(score.get(told)!);
    // Both replies match "camping" through their context column alike; only the shares differ.
    const shareGap = (NEIGHBOUR_WEIGHTS[0] - nextTurnShare(NEIGHBOUR_WEIGHTS, false)) * score.get(asked)!;
    expect(score.get(afterQuestion)! - score.get(afterStatement)!).toBeCloseTo(shareGap);
    expect(shareGap).toBeGreaterThan(0);
  });
});

describe("MemoryStore search with related words", () => {
  /** `n` facts of filler text that holds none of the words these tests ask about. */
  const filler = (n: number): NewItem[] =>
    Array.from({ length: n }, (_, i) => ({ kind: "fact" as const, content: `note ${i} about invoices and spreadsheets` }));

  it("finds an item worded differently from the question, ranked below the items that hold the question's own word", () => {
    const ids = store.insertMany([
      ...filler(60),
      { kind: "fact", content: "The children loved the zoo" },
      { kind: "fact", content: "The kids went to the zoo" },
    ]);
    const hits = store.search("kids", { limit: 5 });
    expect(hits.map((h) => h.id)).toEqual([ids[61], ids[60]]);
    expect(hits[1]!.score).toBeLessThan(hits[0]!.score);
    // Without a query word the store holds, nothing is found through related words alone.
    expect(store.search("zzqx", { limit: 5 })).toEqual([]);
  });

  it("finds it with a filter too, and never an item the filter excludes", () => {
    const ids = store.insertMany([
      ...filler(60),
      { kind: "fact", content: "The children loved the zoo", sessionId: "a" },
      { kind: "fact", content: "Our children like painting", sessionId: "b" },
      { kind: "fact", content: "The kids went to the zoo", sessionId: "a" },
    ]);
    expect(store.search("kids", { limit: 5, sessionId: "a" }).map((h) => h.id)).toEqual([ids[62], ids[60]]);
  });

  it("leaves out a related word found in more than 5 % of the items", () => {
    // "children" in 10 of 62 items (16 %): too common to say anything about a question on kids.
    const ids = store.insertMany([
      ...filler(51),
      ...Array.from({ length: 10 }, (_, i) => ({ kind: "fact" as const, content: `children item ${i}` })),
      { kind: "fact", content: "The kids went to the zoo" },
    ]);
    expect(store.search("kids", { limit: 5 }).map((h) => h.id)).toEqual([ids[61]]);
  });
});

describe("MemoryStore search facts kept between writes", () => {
  it("sees another connection's writes: its new items, their speakers and their expiry", async () => {
    const file = path.join(dir, "m.db");
    store.insertMany([
      ...Array.from({ length: 10 }, (_, i) => ({ kind: "fact" as const, content: `filler ${i} about invoices` })),
      { kind: "turn", sessionId: "s", speaker: "Ann", content: "I planted tulips" },
    ]);
    // A first search keeps the store's size, expiry and speaker words (no speaker "Bob" yet).
    expect(store.search("Bob tulips", { limit: 5 }).map((h) => h.content)).toEqual(["I planted tulips"]);

    const otherDb = openDatabase(file);
    try {
      const other = new MemoryStore(otherDb, file);
      other.insertMany([
        { kind: "turn", sessionId: "t", speaker: "Bob", content: "I planted tulips" },
        { kind: "fact", content: "tulips expire soon", expiresAt: Date.now() + 300 },
      ]);
      // The same search by a store that has kept nothing: equal hits, scores included (the speaker
      // boost for "Bob" and the larger store's word weights).
      const expected = new MemoryStore(otherDb, file).search("Bob tulips", { limit: 5 });
      expect(expected.map((h) => h.content)).toContain("tulips expire soon");
      expect(expected[0]).toMatchObject({ sessionId: "t" });
      expect(store.search("Bob tulips", { limit: 5 })).toEqual(expected);
    } finally {
      otherDb.close();
    }
    await new Promise((resolve) => setTimeout(resolve, 400));
    // No write since: the kept earliest expiry still leaves the now expired item out.
    expect(store.search("tulips", { limit: 5 }).map((h) => h.content)).toEqual(["I planted tulips", "I planted tulips"]);
  });

  it("sees this connection's own inserts and deletes", () => {
    store.insertMany([{ kind: "fact", content: "garden notes" }]);
    expect(store.search("garden", { limit: 5 })).toHaveLength(1);
    store.insertMany([{ kind: "fact", content: "garden plans" }]);
    expect(store.search("garden", { limit: 5 })).toHaveLength(2);
    store.forget(store.search("plans", { limit: 1 })[0]!.id);
    expect(store.search("garden", { limit: 5 }).map((h) => h.content)).toEqual(["garden notes"]);
  });

  it("runs FTS5's ranking in a read transaction that ends with the search, also when the search fails", () => {
    store.insertMany([{ kind: "turn", sessionId: "s", speaker: "dana", content: "garden notes" }]);
    expect(store.search("garden", { limit: 5 })).toHaveLength(1);
    expect(db.inTransaction).toBe(false);
    // A speaker stored as a BLOB (another program) cannot be read as JSON: the search fails.
    db.prepare(`UPDATE items SET speaker = CAST('dana' AS BLOB)`).run();
    expect(() => store.search("garden", { limit: 5 })).toThrow(/hermes-memory sqlite vacuum/);
    expect(db.inTransaction).toBe(false);
    // The connection still writes.
    store.insertMany([{ kind: "fact", content: "garden more" }]);
    expect(db.prepare(`SELECT COUNT(*) FROM items`).pluck().get()).toBe(2);
  });
});

describe("MemoryStore speakers", () => {
  const speakers = (): string[] => db.prepare(`SELECT name FROM speakers ORDER BY name`).pluck().all() as string[];

  it("records a speaker's name words once, and again after a write that recorded them was rolled back", () => {
    store.insertMany([{ kind: "turn", sessionId: "s", speaker: "Ann Lee", content: "hello" }]);
    store.insertMany([{ kind: "turn", sessionId: "s", speaker: "Ann Lee", content: "again" }]);
    expect(speakers()).toEqual(["ann", "lee"]);
    // The second item breaks the kind constraint: the whole write, Zed's name included, rolls back.
    expect(() =>
      store.insertMany([
        { kind: "turn", sessionId: "s", speaker: "Zed", content: "first" },
        { kind: "bogus" as "turn", sessionId: "s", content: "broken" },
      ]),
    ).toThrow();
    expect(speakers()).toEqual(["ann", "lee"]);
    store.insertMany([{ kind: "turn", sessionId: "s", speaker: "Zed", content: "second" }]);
    expect(speakers()).toEqual(["ann", "lee", "zed"]);
    expect(store.search("what did zed say", { limit: 1 })[0]?.content).toBe("second");
  });
});

describe("MemoryStore write-ahead log", () => {
  const itemsInMainFile = (): number => rowsInFileAlone(path.join(dir, "m.db"), "items");

  it("a burst of writes is copied into the database file on a thread of its own, and close leaves no log behind", async () => {
    db.pragma("wal_checkpoint(TRUNCATE)");
    const batches = Math.ceil(CHECKPOINT_ITEMS / 100);
    for (let b = 0; b < batches; b++) {
      store.insertMany(
        Array.from({ length: 100 }, (_, i) => ({ kind: "turn" as const, sessionId: "s", content: `turn ${b * 100 + i} about sailing` })),
      );
    }
    // Far below SQLite's own threshold (1,000 pages): only the thread copies them this early.
    await until(() => itemsInMainFile() === batches * 100);
    expect(store.search("sailing", { limit: 3 })).toHaveLength(3);
    store.close();
    expect(fs.existsSync(path.join(dir, "m.db-wal"))).toBe(false);
    expect(itemsInMainFile()).toBe(batches * 100);
  });
});

describe("MemoryStore full-text index segments", () => {
  const segments = (): number => db.prepare(`SELECT COUNT(DISTINCT segid) FROM items_fts_idx`).pluck().get() as number;

  it("a small store written one turn at a time keeps its index in at most SMALL_INDEX_SEGMENTS segments, and finds every turn", () => {
    let most = 0;
    for (let i = 0; i < 40; i++) {
      store.insertMany([{ kind: "turn", sessionId: `s${i}`, content: `turn ${i} about ${i % 2 === 0 ? "sailing" : "gardens"}` }]);
      most = Math.max(most, segments());
    }
    expect(most).toBeLessThanOrEqual(SMALL_INDEX_SEGMENTS);
    expect(
      store
        .search("sailing", { limit: 100 })
        .map((h) => h.content)
        .sort(),
    ).toEqual(Array.from({ length: 20 }, (_, i) => `turn ${2 * i} about sailing`).sort());
  });

  it("a store past SMALL_INDEX_ITEMS keeps FTS5's own merging", () => {
    store.insertMany(Array.from({ length: SMALL_INDEX_ITEMS }, (_, i) => ({ kind: "fact" as const, content: `fact ${i}` })));
    for (let i = 0; i < 8; i++) store.insertMany([{ kind: "turn", sessionId: "s", content: `turn ${i}` }]);
    expect(segments()).toBeGreaterThan(SMALL_INDEX_SEGMENTS);
  });
});
