import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SMALL_INDEX_ITEMS, SMALL_INDEX_SEGMENTS, SmallIndexCompactor } from "./fts-compaction.js";

let dir: string;
let file: string;
let db: Database.Database;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "fts-compaction-"));
  file = path.join(dir, "t.db");
  db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.pragma("busy_timeout = 5000");
  db.exec(`CREATE VIRTUAL TABLE t_fts USING fts5(content, tokenize = 'porter unicode61')`);
});
afterEach(() => {
  if (db.open) db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const segments = (): number => db.prepare(`SELECT COUNT(DISTINCT segid) FROM t_fts_idx`).pluck().get() as number;
const insert = (id: number): void =>
  void db
    .prepare(`INSERT INTO t_fts (rowid, content) VALUES (?, ?)`)
    .run(id, `turn ${id} about ${id % 3 === 0 ? "gardens" : "boats"} and ${id % 5 === 0 ? "tulips" : "sails"}`);
/** Every row matching `query`, with its bm25 score, in rowid order. */
const matches = (query: string): unknown[] =>
  db.prepare(`SELECT rowid, bm25(t_fts) FROM t_fts WHERE t_fts MATCH ? ORDER BY rowid`).raw(true).all(query);

describe("SmallIndexCompactor", () => {
  it("keeps a small index written one row per transaction in at most SMALL_INDEX_SEGMENTS segments, with the same matches and scores", () => {
    const reference = new Database(":memory:");
    reference.exec(`CREATE VIRTUAL TABLE t_fts USING fts5(content, tokenize = 'porter unicode61')`);
    const compactor = new SmallIndexCompactor(db, "t_fts");
    let merges = 0;
    let most = 0;
    for (let id = 1; id <= 120; id++) {
      insert(id);
      reference
        .prepare(`INSERT INTO t_fts (rowid, content) VALUES (?, ?)`)
        .run(id, `turn ${id} about ${id % 3 === 0 ? "gardens" : "boats"} and ${id % 5 === 0 ? "tulips" : "sails"}`);
      if (compactor.afterWrite(id)) merges++;
      most = Math.max(most, segments());
    }
    expect(most).toBeLessThanOrEqual(SMALL_INDEX_SEGMENTS);
    expect(merges).toBeGreaterThan(10);
    // Without it, the same writes leave more segments than that.
    const fragmented = (reference.prepare(`SELECT COUNT(DISTINCT segid) FROM t_fts_idx`).pluck().get() as number) > SMALL_INDEX_SEGMENTS;
    expect(fragmented).toBe(true);
    for (const query of ["gardens", "tulips OR boats", "turn"]) {
      expect(matches(query)).toEqual(
        reference.prepare(`SELECT rowid, bm25(t_fts) FROM t_fts WHERE t_fts MATCH ? ORDER BY rowid`).raw(true).all(query),
      );
    }
    reference.close();
  });

  it("leaves a larger store's index to FTS5's own merging", () => {
    const compactor = new SmallIndexCompactor(db, "t_fts");
    for (let id = 1; id <= 8; id++) insert(id);
    const before = segments();
    expect(before).toBeGreaterThan(SMALL_INDEX_SEGMENTS);
    expect(compactor.afterWrite(SMALL_INDEX_ITEMS + 1)).toBe(false);
    expect(segments()).toBe(before);
    expect(compactor.afterWrite(SMALL_INDEX_ITEMS)).toBe(true);
    expect(segments()).toBe(1);
  });

  it("does not wait for another connection's write lock, keeps the busy timeout, and merges at a later write", () => {
    const compactor = new SmallIndexCompactor(db, "t_fts");
    for (let id = 1; id <= 8; id++) insert(id);
    const other = new Database(file);
    other.exec("BEGIN IMMEDIATE");
    const started = Date.now();
    expect(compactor.afterWrite(8)).toBe(false);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(db.pragma("busy_timeout", { simple: true })).toBe(5000);
    expect(db.inTransaction).toBe(false);
    other.exec("ROLLBACK");
    other.close();
    expect(compactor.afterWrite(8)).toBe(true);
    expect(segments()).toBe(1);
  });

  it("does nothing inside a transaction, on a read-only or closed connection, and never throws", () => {
    const compactor = new SmallIndexCompactor(db, "t_fts");
    for (let id = 1; id <= 8; id++) insert(id);
    db.exec("BEGIN");
    expect(compactor.afterWrite(8)).toBe(false);
    db.exec("COMMIT");
    const readonly = new Database(file, { readonly: true });
    expect(new SmallIndexCompactor(readonly, "t_fts").afterWrite(8)).toBe(false);
    readonly.close();
    expect(segments()).toBeGreaterThan(SMALL_INDEX_SEGMENTS);
    // A failure inside the merge (here: the table is gone) is swallowed.
    db.exec(`DROP TABLE t_fts`);
    expect(() => compactor.afterWrite(8)).not.toThrow();
    db.close();
    expect(compactor.afterWrite(8)).toBe(false);
  });
});
