import fs from "node:fs";
import type BetterSqlite3 from "better-sqlite3";
import { HermesMemoryError, type MemoryHit, type MemoryKind, type MemoryStats } from "@hermes/memory-core";
import { BM25_WEIGHTS, bm25Call, closeDatabase, refillIndex, storageError, type Db } from "./database.js";
import { readableValues, repairUnreadableValues, unreadableItemIds, UNREADABLE_KEY } from "./unreadable-values.js";
import { itemDigest } from "./item-digest.js";
import { checkStore, type DoctorReport } from "./store-doctor.js";
import {
  FILTER_COLUMNS,
  FILTER_OPTIONS,
  ItemSearch,
  clampLimit,
  parseId,
  type ItemSearchOptions,
  type StoreSearchOptions,
} from "./store-search.js";
import { queryTokens } from "@hermes/memory-provider-kit";
import { asksQuestion, ITEMS_RANKER_SCHEMA, LayeredRanker, type LayeredRankerOptions } from "@hermes/memory-provider-kit/sqlite";
import { isEmptyFilter, StepPacer, yieldToEventLoop, type ParsedForgetScope, type ParsedMemoryFilter } from "@hermes/memory-provider-kit";
import {
  eraseAtOnce,
  eraseInSteps,
  purgeInSteps,
  resumeIndexMerges,
  withMergesPaused,
  type ErasureHost,
  type ErasurePacing,
} from "./store-erasure.js";
import { filterToSql } from "@hermes/memory-provider-kit/sqlite";
import { SmallIndexCompactor, WalCheckpointer, withBusyTimeout } from "@hermes/memory-provider-kit/sqlite";
import {
  CONTEXT_TURNS,
  NO_CONTEXT,
  RecentTurns,
  turnContext,
  turnDateText,
  type TurnColumnWeights,
  type TurnContext,
} from "@hermes/memory-provider-kit/sqlite";

/** An item about to be stored. `digest` defaults to one derived from the item (see `itemDigest`). */
export interface NewItem {
  kind: MemoryKind;
  content: string;
  sessionId?: string | undefined;
  userId?: string | undefined;
  speaker?: string | undefined;
  tags?: string[] | undefined;
  metadata?: Record<string, unknown> | undefined;
  digest?: string | undefined;
  /** Milliseconds since the epoch; defaults to now. */
  createdAt?: number | undefined;
  /** When the item expires, milliseconds since the epoch; absent or null: never. */
  expiresAt?: number | null | undefined;
}

/** A stored item as the store returns it. */
export interface StoredItem {
  id: string;
  kind: MemoryKind;
  content: string;
  sessionId?: string;
  userId?: string;
  speaker: string;
  tags: string[];
  metadata: Record<string, unknown>;
  digest: string;
  createdAt: string;
  /** ISO 8601 expiry time, when the item expires. */
  expiresAt?: string;
}

/** The changes `MemoryStore.update` applies (validated by the caller); absent keys keep their value. */
export interface StoreUpdate {
  content?: string;
  tags?: string[];
  metadata?: Record<string, unknown>;
  /** Epoch ms, or null to remove the expiry. */
  expiresAt?: number | null;
}

/** What `doctor()` found (`checkStore`). */
export type { DoctorReport };

/** Tunables of the store (ranking). */
export interface MemoryStoreOptions extends ItemSearchOptions {
  /** FTS column weights (content, speaker, previous turn, second previous turn, date). */
  weights?: TurnColumnWeights;
  /** Options of the layered ranker (its pool helper thread: when it starts, or `helper: false`). */
  ranker?: LayeredRankerOptions;
}

/** One JSONL export record (also what `import` reads). */
export interface ExportRecord {
  kind: MemoryKind;
  content: string;
  sessionId?: string;
  userId?: string;
  speaker?: string;
  tags?: string[];
  metadata?: Record<string, unknown>;
  digest?: string;
  createdAt?: string;
  /** ISO 8601 expiry time, when the item expires. */
  expiresAt?: string;
}

interface Row {
  id: number;
  kind: MemoryKind;
  session_id: string | null;
  user_id: string | null;
  speaker: string;
  content: string;
  tags: string;
  metadata: string;
  digest: string | null;
  created_at: number;
  expires_at: number | null;
}

