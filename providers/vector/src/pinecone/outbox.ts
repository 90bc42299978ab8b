import Database from "better-sqlite3";
import type { Database as SqliteDatabase, Statement } from "better-sqlite3";
import {
  closeSqliteStore,
  openSqliteStore,
  openSqliteStoreAsync,
  storageError,
  type OpenSqliteStoreOptions,
  type SqliteStoreSpec,
} from "@hermes/memory-provider-kit/sqlite";
import { describeError, HermesMemoryError } from "@hermes/memory-core";
import type { VectorMetadata } from "../metadata-filter.js";
import { isolateRefused } from "../retry-policy.js";

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
 * A write its store refused for its content, set aside so the writes behind it go through. Its
 * `seq` numbers it among the set-aside writes (not an outbox row).
 */
export interface RefusedEntry extends OutboxEntry {
  /** Why the store refused it (the error message). */
  reason: string;
  /** When it was set aside (epoch ms). */
  refusedAt: number;
}

/**
 * Writes refused for their content (HTTP 400/413/422: re-sending them is refused again). Created on
 * every open rather than by a schema version, so an older release can still open the file (it
 * leaves this table alone).
 */
const REFUSED_TABLE = `CREATE TABLE IF NOT EXISTS refused (
  rid INTEGER PRIMARY KEY AUTOINCREMENT,
  namespace TEXT NOT NULL,
  id TEXT NOT NULL,
  text TEXT NOT NULL,
  metadata TEXT NOT NULL,
  reason TEXT NOT NULL,
  refused_at INTEGER NOT NULL
)`;

