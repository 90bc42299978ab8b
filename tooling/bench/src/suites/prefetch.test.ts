import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { schemaHashOfFile } from "./prefetch.js";

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "bench-schema-"));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

function database(name: string, setup: string): string {
  const file = path.join(dir, name);
  const db = new Database(file);
  db.exec(
    `CREATE TABLE items (id INTEGER PRIMARY KEY, content TEXT); CREATE VIRTUAL TABLE items_fts USING fts5(content, content = ''); ${setup}`,
  );
  db.close();
  return file;
}

describe("schemaHashOfFile (which cached corpus still fits)", () => {
  it("is equal for equal schemas and settings, and differs when an FTS5 setting, a CREATE statement or user_version differs", () => {
    const base = schemaHashOfFile(database("a.db", ""));
    expect(schemaHashOfFile(database("b.db", ""))).toBe(base);
    expect(schemaHashOfFile(database("c.db", "INSERT INTO items_fts(items_fts, rank) VALUES ('automerge', 8);"))).not.toBe(base);
    expect(schemaHashOfFile(database("d.db", "CREATE INDEX items_content ON items(content);"))).not.toBe(base);
    expect(schemaHashOfFile(database("e.db", "PRAGMA user_version = 3;"))).not.toBe(base);
  });
});