/** Speaker names a store remembers as recorded before it starts over. */
const KNOWN_SPEAKERS_KEPT = 1_000;

/** Largest part of the database file read through a memory map (1 GiB; a million chat turns take ~850 MB). */
const MMAP_BYTES = 1 << 30;
/** Expired items deleted per transaction by `purgeExpired` by default (keeps each write transaction short). */
const PURGE_BATCH = 2000;

/**
 * All SQL of the provider over one open connection. Synchronous (better-sqlite3); every write is
 * one IMMEDIATE transaction. Not safe to share across processes except through the database file.
 */
export class MemoryStore {
  readonly db: Db;
  readonly file: string;
  /** Speaker name words this process has already recorded (saves a statement per turn). */
  private readonly knownSpeakerWords = new Set<string>();
  /** Speaker names whose words are all recorded (saves splitting the name per turn); at most `KNOWN_SPEAKERS_KEPT`. */
  private readonly knownSpeakers = new Set<string>();
  private readonly stmts;
  private readonly layered: LayeredRanker;
  /** The search path: ranking, score spreading and the hits' text. */
  private readonly itemSearch: ItemSearch;
  private readonly insertTx: BetterSqlite3.Transaction<(items: readonly NewItem[], ids: string[]) => number>;
  /** The last turns of recently written sessions, as this connection wrote them (context without a query). */
  private readonly recentTurns = new RecentTurns<RecentTurn>();
  /** The file's size at the last `checkFile()` (-1: not checked yet). */
  private mappedSize = -1;
  /** Keeps a small store's full-text index in few segments (none on a read-only connection). */
  private readonly compactor: SmallIndexCompactor | undefined;
  /** Runs the write-ahead log's checkpoints on a thread of their own during bursts of writes (none read-only). */
  private readonly checkpointer: WalCheckpointer | undefined;

  constructor(db: Db, file: string, options: MemoryStoreOptions = {}) {
    this.db = db;
    this.file = file;
    this.insertTx = db.transaction((items: readonly NewItem[], ids: string[]) => {
      this.recentTurns.sync(this.stmts.dataVersion.get() as number);
      let stored = 0;
      for (const item of items) {
        const [id, inserted] = this.insertOne(item);
        ids.push(id);
        if (inserted) stored++;
      }
      return stored;
    });
    const w = options.weights ?? BM25_WEIGHTS;
    const readonly = db.readonly;
    // Reads go through a memory map of the file (up to MMAP_BYTES) instead of a read() call and a copy
    // into SQLite's page cache per page: ranking a large store touches thousands of scattered index
    // pages per query. Only a limit: the map grows with the file, and the pages stay in the OS cache.
    db.pragma(`mmap_size = ${MMAP_BYTES}`);
    this.layered = new LayeredRanker(db, w, ITEMS_RANKER_SCHEMA, options.ranker);
    this.itemSearch = new ItemSearch(db, this.layered, bm25Call(w), options);
    this.compactor = readonly ? undefined : new SmallIndexCompactor(db, "items_fts");
    this.checkpointer = readonly ? undefined : new WalCheckpointer(db);
    if (!readonly) resumeIndexMerges(db);
    this.stmts = {
      insert: readonly
        ? undefined
        : db.prepare(
            `INSERT INTO items (kind, session_id, user_id, speaker, content, tags, metadata, digest, created_at, session_date, expires_at, prev_id, prev2_id, asks)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT(digest) WHERE digest IS NOT NULL DO NOTHING`,
          ),
      index: readonly
        ? undefined
        : db.prepare(`INSERT INTO items_fts (rowid, content, speaker, prev1, prev2, session_date) VALUES (?, ?, ?, ?, ?, ?)`),
      dataVersion: db.prepare(`PRAGMA data_version`).pluck(),
      // A search's read transaction (deferred: its snapshot starts at its first read).
      lastTurns: db
        .prepare(`SELECT id, content FROM items WHERE session_id = ? AND kind = 'turn' ORDER BY id DESC LIMIT ${CONTEXT_TURNS}`)
        .raw(true),
      byDigest: db.prepare(`SELECT id FROM items WHERE digest = ?`),
      addSpeaker: readonly ? undefined : db.prepare(`INSERT OR IGNORE INTO speakers (name) VALUES (?)`),
      get: db.prepare(`SELECT * FROM items WHERE id = ?`),
      purge: readonly ? undefined : db.prepare(`DELETE FROM items WHERE id IN (SELECT id FROM items WHERE expires_at <= ? LIMIT ?)`),
      sessionUser: db.prepare(`SELECT user_id FROM items WHERE session_id = ? AND user_id IS NOT NULL ORDER BY id DESC LIMIT 1`).pluck(),
      delete: readonly ? undefined : db.prepare(`DELETE FROM items WHERE id = ?`),
      update: readonly
        ? undefined
        : db.prepare(
            `UPDATE items SET content = ?, tags = ?, metadata = ?, expires_at = ?, digest = ?, session_date = ?, asks = ? WHERE id = ?`,
          ),
      deleteDigest: readonly ? undefined : db.prepare(`DELETE FROM items WHERE digest = ?`),
      // Ranking statements return [id, rank] arrays (raw): an object per candidate costs more.
      list: db.prepare(
        `SELECT * FROM items WHERE (@kind IS NULL OR kind = @kind) AND (@session IS NULL OR session_id = @session)
           AND (@user IS NULL OR user_id = @user) AND (expires_at IS NULL OR expires_at > @now)
         ORDER BY id DESC LIMIT @limit OFFSET @offset`,
      ),
      countByKind: db.prepare(`SELECT kind, COUNT(*) AS n FROM items GROUP BY kind`),
      sessions: db.prepare(`SELECT COUNT(DISTINCT session_id) AS n FROM items WHERE session_id IS NOT NULL`),
      all: db.prepare(`SELECT * FROM items ORDER BY id`),
    };
  }

