import Database from "better-sqlite3";
import type { Database as SqliteDatabase, Statement } from "better-sqlite3";
import { closeSqliteStore, openSqliteStore, type SqliteStoreSpec } from "@hermes/memory-provider-kit";
import type { VectorMetadata } from "./metadata-filter.js";

/** One write waiting for its store to acknowledge it. */
export interface OutboxEntry {
  /** Row number in the outbox; a newer write of the same id gets a new one. */
  seq: number;
  id: string;
  namespace: string;
  text: string;
  metadata: VectorMetadata;
}

const OUTBOX_SPEC: SqliteStoreSpec = {
  driver: Database,
  label: "vector write outbox",
  packageName: "@hermes/memory-vector",
  schemaVersion: 1,
  migrate(db) {
    // Version 0 files written before the outbox had a schema version already hold this table.
    db.exec(`CREATE TABLE IF NOT EXISTS outbox (
      seq INTEGER PRIMARY KEY,
      namespace TEXT NOT NULL,
      id TEXT NOT NULL,
      text TEXT NOT NULL,
      metadata TEXT NOT NULL,
      UNIQUE (namespace, id)
    )`);
  },
};

/**
 * Writes a remote store (Pinecone) has not acknowledged yet, on disk next to the sidecar
 * (`$HERMES_HOME/memory/vector/outbox.sqlite`). Every `put` is one transaction committed with
 * `synchronous = FULL` (fsynced), so an entry survives kill -9 and power loss; it is removed only
 * after the store acknowledged that exact version. Re-sending is idempotent: the same ids are
 * upserted again. Shared safely by several processes on one home (SQLite locking).
 */
export class Outbox {
  readonly file: string;
  private readonly db: SqliteDatabase;
  private readonly statements: { put: Statement; remove: Statement; list: Statement; count: Statement };

  private constructor(file: string, db: SqliteDatabase) {
    this.file = file;
    this.db = db;
    this.statements = {
      put: db.prepare(
        `INSERT INTO outbox (namespace, id, text, metadata) VALUES (?, ?, ?, ?)
         ON CONFLICT(namespace, id) DO UPDATE SET seq = (SELECT COALESCE(MAX(seq), 0) + 1 FROM outbox), text = excluded.text, metadata = excluded.metadata
         RETURNING seq`,
      ),
      remove: db.prepare(`DELETE FROM outbox WHERE seq = ?`),
      list: db.prepare(`SELECT seq, namespace, id, text, metadata FROM outbox ORDER BY seq LIMIT ?`),
      count: db.prepare(`SELECT COUNT(*) AS n FROM outbox`),
    };
  }

  /** Open (creating) the outbox file. Throws `STORAGE_FAILED` when it cannot be created, `SCHEMA_TOO_NEW` for a newer file. */
  static open(file: string): Outbox {
    const db = openSqliteStore(file, OUTBOX_SPEC, { openFix: "check free space and write permission on $HERMES_HOME/memory/vector" });
    try {
      // FULL: a commit is fsynced before `put` returns, so an entry outlives a crash or power loss.
      db.pragma("synchronous = FULL");
      return new Outbox(file, db);
    } catch (error) {
      closeSqliteStore(db);
      throw error;
    }
  }

  /** Store writes durably (one fsynced transaction). Returns each entry's `seq`, in order. */
  put(writes: Array<{ id: string; namespace: string; text: string; metadata: VectorMetadata }>): number[] {
    if (writes.length === 0) return [];
    return this.db.transaction(() => writes.map((w) => (this.statements.put.get(w.namespace, w.id, w.text, JSON.stringify(w.metadata)) as { seq: number }).seq))();
  }

  /** Forget acknowledged entries (only these versions: a newer write of the same id stays). */
  remove(seqs: number[]): void {
    if (seqs.length === 0) return;
    this.db.transaction(() => {
      for (const seq of seqs) this.statements.remove.run(seq);
    })();
  }

  /** The oldest `limit` entries. */
  list(limit: number): OutboxEntry[] {
    return (this.statements.list.all(limit) as Array<{ seq: number; namespace: string; id: string; text: string; metadata: string }>).map((r) => ({
      seq: r.seq,
      id: r.id,
      namespace: r.namespace,
      text: r.text,
      metadata: JSON.parse(r.metadata) as VectorMetadata,
    }));
  }

  /** Entries waiting. */
  count(): number {
    return (this.statements.count.get() as { n: number }).n;
  }

  /** Close the file (back in rollback-journal mode when this was the last connection). Idempotent. */
  close(): void {
    closeSqliteStore(this.db);
  }

}
