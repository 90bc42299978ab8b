import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { parseMemoryFilter } from "@hermes/memory-provider-kit";
import { LayeredRanker, TURN_COLUMN_WEIGHTS } from "@hermes/memory-provider-kit/sqlite";
import { rowsInFileAlone, until } from "@hermes/test-support";
import { afterEach, describe, expect, it, vi } from "vitest";
import { sessionNeighbours } from "../test-support/session-neighbours.js";
import { Sidecar } from "./sidecar.js";
import { toFtsQuery } from "./sidecar-rows.js";
import { SIDECAR_V4_SCHEMA_SQL } from "../test-support/sidecar-v4-schema.js";

// The kit's write thresholds (internal to it, not exported): a WAL checkpoint after this many items
// written, and a store below SMALL_INDEX_ITEMS items keeps its index in at most SMALL_INDEX_SEGMENTS segments.
const CHECKPOINT_ITEMS = 256;
const SMALL_INDEX_ITEMS = 1000;
const SMALL_INDEX_SEGMENTS = 4;

describe("Sidecar keyword search", () => {
  it("matches stemmed, diacritic-folded words and ignores stopwords in the query", () => {
    const sidecar = Sidecar.open(":memory:");
    try {
      sidecar.upsert("ns", [
        { id: "a", text: "We were painting at the café near Zürich", metadata: { kind: "turn" }, vector: null },
        { id: "b", text: "What is it that you were doing there?", metadata: { kind: "turn" }, vector: null },
      ]);
      expect(sidecar.keywordSearch("ns", "what did they paint at the cafe in zurich?", 5).map((h) => h.id)).toEqual(["a"]);
      expect(sidecar.keywordSearch("ns", "what is it?", 5)).toEqual([]);
      expect(toFtsQuery('he said "hi"')).toBe('"said" OR "hi"');
    } finally {
      sidecar.close();
    }
  });
});

describe("Sidecar keyword search with related words", () => {
  const filler = (n: number) =>
    Array.from({ length: n }, (_, i) => ({
      id: `f${i}`,
      text: `note ${i} about invoices and spreadsheets`,
      metadata: { kind: "fact" },
      vector: null,
    }));

  it("finds a row worded differently from the question below the rows holding its own word, and leaves out a related word in more than 5 % of the rows", () => {
    const sidecar = Sidecar.open(":memory:");
    try {
      sidecar.upsert("ns", [
        ...filler(60),
        { id: "children", text: "The children loved the zoo", metadata: { kind: "fact" }, vector: null },
        { id: "kids", text: "The kids went to the zoo", metadata: { kind: "fact" }, vector: null },
      ]);
      const hits = sidecar.keywordSearch("ns", "kids", 5);
      expect(hits.map((h) => h.id)).toEqual(["kids", "children"]);
      expect(hits[1]!.score).toBeLessThan(hits[0]!.score);
      // Twenty more rows with "children" (21 of 82, 26 %): the word is left out. (Counts are kept
      // until the store grows by 20 %, which these rows exceed.)
      sidecar.upsert(
        "ns",
        Array.from({ length: 20 }, (_, i) => ({ id: `c${i}`, text: `children item ${i}`, metadata: { kind: "fact" }, vector: null })),
      );
      expect(sidecar.keywordSearch("ns", "kids", 5).map((h) => h.id)).toEqual(["kids"]);
    } finally {
      sidecar.close();
    }
  });
});