  /**
   * Stop the ranker's helper thread and the checkpoint thread (which closes its connection first,
   * so this one is the file's last), then close the database (see `closeDatabase`).
   */
  close(): void {
    this.layered.close();
    this.checkpointer?.close();
    closeDatabase(this.db);
  }

  /**
   * Drop the memory map when the database file shrank since the last call. SQLite maps the file
   * once and does not notice a truncation it did not make (another program, a damaged copy): a
   * read of a mapped page past the new end of file raises SIGBUS and kills the whole process. After
   * a remap, such a page is read with read() and reported as an error. A file that shrank through
   * SQLite itself (a vacuum in another process) only costs one remap. Call before using the store.
   */
  checkFile(): void {
    if (this.file === ":memory:" || this.file === "") return;
    let size: number;
    try {
      size = fs.statSync(this.file).size;
    } catch {
      return;
    }
    if (size < this.mappedSize) {
      this.db.pragma("mmap_size = 0");
      this.db.pragma(`mmap_size = ${MMAP_BYTES}`);
      // Most often another process's vacuum, which refills the index: lengths kept may be stale.
      this.layered.forgetLengths();
    }
    this.mappedSize = size;
  }

  /**
   * Run `work` with the connection's busy timeout at `ms` (how long a statement waits for another
   * connection's lock before failing as busy), then put the usual one back.
   */
  withBusyTimeout<T>(ms: number, work: () => T): T {
    return withBusyTimeout(this.db, ms, work);
  }

  /**
   * Store items in order, in one IMMEDIATE transaction. Returns each item's id; an item whose
   * digest already exists returns the existing id (idempotent facts, checkpoints and imports).
   */
  insertMany(items: readonly NewItem[]): string[] {
    const ids: string[] = [];
    this.insertCounted(items, ids);
    return ids;
  }

  /**
   * Store items like `insertMany` and return how many of them this call stored: an item whose
   * digest is already stored (by anyone, up to the moment the transaction writes) is not counted.
   */
  insertNew(items: readonly NewItem[]): number {
    return this.insertCounted(items, []);
  }

  private insertCounted(items: readonly NewItem[], ids: string[]): number {
    if (!this.stmts.insert) {
      throw new HermesMemoryError({
        code: "STORAGE_FAILED",
        message: `The SQLite memory database ${this.file} is open read-only ($HERMES_HOME or the file is not writable): search works, nothing can be saved. Make it writable and restart.`,
      });
    }
    try {
      // Inserts only, each new row above every earlier one: the ranker keeps its word lists.
      return this.layered.writing(
        () => {
          const stored = this.insertTx.immediate(items, ids);
          if (stored > 0) {
            this.compactor?.afterWrite(largestId(ids));
            this.checkpointer?.afterCommit(stored);
          }
          return stored;
        },
        () => true,
      );
    } catch (error) {
      // Rolled back: the remembered last turns may name rows that were never committed, and the
      // speaker words recorded may not be in the table.
      this.recentTurns.clear();
      this.knownSpeakerWords.clear();
      this.knownSpeakers.clear();
      throw error;
    }
  }

