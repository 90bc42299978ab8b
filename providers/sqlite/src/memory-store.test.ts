import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openDatabase, type Db } from "./database.js";
import { MemoryStore, type NewItem } from "./memory-store.js";

let dir: string;
let db: Db;
let store: MemoryStore;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sqlite-store-"));
  db = openDatabase(path.join(dir, "m.db"));
  store = new MemoryStore(db, path.join(dir, "m.db"));
});
afterEach(() => {
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe("MemoryStore search in a large store", () => {
  it("leaves out words found in most items when rarer words match, and never returns nothing for them alone", () => {
    const items: NewItem[] = [];
    for (let i = 0; i < 3000; i++) {
      items.push({ kind: "turn", sessionId: `s${i % 30}`, content: `User: routine status update number ${i}${i % 1000 === 7 ? " about the zeppelin" : ""}` });
    }
    store.insertMany(items);
    const hits = store.search("status update about the zeppelin", { limit: 5 });
    expect(hits.slice(0, 3).every((h) => h.content.includes("zeppelin"))).toBe(true);
    // Only common words: the newest items containing them.
    const common = store.search("routine status", { limit: 3 });
    expect(common.map((h) => h.content)).toEqual([
      "User: routine status update number 2999",
      "User: routine status update number 2998",
      "User: routine status update number 2997",
    ]);
    // A word the store has never seen does not hide the common ones.
    expect(store.search("routine xylophone", { limit: 2 })).toHaveLength(2);
    expect(store.search("xylophone", { limit: 2 })).toEqual([]);
  });

  it("passes a turn's score to its neighbours in the same session only", () => {
    const [q] = store.insertMany([{ kind: "turn", sessionId: "a", content: "Where did you go camping last summer?" }]);
    const [answer] = store.insertMany([{ kind: "turn", sessionId: "a", content: "Up north by the lake, it was lovely" }]);
    store.insertMany([{ kind: "turn", sessionId: "b", content: "Unrelated chatter about invoices" }]);
    const hits = store.search("camping trip", { limit: 5 });
    expect(hits.map((h) => h.id)).toEqual([q, answer]);
    expect(hits[0]!.score).toBeGreaterThan(hits[1]!.score);
  });
});
