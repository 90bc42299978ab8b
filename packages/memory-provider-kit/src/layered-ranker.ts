import path from "node:path";
import type BetterSqlite3 from "better-sqlite3";
import type { MemoryKind } from "@hermes/memory-core";
import type { SqliteDb as Db } from "./sqlite-store.js";
import { quoteTerm } from "./fts-query.js";
import { itemsContextSql } from "./conversation-index.js";
import { PostingReaderThread, type PoolBatch, type PoolQuery } from "./posting-reader-thread.js";
import { PostingCache, POSTING_CACHE_BYTES, intersectFirst, type KeptIds } from "./posting-cache.js";
import {
  K1,
  bestByEstimate,
  byScore,
  countText,
  idf,
  normOf,
  readVarints,
  sumHexVarints,
  sumVarints,
  wordCounter,
  type WordCounter,
} from "./bm25-terms.js";

/** A query word with the number of items containing it. */
export interface CountedTerm {
  term: string;
  df: number;
}

/** What `LayeredRanker.rank` needs besides the words. */
export interface LayeredRankOptions {
  /** Hits the caller shows; ranking stops early once these are settled. */
  limit: number;
  /** Ranked rows returned (the caller spreads scores to neighbours of these). */
  candidates: number;
  kind?: MemoryKind | null;
  session?: string | null;
  user?: string | null;
  /**
   * An extra condition over the content table (alias `i`), ANDed with the others: `sql` with `?`
   * placeholders bound, in order, to `params` (e.g. from `filterToSql`). Only rows passing it are
   * pooled, so the ranking is the best among the rows that pass, not a filtered remainder.
   */
  where?: { sql: string; params: readonly unknown[] } | null;
}

/**
 * Where `LayeredRanker` reads (SQL names, trusted: never user input). The default is the SQLite
 * provider's schema: FTS5 table `items_fts` (columns content, speaker) over `items` keyed by `id`.
 */
export interface LayeredRankerSchema {
  /** The FTS5 table; its `<fts>_data` (averages record) and `<fts>_docsize` shadow tables are read too. */
  fts: string;
  /** The content table, and its integer key (the FTS rowid). */
  table: string;
  id: string;
  /** The text column scored with the `content` weight. */
  content: string;
  /** The column scored with the `speaker` weight; `null` when the FTS table indexes only `content`. */
  speaker: string | null;
  /** SQL over the content table (alias `i`) compared with the `kind`, `session` and `user` options. */
  filters: { kind: string; session: string; user: string };
  /**
   * Further indexed text columns (same names in the FTS table), as `[column, weight name,
   * expression?]`: each is scored with that weight of the ranker's weights (0 when absent). Its
   * text is the content table's column of that name, or `expression` (SQL over the content table,
   * alias `i`) when the column's indexed text is derived rather than stored.
   */
  extra?: ReadonlyArray<readonly [column: string, weight: string, expression?: string]>;
}

/**
 * The SQLite provider's schema (`LayeredRanker`'s default). A turn's context columns are derived
 * from the ids of its two previous turns (`prev_id`, `prev2_id`), not stored.
 */
export const ITEMS_RANKER_SCHEMA: LayeredRankerSchema = {
  fts: "items_fts",
  table: "items",
  id: "id",
  content: "content",
  speaker: "speaker",
  filters: { kind: "i.kind", session: "i.session_id", user: "i.user_id" },
  extra: [
    ["prev1", "prev1", itemsContextSql("i.prev_id")],
    ["prev2", "prev2", itemsContextSql("i.prev2_id")],
    ["session_date", "date"],
  ],
};

/**
 * Most row ids read per word pair (`t_i AND t_j`) or single word. A pair of topic words holds tens to
 * a few hundred rows even at a million items; the cap bounds the cost of pairs with a very common
 * word, whose rows score little anyway. At a million items 600 kept as much of the exact top 5 as
 * 1,000 (and 450 lost 2 points) at less cost. (Reading only the newest 100 rows of each layer, with
 * text, lost a quarter of the exact top 5 there.)
 */
const LAYER_POOL_ROWS = 600;
/**
 * Pooled rows scored exactly per step (at least the caller's `candidates`): those with the best
 * estimate, i.e. the words FTS5 showed them to hold found once each, at the row's stored length.
 * Rows holding a word more than once, or holding further query words in context columns, are
 * underestimated; 60 leaves room for them below the top `limit`. Scoring reads the row text,
 * costing several pooled rows. On chat turns indexed with their context, at a million items 30 kept
 * 95.3 % of the exact top 5 and 60 kept 96.7 %.
 */
