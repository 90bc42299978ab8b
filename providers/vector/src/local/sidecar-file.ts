/**
 * The open sidecar file: its connection, prepared statements and caches, and every write (rows,
 * vectors, deletions, repairs). `Sidecar` (sidecar.ts) adds the reads searches and erasure need.
 */
import type { Database as SqliteDatabase, Statement } from "better-sqlite3";
import { HermesMemoryError } from "@hermes/memory-core";
import {
  CONTEXT_CHARS,
  CONTEXT_TURNS,
  closeSqliteStore,
  DocumentFrequencies,
  LayeredRanker,
  NO_CONTEXT,
  SmallIndexCompactor,
  WalCheckpointer,
  withBusyTimeout,
  ftsTermCounter,
  RecentTurns,
  storageError,
  turnContext,
  type LayeredRankerOptions,
  UNREADABLE_KEY,
} from "@hermes/memory-provider-kit/sqlite";
import { ReadCache } from "../search/read-cache.js";
import { matchesMetadataFilter, type MetadataFilter } from "../metadata-filter.js";
import { textOf, unreadableRecordIds } from "./sidecar-values.js";
import { encodeVector, isJsonError, toRow, type RawRow, type SidecarRow, type SidecarWrite } from "./sidecar-rows.js";
import {
  contextSession,
  FILTER_INDEX,
  filterColumnsOf,
  KIND_EXPR,
  RANKER_SCHEMA,
  RANKER_WEIGHTS,
  recordDateText,
  registerFilterFunctions,
  repairRecords,
  SESSION_EXPR,
} from "./sidecar-schema.js";

/** See the module comment. */
export class SidecarFile {
  readonly file: string;
  readonly db: SqliteDatabase;
  /** True when opened with `openReadOnly`: every write throws. */
  readonly readOnly: boolean;
  protected readonly statements: {
    insertNew: Statement;
    indexNew: Statement;
    updateExisting: Statement;
    bump: Statement;
    getMeta: Statement;
    setMeta: Statement;
    dataVersion: Statement;
    versions: Statement;
    precedingTurns: Statement;
    keyOf: Statement;
  };
  /** The last turns of recently written sessions (keyed by namespace and session), as this connection wrote them. */
  private readonly recentTurns = new RecentTurns();
  /** What searches read (turn links, ids, metadata, texts), kept while no other change could have moved it. */
  protected readonly kept = new ReadCache();

  /** The layered BM25 ranker, prepared on the first query that needs it (large stores only). */
  private ranker: LayeredRanker | undefined;
  /** Options of the layered ranker (its pool helper thread). */
  private readonly rankerOptions: LayeredRankerOptions;
  /** Per word: items containing it (counted up to half the store) and the store size when counted. */
  protected readonly frequencies: DocumentFrequencies;
  /** Keeps a small store's full-text index in few segments (none on a read-only connection). */
  private readonly compactor: SmallIndexCompactor | undefined;
  /** Runs the write-ahead log's checkpoints on a thread of their own during bursts of writes (none read-only). */
  private readonly checkpointer: WalCheckpointer | undefined;

  /** Prepared statements by SQL text: the hot read paths run the same few shapes every query. */
  private readonly prepared = new Map<string, Statement>();

  protected prepare(sql: string): Statement {
    let stmt = this.prepared.get(sql);
    if (!stmt) {
      stmt = this.db.prepare(sql);
      if (this.prepared.size > 256) this.prepared.clear();
      this.prepared.set(sql, stmt);
    }
    return stmt;
  }

  /** False for a file older than version 5 opened read-only: one FTS column, no context. */
  protected readonly contextColumns: boolean;
  /** False for a file older than version 6 opened read-only: filters read the metadata JSON instead of the filter columns. */
  protected readonly filterColumns: boolean;