/** How the outbox file is opened, with the remedy its open failures give. */
function outboxOpenOptions(options: { lockWaitMs?: number }): OpenSqliteStoreOptions {
  return {
    openFix: "check free space and write permission on $HERMES_HOME/memory/vector",
    ...(options.lockWaitMs !== undefined ? { lockWaitMs: options.lockWaitMs } : {}),
  };
}

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
  private readonly statements: {
    put: Statement;
    remove: Statement;
    list: Statement;
    count: Statement;
    setAside: Statement;
    listRefused: Statement;
    countRefused: Statement;
    removeRefused: Statement;
    supersede: Statement;
    queued: Statement;
  };

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
      // A refused write gets its own row id: outbox row numbers are reused once the newest is gone.
      setAside: db.prepare(
        `INSERT INTO refused (namespace, id, text, metadata, reason, refused_at)
         SELECT namespace, id, text, metadata, ?, ? FROM outbox WHERE seq = ?`,
      ),
      listRefused: db.prepare(`SELECT rid, namespace, id, text, metadata, reason, refused_at FROM refused ORDER BY rid LIMIT ?`),
      countRefused: db.prepare(`SELECT COUNT(*) AS n FROM refused`),
      removeRefused: db.prepare(`DELETE FROM refused WHERE rid = ?`),
      supersede: db.prepare(`DELETE FROM refused WHERE namespace = ? AND id = ?`),
      queued: db.prepare(`SELECT 1 FROM outbox WHERE namespace = ? AND id = ?`),
    };
  }

  /** Open (creating) the outbox file. Throws `STORAGE_FAILED` when it cannot be created, `SCHEMA_TOO_NEW` for a newer file. */
  static open(file: string, options: { lockWaitMs?: number } = {}): Outbox {
    return Outbox.prepare(file, openSqliteStore(file, OUTBOX_SPEC, outboxOpenOptions(options)));
  }

  /** `open` for the provider's `initialize()`: waiting for another process's lock leaves the event loop free. */
  static async openAsync(file: string, options: { lockWaitMs?: number } = {}): Promise<Outbox> {
    return Outbox.prepare(file, await openSqliteStoreAsync(file, OUTBOX_SPEC, outboxOpenOptions(options)));
  }

  private static prepare(file: string, db: SqliteDatabase): Outbox {
    try {
      // FULL: a commit is fsynced before `put` returns, so an entry outlives a crash or power loss.
      db.pragma("synchronous = FULL");
      // Created once (it needs the write lock, which another process may hold).
      if (!db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'refused'`).get()) db.exec(REFUSED_TABLE);
      return new Outbox(file, db);
    } catch (error) {
      closeSqliteStore(db);
      if (!HermesMemoryError.isInstance(error))
        throw storageError(
          `cannot prepare the vector write outbox ${file}`,
          error,
          "retry once the other process using it has finished; check free space and write permission on $HERMES_HOME/memory/vector",
        );
      throw error;
    }
  }

  /**
   * Store writes durably (one fsynced transaction). Returns each entry's `seq`, in order. A write
   * replaces a set-aside (refused) version of the same id: the newer one is what should be stored.
   */
  put(writes: Array<{ id: string; namespace: string; text: string; metadata: VectorMetadata }>): number[] {
    if (writes.length === 0) return [];
    return this.db.transaction(() =>
      writes.map((w) => {
        this.statements.supersede.run(w.namespace, w.id);
        return (this.statements.put.get(w.namespace, w.id, w.text, JSON.stringify(w.metadata)) as { seq: number }).seq;
      }),
    )();
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
    return (this.statements.list.all(limit) as Array<{ seq: number; namespace: string; id: string; text: string; metadata: string }>).map(
      (r) => ({
        seq: r.seq,
        id: r.id,
        namespace: r.namespace,
        text: r.text,
        metadata: JSON.parse(r.metadata) as VectorMetadata,
      }),
    );
  }

  /** Entries waiting. */
  count(): number {
    return (this.statements.count.get() as { n: number }).n;
  }

  /**
   * Move entries their store refused for their content out of the queue, each with `reason`, in
   * one transaction: they stop holding up the writes behind them and stay listed (`refused()`)
   * until retried or dropped. Only these versions move: a newer write of the same id stays queued.
   */
  setAside(seqs: number[], reason: string, now = Date.now()): void {
    if (seqs.length === 0) return;
    this.db.transaction(() => {
      for (const seq of seqs) {
        this.statements.setAside.run(reason, now, seq);
        this.statements.remove.run(seq);
      }
    })();
  }

  /** The oldest `limit` writes set aside by `setAside`. */
  refused(limit = Number.MAX_SAFE_INTEGER): RefusedEntry[] {
    const rows = this.statements.listRefused.all(limit) as Array<{
      rid: number;
      namespace: string;
      id: string;
      text: string;
      metadata: string;
      reason: string;
      refused_at: number;
    }>;
    return rows.map((r) => ({
      seq: r.rid,
      id: r.id,
      namespace: r.namespace,
      text: r.text,
      metadata: JSON.parse(r.metadata) as VectorMetadata,
      reason: r.reason,
      refusedAt: r.refused_at,
    }));
  }

  /** Delete the set-aside writes `inScope` selects (an erasure reaches them too). Returns them. */
  dropRefusedWhere(inScope: (entry: RefusedEntry) => boolean): RefusedEntry[] {
    return this.db.transaction(() => {
      const gone = this.refused().filter(inScope);
      for (const entry of gone) this.statements.removeRefused.run(entry.seq);
      return gone;
    })();
  }

  /** Writes set aside. */
  refusedCount(): number {
    return (this.statements.countRefused.get() as { n: number }).n;
  }

  /**
   * Queue set-aside writes again (all, or those with these `seqs`), oldest first, behind what is
   * queued. A write whose id was written again since keeps the newer version (the refused one is
   * dropped). Returns how many were queued again.
   */
  retryRefused(seqs?: readonly number[]): number {
    return this.db.transaction(() => {
      const wanted = seqs ? new Set(seqs) : null;
      let queued = 0;
      for (const entry of this.refused()) {
        if (wanted && !wanted.has(entry.seq)) continue;
        this.statements.removeRefused.run(entry.seq);
        if (this.statements.queued.get(entry.namespace, entry.id)) continue;
        this.statements.put.get(entry.namespace, entry.id, entry.text, JSON.stringify(entry.metadata));
        queued++;
      }
      return queued;
    })();
  }

  /** Delete set-aside writes (all, or those with these `seqs`) for good. Returns how many. */
  dropRefused(seqs?: readonly number[]): number {
    return this.db.transaction(() => {
      let dropped = 0;
      for (const entry of this.refused()) {
        if (seqs && !seqs.includes(entry.seq)) continue;
        dropped += this.statements.removeRefused.run(entry.seq).changes;
      }
      return dropped;
    })();
  }

  /**
   * Move queued and set-aside entries to the namespace `target` names for them (null: they stay),
   * in one transaction. A queued entry whose id its new namespace already queues is dropped: that
   * one was written later. Returns how many moved.
   */
  relocate(target: (entry: OutboxEntry) => string | null): number {
    const queued = this.db.prepare(`UPDATE outbox SET namespace = ? WHERE seq = ?`);
    const setAside = this.db.prepare(`UPDATE refused SET namespace = ? WHERE rid = ?`);
    return this.db.transaction(() => {
      let moved = 0;
      for (const entry of this.list(Number.MAX_SAFE_INTEGER)) {
        const to = target(entry);
        if (to === null || to === entry.namespace) continue;
        if (this.statements.queued.get(to, entry.id)) this.statements.remove.run(entry.seq);
        else queued.run(to, entry.seq);
        moved++;
      }
      for (const entry of this.refused()) {
        const to = target(entry);
        if (to === null || to === entry.namespace) continue;
        setAside.run(to, entry.seq);
        moved++;
      }
      return moved;
    })();
  }

  /** Close the file (back in rollback-journal mode when this was the last connection). Idempotent. */
  close(): void {
    closeSqliteStore(this.db);
  }
}

/**
 * Send outbox `entries` with `send` and remove what was delivered. When the store refuses a batch
 * for its content (HTTP 400, 413, 422, or an embedder that cannot embed a text), `isolateRefused`
 * finds the writes it refuses on their own, and those are set aside (`Outbox.setAside`) so they
 * stop holding up the writes behind them, but only once the store is known to take writes: another
 * entry of this call was delivered, or `storeAccepted` (the caller's store took a write before).
 * While neither holds (a wrong dimension, a misconfigured index or model refuses every write),
 * nothing is set aside and the first refusal is thrown, so everything stays queued. Any other
 * failure is thrown at once (what was delivered before it stays delivered).
 */
export async function deliverIsolating<E extends OutboxEntry>(
  outbox: Outbox,
  entries: readonly E[],
  send: (entries: E[]) => Promise<void>,
  options: { storeAccepted?: boolean } = {},
): Promise<{ delivered: E[]; refused: E[] }> {
  const { delivered, refused } = await isolateRefused(entries, send, {
    accepted: options.storeAccepted === true,
    onDelivered: (part) => outbox.remove(part.map((e) => e.seq)),
  });
  for (const { item, error } of refused) outbox.setAside([item.seq], describeError(error).slice(0, 2000));
  return { delivered, refused: refused.map((r) => r.item) };
}

/**
 * `STORAGE_FAILED` naming the writes `outbox` holds set aside (refused by their store for their
 * content), the first refusal and what to do; `null` when there are none. Reported by every
 * `flush()` until they are retried or dropped, as they are accepted writes that are not stored.
 */
export function refusedWritesError(outbox: Outbox): HermesMemoryError | null {
  const count = outbox.refusedCount();
  if (count === 0) return null;
  const first = outbox.refused(1)[0];
  return new HermesMemoryError({
    code: "STORAGE_FAILED",
    message:
      `${count} accepted ${count === 1 ? "write was" : "writes were"} refused for ${count === 1 ? "its" : "their"} content and set aside in ${outbox.file}, so the writes behind them went through` +
      `${first ? ` (first: item ${JSON.stringify(first.id.slice(0, 80))}: ${first.reason.slice(0, 300)})` : ""}. ` +
      "List them with `hermes-memory vector refused`; after fixing the cause, queue them again with `hermes-memory vector refused --retry`, or delete them with `--drop`.",
  });
}