const LAYER_SCORED_ROWS = 60;
/**
 * Stop reading further layers once the `limit`-th score beats their best possible score: the sum of
 * their words' IDF times this factor. The exact bound is k1 + 1 = 2.2 (infinite term frequency);
 * 1.5 covers a word found twice in a short item, which is as far as chat text goes in practice.
 */
const BOUND_FACTOR = 1.5;
/**
 * Multi-word layers read: those of the two rarest words. Later layers (items whose rarest query word
 * is the third or later) can only score the sum of commoner words; the single-word pass covers them.
 */
const MAX_LAYERS = 2;
/**
 * Rows with an id below this have their length kept in memory (two bytes each, so at most 32 MiB):
 * the pool's estimate then needs no lookup of FTS5's length record per pooled row, which cost as
 * much as reading the pool itself.
 */
const MAX_KEPT_LENGTH_ID = 1 << 24;
/** Length records one `warmLengths` step reads (about a millisecond at a million rows). */
export const WARM_LENGTH_ROWS = 2000;
/** Pause between two `warmLengths` steps of `warmInBackground` (ms): the host's event loop runs between them. */
const WARM_PAUSE_MS = 5;
/** Pool statements with an extra condition kept prepared (one per distinct condition text). */
const WHERE_POOLS_KEPT = 32;
/** Rarest query words considered; the rest add little to BM25 and would only cost layers. */
export const MAX_LAYERED_TERMS = 8;
/**
 * Stores with at least this many rows read their pair pools on two threads (`PostingReaderThread`). Below it
 * a ranking takes a few milliseconds at most (about 3.6 ms p99 at 100,000 chat turns), and a thread
 * with its own connection and page cache is not worth its memory.
 */
export const HELPER_MIN_ROWS = 200_000;

/** Options of `LayeredRanker` beyond its weights and schema. */
export interface LayeredRankerOptions {
  /**
   * Read pair pools on a second thread for stores of at least `minRows` rows (default
   * `HELPER_MIN_ROWS`), or `false` for never. Only a store in a file can have one. `waitMs` bounds
   * how long a ranking waits for a pool the helper is reading before reading it itself.
   */
  helper?: false | { minRows?: number; waitMs?: number };
  /**
   * Memory for the complete id lists of query words that the helper reads and the ranking then
   * intersects in memory instead of reading pair pools through FTS5 (bytes; default 64 MiB; 0:
   * none). Used only while a helper runs.
   */
  postingBytes?: number;
  /** Hears why the helper stopped when it stops on its own (it could not open the file, crashed or hung). */
  onHelperStopped?: (reason: string) => void;
}

interface LayerRow {
  id: number;
  content: string;
  speaker: string;
  sz: Buffer | null;
  /** The `extra` columns' text, in schema order (absent when the schema has none). */
  x?: string;
}

interface RankTerm {
  term: string;
  /** Items holding it. */
  df: number;
  idf: number;
  /** This word's bit in a set of words (at most `MAX_LAYERED_TERMS` words). */
  bit: number;
  /** Counts the word in a column's text. */
  counter: WordCounter;
}

/**
 * The rows a ranking has pooled, by id: the words (bits of `RankTerm.bit`) FTS5 showed each to hold,
 * and its `gain`, K1 + 1 over (1 + the row's length normalisation): a word found once adds its IDF
 * times this, so it turns a set of words into the row's estimate.
 */
type Pool = Map<number, { words: number; gain: number }>;

/** `Pool`'s gain of a row of `length` tokens. */
function gainOf(length: number, avgLength: number): number {
  return (K1 + 1) / (1 + normOf(length, avgLength));
}

/** The words found in some item, rarest first (ties by text), at most `MAX_LAYERED_TERMS`, with their IDF among `rows` rows. */
function rarestFirst(terms: readonly CountedTerm[], rows: number): RankTerm[] {
  return [...terms]
    .filter((t) => t.df > 0)
    .sort((a, b) => a.df - b.df || (a.term < b.term ? -1 : 1))
    .slice(0, MAX_LAYERED_TERMS)
    .map((t, i) => {
      return { term: t.term, df: t.df, idf: idf(rows, t.df), bit: 1 << i, counter: wordCounter(t.term) };
    });
}