  protected constructor(file: string, db: SqliteDatabase, readOnly = false, rankerOptions: LayeredRankerOptions = {}) {
    this.file = file;
    this.rankerOptions = rankerOptions;
    this.db = db;
    this.frequencies = new DocumentFrequencies(ftsTermCounter(db, "records_fts"));
    this.readOnly = readOnly;
    this.compactor = readOnly ? undefined : new SmallIndexCompactor(db, "records_fts");
    this.checkpointer = readOnly ? undefined : new WalCheckpointer(db);
    const version = db.pragma("user_version", { simple: true }) as number;
    this.contextColumns = !readOnly || version >= 5;
    this.filterColumns = !readOnly || version >= 6;
    registerFilterFunctions(db);
    // Deleted rows' pages are zeroed, so erased text does not linger in the file.
    if (!readOnly) db.pragma("secure_delete = ON");
    // A filter over a namespace reads the filter columns from this covering index instead of every
    // row (rows hold the vectors, so a table scan reads the whole namespace's vectors). Created here
    // as well as in the schema so files written before it get it at their next writable open.
    if (!readOnly && this.filterColumns) db.exec(FILTER_INDEX);
    this.statements = {
      // Read-only opens of a file older than version 6 lack the newer columns and never write.
      insertNew: !this.filterColumns
        ? db.prepare(`SELECT NULL`)
        : db.prepare(
            `INSERT INTO records (namespace, id, text, metadata, vector, prev1, prev2, session_date, tags, created_ms, user_meta, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT(namespace, id) DO NOTHING RETURNING key`,
          ),
      indexNew: !this.contextColumns
        ? db.prepare(`SELECT NULL`)
        : db.prepare(`INSERT INTO records_fts (rowid, text, prev1, prev2, session_date) VALUES (?, ?, ?, ?, ?)`),
      updateExisting: !this.filterColumns
        ? db.prepare(`SELECT NULL`)
        : db.prepare(
            `UPDATE records SET text = ?, metadata = ?, vector = ?, prev1 = ?, prev2 = ?, session_date = ?, tags = ?, created_ms = ?, user_meta = ?, expires_at = ? WHERE key = ?`,
          ),
      keyOf: db.prepare(`SELECT key FROM records WHERE namespace = ? AND id = ?`).pluck(),
      dataVersion: db.prepare(`PRAGMA data_version`).pluck(),
      // Both numbers `ReadCache.sync` compares, in one statement (it runs before every search read).
      versions: db.prepare(`SELECT data_version, total_changes() FROM pragma_data_version`).raw(true),
      // The texts of a session's turns before `key`, most recent first (a turn's context; only
      // their first CONTEXT_CHARS characters are ever used).
      precedingTurns: db
        .prepare(
          `SELECT substr(text, 1, ${CONTEXT_CHARS}) FROM records WHERE namespace = ? AND ${SESSION_EXPR} = ? AND ${KIND_EXPR} = 'turn' AND key < ? ORDER BY key DESC LIMIT ${CONTEXT_TURNS}`,
        )
        .pluck(),
      bump: db.prepare(`INSERT INTO meta (key, value) VALUES ('generation', '1')
         ON CONFLICT(key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)`),
      getMeta: db.prepare(`SELECT value FROM meta WHERE key = ?`),
      setMeta: db.prepare(`INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`),
    };
  }

  /** Monotonic write counter (bumped by every write transaction). */
  get generation(): number {
    return Number(this.getMeta("generation") ?? "0");
  }

  getMeta(key: string): string | undefined {
    return (this.statements.getMeta.get(key) as { value: string } | undefined)?.value;
  }

  setMeta(key: string, value: string): void {
    this.statements.setMeta.run(key, value);
  }

  /** Set several meta keys in one transaction (all or none). */
  setMetas(values: Record<string, string>): void {
    this.db.transaction(() => {
      for (const [key, value] of Object.entries(values)) this.statements.setMeta.run(key, value);
    })();
  }

  /** The layered BM25 ranker over the records' keyword index (prepared once). */
  protected layeredRanker(): LayeredRanker {
    return (this.ranker ??= this.contextColumns
      ? new LayeredRanker(this.db, RANKER_WEIGHTS, RANKER_SCHEMA, this.rankerOptions)
      : new LayeredRanker(this.db, { content: 1, speaker: 0 }, { ...RANKER_SCHEMA, extra: [] }, this.rankerOptions));
  }

  /**
   * Keep the layered ranker's row lengths in memory, step by step on timers (see
   * `LayeredRanker.warmInBackground`), so a large sidecar's searches need not read them row by row.
   * Never throws: a failure is passed to `onError`.
   */
  warmRankerInBackground(stillWanted: () => boolean, onError: (error: unknown) => void): void {
    let ranker: LayeredRanker;
    try {
      ranker = this.layeredRanker();
    } catch (error) {
      onError(error);
      return;
    }
    ranker.warmInBackground(stillWanted, onError);
  }