describe("Sidecar keyword ranking without the row join", () => {
  const WEIGHTS = [TURN_COLUMN_WEIGHTS.content, TURN_COLUMN_WEIGHTS.prev1, TURN_COLUMN_WEIGHTS.prev2, TURN_COLUMN_WEIGHTS.date].join(", ");
  /** FTS5's ranking of `match` joined with the rows of `namespace`, best first. */
  const joined = (sidecar: Sidecar, namespace: string, match: string, limit: number) =>
    (
      sidecar.db
        .prepare(
          `SELECT r.key AS key, r.id AS id, bm25(records_fts, ${WEIGHTS}) AS rank FROM records_fts JOIN records r ON r.key = records_fts.rowid
           WHERE records_fts MATCH ? AND r.namespace = ? ORDER BY rank LIMIT ?`,
        )
        .all(match, namespace, limit) as Array<{ key: number; id: string; rank: number }>
    ).map((r) => ({ key: r.key, id: r.id, score: -r.rank }));
  const rows = () =>
    Array.from({ length: 60 }, (_, i) => ({
      id: `t${i}`,
      // Repeated texts rank equal: their order must not depend on how the rows are read.
      text:
        i % 4 === 0
          ? "we went camping by the lake"
          : `day ${i}: ${i % 3 === 0 ? "camping trip" : "a lake walk"} with ${i % 2 === 0 ? "the dog" : "friends"}`,
      metadata: { kind: "turn", session_id: `s${i % 5}` },
      vector: null,
    }));

  it("ranks the namespace holding every row as the joined ranking does, ids known or looked up", () => {
    const sidecar = Sidecar.open(":memory:");
    try {
      sidecar.upsert("ns", rows());
      const expected = joined(sidecar, "ns", '"camp" OR "lake" OR "dog"', 25);
      expect(expected).toHaveLength(25);
      expect(sidecar.keywordRanks("ns", "camping at the lake with the dog", 25, undefined, null, false)).toEqual(expected);
      const known = new Map(expected.slice(0, 10).map((r) => [r.key, r.id]));
      expect(sidecar.keywordRanks("ns", "camping at the lake with the dog", 25, undefined, null, false, known)).toEqual(expected);
    } finally {
      sidecar.close();
    }
  });

  it("falls back to the joined ranking when the full-text index names a row that is not stored", () => {
    const sidecar = Sidecar.open(":memory:");
    try {
      sidecar.upsert("ns", rows());
      // An index entry without its row (another program deleted rows with the triggers dropped).
      sidecar.db
        .prepare(`INSERT INTO records_fts (rowid, text, prev1, prev2, session_date) VALUES (9999, 'camping camping lake dog', '', '', '')`)
        .run();
      const ranks = sidecar.keywordRanks("ns", "camping at the lake with the dog", 25, undefined, null, false);
      expect(ranks.map((r) => r.key)).not.toContain(9999);
      expect(ranks).toEqual(joined(sidecar, "ns", '"camp" OR "lake" OR "dog"', 25));
      expect(ranks).toHaveLength(25);
    } finally {
      sidecar.close();
    }
  });
});

