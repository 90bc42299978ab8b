import { createHash } from "node:crypto";
import fs from "node:fs";
import type BetterSqlite3 from "better-sqlite3";
import { HermesMemoryError, type MemoryHit, type MemoryKind, type MemoryStats } from "@hermes/memory-core";
import { BM25_WEIGHTS, bm25Call, closeDatabase, refillIndex, storageError, type Db } from "./database.js";
import { readableValues, repairUnreadableValues, unreadableItemIds, UNREADABLE_KEY } from "./unreadable-values.js";
import { NEIGHBOUR_WEIGHTS, SECOND_PREVIOUS_WEIGHT, SPEAKER_BOOST, asksQuestion, nextTurnShare, queryTokens, quoteTerm, speakerNamed, uniqueTerms } from "@hermes/memory-provider-kit";
import { DocumentFrequencies, ITEMS_RANKER_SCHEMA, LayeredRanker, planQueryRanking, ftsTermCounter, contextGivers, RELATED_TERM_WEIGHT, type CountedTerm, type LayeredRankerOptions } from "@hermes/memory-provider-kit";
import { checkpointCopies, checkWholeStoreErasure, filterToSql, isEmptyFilter, type FilterSql, type FilterSqlOptions, type ParsedForgetScope, type ParsedMemoryFilter } from "@hermes/memory-provider-kit";
import { SmallIndexCompactor, WalCheckpointer, withBusyTimeout } from "@hermes/memory-provider-kit";
import { CONTEXT_TURNS, NO_CONTEXT, RecentTurns, turnContext, turnDateText, type TurnColumnWeights, type TurnContext } from "@hermes/memory-provider-kit";

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

/** Search filter and limit. */
export interface StoreSearchOptions {
  limit?: number | undefined;
  /** A validated filter (`parseMemoryFilter`); only items passing it are ranked. */
  filter?: ParsedMemoryFilter | undefined;
  sessionId?: string | undefined;
  userId?: string | undefined;
  kind?: MemoryKind | undefined;
}

/** The changes `MemoryStore.update` applies (validated by the caller); absent keys keep their value. */
export interface StoreUpdate {
  content?: string;
  tags?: string[];
  metadata?: Record<string, unknown>;
  /** Epoch ms, or null to remove the expiry. */
  expiresAt?: number | null;
}