  /** Store one item; its id, and whether it was stored now (false: its digest was already stored). */
  private insertOne(item: NewItem): [id: string, inserted: boolean] {
    const createdAt = item.createdAt ?? Date.now();
    const digest = item.kind === "turn" ? (item.digest ?? null) : (item.digest ?? itemDigest(item, createdAt));
    const session = item.kind === "turn" && item.sessionId !== undefined && item.sessionId !== "" ? item.sessionId : undefined;
    const previous =
      session === undefined ? undefined : this.recentTurns.previous(session, (s) => this.stmts.lastTurns.all(s) as RecentTurn[]);
    const context: TurnContext = previous === undefined ? NO_CONTEXT : turnContext(previous.map((p) => p[1]));
    const date = turnDateText(item.kind, item.metadata, createdAt);
    // Positional parameters: binding an object costs measurably more per row.
    const result = this.stmts.insert!.run(
      item.kind,
      item.sessionId ?? null,
      item.userId ?? null,
      item.speaker ?? "",
      item.content,
      item.tags && item.tags.length > 0 ? JSON.stringify(item.tags) : "[]",
      item.metadata && Object.keys(item.metadata).length > 0 ? JSON.stringify(item.metadata) : "{}",
      digest,
      createdAt,
      date,
      item.expiresAt ?? null,
      previous?.[0]?.[0] ?? null,
      previous?.[1]?.[0] ?? null,
      item.kind === "turn" && asksQuestion(item.content) ? 1 : 0,
    );
    if (result.changes > 0) {
      this.stmts.index!.run(result.lastInsertRowid, item.content, item.speaker ?? "", context.prev1, context.prev2, date);
      if (item.speaker) this.recordSpeaker(item.speaker);
      if (session !== undefined) this.recentTurns.push(session, [Number(result.lastInsertRowid), item.content], previous!);
      return [String(result.lastInsertRowid), true];
    }
    const existing = this.stmts.byDigest.get(digest) as { id: number } | undefined;
    return [String(existing?.id ?? ""), false];
  }

  private recordSpeaker(speaker: string): void {
    // Consecutive turns almost always have a speaker already seen: skip splitting it into words.
    if (this.knownSpeakers.has(speaker)) return;
    for (const word of queryTokens(speaker)) {
      if (this.knownSpeakerWords.has(word)) continue;
      this.stmts.addSpeaker!.run(word);
      this.knownSpeakerWords.add(word);
    }
    if (this.knownSpeakers.size >= KNOWN_SPEAKERS_KEPT) this.knownSpeakers.clear();
    this.knownSpeakers.add(speaker);
  }

  /**
   * Read the index's row lengths into the layered ranker's memory, 2,000 per step on timers, until
   * every stored row's length is kept, so large stores' searches need not read them row by row (see
   * `LayeredRanker.warmInBackground`); the provider calls it after opening and after writes.
   */
  warmRankerInBackground(stillWanted: () => boolean, onError: (error: unknown) => void): void {
    this.layered.warmInBackground(stillWanted, onError);
  }

  /**
   * Ranked full-text search. BM25 (porter-stemmed content plus speaker) picks the best matches,
   * with 0.3 of a second BM25 ranking of the query words' rare related words added (the kit's
   * `relatedToRank`); each matching turn then passes part of its score to its neighbours in the same session (the
   * next two turns and the previous two; the next turn gets less after a turn that asks no
   * question), so an answer is found through the question it follows;
   * a speaker named in the query gets their own turns boosted; finally a mild recency boost.
   * In large stores, a query with a word found in more than 0.2 % of the items is ranked by the
   * layered ranker (same BM25 formula over a bounded candidate set) instead of FTS5's bm25(). Any
   * query text is safe; text with no searchable word gives `[]`.
   */
  search(query: string, options: StoreSearchOptions = {}): MemoryHit[] {
    return this.namingUnreadableItems("search", () => this.itemSearch.search(query, options));
  }