/**
 * The `ranked` words whose rows are pooled (all but those in nearly every item), or the rarest alone
 * when all are: words in most items add nothing (IDF ≈ 0) but would make a layer match nearly everything.
 */
function layeredOf(ranked: readonly RankTerm[]): RankTerm[] {
  const useful = ranked.filter((t) => t.idf > 1e-3);
  return useful.length > 0 ? useful : ranked.slice(0, 1);
}

/** The IDF sum of the `layered` words in every set of `count` ranked words (at most 2^MAX_LAYERED_TERMS), by the set's bits. */
function idfSumsOf(count: number, layered: readonly RankTerm[]): Float64Array {
  const idfSums = new Float64Array(1 << count);
  for (let words = 1; words < idfSums.length; words++) {
    let sum = 0;
    for (const t of layered) if (words & t.bit) sum += t.idf;
    idfSums[words] = sum;
  }
  return idfSums;
}

/**
 * BM25 ranking for stores where FTS5's own `ORDER BY rank` is too slow. FTS5's bm25() walks the
 * complete document list of every query word on each call to count it (a million-item store: ~1 ms
 * per 30,000 items per word) and then scores every matching row. This ranker instead uses cached
 * document counts for the IDF and scores a bounded set of candidates in JavaScript:
 *
 * - words sorted rarest first (t1, t2, …); layer i holds the items containing t_i and at least one
 *   commoner word, so every item with two or more query words is in exactly one layer (that of its
 *   rarest word), and items with rarer words come first; only the first `MAX_LAYERS` layers are read;
 * - a layer is read pair by pair (`t_i AND t_j`, row ids with FTS5's stored row lengths, at most
 *   `LAYER_POOL_ROWS` each), which tells which words each row holds; when the pool is larger than
 *   `LAYER_SCORED_ROWS`, the lengths give each row an estimate and only the best are read and scored
 *   exactly;
 * - then, while a row holding one word could still place, the rows of each word, pooled the same way;
 * - reading stops as soon as the `limit`-th score is above what any later layer or pair could score,
 *   except that a pair is still read while a row pooled from an earlier pair of its layer could place
 *   if it also held the words of this and the later pairs.
 *
 * Scores use FTS5's formula (same IDF, k1, b, column weights, document length from the FTS
 * `docsize` table and average length from its `averages` record). Term frequency is counted in the
 * item text with a light suffix match, not the porter stemmer, so it can differ from FTS5 for
 * irregular forms; an item FTS5 returned for a word counts that word at least once. Ties go to the
 * older item, as in FTS5's `ORDER BY rank`.
 * Synchronous, read-only; never throws for any word (all are quoted).
 */
export class LayeredRanker {
  private readonly weights: { content: number; speaker: number };
  /** Weight of each `extra` column, in schema order. */
  private readonly extraWeights: number[];
  /**
   * FTS5 column filter of the item's own text columns (content, speaker) when the schema has
   * `extra` columns, else `null`. Pools are read through it: a row whose words are only in
   * context columns (weighted far below its own text) would otherwise crowd the capped pools
   * and be over-estimated as if it held them in its text; such rows are scored when a word of
   * their own text pools them.
   */
  private readonly ownText: string | null;
  private readonly db: Db;
  private readonly schema: LayeredRankerSchema;
  /** Pool statements with an extra condition, by the condition's SQL text (most recent last). */
  private readonly wherePools = new Map<string, BetterSqlite3.Statement>();
  private readonly stmts: {
    averages: BetterSqlite3.Statement;
    pool: BetterSqlite3.Statement;
    poolFiltered: BetterSqlite3.Statement;
    rows: BetterSqlite3.Statement;
    lengths: BetterSqlite3.Statement;
    warm: BetterSqlite3.Statement;
  };
  /**
   * Token length of row `id` plus one, at index `id` (0: not known): FTS5's length record as read
   * by `warmLengths`, or when the row was last pooled or scored. Only the pool's estimates use
   * it; scores always use the length record read with the row.
   */
  private lengthsKept = new Uint16Array(0);
  /** A `warmInBackground` chain is running. */
  private warming = false;
  /** `warmLengths` has read the length records of every row id up to this. */
  private warmedTo = 0;
  /**
   * The pool-reading thread: `undefined` until a large enough store needs it, `null` when none could
   * start or the ranker was closed first. A helper that stopped stays here (its `stopped` says why)
   * and is never restarted.
   */
  private helper: PostingReaderThread | null | undefined;
  private readonly helperMinRows: number;
  private readonly helperWaitMs: number | undefined;
  private readonly onHelperStopped: ((reason: string) => void) | undefined;
  /** The file the helper opens (absolute), or `null` for a store without one. */
  private readonly file: string | null;
  /**
   * Query words' id lists, read by the helper: made by the first unfiltered ranking with a running
   * helper (`undefined` until then); `null` when none are kept (by option, or a store without a file).
   */
  private postings: PostingCache | null | undefined;
  private readonly postingBytes: number;

