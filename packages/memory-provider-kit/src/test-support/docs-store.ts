import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { seededRandom } from "@hermes/test-support";
import type { LayeredRankerSchema } from "../layered-ranker.js";

/** The schema of `createDocsStore`'s tables, for `LayeredRanker`. */
export const DOCS_SCHEMA: LayeredRankerSchema = {
  fts: "docs_fts",
  table: "docs",
  id: "id",
  content: "body",
  speaker: "who",
  filters: { kind: "i.kind", session: "i.session", user: "i.who" },
};
export const DOCS_WEIGHTS = { content: 1, speaker: 0.25 };

/** A store in a file for the layered ranker's thread tests, and how to add to it and clean up. */
export interface DocsStore {
  dir: string;
  file: string;
  db: Database.Database;
  /** Insert a row (speaker "bob", kind "fact", session "s1") and index it; returns its id. */
  insertRow(body: string): number;
  /** Each word with the number of rows holding it (read on `on`, default the store's connection). */
  counted(words: readonly string[], on?: Database.Database): Array<{ term: string; df: number }>;
  remove(): void;
}

/**
 * `rows` rows of 8–16 words drawn from `vocabulary` with a log-uniform rank (a few words in most
 * rows, most in few), seeded, in a WAL database in a new temporary directory. Rows alternate
 * speakers "ann" (every third) and "bob", kinds "turn" and "fact", and sessions s0–s6.
 */
export function createDocsStore(rows: number, vocabulary: readonly string[], seed: number): DocsStore {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kit-docs-"));
  const file = path.join(dir, "docs.db");
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.exec(`
    CREATE TABLE docs (id INTEGER PRIMARY KEY, body TEXT NOT NULL, who TEXT NOT NULL, kind TEXT NOT NULL, session TEXT NOT NULL);
    CREATE VIRTUAL TABLE docs_fts USING fts5(body, who, content = 'docs', content_rowid = 'id', tokenize = 'porter unicode61 remove_diacritics 2');
  `);
  const random = seededRandom(seed);
  const insert = db.prepare("INSERT INTO docs (body, who, kind, session) VALUES (?, ?, ?, ?)");
  db.transaction(() => {
    for (let i = 0; i < rows; i++) {
      const length = 8 + Math.floor(random() * 9);
      const words = Array.from(
        { length },
        () => vocabulary[Math.min(vocabulary.length - 1, Math.floor(Math.exp(random() * Math.log(vocabulary.length))) - 1)]!,
      );
      insert.run(words.join(" "), i % 3 === 0 ? "ann" : "bob", i % 2 === 0 ? "turn" : "fact", `s${i % 7}`);
    }
  })();
  db.exec("INSERT INTO docs_fts(docs_fts) VALUES ('rebuild')");
  const insertOne = db.prepare("INSERT INTO docs (body, who, kind, session) VALUES (?, 'bob', 'fact', 's1')");
  const index = db.prepare("INSERT INTO docs_fts (rowid, body, who) VALUES (?, ?, 'bob')");
  return {
    dir,
    file,
    db,
    insertRow(body) {
      const id = Number(insertOne.run(body).lastInsertRowid);
      index.run(id, body);
      return id;
    },
    counted(words, on = db) {
      const count = on.prepare("SELECT COUNT(*) FROM docs_fts WHERE docs_fts MATCH ?").pluck();
      return words.map((term) => ({ term, df: count.get(`"${term}"`) as number }));
    },
    remove() {
      db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
