import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BM25_WEIGHTS, openDatabase, type Db } from "./database.js";
import { LayeredRanker, idf, readVarints, termPattern } from "@hermes/memory-provider-kit";
import { MemoryStore } from "./memory-store.js";

let dir: string;
let db: Db;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sqlite-layered-"));
  db = openDatabase(path.join(dir, "m.db"));
});
afterEach(() => {
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe("layered BM25 helpers", () => {
  it("reads SQLite varints big-endian", () => {
    expect(readVarints(Uint8Array.from([0xbd, 0x84, 0x40, 0x05, 0x81, 0x00]))).toEqual([1_000_000, 5, 128]);
  });

  it("uses FTS5's IDF, floored for words in most rows", () => {
    expect(idf(1000, 10)).toBeCloseTo(Math.log(990.5 / 10.5));
    expect(idf(1000, 900)).toBe(1e-6);
  });

  it("matches a word's common inflections, case- and accent-insensitively, whole words only", () => {
    const count = (term: string, text: string) => text.normalize("NFD").replace(/\p{M}/gu, "").match(termPattern(term))?.length ?? 0;
    expect(count("meeting", "Meetings, a meeting, we meet")).toBe(3);
    expect(count("cafe", "Café and cafes")).toBe(2);
    expect(count("cat", "category concat cat")).toBe(1);
    expect(() => termPattern("a(b[")).not.toThrow();
  });
});

describe("LayeredRanker", () => {
  it("gives FTS5's own bm25() scores and order when it reads every match", () => {
    const store = new MemoryStore(db, path.join(dir, "m.db"));
    const words = ["apple", "banana", "cherry", "damson"];
    const items = Array.from({ length: 60 }, (_, i) => ({
      kind: "fact" as const,
      content: `note ${i} ${words.filter((_, w) => (i + w) % (w + 3) === 0).join(" ")} ${"filler ".repeat(i % 7)}`,
    }));
    store.insertMany(items);
    const count = db.prepare(`SELECT COUNT(*) AS n FROM items_fts WHERE items_fts MATCH ?`);
    const terms = words.map((term) => ({ term, df: (count.get(`"${term}"`) as { n: number }).n }));
    const exact = db
      .prepare(`SELECT rowid AS id, bm25(items_fts, ${BM25_WEIGHTS.content}, ${BM25_WEIGHTS.speaker}) AS rank FROM items_fts WHERE items_fts MATCH ? ORDER BY rank, rowid`)
      .all(words.map((w) => `"${w}"`).join(" OR ")) as Array<{ id: number; rank: number }>;
    const ranked = new LayeredRanker(db, BM25_WEIGHTS).rank(terms, { limit: 60, candidates: 60 });
    expect(ranked.map((r) => r.id)).toEqual(exact.map((r) => r.id));
    ranked.forEach((r, i) => expect(r.rank).toBeCloseTo(exact[i]!.rank, 6));
  });

  it("finds the best rows of a layer larger than a recency window, by their length, not their age", () => {
    const store = new MemoryStore(db, path.join(dir, "m.db"));
    // The best match (shortest row holding both words) is the oldest of 300 rows that hold both:
    // a ranker reading only the newest rows of the layer would miss it.
    const filler = (i: number) => Array.from({ length: 30 + (i % 20) }, (_, w) => `word${(i * 7 + w) % 97}`).join(" ");
    store.insertMany([
      { kind: "turn", sessionId: "a", content: "alpha beta" },
      ...Array.from({ length: 300 }, (_, i) => ({ kind: "turn" as const, sessionId: i % 2 ? "a" : "b", content: `alpha ${filler(i)} beta gamma` })),
      ...Array.from({ length: 2500 }, (_, i) => ({ kind: "turn" as const, sessionId: "b", content: `${i % 5 ? "delta" : "gamma"} ${filler(i)}` })),
    ]);
    const count = db.prepare(`SELECT COUNT(*) AS n FROM items_fts WHERE items_fts MATCH ?`);
    const terms = ["alpha", "beta", "gamma"].map((term) => ({ term, df: (count.get(`"${term}"`) as { n: number }).n }));
    const exact = db
      .prepare(`SELECT rowid AS id FROM items_fts WHERE items_fts MATCH '"alpha" OR "beta" OR "gamma"' ORDER BY rank, rowid LIMIT 5`)
      .all() as Array<{ id: number }>;
    const ranker = new LayeredRanker(db, BM25_WEIGHTS);
    const ranked = ranker.rank(terms, { limit: 5, candidates: 20 });
    expect(ranked[0]!.id).toBe(1);
    expect(ranked.slice(0, 5).map((r) => r.id)).toEqual(exact.map((r) => r.id));
    // Filters apply to the pooled rows too.
    const inA = ranker.rank(terms, { limit: 5, candidates: 20, session: "a" });
    expect(inA[0]!.id).toBe(1);
    const sessionOf = db.prepare(`SELECT session_id FROM items WHERE id = ?`).pluck();
    for (const r of inA) expect(sessionOf.get(r.id)).toBe("a");
    expect(ranker.rank(terms, { limit: 5, candidates: 20, session: "b" }).map((r) => r.id)).not.toContain(1);
  });

  it("returns nothing for no words or an empty store", () => {
    const ranker = new LayeredRanker(db, BM25_WEIGHTS);
    expect(ranker.rank([], { limit: 5, candidates: 20 })).toEqual([]);
    expect(ranker.rank([{ term: "apple", df: 1 }], { limit: 5, candidates: 20 })).toEqual([]);
  });
});