  /** `schema` names the tables and columns read (default: the SQLite provider's, `ITEMS_RANKER_SCHEMA`). */
  constructor(
    db: Db,
    weights: { content: number; speaker: number; [column: string]: number },
    schema: LayeredRankerSchema = ITEMS_RANKER_SCHEMA,
    options: LayeredRankerOptions = {},
  ) {
    this.weights = weights;
    this.db = db;
    this.schema = schema;
    this.helperMinRows = options.helper === false ? Infinity : Math.max(0, options.helper?.minRows ?? HELPER_MIN_ROWS);
    this.helperWaitMs = options.helper === false ? undefined : options.helper?.waitMs;
    this.onHelperStopped = options.onHelperStopped;
    this.file = db.memory || db.name === "" || db.name === ":memory:" ? null : path.resolve(db.name);
    const { fts, table, id, content, speaker, filters } = schema;
    const extra = schema.extra ?? [];
    this.extraWeights = extra.map(([, weight]) => Number(weights[weight] ?? 0));
    this.ownText = extra.length > 0 ? `{${[content, ...(speaker === null ? [] : [speaker])].join(" ")}}` : null;
    const extraSql = extra.length > 0 ? `, json_array(${extra.map(([c, , expression]) => expression ?? `i.${c}`).join(", ")}) AS x` : "";
    this.stmts = {
      averages: db.prepare(`SELECT block FROM ${fts}_data WHERE id = 1`).pluck(),
      // Pools are row ids only: a row's length comes from `lengthsKept`, and only the lengths not
      // kept there are read, in one statement (a length record read per pooled row, and a Buffer
      // made for it, cost as much as the pool itself).
      pool: db.prepare(`SELECT f.rowid FROM ${fts} f WHERE ${fts} MATCH @q LIMIT @limit`).pluck(),
      poolFiltered: db
        .prepare(
          `SELECT f.rowid FROM ${fts} f JOIN ${table} i ON i.${id} = f.rowid
         WHERE ${fts} MATCH @q AND (@kind IS NULL OR ${filters.kind} = @kind) AND (@session IS NULL OR ${filters.session} = @session)
           AND (@user IS NULL OR ${filters.user} = @user)
         ORDER BY f.rowid DESC LIMIT @limit`,
        )
        .pluck(),
      lengths: db.prepare(`SELECT d.id, d.sz FROM json_each(?) j JOIN ${fts}_docsize d ON d.id = j.value`).raw(true),
      warm: db.prepare(`SELECT id, hex(sz) FROM ${fts}_docsize WHERE id > ? ORDER BY id LIMIT ?`).raw(true),
      rows: db.prepare(
        `SELECT i.${id} AS id, i.${content} AS content, ${speaker === null ? "''" : `i.${speaker}`} AS speaker, d.sz AS sz${extraSql}
         FROM json_each(?) c JOIN ${table} i ON i.${id} = c.value LEFT JOIN ${fts}_docsize d ON d.id = i.${id}`,
      ),
    };
    this.postingBytes = options.postingBytes ?? POSTING_CACHE_BYTES;
    if (this.file === null || options.helper === false || !(this.postingBytes > 0)) this.postings = null;
  }