  /**
   * Run `work` with SQLite's busy timeout at `ms` (how long a statement waits on the thread for
   * another connection's write lock before failing as busy), then put the connection's usual one back.
   */
  withBusyTimeout<T>(ms: number, work: () => T): T {
    return withBusyTimeout(this.db, ms, work);
  }

  /**
   * Insert or replace rows in one transaction. Returns each row's key, in order. A new turn with a
   * session is indexed with the first characters of the two previous turns of its namespace and
   * session (insertion order) and its date (`recordDateText`), as the kit's helpers build them.
   * `lockWaitMs`: how long to wait on the thread for another process's write lock before failing
   * as busy (the connection's busy timeout when absent).
   */
  upsert(namespace: string, rows: SidecarWrite[], lockWaitMs?: number): number[] {
    if (!this.filterColumns) {
      throw storageError(`the vector sidecar ${this.file} is open read-only`, undefined, "open it with write access to save records");
    }
    if (lockWaitMs !== undefined) return this.withBusyTimeout(lockWaitMs, () => this.upsert(namespace, rows));
    // Settled first, so that a transaction of inserts only drops no more kept links than its sessions'.
    this.syncKept();
    let replaced = false;
    const run = this.db.transaction((items: SidecarWrite[]) => {
      this.recentTurns.sync(this.statements.dataVersion.get() as number);
      const keys: number[] = [];
      for (const row of items) {
        const { text: _text, ...rest } = row.metadata;
        const metadata = JSON.stringify(rest);
        const vector = encodeVector(row.vector);
        const session = contextSession(rest);
        const date = recordDateText(rest);
        const columns = filterColumnsOf(rest);
        const group = session === undefined ? undefined : `${namespace}\u0000${session}`;
        const previous =
          group === undefined
            ? undefined
            : this.recentTurns.previous(
                group,
                () => this.statements.precedingTurns.all(namespace, session, Number.MAX_SAFE_INTEGER) as string[],
              );
        const context = previous === undefined ? NO_CONTEXT : turnContext(previous);
        const inserted = this.statements.insertNew.get(
          namespace,
          row.id,
          row.text,
          metadata,
          vector,
          context.prev1,
          context.prev2,
          date,
          columns.tags,
          columns.createdMs,
          columns.userMeta,
          columns.expiresAt,
        ) as { key: number } | undefined;
        if (inserted) {
          // New row: indexed here, not by a trigger (see the schema notes).
          this.statements.indexNew.run(inserted.key, row.text, context.prev1, context.prev2, date);
          if (group !== undefined) this.recentTurns.push(group, row.text, previous!);
          keys.push(inserted.key);
        } else {
          // Existing id: its context is that of its own place in its (possibly new) session; the
          // update triggers re-index it and refill the next turns' context. The remembered last
          // turns may have changed.
          this.recentTurns.clear();
          replaced = true;
          // Its length and its next turns' lengths change: the ranker's kept lengths are stale.
          this.ranker?.forgetLengths();
          const key = this.statements.keyOf.get(namespace, row.id) as number;
          const own =
            session === undefined ? NO_CONTEXT : turnContext(this.statements.precedingTurns.all(namespace, session, key) as string[]);
          this.statements.updateExisting.run(
            row.text,
            metadata,
            vector,
            own.prev1,
            own.prev2,
            date,
            columns.tags,
            columns.createdMs,
            columns.userMeta,
            columns.expiresAt,
            key,
          );
          keys.push(key);
        }
      }
      this.statements.bump.run();
      return keys;
    });
    try {
      // BEGIN IMMEDIATE: the write lock is taken first, waiting (up to the busy timeout) for another
      // process that holds it; a deferred transaction would read first and then fail at once when
      // it tried to write.
      const keys = run.immediate(rows);
      let largest = 0;
      for (const key of keys) largest = Math.max(largest, key);
      if (keys.length > 0) {
        this.compactor?.afterWrite(largest);
        this.checkpointer?.afterCommit(keys.length);
      }
      // New rows only: just the links of turns in their sessions moved (a replaced row may have
      // left its session, so then every kept link is dropped at the next read).
      if (!replaced) {
        const sessions: Array<[string, string]> = [];
        for (const row of rows) if (typeof row.metadata.session_id === "string") sessions.push([namespace, row.metadata.session_id]);
        this.kept.inserted(sessions, this.versions()[1]);
      }
      return keys;
    } catch (error) {
      // Rolled back: the remembered last turns may name rows that were never committed.
      this.recentTurns.clear();
      throw error;
    }
  }