  /**
   * Run `fn`, a read or erasure evaluated by SQLite's JSON functions over stored values. When it
   * fails on a value those functions cannot read (a BLOB or non-JSON metadata or tags, left by an
   * older version or another program), it throws `STORAGE_FAILED` naming those items and the
   * repair, instead of SQLite's own error: results that skip such items silently could miss an
   * item a filter or an erasure should reach.
   */
  private namingUnreadableItems<T>(what: string, fn: () => T): T {
    try {
      return fn();
    } catch (error) {
      if (HermesMemoryError.isInstance(error) || !/\bJSON/.test(String((error as Error | null)?.message))) throw error;
      const ids = unreadableItemIds(this.db, 6);
      if (ids.length === 0) throw error;
      const named = ids.length > 5 ? `${ids.slice(0, 5).join(", ")} and more` : ids.join(", ");
      throw new HermesMemoryError({
        code: "STORAGE_FAILED",
        message:
          `The ${what} failed: the SQLite memory database ${this.file} holds item(s) whose text, tags or metadata cannot be read as text or JSON (id ${named}), ` +
          `written by an older version or another program. Run \`hermes-memory sqlite vacuum\` to repair them: every item is kept, and unreadable originals move to metadata.${UNREADABLE_KEY}.`,
        cause: error,
      });
    }
  }

  /** The item with `id`, or `null`. */
  get(id: string): StoredItem | null {
    const n = parseId(id);
    if (n === null) return null;
    const row = this.stmts.get.get(n) as Row | undefined;
    return row && !isExpired(row.expires_at, Date.now()) ? toStored(row) : null;
  }

  /**
   * Run `fn` with `secure_delete` fully on, then back to FAST. FAST zeroes deleted content only
   * where that costs no extra I/O, which keeps the write path (FTS5 merges free many pages) at full
   * speed; erasing, updating and compacting zero every page and cell they free, so erased text does
   * not linger in the file's free space.
   */
  private erasing<T>(fn: () => T): T {
    if (this.db.readonly) return fn();
    this.db.pragma("secure_delete = ON");
    try {
      return fn();
    } finally {
      this.db.pragma("secure_delete = FAST");
    }
  }

  /** Delete the item with `id` (a turn with the checkpoint copies of its messages, like `forgetWhere`); true when it existed. */
  forget(id: string): boolean {
    if (parseId(id) === null || !this.stmts.delete) return false;
    return this.forgetWhere({ filter: { ids: [id] }, confirmAll: false }) > 0;
  }

  /** Delete the item with this digest; true when it existed. */
  forgetDigest(digest: string): boolean {
    return this.erasing(() => {
      if (!this.stmts.deleteDigest) return false;
      this.recentTurns.clear();
      return this.stmts.deleteDigest.run(digest).changes > 0;
    });
  }

  /**
   * Erase every item in `scope` (validated; empty only with `confirmAll`) in one IMMEDIATE
   * transaction and return how many were erased (`eraseAtOnce`): for a few items, such as
   * `forget(id)`. The delete triggers remove each item from the FTS index and refill the stored
   * context of the turns after it, so its text is no longer searchable anywhere; an unconfirmed
   * erasure of every item is rolled back and refused (`checkWholeStoreErasure`).
   */
  forgetWhere(scope: ParsedForgetScope): number {
    this.requireErasable(scope);
    return eraseAtOnce(this.erasureHost(), scope);
  }

  /**
   * Erase every item in `scope` like `forgetWhere`, in short steps with the event loop served
   * between them (`eraseInSteps`): no step holds up the host for long, whatever the number of
   * items. Each step erases whole items; the count returned is what this call erased.
   */
  async forgetWhereInSteps(scope: ParsedForgetScope, pacing?: ErasurePacing): Promise<number> {
    this.requireErasable(scope);
    return eraseInSteps(this.erasureHost(), scope, pacing);
  }

  private requireErasable(scope: ParsedForgetScope): void {
    this.requireWritable();
    if (isEmptyFilter(scope.filter) && !scope.confirmAll) {
      throw new HermesMemoryError({
        code: "INVALID_ARGUMENT",
        message:
          "forgetWhere needs at least one condition (ids, userId, sessionId or another filter key); an empty scope would erase everything.",
      });
    }
  }