  /**
   * The best `candidates` item ids for `terms` (words found in at least one item), best first, with
   * their BM25 score as a negative `rank` (FTS5's convention). `[]` when no word is given.
   */
  rank(terms: readonly CountedTerm[], options: LayeredRankOptions): Array<{ id: number; rank: number }> {
    const { rows, avgLength } = this.averages();
    if (terms.length === 0 || rows === 0) return [];
    const ranked = rarestFirst(terms, rows);
    if (ranked.length === 0) return [];
    const layered = layeredOf(ranked);

    const scores = new Map<number, number>();
    const limit = Math.max(1, options.limit);
    /** The `limit`-th best exact score so far (-Infinity until there are `limit`). */
    const kth = (): number => {
      if (scores.size < limit) return -Infinity;
      return [...scores.values()].sort((a, b) => b - a)[limit - 1]!;
    };
    const settled = (bound: number): boolean => kth() >= bound * BOUND_FACTOR;
    // Rows are pooled by id with the words FTS5 showed them to hold; the open rows with the best
    // estimate (those words found once each, at the row's length) are then read and scored exactly.
    const where = options.where ?? null;
    const filtered = options.kind != null || options.session != null || options.user != null;
    const wherePool = where === null ? null : this.wherePool(where.sql);
    const kind = options.kind ?? null;
    const session = options.session ?? null;
    const user = options.user ?? null;
    const pool: Pool = new Map();
    // The pool statement and its arguments for a match expression (the helper thread runs the same).
    const poolQuery = (match: string): { stmt: BetterSqlite3.Statement; query: PoolQuery } => {
      const q = this.ownMatch(match);
      const [stmt, args] =
        wherePool !== null
          ? [wherePool, [q, kind, kind, session, session, user, user, ...where!.params, LAYER_POOL_ROWS]]
          : filtered
            ? [this.stmts.poolFiltered, [{ q, kind, session, user, limit: LAYER_POOL_ROWS }]]
            : [this.stmts.pool, [{ q, limit: LAYER_POOL_ROWS }]];
      return { stmt, query: { sql: stmt.source, args } };
    };
    // Pools the helper thread may read meanwhile: every pair of the layers read below, in reading
    // order, by match expression with its slot in the batch.
    let batch: PoolBatch | null = null;
    const offered = new Map<string, ReturnType<typeof poolQuery> & { slot: number }>();
    // Kept id lists of the words (unfiltered rankings only): a pool of words that all have one is
    // taken from them, the same ids FTS5 would return.
    const lists = new Map<string, KeptIds>();
    const listed = (words: readonly RankTerm[]): KeptIds[] | null => {
      const found = words.map((t) => lists.get(t.term));
      return found.every((l) => l !== undefined) ? (found as KeptIds[]) : null;
    };
    const collect = (match: string, words: number, of: readonly RankTerm[]) => {
      const kept = listed(of);
      const pair = offered.get(match);
      let found: number[];
      if (kept !== null) {
        found =
          kept.length === 1 ? Array.from(kept[0]!.ids.subarray(0, LAYER_POOL_ROWS)) : intersectFirst(kept[0]!, kept[1]!, LAYER_POOL_ROWS);
      } else {
        const { stmt, query } = pair ?? poolQuery(match);
        const readHere = () => stmt.all(...query.args) as number[];
        found = batch !== null && pair !== undefined ? batch.take(pair.slot, readHere) : readHere();
      }
      this.addToPool(pool, found, words, avgLength);
    };
    const idfSums = idfSumsOf(ranked.length, layered);
    const idfOf = (words: number): number => idfSums[words]!;
    const scoreBest = () => this.scoreBest(pool, scores, idfSums, ranked, avgLength, Math.max(LAYER_SCORED_ROWS, options.candidates));

    // Whether an unscored pooled row holding `word` could still place with the `remaining` words.
    const pooledCouldPlace = (word: number, remaining: number): boolean => {
      const bar = kth();
      for (const [id, entry] of pool) {
        if (!(entry.words & word) || scores.has(id)) continue;
        if (idfOf(entry.words | remaining) * entry.gain > bar) return true;
      }
      return false;
    };
    const pairMatch = (i: number, other: RankTerm) => `${quoteTerm(layered[i]!.term)} AND ${quoteTerm(other.term)}`;
    const helper = rows >= this.helperMinRows ? this.readerThread() : null;
    if (helper !== null) {
      if (!filtered && wherePool === null) this.takeKeptLists(helper, layered, lists);
      for (let i = 0; i < Math.min(layered.length - 1, MAX_LAYERS); i++) {
        for (const other of layered.slice(i + 1)) {
          if (listed([layered[i]!, other]) !== null) continue;
          const match = pairMatch(i, other);
          offered.set(match, { ...poolQuery(match), slot: offered.size });
        }
      }
      batch = helper.offer([...offered.values()].map((pair) => pair.query));
    }
    try {
      // Rows holding two or more of the words, layer by layer, each layer pair by pair (its word with
      // each commoner word), which also tells which words each row holds.
      for (let i = 0; i < Math.min(layered.length - 1, MAX_LAYERS); i++) {
        const rest = layered.slice(i + 1);
        const bound = layered[i]!.idf + rest.reduce((sum, t) => sum + t.idf, 0);
        if (settled(bound)) break;
        for (const [j, other] of rest.entries()) {
          // Rows first found in this pair hold no rarer word than `other` besides layered[i]: once the
          // `limit`-th score beats what they could score, commoner pairs cannot place either. A pair
          // also marks `other` (and its later pairs their words) in rows already pooled from earlier
          // pairs, so it is still read while such an unscored row, holding all of the remaining words
          // once, would beat the `limit`-th score.
          const remaining = rest.slice(j).reduce((bits, t) => bits | t.bit, 0);
          if (settled(layered[i]!.idf + idfOf(remaining)) && !pooledCouldPlace(layered[i]!.bit, remaining)) break;
          collect(pairMatch(i, other), layered[i]!.bit | other.bit, [layered[i]!, other]);
        }
        scoreBest();
      }
      // Then rows holding one word (a short row, or the word more than once, can still place).
      for (const t of layered) {
        if (settled(t.idf)) break;
        collect(quoteTerm(t.term), t.bit, [t]);
        scoreBest();
      }
    } finally {
      batch?.end();
    }
    return [...scores]
      .sort((a, b) => byScore(b[1], a[1]) || a[0] - b[0])
      .slice(0, options.candidates)
      .map(([id, score]) => ({ id, rank: -score }));
  }