describe("Sidecar schema migration", () => {
  it("upgrades a version 1 file in place: FTS rebuilt with the new tokenizer, session index added, nothing lost", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-vector-sidecar-"));
    try {
      const file = path.join(dir, "sidecar.sqlite");
      const v1 = new Database(file);
      v1.exec(`
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE records (key INTEGER PRIMARY KEY, namespace TEXT NOT NULL, id TEXT NOT NULL, text TEXT NOT NULL DEFAULT '',
          metadata TEXT NOT NULL DEFAULT '{}', vector BLOB, UNIQUE (namespace, id));
        CREATE VIRTUAL TABLE records_fts USING fts5(text, content='records', content_rowid='key', tokenize='porter unicode61');
        CREATE TRIGGER records_ai AFTER INSERT ON records BEGIN INSERT INTO records_fts (rowid, text) VALUES (new.key, new.text); END;
        PRAGMA user_version = 1;
      `);
      v1.prepare(
        `INSERT INTO records (namespace, id, text, metadata) VALUES ('ns', 'old', 'Ich wohne in Tōkyō', '{"kind":"turn","session_id":"s"}')`,
      ).run();
      v1.close();

      const sidecar = Sidecar.open(file);
      try {
        expect(sidecar.db.pragma("user_version", { simple: true })).toBe(7);
        expect(sidecar.keywordSearch("ns", "tokyo", 5).map((h) => h.id)).toEqual(["old"]);
        sidecar.upsert("ns", [{ id: "new", text: "later in Tokyo", metadata: { kind: "turn", session_id: "s" }, vector: null }]);
        expect(sidecar.keywordSearch("ns", "tokyo", 5)).toHaveLength(2);
        const old = sidecar.getByIds("ns", ["old"])[0]!;
        expect(sessionNeighbours(sidecar, "ns", "s", old.key, 2, 1).next.map((r) => r.id)).toEqual(["new"]);
        const plan = sidecar.db
          .prepare(
            `EXPLAIN QUERY PLAN SELECT key FROM records WHERE namespace = ? AND json_extract(metadata, '$.session_id') = ? AND key > ?`,
          )
          .all("ns", "s", 0) as Array<{ detail: string }>;
        expect(plan.map((p) => p.detail).join(" ")).toContain("records_turns_by_session");
      } finally {
        sidecar.close();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("indexes new rows without an insert trigger (a version 2 file loses it) and re-indexes changed text once", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-vector-sidecar-v3-"));
    try {
      const file = path.join(dir, "sidecar.sqlite");
      // A version 2 file: the version 4 tables (same columns) with the insert trigger version 2 had.
      const v2 = new Database(file);
      v2.exec(SIDECAR_V4_SCHEMA_SQL);
      v2.exec(`DROP INDEX records_turns_by_session; CREATE INDEX records_by_session ON records (namespace, json_extract(metadata, '$.session_id'), key);
        CREATE TRIGGER records_ai AFTER INSERT ON records BEGIN INSERT INTO records_fts (rowid, text) VALUES (new.key, new.text); END; PRAGMA user_version = 2;`);
      v2.close();
      const sidecar = Sidecar.open(file);
      try {
        expect(sidecar.db.pragma("user_version", { simple: true })).toBe(7);
        // The filter term index's triggers keep its own table; none indexes the FTS table on insert.
        expect(sidecar.db.prepare(`SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name`).pluck().all()).toEqual([
          "record_terms_ad",
          "record_terms_ai",
          "record_terms_au",
          "records_ad",
          "records_ad_context",
          "records_au",
          "records_au_context",
        ]);
        sidecar.upsert("ns", [{ id: "a", text: "golden retriever puppy", metadata: {}, vector: null }]);
        expect(sidecar.keywordSearch("ns", "retriever", 5).map((h) => h.id)).toEqual(["a"]);
        sidecar.upsert("ns", [{ id: "a", text: "tabby kitten", metadata: {}, vector: null }]);
        expect(sidecar.keywordSearch("ns", "retriever", 5)).toEqual([]);
        expect(sidecar.keywordSearch("ns", "kitten", 5).map((h) => h.id)).toEqual(["a"]);
        // The FTS index holds exactly one entry per row.
        sidecar.db.exec(`INSERT INTO records_fts (records_fts, rank) VALUES ('integrity-check', 1)`);
      } finally {
        sidecar.close();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("upgrades a version 3 file written by @hermes/memory-vector 0.1.0 in place: every row, vector and FTS entry kept, turn index swapped", () => {
    // test-support/sidecar-v3.sqlite was written by the schema 3 Sidecar: 12 turns in three
    // sessions plus a fact with vectors in "ns", one row in "other", then one text update and
    // one delete (both through the triggers), and a meta key.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-vector-sidecar-v3-file-"));
    try {
      const file = path.join(dir, "sidecar.sqlite");
      fs.copyFileSync(new URL("../test-support/sidecar-v3.sqlite", import.meta.url), file);
      const before = new Database(file, { readonly: true });
      expect(before.pragma("user_version", { simple: true })).toBe(3);
      const dump = (db: Database.Database) =>
        db.prepare(`SELECT key, namespace, id, text, metadata, hex(vector) AS vector FROM records ORDER BY key`).all();
      const rows = dump(before);
      before.close();
      expect(rows).toHaveLength(13);

      const sidecar = Sidecar.open(file);
      try {
        expect(sidecar.db.pragma("user_version", { simple: true })).toBe(7);
        expect(dump(sidecar.db)).toEqual(rows);
        expect(sidecar.getMeta("index_identity")).toBe("hashing-4");
        const indexes = sidecar.db
          .prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'records_%' ORDER BY name`)
          .pluck()
          .all();
        expect(indexes).toEqual([
          "records_by_id",
          "records_expiring",
          "records_filtering",
          "records_turns_by_session",
          "records_with_vectors",
        ]);
        sidecar.db.exec(`INSERT INTO records_fts (records_fts, rank) VALUES ('integrity-check', 1)`);
        // The turn saying it first, then the next two turns of its session (s1: 1, 4, 7, 10), which
        // hold it as context since the upgrade.
        expect(sidecar.keywordSearch("ns", "kayaking", 5).map((h) => h.id)).toEqual(["turn-4", "turn-7", "turn-10"]);
        expect(
          sidecar
            .keywordSearch("ns", "zurich cafe", 20)
            .map((h) => h.id)
            .sort(),
        ).toEqual(["turn-2", "turn-5", "turn-8"]);
        expect(sidecar.keywordSearch("other", "pottery", 5).map((h) => h.id)).toEqual(["turn-0"]);
        // Neighbours through the new index: the turns of session s1 are 1, 4, 7, 10.
        const linked = sidecar.linkedRefs("ns", ["turn-4"], 1).get("turn-4")!;
        expect([...sidecar.refsByKeys([...linked.next, ...linked.previous]).values()].map((r) => r.id).sort()).toEqual([
          "turn-1",
          "turn-10",
          "turn-7",
        ]);
        const plan = sidecar.db
          .prepare(
            `EXPLAIN QUERY PLAN SELECT key FROM records WHERE namespace = ? AND json_extract(metadata, '$.session_id') = ? AND json_extract(metadata, '$.kind') = 'turn' AND key > ?`,
          )
          .all("ns", "s1", 0) as Array<{ detail: string }>;
        expect(plan.map((p) => p.detail).join(" ")).toContain("COVERING INDEX records_turns_by_session");
        sidecar.upsert("ns", [{ id: "turn-12", text: "after the upgrade", metadata: { kind: "turn", session_id: "s1" }, vector: null }]);
        expect(sidecar.keywordSearch("ns", "upgrade", 5).map((h) => h.id)).toEqual(["turn-12"]);
      } finally {
        sidecar.close();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("closes into rollback-journal mode and opens read-only without writing (also a WAL file, from a private copy)", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-sidecar-ro-"));
    try {
      const file = path.join(dir, "sidecar.sqlite");
      const sidecar = Sidecar.open(file);
      sidecar.upsert("", [{ id: "a", text: "read only recall", metadata: {}, vector: null }]);
      sidecar.close();
      expect(fs.existsSync(`${file}-shm`)).toBe(false);
      let ro = Sidecar.open(file, { readOnly: true });
      expect(ro.readOnly).toBe(true);
      expect(ro.getByIds("", ["a"]).map((r) => r.text)).toEqual(["read only recall"]);
      expect(() => ro.setMeta("x", "y")).toThrow(/readonly/);
      ro.close();
      // As an older version left it: WAL mode, no -shm.
      const db = new Database(file);
      db.pragma("journal_mode = WAL");
      db.close();
      ro = Sidecar.open(file, { readOnly: true });
      expect(ro.getByIds("", ["a"]).map((r) => r.text)).toEqual(["read only recall"]);
      ro.close();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** What version 7 added (the filter term index), dropped to make a file of an older version. */
const DROP_TERM_INDEX = `DROP TRIGGER record_terms_ai; DROP TRIGGER record_terms_ad; DROP TRIGGER record_terms_au; DROP TABLE record_terms;`;

describe("Sidecar schema version 6 (filter columns)", () => {
  it("filters a namespace from the covering filter index, without reading the rows (which hold the vectors)", () => {
    const sidecar = Sidecar.open(":memory:");
    try {
      const condition = sidecar.condition(
        parseMemoryFilter({ tags: { any: ["a"] }, metadata: { project: "p" }, createdAt: { $gte: 0 } }),
        Date.now(),
      )!;
      const plan = sidecar.db
        .prepare(`EXPLAIN QUERY PLAN SELECT r.key FROM records r WHERE r.namespace = ? AND ${condition.sql}`)
        .all("ns", ...condition.params) as Array<{ detail: string }>;
      expect(plan.map((p) => p.detail).join("\n")).toContain("COVERING INDEX records_filtering");
    } finally {
      sidecar.close();
    }
  });

  it("upgrades a version 5 file in place: every row kept, tags, creation time, caller metadata and expiry filled from the stored metadata", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-vector-sidecar-v5-"));
    try {
      const file = path.join(dir, "sidecar.sqlite");
      const writer = Sidecar.open(file);
      writer.upsert("ns", [
        {
          id: "t1",
          text: "first turn about rockets",
          metadata: {
            kind: "turn",
            session_id: "s",
            created_at: "2026-01-02T03:04:05.678Z",
            tags: ["space", "fun"],
            extra: '{"team":"infra","n":3}',
          },
          vector: new Float32Array([1, 0]),
        },
        {
          id: "t2",
          text: "second turn",
          metadata: { kind: "turn", session_id: "s", created_at: "2026-01-03T00:00:00.000Z" },
          vector: null,
        },
        { id: "f1", text: "a fact with broken extra", metadata: { kind: "fact", extra: "not json" }, vector: null },
      ]);
      writer.close();
      // The version 5 layout: the same table without the filter columns and the expiry index.
      const v5 = new Database(file);
      v5.exec(`${DROP_TERM_INDEX} DROP INDEX records_expiring; DROP INDEX records_filtering; ALTER TABLE records DROP COLUMN tags; ALTER TABLE records DROP COLUMN created_ms;
        ALTER TABLE records DROP COLUMN user_meta; ALTER TABLE records DROP COLUMN expires_at; INSERT INTO records_fts (records_fts, rank) VALUES ('secure-delete', 0); PRAGMA user_version = 5;`);
      const dump = (db: Database.Database) =>
        db
          .prepare(`SELECT key, namespace, id, text, metadata, hex(vector) AS vector, prev1, prev2, session_date FROM records ORDER BY key`)
          .all();
      const before = dump(v5);
      v5.close();

      const sidecar = Sidecar.open(file);
      try {
        expect(sidecar.db.pragma("user_version", { simple: true })).toBe(7);
        expect(dump(sidecar.db)).toEqual(before);
        expect(sidecar.db.prepare(`SELECT id, tags, created_ms, user_meta, expires_at FROM records ORDER BY key`).all()).toEqual([
          {
            id: "t1",
            tags: '["space","fun"]',
            created_ms: Date.parse("2026-01-02T03:04:05.678Z"),
            user_meta: '{"team":"infra","n":3}',
            expires_at: null,
          },
          { id: "t2", tags: "[]", created_ms: Date.parse("2026-01-03T00:00:00.000Z"), user_meta: "{}", expires_at: null },
          { id: "f1", tags: "[]", created_ms: null, user_meta: "{}", expires_at: null },
        ]);
        const keys = (filter: Parameters<typeof parseMemoryFilter>[0]) =>
          sidecar
            .passingKeys("ns", sidecar.condition(parseMemoryFilter(filter), Date.now()))!
            .map((k) => sidecar.idsByKeys([k]).get(k)!.id);
        expect(keys({ tags: { any: ["space"] }, metadata: { n: { $gt: 2 } } })).toEqual(["t1"]);
        expect(keys({ createdAt: { $gte: "2026-01-03T00:00:00Z" } })).toEqual(["t2"]);
        expect(sidecar.keywordSearch("ns", "rockets", 5).map((h) => h.id)[0]).toBe("t1");
        sidecar.db.exec(`INSERT INTO records_fts (records_fts, rank) VALUES ('integrity-check', 1)`);
      } finally {
        sidecar.close();
      }
      // Read-only opens of a version 5 file filter on the metadata JSON instead of the columns.
      const ro = new Database(file);
      ro.exec(`${DROP_TERM_INDEX} DROP INDEX records_expiring; DROP INDEX records_filtering; ALTER TABLE records DROP COLUMN tags; ALTER TABLE records DROP COLUMN created_ms;
        ALTER TABLE records DROP COLUMN user_meta; ALTER TABLE records DROP COLUMN expires_at; PRAGMA user_version = 5;`);
      ro.close();
      const readOnly = Sidecar.openReadOnly(file);
      try {
        const passing = readOnly.passingKeys("ns", readOnly.condition(parseMemoryFilter({ metadata: { team: "infra" } }), Date.now()))!;
        expect([...readOnly.idsByKeys(passing).values()].map((r) => r.id)).toEqual(["t1"]);
        expect(readOnly.hasExpired(null, Date.now())).toBe(false);
      } finally {
        readOnly.close();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("Sidecar batched reads for search", () => {
  it("linkedRefs gives the same neighbours as sessionNeighbours, only for the first linkFirst ids, and returns no text", () => {
    const sidecar = Sidecar.open(":memory:");
    try {
      const rows = [
        { id: "s1-0", session: "s1", kind: "turn" },
        { id: "s2-0", session: "s2", kind: "turn" },
        { id: "s1-1", session: "s1", kind: "turn" },
        { id: "s1-f", session: "s1", kind: "fact" },
        { id: "s1-2", session: "s1", kind: "turn" },
        { id: "s1-3", session: "s1", kind: "turn" },
        { id: "other-ns", session: "s1", kind: "turn" },
      ];
      sidecar.upsert(
        "ns",
        rows
          .filter((r) => r.id !== "other-ns")
          .map((r) => ({
            id: r.id,
            text: r.id === "s1-1" ? "what about s1-1？" : `text of ${r.id}`,
            metadata: { kind: r.kind, session_id: r.session },
            vector: null,
          })),
      );
      sidecar.upsert("ns2", [{ id: "other-ns", text: "elsewhere", metadata: { kind: "turn", session_id: "s1" }, vector: null }]);
      const ids = ["s1-1", "s1-3", "s1-0", "missing", "s2-0"];
      const linked = sidecar.linkedRefs("ns", ids, 2);
      expect([...linked.keys()].sort()).toEqual(["s1-0", "s1-1", "s1-3", "s2-0"]);
      for (const id of ["s1-1", "s1-3"]) {
        const ref = linked.get(id)!;
        const expected = sessionNeighbours(sidecar, "ns", "s1", ref.key, 2, 2);
        expect(ref.next).toEqual(expected.next.map((r) => r.key));
        expect(ref.previous).toEqual(expected.previous.map((r) => r.key));
      }
      const keyOf = (id: string) => sidecar.getByIds("ns", [id])[0]!.key;
      expect(linked.get("s1-1")!.next).toEqual([keyOf("s1-2"), keyOf("s1-3")]);
      expect(linked.get("s1-1")!.previous).toEqual([keyOf("s1-0")]);
      expect(linked.get("s1-3")!.previous).toEqual([keyOf("s1-2"), keyOf("s1-1")]);
      // Whether a linked turn asks a question (so it passes its next turn the full share).
      expect(linked.get("s1-1")!.asksQuestion).toBe(true);
      expect(linked.get("s1-3")!.asksQuestion).toBe(false);
      // Beyond linkFirst: metadata only.
      expect(linked.get("s1-0")).toMatchObject({ next: [], previous: [], metadata: { kind: "turn", session_id: "s1" } });
      expect(linked.get("s1-1")!.metadata).toEqual({ kind: "turn", session_id: "s1" }); // no text

      // By key (same order as the ids): the same refs.
      const present = ids.filter((id) => id !== "missing");
      expect(sidecar.linkedRefs("ns", present, 2, present.length, present.map(keyOf))).toEqual(sidecar.linkedRefs("ns", present, 2));
      // metadataFirst: only the first ids get their metadata read.
      const partial = sidecar.linkedRefs("ns", ids, 2, 1);
      expect(partial.get("s1-1")).toMatchObject({
        hasMetadata: true,
        metadata: { kind: "turn", session_id: "s1" },
        next: linked.get("s1-1")!.next,
      });
      expect(partial.get("s1-3")).toMatchObject({ hasMetadata: false, metadata: {}, previous: linked.get("s1-3")!.previous });

      const refs = sidecar.refsByKeys([keyOf("s1-2"), 9999]);
      expect([...refs.values()].map((r) => r.id)).toEqual(["s1-2"]);
      expect(sidecar.textsByKeys([keyOf("s1-2")]).get(keyOf("s1-2"))).toBe("text of s1-2");
    } finally {
      sidecar.close();
    }
  });

  it("reads metadata and ids another program stored as BLOBs (UTF-8 JSON), as the row-by-row reads do", () => {
    const sidecar = Sidecar.open(":memory:");
    try {
      sidecar.upsert(
        "ns",
        [0, 1, 2].map((i) => ({ id: `t${i}`, text: `apple pie ${i}`, metadata: { kind: "turn", session_id: "s" }, vector: null })),
      );
      const key = sidecar.getByIds("ns", ["t1"])[0]!.key;
      sidecar.db.prepare(`UPDATE records SET metadata = CAST(metadata AS BLOB), id = CAST(id AS BLOB) WHERE key = ?`).run(key);
      expect(sidecar.db.prepare(`SELECT typeof(metadata) FROM records WHERE key = ?`).pluck().get(key)).toBe("blob");
      const linked = sidecar.linkedRefs("ns", ["t0", "t2"], 2);
      expect(linked.get("t0")!.next).toContain(key);
      const refs = sidecar.refsByKeys([key]);
      expect(refs.get(key)).toEqual({ key, id: "t1", metadata: { kind: "turn", session_id: "s" } });
      const byKey = sidecar.linkedRefs("ns", ["t1"], 1, 1, [key]);
      expect(byKey.get("t1")).toMatchObject({ key, metadata: { kind: "turn", session_id: "s" } });
    } finally {
      sidecar.close();
    }
  });

  it("keywordRanks ranks like keywordSearch, without text", () => {
    const sidecar = Sidecar.open(":memory:");
    try {
      sidecar.upsert("ns", [
        { id: "a", text: "pottery class on sunday, pottery is fun", metadata: { kind: "turn", session_id: "s" }, vector: null },
        { id: "b", text: "a pottery bowl", metadata: { kind: "fact" }, vector: null },
        { id: "c", text: "nothing relevant", metadata: { kind: "turn" }, vector: null },
      ]);
      const ranks = sidecar.keywordRanks("ns", "pottery class", 5);
      expect(ranks.map((r) => r.id)).toEqual(sidecar.keywordSearch("ns", "pottery class", 5).map((h) => h.id));
      expect(ranks.map((r) => r.id)).toEqual(["a", "b"]);
      // "pottery" is in 2 of 3 rows (BM25 weight about 0): "b" holds only it, so it fills the list
      // after "a", and is left out when the caller asks for weighted matches only (hybrid search).
      expect(sidecar.keywordRanks("ns", "pottery class", 5, undefined, null, false).map((r) => r.id)).toEqual(["a"]);
      expect(ranks[0]).not.toHaveProperty("text");
      expect(sidecar.keywordRanks("ns", "pottery", 5, { kind: "fact" }).map((r) => r.id)).toEqual(["b"]);
    } finally {
      sidecar.close();
    }
  });
});

describe("Sidecar keyword ranking in large stores", () => {
  afterEach(() => vi.restoreAllMocks());

  /**
   * 6,000 rows in "ns" ("chat" in 2 of every 5: over 2,000 rows yet under half, so it counts) and
   * 400 in "other", deterministic.
   */
  function largeSidecar(): Sidecar {
    const sidecar = Sidecar.open(":memory:");
    let seed = 7;
    const rand = (n: number) => {
      seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
      return seed % n;
    };
    const text = (i: number, extra: string[]) => {
      const words = Array.from({ length: 4 + rand(16) }, () => `w${rand(300)}`);
      for (const w of extra) words.splice(rand(words.length + 1), 0, w);
      return words.join(" ");
    };
    const rows = Array.from({ length: 6000 }, (_, i) => {
      const extra = [
        ...(i % 5 === 0 || i % 5 === 3 ? ["chat"] : []),
        ...(i % 37 === 0 ? ["pottery"] : []),
        ...(i % 53 === 0 ? ["glaze"] : []),
        ...(i % 401 === 0 ? ["pottery"] : []),
      ];
      return {
        id: `r${i}`,
        text: text(i, extra),
        metadata: { kind: i % 3 === 0 ? "fact" : "turn", session_id: `s${i % 40}` },
        vector: null,
      };
    });
    sidecar.upsert("ns", rows);
    sidecar.upsert(
      "other",
      Array.from({ length: 400 }, (_, i) => ({
        id: `o${i}`,
        text: "pottery glaze chat pottery",
        metadata: { kind: "turn" },
        vector: null,
      })),
    );
    return sidecar;
  }

  /** FTS5's own ranking (what `keywordRanks` runs in small stores), for comparison. */
  function fts5Order(sidecar: Sidecar, namespace: string, match: string, limit: number): Array<{ id: string; score: number }> {
    return sidecar.db
      .prepare(
        `SELECT r.id AS id, -bm25(records_fts, ${TURN_COLUMN_WEIGHTS.content}, ${TURN_COLUMN_WEIGHTS.prev1}, ${TURN_COLUMN_WEIGHTS.prev2}, ${TURN_COLUMN_WEIGHTS.date}) AS score
           FROM records_fts JOIN records r ON r.key = records_fts.rowid
           WHERE records_fts MATCH ? AND r.namespace = ? ORDER BY rank LIMIT ?`,
      )
      .all(match, namespace, limit) as Array<{ id: string; score: number }>;
  }

  it("uses the kit's layered ranker when a word is in more than 0.2 % of the items, with FTS5's bm25 order and scores for the top hits", () => {
    const sidecar = largeSidecar();
    try {
      const rank = vi.spyOn(LayeredRanker.prototype, "rank");
      const ranked = sidecar.keywordRanks("ns", "the chat about pottery glaze?", 10);
      expect(rank).toHaveBeenCalledTimes(1);
      const exact = fts5Order(sidecar, "ns", '"chat" OR "pottery" OR "glaze"', 10);
      // The best rows come in FTS5's order with FTS5's scores. The ranker pools rows by the words of
      // their own text: a row holding one word itself and another only as context of the turns
      // before it (here r265: "glaze" itself, "pottery" in the previous turn) is estimated without
      // its context and can lose its place to rows holding that one word alone.
      expect(ranked.slice(0, 3).map((r) => r.id)).toEqual(exact.slice(0, 3).map((r) => r.id));
      const exactScore = new Map(fts5Order(sidecar, "ns", '"chat" OR "pottery" OR "glaze"', 6000).map((r) => [r.id, r.score]));
      for (const r of ranked) expect(r.score).toBeCloseTo(exactScore.get(r.id)!, 6);
      const kept = ranked.filter((r) => exact.some((e) => e.id === r.id)).length;
      expect(kept).toBeGreaterThanOrEqual(9);
      // Other namespaces never leak in, and filters apply to the layered ranking too.
      expect(ranked.every((r) => r.id.startsWith("r"))).toBe(true);
      const facts = sidecar.keywordRanks("ns", "chat pottery glaze", 5, { kind: "fact" });
      expect(facts).toHaveLength(5);
      expect(
        sidecar
          .getByIds(
            "ns",
            facts.map((r) => r.id),
          )
          .every((row) => row.metadata.kind === "fact"),
      ).toBe(true);
      expect(facts.map((r) => r.id)).toEqual(
        sidecar.db
          .prepare(
            `SELECT r.id AS id FROM records_fts JOIN records r ON r.key = records_fts.rowid
             WHERE records_fts MATCH ? AND r.namespace = 'ns' AND json_extract(r.metadata, '$.kind') = 'fact' ORDER BY rank LIMIT 5`,
          )
          .pluck()
          .all('"chat" OR "pottery" OR "glaze"') as string[],
      );
    } finally {
      sidecar.close();
    }
  });

  it("warming the layered ranker's row lengths in the background leaves its ranking as it was", async () => {
    // The same rows twice: one ranked cold, the other after warming.
    const sidecar = largeSidecar();
    const warmed = largeSidecar();
    try {
      const cold = sidecar.keywordRanks("ns", "the chat about pottery glaze?", 10);
      const steps = vi.spyOn(LayeredRanker.prototype, "warmLengths");
      const errors: unknown[] = [];
      warmed.warmRankerInBackground(
        () => true,
        (error) => errors.push(error),
      );
      await vi.waitFor(() => expect(steps.mock.results.at(-1)?.value).toBe(true), { timeout: 15_000 });
      // 6,400 rows at 2,000 per step.
      expect(steps).toHaveBeenCalledTimes(4);
      expect(errors).toEqual([]);
      expect(warmed.keywordRanks("ns", "the chat about pottery glaze?", 10)).toEqual(cold);
    } finally {
      sidecar.close();
      warmed.close();
    }
  });

  it("a filter condition is part of the layered ranking: the best passing rows, as FTS5 ranks them", () => {
    const sidecar = largeSidecar();
    try {
      const rank = vi.spyOn(LayeredRanker.prototype, "rank");
      const exactPassing = (session: string, limit: number) =>
        sidecar.db
          .prepare(
            `SELECT r.id AS id FROM records_fts JOIN records r ON r.key = records_fts.rowid
             WHERE records_fts MATCH ? AND r.namespace = 'ns' AND json_extract(r.metadata, '$.session_id') = ? ORDER BY rank LIMIT ?`,
          )
          .pluck()
          .all('"chat" OR "pottery" OR "glaze"', session, limit) as string[];
      // Session s8 (150 of 6,000 rows): "chat" in every one, "pottery" or "glaze" in a few. A
      // post-filtered top-k of the whole namespace would hold almost none of them.
      const condition = sidecar.condition(parseMemoryFilter({ sessionId: "s8" }), null);
      const ranked = sidecar.keywordRanks("ns", "chat pottery glaze", 5, undefined, condition);
      expect(rank).toHaveBeenCalledTimes(1);
      expect(rank.mock.calls[0]![1].where).toBeTruthy();
      expect(ranked.map((r) => r.id)).toEqual(exactPassing("s8", 5));
      // Session s7 holds no "chat" (i % 5 = 2) and few rare words: fewer pooled rows than the limit,
      // so FTS5's exact ranking over the passing rows answers, with every passing match.
      const odd = sidecar.keywordRanks(
        "ns",
        "chat pottery glaze",
        20,
        undefined,
        sidecar.condition(parseMemoryFilter({ sessionId: "s7" }), null),
      );
      expect(odd.map((r) => r.id)).toEqual(exactPassing("s7", 20));
    } finally {
      sidecar.close();
    }
  });

  it("keeps FTS5's own bm25() when every query word is rare, and finds nothing for words no item holds", () => {
    const sidecar = largeSidecar();
    try {
      const rank = vi.spyOn(LayeredRanker.prototype, "rank");
      const ranked = sidecar.keywordRanks("ns", "pottery glaze", 20);
      expect(rank).not.toHaveBeenCalled();
      expect(ranked.map((r) => r.id)).toEqual(fts5Order(sidecar, "ns", '"pottery" OR "glaze"', 20).map((r) => r.id));
      expect(sidecar.keywordRanks("ns", "zeppelin", 5)).toEqual([]);
    } finally {
      sidecar.close();
    }
  });
});

describe("Sidecar write-ahead log", () => {
  it("a burst of writes is copied into the database file on a thread of its own, and close leaves no log behind", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sidecar-wal-"));
    const file = path.join(dir, "sidecar.db");
    const recordsInMainFile = (): number => rowsInFileAlone(file, "records");
    const sidecar = Sidecar.open(file);
    try {
      sidecar.db.pragma("wal_checkpoint(TRUNCATE)");
      const batches = Math.ceil(CHECKPOINT_ITEMS / 100);
      for (let b = 0; b < batches; b++) {
        sidecar.upsert(
          "ns",
          Array.from({ length: 100 }, (_, i) => ({
            id: `t${b * 100 + i}`,
            text: `turn ${b * 100 + i} about sailing`,
            metadata: { kind: "turn", session_id: "s" },
            vector: null,
          })),
        );
      }
      // Far below SQLite's own threshold (1,000 pages): only the thread copies them this early.
      await until(() => recordsInMainFile() === batches * 100);
      sidecar.close();
      expect(fs.existsSync(`${file}-wal`)).toBe(false);
      expect(recordsInMainFile()).toBe(batches * 100);
    } finally {
      sidecar.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("Sidecar full-text index segments", () => {
  const segments = (sidecar: Sidecar): number =>
    sidecar.db.prepare(`SELECT COUNT(DISTINCT segid) FROM records_fts_idx`).pluck().get() as number;

  it("a small store written one turn at a time keeps its index in at most SMALL_INDEX_SEGMENTS segments, and finds every turn", () => {
    const sidecar = Sidecar.open(":memory:");
    try {
      let most = 0;
      for (let i = 0; i < 40; i++) {
        sidecar.upsert("ns", [
          {
            id: `t${i}`,
            text: `turn ${i} about ${i % 2 === 0 ? "sailing" : "gardens"}`,
            metadata: { kind: "turn", session_id: `s${i}` },
            vector: null,
          },
        ]);
        most = Math.max(most, segments(sidecar));
      }
      expect(most).toBeLessThanOrEqual(SMALL_INDEX_SEGMENTS);
      expect(
        sidecar
          .keywordSearch("ns", "sailing", 100)
          .map((h) => h.id)
          .sort(),
      ).toEqual(Array.from({ length: 20 }, (_, i) => `t${2 * i}`).sort());
    } finally {
      sidecar.close();
    }
  });

  it("a store past SMALL_INDEX_ITEMS keeps FTS5's own merging", () => {
    const sidecar = Sidecar.open(":memory:");
    try {
      sidecar.upsert(
        "ns",
        Array.from({ length: SMALL_INDEX_ITEMS }, (_, i) => ({ id: `f${i}`, text: `fact ${i}`, metadata: { kind: "fact" }, vector: null })),
      );
      for (let i = 0; i < 8; i++) sidecar.upsert("ns", [{ id: `t${i}`, text: `turn ${i}`, metadata: { kind: "turn" }, vector: null }]);
      expect(segments(sidecar)).toBeGreaterThan(SMALL_INDEX_SEGMENTS);
    } finally {
      sidecar.close();
    }
  });
});