  private erasureHost(): ErasureHost {
    return {
      db: this.db,
      erasing: (fn) => this.erasing(fn),
      naming: (fn) => this.namingUnreadableItems("erasure", fn),
      afterStep: (erased) => {
        // The remembered last turns of a session may be erased (or name rows that were rolled back).
        this.recentTurns.clear();
        if (erased > 0) this.checkpointer?.afterCommit(erased);
      },
    };
  }

  /** How many items pass `filter` (expired ones included: erasure reaches them too). */
  countWhere(filter: ParsedMemoryFilter): number {
    const condition = filterToSql(filter, FILTER_COLUMNS, FILTER_OPTIONS);
    return this.namingUnreadableItems("count", () =>
      Number(
        this.db
          .prepare(`SELECT COUNT(*) FROM items i WHERE ${condition.sql}`)
          .pluck()
          .get(...condition.params),
      ),
    );
  }

  /**
   * Change the item with `id` and re-index it, in one IMMEDIATE transaction; false when no live
   * item has that id. New content replaces the FTS entry (triggers), and the turns after an edited
   * turn take their stored context from its new text. A fact is keyed by its content: new content
   * that another fact of the same user already has is refused with `INVALID_ARGUMENT` naming that
   * fact (nothing changes). A turn's date text is derived again from the new metadata.
   */
  update(id: string, changes: StoreUpdate): boolean {
    return this.erasing(() => {
      this.requireWritable();
      const n = parseId(id);
      if (n === null) return false;
      let updated = false;
      try {
        this.db
          .transaction(() => {
            const row = this.stmts.get.get(n) as Row | undefined;
            if (!row || isExpired(row.expires_at, Date.now())) return;
            const content = changes.content ?? row.content;
            const metadata = changes.metadata ?? parseJson<Record<string, unknown>>(row.metadata, {});
            let digest = row.digest;
            if (row.kind === "fact" && content !== row.content) {
              digest = itemDigest({ kind: "fact", content, userId: row.user_id ?? undefined }, 0);
              const other = this.stmts.byDigest.get(digest) as { id: number } | undefined;
              if (other && other.id !== n) {
                throw new HermesMemoryError({
                  code: "INVALID_ARGUMENT",
                  message: `update(${n}): fact ${other.id} already says exactly this; facts are unique by content. Forget one of them, or update fact ${other.id} instead.`,
                });
              }
            }
            this.stmts.update!.run(
              content,
              changes.tags !== undefined ? JSON.stringify(changes.tags) : row.tags,
              changes.metadata !== undefined
                ? Object.keys(changes.metadata).length > 0
                  ? JSON.stringify(changes.metadata)
                  : "{}"
                : row.metadata,
              changes.expiresAt !== undefined ? changes.expiresAt : row.expires_at,
              digest,
              turnDateText(row.kind, metadata, row.created_at),
              row.kind === "turn" && asksQuestion(content) ? 1 : 0,
              n,
            );
            updated = true;
          })
          .immediate();
      } finally {
        this.recentTurns.clear();
        // The edited turn and the next two (whose context holds its text) changed length.
        this.layered.forgetLengths();
      }
      return updated;
    });
  }

  /**
   * Delete the items expired at `now`, `batchSize` per IMMEDIATE transaction, at most `batches`
   * transactions (all of them by default). Returns how many were deleted.
   */
  purgeExpired(now: number = Date.now(), batches = Infinity, batchSize = PURGE_BATCH): number {
    return this.erasing(() => {
      this.requireWritable();
      let purged = 0;
      try {
        for (let i = 0; i < batches; i++) {
          let changes = 0;
          this.db
            .transaction(() => {
              changes = this.stmts.purge!.run(now, batchSize).changes;
            })
            .immediate();
          purged += changes;
          if (changes < batchSize) break;
        }
      } finally {
        if (purged > 0) this.recentTurns.clear();
      }
      return purged;
    });
  }

  /** Run `work`, writes in many small transactions, with FTS5's merges paused and then paced (`withMergesPaused`). */
  async writingInSteps<T>(work: () => Promise<T>): Promise<T> {
    this.requireWritable();
    return withMergesPaused(this.erasureHost(), {}, work);
  }