  /**
   * Add the rows `found` (pooled for the words `words`) to `pool`: a row already there gains the
   * words, a new one gets its estimate's gain from its kept length, and the lengths not kept are
   * read in one statement and kept.
   */
  private addToPool(pool: Pool, found: readonly number[], words: number, avgLength: number): void {
    let unknown: number[] | undefined;
    for (const id of found) {
      const entry = pool.get(id);
      if (entry) {
        entry.words |= words;
        continue;
      }
      const kept = id < this.lengthsKept.length ? this.lengthsKept[id]! : 0;
      // A row without a length record counts as empty, as FTS5's bm25() would count it.
      pool.set(id, { words, gain: gainOf(kept > 0 ? kept - 1 : 0, avgLength) });
      if (kept === 0) (unknown ??= []).push(id);
    }
    if (unknown !== undefined) {
      for (const [id, sz] of this.stmts.lengths.all(JSON.stringify(unknown)) as Array<[number, Buffer | null]>) {
        const length = sz ? sumVarints(sz) : 0;
        this.keepLength(id, length);
        pool.get(id)!.gain = gainOf(length, avgLength);
      }
    }
  }

  /**
   * Read and score exactly the `wanted` unscored pooled rows with the best estimates (their words'
   * IDF sum, `idfSums`, times their gain) into `scores`.
   */
  private scoreBest(
    pool: Pool,
    scores: Map<number, number>,
    idfSums: Float64Array,
    ranked: readonly RankTerm[],
    avgLength: number,
    wanted: number,
  ): void {
    const ids: number[] = [];
    const estimates: number[] = [];
    for (const [id, entry] of pool) {
      if (scores.has(id)) continue;
      ids.push(id);
      estimates.push(idfSums[entry.words]! * entry.gain);
    }
    const open = ids.length > wanted ? bestByEstimate(ids, estimates, wanted) : ids;
    if (open.length === 0) return;
    for (const row of this.stmts.rows.all(JSON.stringify(open)) as LayerRow[]) {
      if (!scores.has(row.id)) scores.set(row.id, this.score(row, ranked, pool.get(row.id)!.words, avgLength));
    }
  }

  /**
   * Put the kept id lists of the `layered` words into `lists` (the posting cache, brought up to
   * date first), and ask the helper for the words' lists not kept yet.
   */
  private takeKeptLists(helper: PostingReaderThread, layered: readonly RankTerm[], lists: Map<string, KeptIds>): void {
    const postings = this.postingCache();
    if (postings === null) return;
    helper.receivePostings();
    postings.sync();
    for (const t of layered) {
      const list = postings.list(t.term);
      if (list !== undefined) lists.set(t.term, list);
    }
    postings.request(layered, (read, done) => helper.readPostings(read, done));
  }

  /** `match` limited to the item's own text columns when the schema indexes context columns too (see `ownText`). */
  private ownMatch(match: string): string {
    return this.ownText === null ? match : `${this.ownText} : (${match})`;
  }