  /** Rows with the given ids in one namespace (or any namespace when `namespace` is null). */
  getByIds(namespace: string | null, ids: string[]): SidecarRow[] {
    if (ids.length === 0) return [];
    const out: SidecarRow[] = [];
    for (let i = 0; i < ids.length; i += 250) {
      // Each id also as UTF-8 bytes: another program may have stored an id as a BLOB, which reads
      // as its text (both are look-ups in the id index).
      const chunk = ids.slice(i, i + 250).flatMap((id) => [id, Buffer.from(id)]);
      const marks = chunk.map(() => "?").join(",");
      const sql =
        namespace === null
          ? `SELECT * FROM records WHERE id IN (${marks})`
          : `SELECT * FROM records WHERE namespace = ? AND id IN (${marks})`;
      const params = namespace === null ? chunk : [namespace, ...chunk];
      for (const raw of this.prepare(sql).all(...params) as RawRow[]) out.push(toRow(raw));
    }
    return out;
  }

  /** Delete rows; returns the keys removed (so the ANN index can drop them too). */
  delete(namespace: string, target: { ids: string[] } | { filter: MetadataFilter } | { all: true }): number[] {
    return this.namingUnreadableItems("deletion", () => this.deleteRows(namespace, target));
  }

  private deleteRows(namespace: string, target: { ids: string[] } | { filter: MetadataFilter } | { all: true }): number[] {
    const run = this.db.transaction((): number[] => {
      let keys: number[];
      if ("ids" in target) {
        keys = this.getByIds(namespace, target.ids).map((r) => r.key);
      } else if ("filter" in target) {
        keys = [];
        for (const row of this.iterate(namespace)) if (matchesMetadataFilter(row.metadata, target.filter)) keys.push(row.key);
      } else {
        keys = (this.db.prepare(`SELECT key FROM records WHERE namespace = ?`).all(namespace) as Array<{ key: number }>).map((r) => r.key);
      }
      const del = this.db.prepare(`DELETE FROM records WHERE key = ?`);
      // The delete trigger refills the next turns' context; the remembered last turns may be gone.
      // Newest first: a deleted turn's following turns are then already gone when they are also
      // deleted (a whole session or namespace), so the trigger has nothing to refill.
      this.recentTurns.clear();
      for (const key of [...keys].sort((a, b) => b - a)) del.run(key);
      this.statements.bump.run();
      return keys;
    });
    return run();
  }

  /** Every row of one namespace (or all namespaces), in insertion order. Lazy. */
  *iterate(namespace: string | null = null, options: { withVectors?: boolean } = {}): Generator<SidecarRow> {
    const cols = options.withVectors ? "*" : "key, namespace, id, text, metadata, NULL AS vector";
    // Page by key so no statement stays open across yields (writes may happen in between).
    let after = -1;
    for (;;) {
      const sql =
        namespace === null
          ? `SELECT ${cols} FROM records WHERE key > ? ORDER BY key LIMIT 500`
          : `SELECT ${cols} FROM records WHERE namespace = ? AND key > ? ORDER BY key LIMIT 500`;
      const page = (namespace === null ? this.prepare(sql).all(after) : this.prepare(sql).all(namespace, after)) as RawRow[];
      if (page.length === 0) return;
      for (const raw of page) yield toRow(raw);
      after = page[page.length - 1]!.key;
    }
  }

  /** Drop every stored vector (text and metadata stay): the first step of a reindex. */
  clearVectors(): void {
    this.db.transaction(() => {
      this.db.prepare(`UPDATE records SET vector = NULL WHERE vector IS NOT NULL`).run();
      this.statements.bump.run();
    })();
  }

  /** Store one row's vector (reindex). */
  setVectors(updates: Array<{ key: number; vector: Float32Array }>): void {
    const stmt = this.db.prepare(`UPDATE records SET vector = ? WHERE key = ?`);
    this.db.transaction(() => {
      for (const u of updates) stmt.run(encodeVector(u.vector), u.key);
      this.statements.bump.run();
    })();
  }

  /** `PRAGMA data_version` and `total_changes()`: what `ReadCache` compares to know whether anything else wrote. */
  protected versions(): [dataVersion: number, totalChanges: number] {
    return this.statements.versions.get() as [number, number];
  }