  /** Delete the items expired at `now` in steps with the event loop served between them (`purgeInSteps`); returns how many. */
  async purgeExpiredInSteps(now: number = Date.now(), pacing?: ErasurePacing): Promise<number> {
    this.requireWritable();
    return purgeInSteps(this.erasureHost(), now, pacing);
  }

  /** The user of the latest item of `session` that has one, or `undefined`. */
  sessionUser(session: string): string | undefined {
    const user = this.stmts.sessionUser.get(session) as string | null | undefined;
    return user ?? undefined;
  }

  /**
   * Make erased text leave the file: merge the FTS index into one segment (FTS5 'optimize'; deleted
   * rows' terms otherwise stay in older segments until a merge), then copy the WAL into the
   * database and truncate it. With `secure_delete` on, every page and cell freed on the way is
   * zeroed. `walTruncated` is false when another connection kept the WAL in use (run it again
   * once the agent is idle).
   */
  compact(): { beforeBytes: number; afterBytes: number; walTruncated: boolean } {
    return this.erasing(() => {
      this.requireWritable();
      const beforeBytes = this.stats().sizeBytes ?? 0;
      this.db.exec(`INSERT INTO items_fts(items_fts) VALUES ('optimize')`);
      const [result] = this.db.pragma("wal_checkpoint(TRUNCATE)") as Array<{ busy: number; log: number; checkpointed: number }>;
      return { beforeBytes, afterBytes: this.stats().sizeBytes ?? 0, walTruncated: result === undefined || result.busy === 0 };
    });
  }

  private requireWritable(): void {
    if (this.db.readonly) {
      throw new HermesMemoryError({
        code: "STORAGE_FAILED",
        message: `The SQLite memory database ${this.file} is open read-only ($HERMES_HOME or the file is not writable): nothing can be changed. Make it writable and restart.`,
      });
    }
  }

  /** True when a fact or checkpoint with this digest is stored (turn digests: see `turnDigests`). */
  hasDigest(digest: string): boolean {
    return this.stmts.byDigest.get(digest) !== undefined;
  }

  /** Digests of every stored turn (computed; for idempotent imports), read a range of ids per step between event-loop turns. */
  async turnDigests(): Promise<Set<string>> {
    const out = new Set<string>();
    const range = this.db.prepare(`SELECT * FROM items WHERE kind = 'turn' AND id > ? AND id <= ?`);
    const top = Number(this.db.prepare("SELECT COALESCE(MAX(id), 0) FROM items").pluck().get());
    const pacer = new StepPacer({ initial: 1024, max: 1_000_000 });
    for (let low = 0; low < top; await yieldToEventLoop()) {
      pacer.timed((size) => {
        const high = Math.min(top, low + size);
        for (const row of range.iterate(low, high) as Iterable<Row>) out.add(rowDigest(row));
        low = high;
        return size;
      });
    }
    return out;
  }

  /** Newest items first, optionally of one kind, session or user. */
  list(options: { limit?: number; offset?: number; kind?: MemoryKind; sessionId?: string; userId?: string } = {}): StoredItem[] {
    const rows = this.stmts.list.all({
      kind: options.kind ?? null,
      session: options.sessionId ?? null,
      user: options.userId ?? null,
      limit: clampLimit(options.limit, 20, 10_000),
      offset: Math.max(0, Math.floor(options.offset ?? 0)),
      now: Date.now(),
    }) as Row[];
    return rows.map(toStored);
  }

  /** Counts, sessions, database path and on-disk size (database + WAL). */
  stats(): MemoryStats {
    const byKind: Record<MemoryKind, number> = { turn: 0, fact: 0, checkpoint: 0 };
    for (const { kind, n } of this.stmts.countByKind.all() as Array<{ kind: MemoryKind; n: number }>) byKind[kind] = n;
    const sessions = (this.stmts.sessions.get() as { n: number }).n;
    let sizeBytes = 0;
    for (const suffix of ["", "-wal"]) {
      try {
        sizeBytes += fs.statSync(this.file + suffix).size;
      } catch {
        // The WAL file may not exist (checkpointed or read-only open).
      }
    }
    return {
      items: byKind.turn + byKind.fact + byKind.checkpoint,
      byKind,
      sessions,
      location: this.file,
      sizeBytes,
      schemaVersion: Number(this.db.pragma("user_version", { simple: true })),
    };
  }