  /**
   * Run `write`, a write of this connection that has committed when it returns, and tell the
   * ranker what it did: `appendedOnly(result)` true when it only inserted rows, each with an id
   * above every row before it. The query words' kept id lists then stay (the new rows are read
   * when a list is next used); after any other write they are read again. A store that never calls
   * this stays correct: every write it makes then drops the lists.
   */
  writing<T>(write: () => T, appendedOnly: (result: T) => boolean): T {
    return this.postings == null ? write() : this.postings.writing(write, appendedOnly);
  }

  /** The word-list cache, made on first use; `null` when none is kept. */
  private postingCache(): PostingCache | null {
    if (this.postings === undefined) {
      const { fts, table, id } = this.schema;
      this.postings = new PostingCache(
        this.db,
        `SELECT f.rowid FROM ${fts} f WHERE ${fts} MATCH ?`,
        `SELECT f.rowid FROM ${fts} f WHERE ${fts} MATCH ? ORDER BY f.rowid DESC`,
        `SELECT COALESCE(MAX(${id}), 0) FROM ${table}`,
        (word) => this.ownMatch(quoteTerm(word)),
        this.postingBytes,
      );
    }
    return this.postings;
  }

  /**
   * The running pool helper, started on first need (its first batches go without it while it opens
   * the file); `null` for a store without a file, inside a write transaction (the helper's connection
   * would not see its rows), or once the helper stopped or the ranker was closed.
   */
  private readerThread(): PostingReaderThread | null {
    if (this.file === null || this.db.inTransaction) return null;
    if (this.helper === undefined) {
      this.helper = PostingReaderThread.start({
        file: this.file,
        maxRows: LAYER_POOL_ROWS,
        ...(this.helperWaitMs !== undefined ? { waitMs: this.helperWaitMs } : {}),
        // A stopped helper reads no more lists, and those kept would only hold memory.
        onStopped: (reason) => {
          this.postings?.clear();
          this.onHelperStopped?.(reason);
        },
      });
    }
    return this.helper?.usable ? this.helper : null;
  }

  /**
   * The pool helper's state: `off` (none: the store is small or has no file, no thread could
   * start, or the ranker was closed before one started), `starting`, `running`, or `stopped` with the reason; `answered`
   * counts the pools the ranker took from it; `kept` the words whose id lists are in memory,
   * the bytes they take, and how many times a ranking used one.
   */
  helperStatus(): {
    state: "off" | "starting" | "running" | "stopped";
    answered: number;
    reason?: string;
    kept: { words: number; bytes: number; used: number };
  } {
    const helper = this.helper;
    const kept = this.postings?.status() ?? { words: 0, bytes: 0, used: 0 };
    if (helper == null) return { state: "off", answered: 0, kept };
    if (helper.stopped !== null) return { state: "stopped", answered: helper.answered, reason: helper.stopped, kept };
    return { state: helper.usable ? "running" : "starting", answered: helper.answered, kept };
  }

  /** Stop the pool helper thread, if one runs; later rankings read every pool on the calling thread. Idempotent. */
  close(): void {
    if (this.helper) this.helper.close();
    else this.helper = null;
    this.postings?.clear();
  }

  /** The pool statement with the extra condition `sql` (prepared once per distinct text; a few dozen are kept). */
  private wherePool(sql: string): BetterSqlite3.Statement {
    let stmt = this.wherePools.get(sql);
    if (stmt) {
      this.wherePools.delete(sql);
    } else {
      const { fts, table, id, filters } = this.schema;
      stmt = this.db
        .prepare(
          `SELECT f.rowid FROM ${fts} f JOIN ${table} i ON i.${id} = f.rowid
         WHERE ${fts} MATCH ? AND (? IS NULL OR ${filters.kind} = ?) AND (? IS NULL OR ${filters.session} = ?)
           AND (? IS NULL OR ${filters.user} = ?) AND (${sql})
         ORDER BY f.rowid DESC LIMIT ?`,
        )
        .pluck();
      if (this.wherePools.size >= WHERE_POOLS_KEPT) this.wherePools.delete(this.wherePools.keys().next().value!);
    }
    this.wherePools.set(sql, stmt);
    return stmt;
  }