/** Tunables of the store (ranking). */
export interface MemoryStoreOptions {
  /** Half-life of the recency boost in days; 0 disables it. */
  recencyHalfLifeDays?: number;
  /** Share of the score that recency can take away from an old item (0..1). */
  recencyWeight?: number;
  /**
   * How much of a turn's match score flows to its neighbours in the same session:
   * `[next, second next, previous]`. A reply is found through the question it answers. A turn that
   * asks no question passes only `STATEMENT_NEXT_FACTOR` of the first share to its next turn; the
   * second previous turn gets `SECOND_PREVIOUS_WEIGHT`.
   */
  neighbourWeights?: readonly [number, number, number];
  /**
   * Score multiplier for a speaker's own turns when the query names that speaker (a question about
   * Caroline is mostly answered by what Caroline said). 1 disables it.
   */
  speakerBoost?: number;
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

/** Result of `doctor()`. */
export interface DoctorReport {
  ok: boolean;
  integrity: string;
  ftsConsistent: boolean;
  schemaVersion: number;
  journalMode: string;
  items: number;
  problems: string[];
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

/**
 * The columns scoring needs (no text), with the ids of the next two and the previous two turns of
 * its session and whether it asks a question (`asksQuestion` of its text, 1 or 0; null when its
 * neighbours were not looked up): `[id, kind, session_id, user_id, speaker, created_at, next1,
 * next2, prev, asks, prev2]`.
 */
type LinkedRow = [
  id: number,
  kind: MemoryKind,
  sessionId: string | null,
  userId: string | null,
  speaker: string,
  createdAt: number,
  next1: number | null,
  next2: number | null,
  prev: number | null,
  asks: number | null,
  prev2: number | null,
];

/**
 * What a search reads about the store as a whole, kept while no connection has written since
 * (`version`: the database's data version and this connection's change count).
 */
interface SearchFacts {
  version: string;
  /** The largest item id: an upper bound of the item count, read as the store's size. */
  maxId: number;
  /** The earliest expiry time of any item (epoch ms), or null when no item expires. */
  earliestExpiry: number | null;
  /** Query words looked up in the speakers table: whether each names a speaker. */
  speakerWords: Map<string, boolean>;
}

/** Query words `SearchFacts.speakerWords` keeps before it starts over. */
const SPEAKER_WORDS_KEPT = 10_000;

/** Speaker names a store remembers as recorded before it starts over. */
const KNOWN_SPEAKERS_KEPT = 1_000;

/** Text columns of a returned hit: `[id, content, metadata, tags, expires_at]`. */
type HitTextRow = [id: number, content: string, metadata: string, tags: string, expiresAt: number | null];

/** A turn found as a neighbour: `[id, user_id, speaker, created_at]`. */
type NeighbourRow = [id: number, userId: string | null, speaker: string, createdAt: number];

const DAY_MS = 86_400_000;
/** Largest part of the database file read through a memory map (1 GiB; a million chat turns take ~850 MB). */
const MMAP_BYTES = 1 << 30;
/** Expired items deleted per transaction by `purgeExpired` by default (keeps each write transaction short). */
const PURGE_BATCH = 2000;
/** Filtered statements kept prepared (one per distinct filter shape). */
const FILTERED_STATEMENTS_KEPT = 64;

/** The items columns a filter is compiled over (alias `i`). */
const FILTER_COLUMNS = {
  id: "i.id",
  kind: "i.kind",
  sessionId: "i.session_id",
  userId: "i.user_id",
  tags: "i.tags",
  metadata: "i.metadata",
  createdAt: "i.created_at",
} as const;

/** How filters are compiled: ids are integers here, and tags and metadata are written by `JSON.stringify`. */
const FILTER_OPTIONS: FilterSqlOptions = { idValue: (id) => parseId(id) ?? undefined, stringifiedJson: true };

/** Not yet expired at `?` (bound to now). */
const LIVE_SQL = "(i.expires_at IS NULL OR i.expires_at > ?)";

/**
 * Content digest of an item. Facts and checkpoints are keyed by what they say (so re-sending them is
 * a no-op). Turns are events: their digest covers session, user, time and text. A turn written live
 * carries no digest: it is computed when needed (export, import) and not stored, which keeps the
 * unique index out of the turn write path. An imported turn carries one and it is stored, so the
 * same turn imported again (also by another process at the same time) is not stored twice.
 */
export function itemDigest(item: Pick<NewItem, "kind" | "content" | "sessionId" | "userId" | "speaker">, createdAt: number): string {
  const hash = createHash("sha256");
  hash.update(item.kind).update("\0").update(item.userId ?? "").update("\0");
  if (item.kind === "fact") {
    hash.update(item.content);
  } else if (item.kind === "checkpoint") {
    hash.update(item.sessionId ?? "").update("\0").update(item.speaker ?? "").update("\0").update(item.content);
  } else {
    hash.update(item.sessionId ?? "").update("\0").update(String(createdAt)).update("\0").update(item.content);
  }
  return hash.digest("hex");
}

/**
 * Digest of an imported turn that has no creation time (written by hand): its identity is what the
 * record says (user, session, speaker, content, tags, metadata and expiry, key order not counting)
 * plus `occurrence`, how many records saying exactly the same came before it in the same file.
 * Re-importing the file gives every such turn the same digest again (so it is skipped), while two
 * identical lines of one file stay two turns (someone said "yes" twice).
 */
export function undatedTurnDigest(item: Pick<NewItem, "content" | "sessionId" | "userId" | "speaker" | "tags" | "metadata" | "expiresAt">, occurrence: number): string {
  const said = canonicalJson([item.userId ?? null, item.sessionId ?? null, item.speaker ?? null, item.content, item.tags ?? [], item.metadata ?? {}, item.expiresAt ?? null]);
  return createHash("sha256").update("undated turn\0").update(said).update("\0").update(String(occurrence)).digest("hex");
}

/** `value` (JSON data) as JSON text with object keys sorted, so equal data gives equal text. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const object = value as Record<string, unknown>;
    return `{${Object.keys(object)
      .sort()
      .filter((key) => object[key] !== undefined)
      .map((key) => `${JSON.stringify(key)}:${canonicalJson(object[key])}`)
      .join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** Digest a mirrored or remembered fact gets for `content` (used to find it again on remove). */
export function factDigest(content: string, userId?: string): string {
  return itemDigest({ kind: "fact", content, userId }, 0);
}

/**
 * All SQL of the provider over one open connection. Synchronous (better-sqlite3); every write is
 * one IMMEDIATE transaction. Not safe to share across processes except through the database file.
 */
export class MemoryStore {
  readonly db: Db;
  readonly file: string;
  private readonly halfLifeDays: number;
  private readonly recencyWeight: number;
  private readonly neighbourWeights: readonly [number, number, number];
  private readonly frequencies: DocumentFrequencies;
  private readonly speakerBoost: number;
  /** Speaker name words this process has already recorded (saves a statement per turn). */
  private readonly knownSpeakerWords = new Set<string>();
  /** Speaker names whose words are all recorded (saves splitting the name per turn); at most `KNOWN_SPEAKERS_KEPT`. */
  private readonly knownSpeakers = new Set<string>();
  private readonly stmts;
  private readonly layered: LayeredRanker;
  private readonly insertTx: BetterSqlite3.Transaction<(items: readonly NewItem[], ids: string[]) => number>;
  /** The last turns of recently written sessions, as this connection wrote them (context without a query). */
  private readonly recentTurns = new RecentTurns<RecentTurn>();
  /** The `bm25(...)` call with this store's column weights. */
  private readonly bm25: string;
  /** Statements with a filter condition, by kind and condition text (most recently used last). */
  private readonly filteredStatements = new Map<string, BetterSqlite3.Statement>();
  /** The file's size at the last `checkFile()` (-1: not checked yet). */
  private mappedSize = -1;
  /** Keeps a small store's full-text index in few segments (none on a read-only connection). */
  private readonly compactor: SmallIndexCompactor | undefined;
  /** Runs the write-ahead log's checkpoints on a thread of their own during bursts of writes (none read-only). */
  private readonly checkpointer: WalCheckpointer | undefined;
  /** What every search reads and only a write changes, as of `searchFacts.version` (see `facts()`). */
  private searchFacts: SearchFacts | undefined;

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
    this.halfLifeDays = Math.max(0, options.recencyHalfLifeDays ?? 0);
    this.recencyWeight = Math.min(1, Math.max(0, options.recencyWeight ?? 0.25));
    this.neighbourWeights = options.neighbourWeights ?? NEIGHBOUR_WEIGHTS;
    this.speakerBoost = Math.max(1, options.speakerBoost ?? SPEAKER_BOOST);
    const w = options.weights ?? BM25_WEIGHTS;
    const bm25 = bm25Call(w);
    this.bm25 = bm25;
    this.frequencies = new DocumentFrequencies(ftsTermCounter(db, "items_fts"));
    const readonly = db.readonly;
    // Reads go through a memory map of the file (up to MMAP_BYTES) instead of a read() call and a copy
    // into SQLite's page cache per page: ranking a large store touches thousands of scattered index
    // pages per query. Only a limit: the map grows with the file, and the pages stay in the OS cache.
    db.pragma(`mmap_size = ${MMAP_BYTES}`);
    this.layered = new LayeredRanker(db, w, ITEMS_RANKER_SCHEMA, options.ranker);
    this.compactor = readonly ? undefined : new SmallIndexCompactor(db, "items_fts");
    this.checkpointer = readonly ? undefined : new WalCheckpointer(db);
    this.stmts = {
      insert: readonly
        ? undefined
        : db.prepare(
            `INSERT INTO items (kind, session_id, user_id, speaker, content, tags, metadata, digest, created_at, session_date, expires_at, prev_id, prev2_id, asks)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT(digest) WHERE digest IS NOT NULL DO NOTHING`,
          ),
      index: readonly ? undefined : db.prepare(`INSERT INTO items_fts (rowid, content, speaker, prev1, prev2, session_date) VALUES (?, ?, ?, ?, ?, ?)`),
      dataVersion: db.prepare(`PRAGMA data_version`).pluck(),
      // A search's read transaction (deferred: its snapshot starts at its first read).
      beginRead: db.prepare(`BEGIN`),
      endRead: db.prepare(`COMMIT`),
      // The ids and texts of the last turns of a session, most recent first (the context of its next turn).
      lastTurns: db.prepare(`SELECT id, content FROM items WHERE session_id = ? AND kind = 'turn' ORDER BY id DESC LIMIT ${CONTEXT_TURNS}`).raw(true),
      byDigest: db.prepare(`SELECT id FROM items WHERE digest = ?`),
      addSpeaker: readonly ? undefined : db.prepare(`INSERT OR IGNORE INTO speakers (name) VALUES (?)`),
      speakersIn: db.prepare(`SELECT name FROM speakers WHERE name IN (SELECT value FROM json_each(?))`).pluck(),
      maxId: db.prepare(`SELECT COALESCE(MAX(id), 0) AS n FROM items`),
      // Changes when any connection commits (data_version: others; total_changes: this one, triggers included).
      version: db.prepare(`SELECT data_version || ':' || total_changes() FROM pragma_data_version`).pluck(),
      // The earliest expiry time of any item (a seek on the expiry index), or null.
      earliestExpiry: db.prepare(`SELECT MIN(expires_at) FROM items WHERE expires_at IS NOT NULL`).pluck(),
      // Items with these ids (a JSON array), each with the ids of the next two and the previous two
      // turns of its session (null when none) and whether its text asks a question (the kit's
      // `asksQuestion` rule), as one JSON array of
      // [id, kind, session_id, user_id, speaker, created_at, next1, next2, prev, asks, prev2] arrays. One
      // text value crosses into JavaScript instead of a row object per item, which costs more than the lookups.
      // The previous turns and the question flag are stored with each turn; the next turns are found
      // in the session's turn index.
      linkedRows: db
        .prepare(
          `SELECT json_group_array(json_array(i.id, i.kind, i.session_id, i.user_id, i.speaker, i.created_at,
             (SELECT n.id FROM items n WHERE n.session_id = i.session_id AND n.id > i.id AND n.kind = 'turn' ORDER BY n.id LIMIT 1),
             (SELECT n.id FROM items n WHERE n.session_id = i.session_id AND n.id > i.id AND n.kind = 'turn' ORDER BY n.id LIMIT 1 OFFSET 1),
             i.prev_id, i.asks, i.prev2_id))
           FROM json_each(?) c JOIN items i ON i.id = c.value`,
        )
        .pluck(),
      // The same without neighbour ids (null), for items whose neighbours are not needed.
      scoringRows: db
        .prepare(
          `SELECT json_group_array(json_array(i.id, i.kind, i.session_id, i.user_id, i.speaker, i.created_at, NULL, NULL, NULL, NULL, NULL))
           FROM json_each(?) c JOIN items i ON i.id = c.value`,
        )
        .pluck(),
      // Turns found as neighbours (kind 'turn', session known), as one JSON array of
      // [id, user_id, speaker, created_at] arrays.
      neighbourRows: db
        .prepare(`SELECT json_group_array(json_array(i.id, i.user_id, i.speaker, i.created_at)) FROM json_each(?) c JOIN items i ON i.id = c.value`)
        .pluck(),
      hitText: db.prepare(`SELECT id, content, metadata, tags, expires_at FROM items WHERE id IN (SELECT value FROM json_each(?))`).raw(true),
      get: db.prepare(`SELECT * FROM items WHERE id = ?`),
      purge: readonly ? undefined : db.prepare(`DELETE FROM items WHERE id IN (SELECT id FROM items WHERE expires_at <= ? LIMIT ?)`),
      sessionUser: db.prepare(`SELECT user_id FROM items WHERE session_id = ? AND user_id IS NOT NULL ORDER BY id DESC LIMIT 1`).pluck(),
      delete: readonly ? undefined : db.prepare(`DELETE FROM items WHERE id = ?`),
      update: readonly
        ? undefined
        : db.prepare(`UPDATE items SET content = ?, tags = ?, metadata = ?, expires_at = ?, digest = ?, session_date = ?, asks = ? WHERE id = ?`),
      deleteDigest: readonly ? undefined : db.prepare(`DELETE FROM items WHERE digest = ?`),
      // Ranking statements return [id, rank] arrays (raw): an object per candidate costs more.
      rank: db.prepare(`SELECT rowid AS id, ${bm25} AS rank FROM items_fts WHERE items_fts MATCH ? ORDER BY rank LIMIT ?`).raw(true),
      list: db.prepare(
        `SELECT * FROM items WHERE (@kind IS NULL OR kind = @kind) AND (@session IS NULL OR session_id = @session)
           AND (@user IS NULL OR user_id = @user) AND (expires_at IS NULL OR expires_at > @now)
         ORDER BY id DESC LIMIT @limit OFFSET @offset`,
      ),
      countByKind: db.prepare(`SELECT kind, COUNT(*) AS n FROM items GROUP BY kind`),
      sessions: db.prepare(`SELECT COUNT(DISTINCT session_id) AS n FROM items WHERE session_id IS NOT NULL`),
      all: db.prepare(`SELECT * FROM items ORDER BY id`),
      turns: db.prepare(`SELECT * FROM items WHERE kind = 'turn'`),
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
    const previous = session === undefined ? undefined : this.recentTurns.previous(session, (s) => this.stmts.lastTurns.all(s) as RecentTurn[]);
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
   * How to rank `query` (the kit's `planRanking`). Small stores, and queries whose words are all
   * rare here, get FTS5's own BM25 (exact). When a word occurs in more than 0.2 % of a large store,
   * FTS5's bm25() would walk its whole document list on every call, so the layered ranker scores a
   * bounded set of candidates with the same formula instead (see `LayeredRanker`). Words in at least
   * half the items carry no BM25 weight and are left out; `fallback`, when some were, is FTS5's
   * ranking with them added. `related`: the MATCH expression of the query's related words ranked
   * beside its own (the kit's `relatedToRank`), or null when none is kept.
   */
  private rankPlan(terms: readonly string[], total: number): { plan: RankPlan; related: string | null } | null {
    if (terms.length === 0) return null;
    // The query's words are counted in one statement, its related words in another.
    const planned = planQueryRanking(terms, total, this.frequencies);
    if (planned === null) return null;
    const { plan, related: kept } = planned;
    const related = kept.length === 0 ? null : kept.map(quoteTerm).join(" OR ");
    const words = plan.mode === "bm25" ? plan.terms : plan.terms.map((t) => t.term);
    const fallback = plan.floored.length > 0 ? { mode: "bm25" as const, match: [...words, ...plan.floored].map(quoteTerm).join(" OR ") } : undefined;
    if (plan.mode === "layered") return { plan: { mode: "layered", terms: plan.terms, fallback }, related };
    return { plan: { mode: "bm25", match: words.map(quoteTerm).join(" OR "), fallback }, related };
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
   * The store's size, earliest expiry and known speaker words as of the last write by any
   * connection: read again only after one (a statement that checks the version costs less than the
   * three it spares on every search).
   */
  private facts(): SearchFacts {
    const version = this.stmts.version.get() as string;
    let facts = this.searchFacts;
    if (facts === undefined || facts.version !== version) {
      const earliest = this.stmts.earliestExpiry.get() as number | null;
      facts = { version, maxId: (this.stmts.maxId.get() as { n: number }).n, earliestExpiry: earliest ?? null, speakerWords: new Map() };
      this.searchFacts = facts;
    }
    return facts;
  }

  /** Query words that name a speaker seen in this database. */
  private speakerNames(terms: readonly string[], facts: SearchFacts): Set<string> {
    if (this.speakerBoost === 1 || terms.length === 0) return new Set();
    const known = facts.speakerWords;
    const unknown = terms.filter((t) => !known.has(t));
    if (unknown.length > 0) {
      if (known.size + unknown.length > SPEAKER_WORDS_KEPT) known.clear();
      const found = new Set(this.stmts.speakersIn.all(JSON.stringify(unknown)) as string[]);
      for (const t of unknown) known.set(t, found.has(t));
    }
    return new Set(terms.filter((t) => known.get(t) === true));
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
    return this.readingValues("search", () => this.searchUnchecked(query, options));
  }

  /**
   * Run `fn`, a read or erasure evaluated by SQLite's JSON functions over stored values. When it
   * fails on a value those functions cannot read (a BLOB or non-JSON metadata or tags, left by an
   * older version or another program), it throws `STORAGE_FAILED` naming those items and the
   * repair, instead of SQLite's own error: results that skip such items silently could miss an
   * item a filter or an erasure should reach.
   */
  private readingValues<T>(what: string, fn: () => T): T {
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

  private searchUnchecked(query: string, options: StoreSearchOptions): MemoryHit[] {
    const terms = uniqueTerms(query);
    if (terms.length === 0) return [];
    if (this.db.inTransaction) return this.searchWords(terms, options, false);
    // A search reads one snapshot, in one read transaction: a statement outside a transaction opens
    // and closes its own, about 10 µs each (more than most of a search's statements cost).
    this.stmts.beginRead.run();
    try {
      return this.searchWords(terms, options, true);
    } finally {
      // A failed statement may have ended the transaction already (SQLite rolls back on some errors).
      if (this.db.inTransaction) this.stmts.endRead.run();
    }
  }

  /** `searchUnchecked` for its words; `ownTransaction`: it runs in a read transaction of its own. */
  private searchWords(terms: readonly string[], options: StoreSearchOptions, ownTransaction: boolean): MemoryHit[] {
    const facts = this.facts();
    const planned = this.rankPlan(terms, facts.maxId);
    if (!planned) return [];
    // The layered ranker reads part of a large store on a helper thread, through a connection of its
    // own, and not while this one is in a transaction: its searches read outside one.
    if (ownTransaction && planned.plan.mode === "layered") this.stmts.endRead.run();
    return this.rankPlanned(terms, facts, planned, options);
  }

  /** `searchUnchecked` once the words are planned. */
  private rankPlanned(terms: readonly string[], facts: SearchFacts, planned: { plan: RankPlan; related: string | null }, options: StoreSearchOptions): MemoryHit[] {
    const { plan, related } = planned;
    const limit = clampLimit(options.limit, 10, 1000);
    const filter = options.filter ?? legacyFilter(options);
    // Only items passing the filter (and not expired) are ranked, so the hits are the best among
    // them. Without a filter and without expired items the unconditioned statements are used.
    const condition = this.liveCondition(filter, Date.now(), facts);
    const names = this.speakerNames(terms, facts);
    // The query words' related words, ranked on their own by FTS5's bm25() (`relatedToRank` keeps
    // only words rare enough for that to be cheap at any store size), once for every ranking below;
    // their best `limit` matches only: at `RELATED_TERM_WEIGHT` of their score, matches further
    // down rarely place, and each one costs its row's look-ups (on the LoCoMo development set,
    // recall was the same or better).
    const relatedRanked = (
      related === null
        ? []
        : condition === null
          ? this.stmts.rank.all(related, limit)
          : this.filteredStatement("rank", condition.sql).all(related, ...condition.params, limit)
    ) as Array<[number, number]>;
    let hits = this.rankAndScore(names, plan, relatedRanked, limit, filter, condition);
    // The layered ranker skips rows holding only words found in most items (they score about 0).
    // Under a selective filter, the passing rows with a rarer word (and their neighbours) can be
    // fewer than `limit`: FTS5's exact ranking over the passing rows then gives the hits, so a
    // filtered search never returns fewer hits than there are passing matches.
    if (plan.mode === "layered" && condition !== null && hits.length < limit) {
      hits = this.rankAndScore(names, { mode: "bm25", match: plan.terms.map((t) => quoteTerm(t.term)).join(" OR ") }, relatedRanked, limit, filter, condition);
    }
    // Rows holding only words found in half the items or more score about 0 and come after every
    // other match; they are ranked (with those words added) only to fill a short list of hits.
    if (plan.fallback !== undefined && hits.length < limit) return this.rankAndScore(names, plan.fallback, relatedRanked, limit, filter, condition);
    return hits;
  }

  private rankAndScore(
    names: ReadonlySet<string>,
    plan: RankPlan,
    relatedRanked: ReadonlyArray<readonly [id: number, rank: number]>,
    limit: number,
    filter: ParsedMemoryFilter,
    condition: FilterSql | null,
  ): MemoryHit[] {
    const candidates = contextGivers(limit);
    let ranked: Array<[id: number, rank: number]>;
    if (plan.mode === "bm25") {
      ranked = (
        condition === null
          ? this.stmts.rank.all(plan.match, candidates)
          : this.filteredStatement("rank", condition.sql).all(plan.match, ...condition.params, candidates)
      ) as Array<[number, number]>;
    } else {
      ranked = this.layered.rank(plan.terms, { limit, candidates, where: condition }).map((r): [number, number] => [r.id, r.rank]);
    }

    // Scoring columns and neighbour ids come from two batched statements (candidates, then the
    // neighbours not among them), each returning its rows as one JSON text, and text only for the
    // hits returned. Scores are summed in a fixed order (own scores in rank order, then next, second
    // next, previous and second previous turn per match), so they do not depend on how the rows were
    // fetched.
    const spread = filter.kinds === undefined || filter.kinds.includes("turn");
    const linked = new Map<number, LinkedRow>();
    if (ranked.length > 0 || relatedRanked.length > 0) {
      // Ids in ascending order: the lookups then walk the table and index pages in order.
      const ids = JSON.stringify([...new Set([...ranked, ...relatedRanked].map((r) => r[0]))].sort(ascending));
      // Neighbour ids are looked up only when scores will spread to neighbours.
      const json = (spread ? this.stmts.linkedRows.get(ids) : this.stmts.scoringRows.get(ids)) as string;
      for (const row of JSON.parse(json) as LinkedRow[]) linked.set(row[0], row);
    }
    // One entry per scored item, in first-scored order; `score` accumulates.
    const entries = new Map<number, Scored>();
    const add = (row: LinkedRow, score: number) => {
      const entry = entries.get(row[0]);
      if (entry === undefined) entries.set(row[0], { row, score: 0 + score });
      else entry.score += score;
    };
    const matched: Array<[LinkedRow, number]> = [];
    for (const [id, rank] of ranked) {
      const row = linked.get(id);
      if (!row) continue;
      add(row, -rank);
      matched.push([row, -rank]);
    }
    // A related word's match counts `RELATED_TERM_WEIGHT` of its BM25 score (after every own match,
    // so the sums keep a fixed order) and passes context on like any match.
    for (const [id, rank] of relatedRanked) {
      const row = linked.get(id);
      if (!row) continue;
      add(row, -rank * RELATED_TERM_WEIGHT);
      matched.push([row, -rank * RELATED_TERM_WEIGHT]);
    }
    const weights = this.neighbourWeights;
    const [, wNext2, wPrev] = weights;
    const wPrev2 = SECOND_PREVIOUS_WEIGHT;
    const wAfterQuestion = nextTurnShare(weights, true);
    const wAfterStatement = nextTurnShare(weights, false);
    const boosted = new Map<string, boolean>();
    const now = Date.now();
    const boost = this.speakerBoost;
    const halfLifeDays = this.halfLifeDays;
    const recencyWeight = this.recencyWeight;
    // An item's final score from its summed score: speaker boost, then recency.
    const finalScore = (row: LinkedRow, sum: number): number => {
      const speaker = row[4];
      let score = sum;
      if (names.size > 0 && speaker) {
        let named = boosted.get(speaker);
        if (named === undefined) boosted.set(speaker, (named = speakerNamed(speaker, names)));
        if (named) score *= boost;
      }
      if (halfLifeDays > 0) {
        const ageDays = Math.max(0, now - row[5]) / DAY_MS;
        score *= 1 - recencyWeight + recencyWeight * Math.pow(0.5, ageDays / halfLifeDays);
      }
      return score;
    };
    if (spread) {
      // Neighbours not among the candidates, each with its session (a neighbour is a turn of the
      // session of the match that names it) and the shares it can get, summed in the order used below.
      const missing = new Map<number, { session: string; sum: number }>();
      const share = (n: number | null, session: string, score: number) => {
        if (n === null || linked.has(n)) return;
        const m = missing.get(n);
        if (m === undefined) missing.set(n, { session, sum: 0 + score });
        else m.sum += score;
      };
      let nonNegative = wAfterQuestion >= 0 && wAfterStatement >= 0 && wNext2 >= 0 && wPrev >= 0 && wPrev2 >= 0;
      for (const [row, score] of matched) {
        if (!(score >= 0)) nonNegative = false;
        if (row[1] !== "turn" || !row[2]) continue;
        share(row[6], row[2], (row[9] === 1 ? wAfterQuestion : wAfterStatement) * score);
        share(row[7], row[2], wNext2 * score);
        share(row[8], row[2], wPrev * score);
        share(row[10], row[2], wPrev2 * score);
      }
      // A neighbour that cannot reach the top `limit` is not read. With no negative score, every match
      // ends at least at the final score of its own score (shares only add), and a neighbour at most at
      // its shares with the speaker boost and the largest recency factor. Rounding is monotonic, so a
      // neighbour whose bound is below the limit-th best match bound ranks below `limit` matches.
      // (`entries` holds only the matches here, one entry per item.)
      let threshold = -Infinity;
      if (nonNegative && entries.size >= limit && missing.size > 0) {
        const lower = new Float64Array(entries.size);
        let i = 0;
        for (const entry of entries.values()) lower[i++] = finalScore(entry.row, entry.score);
        lower.sort();
        threshold = lower[entries.size - limit]!;
      }
      const upperFactor = halfLifeDays > 0 ? 1 - recencyWeight + recencyWeight * 1 : 1;
      const wanted: number[] = [];
      for (const [id, m] of missing) {
        let upper = m.sum;
        if (names.size > 0) upper *= boost;
        if (halfLifeDays > 0) upper *= upperFactor;
        if (!(upper < threshold)) wanted.push(id);
      }
      if (wanted.length > 0) {
        const ids = JSON.stringify(wanted.sort(ascending));
        // A neighbour gets a share only when it passes the filter too (and has not expired).
        const json = condition === null ? this.stmts.neighbourRows.get(ids) : this.filteredStatement("neighbours", condition.sql).get(ids, ...condition.params);
        for (const [id, userId, speaker, createdAt] of JSON.parse(json as string) as NeighbourRow[]) {
          linked.set(id, [id, "turn", missing.get(id)!.session, userId, speaker, createdAt, null, null, null, null, null]);
        }
      }
      // Every row in `linked` passes the filter: candidates were ranked under it, and neighbours
      // outside the candidates were read under it.
      const accept = (row: LinkedRow | undefined): row is LinkedRow => row !== undefined;
      for (const [row, score] of matched) {
        if (row[1] !== "turn" || !row[2]) continue;
        const next = row[6] === null ? undefined : linked.get(row[6]);
        const next2 = row[7] === null ? undefined : linked.get(row[7]);
        const prev = row[8] === null ? undefined : linked.get(row[8]);
        const prev2 = row[10] === null ? undefined : linked.get(row[10]);
        if (accept(next)) add(next, (row[9] === 1 ? wAfterQuestion : wAfterStatement) * score);
        if (accept(next2)) add(next2, wNext2 * score);
        if (accept(prev)) add(prev, wPrev * score);
        if (accept(prev2)) add(prev2, wPrev2 * score);
      }
    }

    const scored: Scored[] = [];
    for (const entry of entries.values()) {
      entry.score = finalScore(entry.row, entry.score);
      scored.push(entry);
    }
    // Text and metadata are read (and parsed) only for the hits returned.
    const top = topScored(scored, limit);
    if (top.length === 0) return [];
    const text = new Map<number, HitTextRow>();
    for (const row of this.stmts.hitText.all(JSON.stringify(top.map((h) => h.row[0]))) as HitTextRow[]) text.set(row[0], row);
    const hits: MemoryHit[] = [];
    for (const { row, score } of top) {
      const t = text.get(row[0]);
      if (t) hits.push(toHit(row, t[1], t[2], t[3], t[4], score));
    }
    return hits;
  }

  /**
   * The SQL condition of `filter` plus "not expired at `now`" (alias `i`), or `null` when there is
   * nothing to check: an empty filter and no expired item left in the store.
   */
  private liveCondition(filter: ParsedMemoryFilter, now: number, facts: SearchFacts): FilterSql | null {
    const expired = facts.earliestExpiry !== null && facts.earliestExpiry <= now;
    if (isEmptyFilter(filter) && !expired) return null;
    const compiled = filterToSql(filter, FILTER_COLUMNS, FILTER_OPTIONS);
    if (!expired) return compiled;
    return { sql: `${compiled.sql} AND ${LIVE_SQL}`, params: [...compiled.params, now] };
  }

  /** A statement of `kind` with the filter condition `sql` (alias `i`), prepared once per distinct text. */
  private filteredStatement(kind: "rank" | "neighbours", sql: string): BetterSqlite3.Statement {
    const key = `${kind}\u0000${sql}`;
    let stmt = this.filteredStatements.get(key);
    if (stmt) {
      this.filteredStatements.delete(key);
    } else {
      stmt =
        kind === "rank"
          ? this.db
              .prepare(
                `SELECT i.id AS id, ${this.bm25} AS rank FROM items_fts JOIN items i ON i.id = items_fts.rowid
                 WHERE items_fts MATCH ? AND (${sql}) ORDER BY rank LIMIT ?`,
              )
              .raw(true)
          : this.db
              .prepare(
                `SELECT json_group_array(json_array(i.id, i.user_id, i.speaker, i.created_at)) FROM json_each(?) c JOIN items i ON i.id = c.value WHERE (${sql})`,
              )
              .pluck();
      if (this.filteredStatements.size >= FILTERED_STATEMENTS_KEPT) this.filteredStatements.delete(this.filteredStatements.keys().next().value!);
    }
    this.filteredStatements.set(key, stmt);
    return stmt;
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
   * transaction and return how many were erased. The delete triggers remove each item from the
   * FTS index and refill the stored context of the turns after it, so its text is no longer
   * searchable anywhere. The store's size is read in the same transaction: an unconfirmed erasure
   * of every item is rolled back and refused (`checkWholeStoreErasure`), and no other writer can
   * come in between.
   */
  forgetWhere(scope: ParsedForgetScope): number {
    const { filter } = scope;
    return this.erasing(() => {
      this.requireWritable();
      if (isEmptyFilter(filter) && !scope.confirmAll) {
        throw new HermesMemoryError({ code: "INVALID_ARGUMENT", message: "forgetWhere needs at least one condition (ids, userId, sessionId or another filter key); an empty scope would erase everything." });
      }
      const condition = filterToSql(filter, FILTER_COLUMNS, FILTER_OPTIONS);
      const erase = this.db.prepare(`DELETE FROM items WHERE id IN (SELECT i.id FROM items i WHERE ${condition.sql})`);
      // An erased turn's messages may also be archived as checkpoint items of its session (by
      // onPreCompress): those copies go too.
      const turns = this.db.prepare(
        `SELECT i.session_id AS session, i.speaker AS speaker, i.content AS content FROM items i
         WHERE i.kind = 'turn' AND i.session_id IS NOT NULL AND ${condition.sql}`,
      );
      const eraseCopies = this.db.prepare(
        `DELETE FROM items WHERE kind = 'checkpoint' AND session_id = ? AND content IN (SELECT value FROM json_each(?))`,
      );
      let erased = 0;
      try {
        this.readingValues("erasure", () =>
          this.db
            .transaction(() => {
              const total = Number(this.db.prepare("SELECT COUNT(*) FROM items").pluck().get());
              const copies = new Map<string, Set<string>>();
              for (const turn of turns.iterate(...condition.params) as Iterable<{ session: string; speaker: string; content: string }>) {
                let texts = copies.get(turn.session);
                if (!texts) copies.set(turn.session, (texts = new Set()));
                for (const text of checkpointCopies(turn.content, turn.speaker)) texts.add(text);
              }
              erased = erase.run(...condition.params).changes;
              for (const [session, texts] of copies) erased += eraseCopies.run(session, JSON.stringify([...texts])).changes;
              checkWholeStoreErasure(scope, erased, total);
            })
            .immediate(),
        );
      } finally {
        // The remembered last turns of a session may be erased (or name rows that were rolled back).
        this.recentTurns.clear();
      }
      return erased;
    });
  }

  /** How many items pass `filter` (expired ones included: erasure reaches them too). */
  countWhere(filter: ParsedMemoryFilter): number {
    const condition = filterToSql(filter, FILTER_COLUMNS, FILTER_OPTIONS);
    return this.readingValues("count", () => Number(this.db.prepare(`SELECT COUNT(*) FROM items i WHERE ${condition.sql}`).pluck().get(...condition.params)));
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
              changes.metadata !== undefined ? (Object.keys(changes.metadata).length > 0 ? JSON.stringify(changes.metadata) : "{}") : row.metadata,
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

  /** Digests of every stored turn (computed; for idempotent imports). */
  turnDigests(): Set<string> {
    const out = new Set<string>();
    for (const row of this.stmts.turns.iterate() as Iterable<Row>) out.add(rowDigest(row));
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
        throw storageError(`cannot read the SQLite memory database ${this.file} for export`, error, "run `hermes-memory sqlite doctor` to check it");
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

  /** `PRAGMA integrity_check` plus an FTS index consistency check. Never throws. */
  doctor(): DoctorReport {
    const problems: string[] = [];
    let integrity = "unknown";
    let ftsConsistent = false;
    let items = 0;
    try {
      const rows = this.db.pragma("integrity_check") as Array<{ integrity_check: string }>;
      integrity = rows.map((r) => r.integrity_check).join("; ");
      if (integrity !== "ok") problems.push(`integrity_check: ${integrity}`);
    } catch (error) {
      problems.push(`integrity_check failed: ${(error as Error).message}`);
    }
    try {
      this.db.prepare(`INSERT INTO items_fts(items_fts, rank) VALUES ('integrity-check', 1)`).run();
      ftsConsistent = true;
    } catch (error) {
      problems.push(`FTS index out of sync with items (${(error as Error).message}); run \`hermes-memory sqlite vacuum\` to rebuild it`);
    }
    try {
      items = (this.db.prepare(`SELECT COUNT(*) AS n FROM items`).get() as { n: number }).n;
      // The contentless index holds exactly one entry (a length record) per item: fewer means
      // items that no search finds, more means entries left behind by a delete.
      const entries = (this.db.prepare(`SELECT COUNT(*) AS n FROM items_fts_docsize`).get() as { n: number }).n;
      if (entries !== items) {
        ftsConsistent = false;
        problems.push(
          `FTS index holds ${entries} entries for ${items} items (it must hold exactly one per item); run \`hermes-memory sqlite vacuum\` to index every item again`,
        );
      }
    } catch (error) {
      problems.push(`cannot count items and index entries: ${(error as Error).message}`);
    }
    try {
      const ids = unreadableItemIds(this.db, 11);
      if (ids.length > 0) {
        problems.push(
          `item(s) ${ids.slice(0, 10).join(", ")}${ids.length > 10 ? " and more" : ""} hold text, tags or metadata that cannot be read as text or JSON (filtered searches fail on them); ` +
            `run \`hermes-memory sqlite vacuum\` to repair them (unreadable originals move to metadata.${UNREADABLE_KEY})`,
        );
      }
    } catch (error) {
      problems.push(`cannot check stored values: ${(error as Error).message}`);
    }
    return {
      ok: problems.length === 0,
      integrity,
      ftsConsistent,
      schemaVersion: Number(this.db.pragma("user_version", { simple: true })),
      journalMode: String(this.db.pragma("journal_mode", { simple: true })),
      items,
      problems,
    };
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

/** How one search ranks: FTS5's bm25() over a MATCH expression, or the layered ranker; `fallback` fills a short list. */
type RankPlan = { mode: "bm25"; match: string; fallback?: RankPlan } | { mode: "layered"; terms: CountedTerm[]; fallback?: RankPlan };

/** A turn as `RecentTurns` keeps it here: its id and text. */
type RecentTurn = [id: number, content: string];

/** A scored item of one search. */
export interface Scored {
  row: LinkedRow;
  score: number;
}

function byScore(a: Scored, b: Scored): number {
  return b.score - a.score || a.row[0] - b.row[0];
}

/**
 * The first `limit` items by score (highest first; equal scores by id), without sorting them all:
 * the `limit`-th highest score is found with a numeric sort of the scores, and only the items
 * scoring at least that much (every tie included) are sorted. Scores must not be NaN.
 */
export function topScored(scored: Scored[], limit: number): Scored[] {
  if (scored.length <= limit * 2) return scored.sort(byScore).slice(0, limit);
  const values = new Float64Array(scored.length);
  for (let i = 0; i < scored.length; i++) values[i] = scored[i]!.score;
  values.sort();
  const threshold = values[scored.length - limit]!;
  return scored
    .filter((s) => s.score >= threshold)
    .sort(byScore)
    .slice(0, limit);
}

/** The filter of the legacy options (one kind, a session, a user). */
function legacyFilter(options: StoreSearchOptions): ParsedMemoryFilter {
  const filter: { kinds?: MemoryKind[]; sessionId?: string; userId?: string } = {};
  if (options.kind !== undefined) filter.kinds = [options.kind];
  if (options.sessionId !== undefined) filter.sessionId = options.sessionId;
  if (options.userId !== undefined) filter.userId = options.userId;
  return filter;
}

function ascending(a: number, b: number): number {
  return a - b;
}

function rowDigest(row: Row): string {
  if (row.digest !== null) return row.digest;
  return itemDigest(
    { kind: row.kind, content: row.content, sessionId: row.session_id ?? undefined, userId: row.user_id ?? undefined },
    row.created_at,
  );
}

function parseId(id: unknown): number | null {
  const text = String(id ?? "").trim();
  if (!/^[1-9]\d{0,15}$/.test(text)) return null;
  return Number(text);
}

/** Clamp a user-given limit to 1..max; anything unusable becomes `fallback`. */
export function clampLimit(value: unknown, fallback: number, max: number): number {
  const n = typeof value === "number" ? value : typeof value === "string" ? Number(value) : NaN;
  if (!Number.isFinite(n) || n < 1) return fallback;
  return Math.min(max, Math.floor(n));
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

/** A search hit; values stored unreadably read as a repair would store them (`readableValues`). */
function toHit(row: LinkedRow, content: unknown, metadata: unknown, tags: unknown, expiresAt: number | null, score: number): MemoryHit {
  const values = readableValues({ session_id: row[2], user_id: row[3], speaker: row[4], content, tags, metadata });
  const hit: MemoryHit = {
    id: String(row[0]),
    content: values.content,
    kind: row[1],
    score,
    createdAt: new Date(row[5]).toISOString(),
    metadata: values.parsedMetadata,
  };
  if (values.session_id !== null) hit.sessionId = values.session_id;
  if (values.user_id !== null) hit.userId = values.user_id;
  const tagList = values.parsedTags as string[];
  if (tagList.length > 0) hit.tags = tagList;
  if (expiresAt !== null) hit.expiresAt = new Date(expiresAt).toISOString();
  return hit;
}