  /** Trust what is kept only while nothing but this connection's reported inserts changed the file. */
  protected syncKept(): void {
    if (this.kept.holding) return;
    const [dataVersion, totalChanges] = this.versions();
    this.kept.sync(dataVersion, totalChanges);
  }

  /** The largest row key (0 when there is no row): where a scan of the rows in key ranges ends. */
  maxKey(): number {
    return Number(this.db.prepare(`SELECT COALESCE(MAX(key), 0) FROM records`).pluck().get());
  }

  /** Run `reads`, one search's synchronous reads, with one check first of whether anything else wrote (see `ReadCache.hold`). */
  readingOnce<T>(reads: () => T): T {
    this.syncKept();
    return this.kept.hold(reads);
  }

  /** Delete the rows with these keys (any namespace); returns the keys removed, per namespace. */
  deleteKeys(keys: readonly number[]): Map<string, number[]> {
    const run = this.db.transaction((): Map<string, number[]> => {
      const byNamespace = new Map<string, number[]>();
      const found = (
        this.prepare(`SELECT key, namespace FROM records WHERE key IN (SELECT value FROM json_each(?))`).all(
          JSON.stringify(keys),
        ) as Array<{ key: number; namespace: unknown }>
      ).map((row) => ({ key: row.key, namespace: textOf(row.namespace) }));
      const del = this.prepare(`DELETE FROM records WHERE key = ?`);
      this.recentTurns.clear();
      // Newest first, so a deleted turn's following turns are gone before the trigger refills them.
      for (const row of found.sort((a, b) => b.key - a.key)) {
        del.run(row.key);
        byNamespace.set(row.namespace, [...(byNamespace.get(row.namespace) ?? []), row.key]);
      }
      this.statements.bump.run();
      return byNamespace;
    });
    return this.namingUnreadableItems("erasure", () => run());
  }

  /**
   * Run `fn`, a read, filter or erasure evaluated by SQLite's JSON functions over stored values.
   * When it fails on a value those functions cannot read (a BLOB or non-JSON metadata, tags or user
   * metadata, left by an older version or another program), it throws `STORAGE_FAILED` naming those
   * items and the repair, instead of SQLite's own error: results that skip such items silently could
   * miss an item a filter or an erasure should reach.
   */
  protected namingUnreadableItems<T>(what: string, fn: () => T): T {
    try {
      return fn();
    } catch (error) {
      if (!isJsonError(error)) throw error;
      const ids = unreadableRecordIds(this.db, 6).map((id) => JSON.stringify(id.length > 80 ? `${id.slice(0, 80)}…` : id));
      if (ids.length === 0) throw error;
      const named = ids.length > 5 ? `${ids.slice(0, 5).join(", ")} and more` : ids.join(", ");
      throw new HermesMemoryError({
        code: "STORAGE_FAILED",
        message:
          `The ${what} failed: the vector sidecar ${this.file} holds item(s) whose id, text or metadata cannot be read as text or JSON (id ${named}), ` +
          `written by an older version or another program. Run \`hermes-memory vector reindex\` to repair them: every item is kept, and unreadable originals move to metadata.${UNREADABLE_KEY}.`,
        cause: error,
      });
    }
  }

  /**
   * Make every stored value readable (see `readableRecord`: BLOBs and non-JSON metadata of older
   * versions or other programs; no item is dropped and unreadable originals are kept in the item's
   * metadata under `UNREADABLE_KEY`), in one transaction. Returns how many items were rewritten.
   */
  repairUnreadableValues(): number {
    if (this.readOnly)
      throw storageError(`the vector sidecar ${this.file} is open read-only`, undefined, "open it with write access to repair it");
    try {
      return this.db.transaction(() => repairRecords(this.db)).immediate();
    } finally {
      // Texts and sessions of rows may have changed.
      this.recentTurns.clear();
    }
  }

  /**
   * Close the database. Idempotent. The ranker's helper thread and the checkpoint thread stop
   * first (the checkpoint thread closes its connection before this returns). A writable file is
   * then switched back to rollback-journal mode when no other connection has it open, so it can
   * later be opened from a read-only mount (WAL needs a writable `-shm` next to it); the next
   * writable open switches to WAL again.
   */
  close(): void {
    this.ranker?.close();
    this.checkpointer?.close();
    closeSqliteStore(this.db);
  }
}
