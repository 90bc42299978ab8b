import Database from "better-sqlite3";

/**
 * The SQLite provider's schema as version 2 of this package wrote it (frozen copy), for migration
 * tests: a database created with this SQL and `user_version = 2` is what existing users have.
 */
export const V2_SCHEMA_SQL = `
CREATE TABLE IF NOT EXISTS items (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL CHECK (kind IN ('turn', 'fact', 'checkpoint')),
  session_id TEXT,
  user_id TEXT,
  speaker TEXT NOT NULL DEFAULT '',
  content TEXT NOT NULL,
  tags TEXT NOT NULL DEFAULT '[]',
  metadata TEXT NOT NULL DEFAULT '{}',
  digest TEXT,
  created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS speakers (name TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS items_digest ON items(digest) WHERE digest IS NOT NULL;
CREATE INDEX IF NOT EXISTS items_session ON items(session_id, id);
CREATE VIRTUAL TABLE IF NOT EXISTS items_fts USING fts5(
  content, speaker,
  content = 'items', content_rowid = 'id',
  tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS items_ad AFTER DELETE ON items BEGIN
  INSERT INTO items_fts(items_fts, rowid, content, speaker) VALUES ('delete', old.id, old.content, old.speaker);
END;
CREATE TRIGGER IF NOT EXISTS items_au AFTER UPDATE OF content, speaker ON items BEGIN
  INSERT INTO items_fts(items_fts, rowid, content, speaker) VALUES ('delete', old.id, old.content, old.speaker);
  INSERT INTO items_fts(rowid, content, speaker) VALUES (new.id, new.content, new.speaker);
END;
INSERT INTO items_fts(items_fts, rank) VALUES ('rank', 'bm25(1.0, 0.25)');
`;

/** Insert rows the way version 2 stored them: an items row, then its FTS row (no trigger). */
const V2_INSERT_ITEM = `INSERT INTO items (kind, session_id, user_id, speaker, content, tags, metadata, digest, created_at)
  VALUES (@kind, @session, @user, @speaker, @content, '[]', @metadata, @digest, @createdAt)`;
const V2_INDEX_ITEM = `INSERT INTO items_fts (rowid, content, speaker) VALUES (?, ?, ?)`;

/** A row of a version-2 store (`metadata` is the stored JSON text, valid or not). */
export interface V2Row {
  kind: string;
  session: string | null;
  speaker?: string;
  content: string;
  metadata?: string;
  digest?: string | null;
  createdAt: number;
}

/**
 * Write `rows` to a new version-2 store at `file`, in one transaction, as version 2 stored them,
 * in WAL mode as the provider leaves its files. Returns nothing; the file is closed.
 */
export function writeV2File(file: string, rows: Iterable<V2Row>): void {
  const db = new Database(file);
  try {
    db.exec(V2_SCHEMA_SQL);
    const insert = db.prepare(V2_INSERT_ITEM);
    const index = db.prepare(V2_INDEX_ITEM);
    db.transaction(() => {
      for (const r of rows) {
        const speaker = r.speaker ?? "";
        const { lastInsertRowid } = insert.run({
          kind: r.kind,
          session: r.session,
          user: null,
          speaker,
          content: r.content,
          metadata: r.metadata ?? "{}",
          digest: r.digest ?? null,
          createdAt: r.createdAt,
        });
        index.run(lastInsertRowid, r.content, speaker);
      }
    })();
    db.pragma("journal_mode = WAL");
    db.pragma("user_version = 2");
  } finally {
    db.close();
  }
}