  /**
   * Read the next `rows` length records into memory, in id order, and say whether every row's
   * length is now kept (until more rows are written). A host calls it between turns (a step of
   * `WARM_LENGTH_ROWS` takes a few milliseconds at a million rows): until then, the lengths of
   * pooled rows are read from FTS5 as they are needed, and kept.
   */
  warmLengths(rows = WARM_LENGTH_ROWS): boolean {
    if (this.warmedTo >= MAX_KEPT_LENGTH_ID) return true;
    const read = this.stmts.warm.all(this.warmedTo, rows) as Array<[number, string | null]>;
    for (const [id, hex] of read) this.keepLength(id, hex === null ? 0 : sumHexVarints(hex));
    if (read.length > 0) this.warmedTo = read[read.length - 1]![0];
    return read.length < rows || this.warmedTo >= MAX_KEPT_LENGTH_ID;
  }

  /**
   * Keep every row's length in memory in the background: one `warmLengths` step per timer tick,
   * `WARM_PAUSE_MS` apart (unref'd timers, so a process may exit meanwhile), until every length is
   * kept or `stillWanted()` is false before a step (the store was closed or replaced). Call it after
   * opening a store and after each written batch: while a chain runs another call does nothing, and
   * the running chain reaches rows written meanwhile (it reads on in id order). Never throws: a
   * failing step ends the chain and is passed to `onError` (searches then read the lengths they
   * need, as before any warming). The first step also starts the pool helper of a store large
   * enough to use one, so that it is ready before the first search.
   */
  warmInBackground(stillWanted: () => boolean, onError: (error: unknown) => void): void {
    if (this.warming) return;
    this.warming = true;
    let first = true;
    const step = (): void => {
      let done = true;
      try {
        if (first && stillWanted() && this.averages().rows >= this.helperMinRows) this.readerThread();
        first = false;
        done = !stillWanted() || this.warmLengths();
      } catch (error) {
        onError(error);
      }
      if (done) this.warming = false;
      else setTimeout(step, WARM_PAUSE_MS).unref();
    };
    setTimeout(step, WARM_PAUSE_MS).unref();
  }

  /**
   * Forget every kept length, after rows were edited in place (their lengths change) or the
   * index was rebuilt. Deleted rows need no call: they are never pooled again.
   */
  forgetLengths(): void {
    this.lengthsKept = new Uint16Array(0);
    this.warmedTo = 0;
  }

  private keepLength(id: number, length: number): void {
    if (!(id > 0 && id < MAX_KEPT_LENGTH_ID)) return;
    if (id >= this.lengthsKept.length) {
      const grown = new Uint16Array(Math.min(MAX_KEPT_LENGTH_ID, Math.max(id + 1, 1024, Math.ceil(this.lengthsKept.length * 1.5))));
      grown.set(this.lengthsKept);
      this.lengthsKept = grown;
    }
    this.lengthsKept[id] = Math.min(length, 0xfffe) + 1;
  }

  /** FTS5's BM25 of one row over all ranked words; words in `known` (bits) count at least once. */
  private score(row: LayerRow, terms: readonly RankTerm[], known: number, avgLength: number): number {
    const length = row.sz ? sumVarints(row.sz) : 0;
    this.keepLength(row.id, length);
    const norm = normOf(length, avgLength);
    // Each column's text is folded and lower-cased once for all the words.
    const content = countText(row.content);
    const speaker = countText(row.speaker);
    const extra =
      row.x === undefined ? [] : (JSON.parse(row.x) as unknown[]).map((x, i) => (this.extraWeights[i]! > 0 && x ? countText(x) : null));
    let score = 0;
    for (const t of terms) {
      let freq = this.weights.content * t.counter.count(content) + this.weights.speaker * t.counter.count(speaker);
      for (let i = 0; i < extra.length; i++) {
        const x = extra[i];
        if (x) freq += this.extraWeights[i]! * t.counter.count(x);
      }
      if (freq === 0 && known & t.bit) freq = this.weights.content;
      if (freq > 0) score += (t.idf * (freq * (K1 + 1))) / (freq + norm);
    }
    return score;
  }

  /** Row count and average row length (all columns, in tokens) from FTS5's `averages` record. */
  private averages(): { rows: number; avgLength: number } {
    const block = this.stmts.averages.get() as Buffer | undefined;
    if (!block) return { rows: 0, avgLength: 0 };
    const [rows = 0, ...columns] = readVarints(block);
    const tokens = columns.reduce((sum, n) => sum + n, 0);
    return { rows, avgLength: rows > 0 ? tokens / rows : 0 };
  }
}
