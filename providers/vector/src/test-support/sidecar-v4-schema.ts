/**
 * The vector sidecar's schema as version 4 (@hermes/memory-vector before conversational indexing)
 * wrote it (frozen copy), for migration tests: a file created with this SQL and `user_version = 4`
 * is what existing users have.
 */
export const SIDECAR_V4_SCHEMA_SQL = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
  key INTEGER PRIMARY KEY,
  namespace TEXT NOT NULL,
  id TEXT NOT NULL,
  text TEXT NOT NULL DEFAULT '',
  metadata TEXT NOT NULL DEFAULT '{}',
  vector BLOB,
  UNIQUE (namespace, id)
);
CREATE INDEX IF NOT EXISTS records_by_id ON records (id);
CREATE INDEX IF NOT EXISTS records_with_vectors ON records (namespace) WHERE vector IS NOT NULL;
CREATE VIRTUAL TABLE IF NOT EXISTS records_fts USING fts5(text, content='records', content_rowid='key', tokenize='porter unicode61 remove_diacritics 2');
CREATE TRIGGER IF NOT EXISTS records_ad AFTER DELETE ON records BEGIN
  INSERT INTO records_fts (records_fts, rowid, text) VALUES ('delete', old.key, old.text);
END;
CREATE TRIGGER IF NOT EXISTS records_au AFTER UPDATE OF text ON records BEGIN
  INSERT INTO records_fts (records_fts, rowid, text) VALUES ('delete', old.key, old.text);
  INSERT INTO records_fts (rowid, text) VALUES (new.key, new.text);
END;
CREATE INDEX IF NOT EXISTS records_turns_by_session ON records (namespace, json_extract(metadata, '$.session_id'), json_extract(metadata, '$.kind'), key);
PRAGMA user_version = 4;
`;

/** Insert a row the way version 4 stored it: a records row, then its FTS row (no trigger). */
export const V4_INSERT_RECORD = `INSERT INTO records (namespace, id, text, metadata, vector) VALUES (?, ?, ?, ?, ?) RETURNING key`;
export const V4_INDEX_RECORD = `INSERT INTO records_fts (rowid, text) VALUES (?, ?)`;