  /** Every item, oldest first, as export records (streams rows; no full copy in memory). */
  *exportRecords(): Generator<ExportRecord> {
    const rows = this.stmts.all.iterate() as IterableIterator<Row>;
    for (;;) {
      let next: IteratorResult<Row>;
      try {
        next = rows.next();
      } catch (error) {
        throw storageError(
          `cannot read the SQLite memory database ${this.file} for export`,
          error,
          "run `hermes-memory sqlite doctor` to check it",
        );
      }
      if (next.done) return;
      const item = toStored(next.value);
      const record: ExportRecord = { kind: item.kind, content: item.content };
      if (item.sessionId !== undefined) record.sessionId = item.sessionId;
      if (item.userId !== undefined) record.userId = item.userId;
      if (item.speaker) record.speaker = item.speaker;
      if (item.tags.length > 0) record.tags = item.tags;
      if (Object.keys(item.metadata).length > 0) record.metadata = item.metadata;
      record.digest = item.digest;
      record.createdAt = item.createdAt;
      if (item.expiresAt !== undefined) record.expiresAt = item.expiresAt;
      yield record;
    }
  }

  /** `PRAGMA integrity_check` plus the FTS index and stored-value checks (`checkStore`). Never throws. */
  doctor(): DoctorReport {
    return checkStore(this.db);
  }

  /**
   * Make every stored value readable (`repairUnreadableValues`: BLOBs and non-JSON metadata or tags
   * of older versions or other programs; originals are kept), index every item again
   * (`refillIndex`, one transaction), optimise the index,
   * checkpoint the WAL and VACUUM the file. Returns the sizes before and after.
   */
  vacuum(): { beforeBytes: number; afterBytes: number } {
    this.requireWritable();
    const beforeBytes = this.stats().sizeBytes ?? 0;
    try {
      this.db.transaction(() => repairUnreadableValues(this.db)).immediate();
    } finally {
      this.recentTurns.clear();
    }
    this.db.transaction(() => refillIndex(this.db)).immediate();
    this.layered.forgetLengths();
    this.db.exec(`INSERT INTO items_fts(items_fts) VALUES ('optimize')`);
    this.db.exec("VACUUM");
    this.db.pragma("wal_checkpoint(TRUNCATE)");
    return { beforeBytes, afterBytes: this.stats().sizeBytes ?? 0 };
  }
}

/** A turn as `RecentTurns` keeps it here: its id and text. */
type RecentTurn = [id: number, content: string];

function rowDigest(row: Row): string {
  if (row.digest !== null) return row.digest;
  return itemDigest(
    { kind: row.kind, content: row.content, sessionId: row.session_id ?? undefined, userId: row.user_id ?? undefined },
    row.created_at,
  );
}

function parseJson<T>(text: string, fallback: T): T {
  try {
    const value = JSON.parse(text) as unknown;
    return (value ?? fallback) as T;
  } catch {
    return fallback;
  }
}

/** A row as an item; values stored unreadably read as a repair would store them (`readableValues`). */
function toStored(stored: Row): StoredItem {
  const values = readableValues(stored);
  const row: Row = values.changed ? { ...stored, ...values } : stored;
  const item: StoredItem = {
    id: String(row.id),
    kind: row.kind,
    content: row.content,
    speaker: row.speaker,
    tags: values.parsedTags as string[],
    metadata: values.parsedMetadata,
    digest: rowDigest(row),
    createdAt: new Date(row.created_at).toISOString(),
  };
  if (row.session_id !== null) item.sessionId = row.session_id;
  if (row.user_id !== null) item.userId = row.user_id;
  if (row.expires_at !== null && row.expires_at !== undefined) item.expiresAt = new Date(row.expires_at).toISOString();
  return item;
}

/** True when an item with this expiry time (epoch ms or null) has expired at `now`. */
function isExpired(expiresAt: number | null | undefined, now: number): boolean {
  return expiresAt !== null && expiresAt !== undefined && expiresAt <= now;
}

/** The largest of the ids a write returned (decimal strings), or 0. */
function largestId(ids: readonly string[]): number {
  let largest = 0;
  for (const id of ids) largest = Math.max(largest, Number(id) || 0);
  return largest;
}
