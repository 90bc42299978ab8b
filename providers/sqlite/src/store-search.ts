import type BetterSqlite3 from "better-sqlite3";
import type { MemoryHit, MemoryKind } from "@hermes/memory-core";
import { isEmptyFilter, uniqueTerms, type ParsedMemoryFilter } from "@hermes/memory-provider-kit";
import {
  NEIGHBOUR_WEIGHTS,
  SECOND_PREVIOUS_WEIGHT,
  SPEAKER_BOOST,
  nextTurnShare,
  quoteTerm,
  speakerNamed,
} from "@hermes/memory-provider-kit/sqlite";
import {
  DocumentFrequencies,
  planQueryRanking,
  ftsTermCounter,
  contextGivers,
  RELATED_TERM_WEIGHT,
  type CountedTerm,
  type LayeredRanker,
} from "@hermes/memory-provider-kit/sqlite";
import { filterToSql, type FilterSql, type FilterSqlOptions } from "@hermes/memory-provider-kit/sqlite";
import type { Db } from "./database.js";
import { readableValues } from "./unreadable-values.js";

/** Search filter and limit. */
export interface StoreSearchOptions {
  limit?: number | undefined;
  /** A validated filter (`parseMemoryFilter`); only items passing it are ranked. */
  filter?: ParsedMemoryFilter | undefined;
  sessionId?: string | undefined;
  userId?: string | undefined;
  kind?: MemoryKind | undefined;
}

/** How a search scores (the store's ranking settings). */
export interface ItemSearchOptions {
  /** Half-life of the recency boost in days; 0 disables it. */
  recencyHalfLifeDays?: number;
  /** Share of the score that recency can take away from an old item (0..1). */
  recencyWeight?: number;
  /**
   * How much of a turn's match score flows to its neighbours in the same session:
   * `[next, second next, previous]`. A reply is found through the question it answers. A turn that
   * asks no question passes only 0.6 of the first share to its next turn; the second previous turn
   * gets the kit's `SECOND_PREVIOUS_WEIGHT`.
   */
  neighbourWeights?: readonly [number, number, number];
  /**
   * Score multiplier for a speaker's own turns when the query names that speaker (a question about
   * Caroline is mostly answered by what Caroline said). 1 disables it.
   */
  speakerBoost?: number;
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

/** Text columns of a returned hit: `[id, content, metadata, tags, expires_at]`. */
type HitTextRow = [id: number, content: string, metadata: string, tags: string, expiresAt: number | null];

/** A turn found as a neighbour: `[id, user_id, speaker, created_at]`. */
type NeighbourRow = [id: number, userId: string | null, speaker: string, createdAt: number];

const DAY_MS = 86_400_000;
/** Filtered statements kept prepared (one per distinct filter shape). */
const FILTERED_STATEMENTS_KEPT = 64;

/** The items columns a filter is compiled over (alias `i`). */
export const FILTER_COLUMNS = {
  id: "i.id",
  kind: "i.kind",
  sessionId: "i.session_id",
  userId: "i.user_id",
  tags: "i.tags",
  metadata: "i.metadata",
  createdAt: "i.created_at",
} as const;

/** How filters are compiled: ids are integers here, and tags and metadata are written by `JSON.stringify`. */
export const FILTER_OPTIONS: FilterSqlOptions = { idValue: (id) => parseId(id) ?? undefined, stringifiedJson: true };

/** Not yet expired at `?` (bound to now). */
const LIVE_SQL = "(i.expires_at IS NULL OR i.expires_at > ?)";

/**
 * The search path of `MemoryStore`: ranking setup (the rank plan, related words, the filter as SQL),
 * ranking by FTS5's bm25() or the layered ranker, score spreading to session neighbours, speaker
 * and recency boosts, and the hits' text. Reads only, over the store's connection.
 */
export class ItemSearch {
  private readonly db: Db;
  private readonly layered: LayeredRanker;
  private readonly halfLifeDays: number;
  private readonly recencyWeight: number;
  private readonly neighbourWeights: readonly [number, number, number];
  private readonly frequencies: DocumentFrequencies;
  private readonly speakerBoost: number;
  /** The `bm25(...)` call with the store's column weights. */
  private readonly bm25: string;
  /** Statements with a filter condition, by kind and condition text (most recently used last). */
  private readonly filteredStatements = new Map<string, BetterSqlite3.Statement>();
  /** What every search reads and only a write changes, as of `searchFacts.version` (see `facts()`). */
  private searchFacts: SearchFacts | undefined;
  private readonly stmts;

  /** `layered`: the store's layered ranker; `bm25`: the `bm25(...)` call with its column weights. */
  constructor(db: Db, layered: LayeredRanker, bm25: string, options: ItemSearchOptions = {}) {
    this.db = db;
    this.layered = layered;
    this.bm25 = bm25;
    this.halfLifeDays = Math.max(0, options.recencyHalfLifeDays ?? 0);
    this.recencyWeight = Math.min(1, Math.max(0, options.recencyWeight ?? 0.25));
    this.neighbourWeights = options.neighbourWeights ?? NEIGHBOUR_WEIGHTS;
    this.speakerBoost = Math.max(1, options.speakerBoost ?? SPEAKER_BOOST);
    this.frequencies = new DocumentFrequencies(ftsTermCounter(db, "items_fts"));
    this.stmts = {
      beginRead: db.prepare(`BEGIN`),
      endRead: db.prepare(`COMMIT`),
      // The ids and texts of the last turns of a session, most recent first (the context of its next turn).
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
        .prepare(
          `SELECT json_group_array(json_array(i.id, i.user_id, i.speaker, i.created_at)) FROM json_each(?) c JOIN items i ON i.id = c.value`,
        )
        .pluck(),
      hitText: db
        .prepare(`SELECT id, content, metadata, tags, expires_at FROM items WHERE id IN (SELECT value FROM json_each(?))`)
        .raw(true),
      rank: db.prepare(`SELECT rowid AS id, ${bm25} AS rank FROM items_fts WHERE items_fts MATCH ? ORDER BY rank LIMIT ?`).raw(true),
    };
  }

  /**
   * Rank `query` under `options` (see `MemoryStore.search`), in one read transaction unless the
   * connection is in one already. Errors are SQLite's own: the store names unreadable stored
   * values in their place.
   */
  search(query: string, options: StoreSearchOptions): MemoryHit[] {
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

  /** `search` for its words; `ownTransaction`: it runs in a read transaction of its own. */
  private searchWords(terms: readonly string[], options: StoreSearchOptions, ownTransaction: boolean): MemoryHit[] {
    const facts = this.facts();
    const planned = this.rankPlan(terms, facts.maxId);
    if (!planned) return [];
    // The layered ranker reads part of a large store on a helper thread, through a connection of its
    // own, and not while this one is in a transaction: its searches read outside one.
    if (ownTransaction && planned.plan.mode === "layered") this.stmts.endRead.run();
    return this.rankPlanned(terms, facts, planned, options);
  }

  /** `search` once the words are planned. */
  private rankPlanned(
    terms: readonly string[],
    facts: SearchFacts,
    planned: { plan: RankPlan; related: string | null },
    options: StoreSearchOptions,
  ): MemoryHit[] {
    const { plan, related } = planned;
    const limit = clampLimit(options.limit, 10, 1000);
    const filter = options.filter ?? singleValueFilter(options);
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
      hits = this.rankAndScore(
        names,
        { mode: "bm25", match: plan.terms.map((t) => quoteTerm(t.term)).join(" OR ") },
        relatedRanked,
        limit,
        filter,
        condition,
      );
    }
    // Rows holding only words found in half the items or more score about 0 and come after every
    // other match; they are ranked (with those words added) only to fill a short list of hits.
    if (plan.fallback !== undefined && hits.length < limit)
      return this.rankAndScore(names, plan.fallback, relatedRanked, limit, filter, condition);
    return hits;
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
    const fallback =
      plan.floored.length > 0 ? { mode: "bm25" as const, match: [...words, ...plan.floored].map(quoteTerm).join(" OR ") } : undefined;
    if (plan.mode === "layered") return { plan: { mode: "layered", terms: plan.terms, fallback }, related };
    return { plan: { mode: "bm25", match: words.map(quoteTerm).join(" OR "), fallback }, related };
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
    if (spread) this.spreadToNeighbours(linked, entries, matched, add, finalScore, names, limit, condition);

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
   * Pass each matching turn's score on to the next two and the previous two turns of its session
   * (into `entries` through `add`), reading first the neighbours not among the candidates that
   * could still reach the top `limit` (under the filter `condition`).
   */
  private spreadToNeighbours(
    linked: Map<number, LinkedRow>,
    entries: Map<number, Scored>,
    matched: ReadonlyArray<[LinkedRow, number]>,
    add: (row: LinkedRow, score: number) => void,
    finalScore: (row: LinkedRow, sum: number) => number,
    names: ReadonlySet<string>,
    limit: number,
    condition: FilterSql | null,
  ): void {
    const weights = this.neighbourWeights;
    const [, wNext2, wPrev] = weights;
    const wPrev2 = SECOND_PREVIOUS_WEIGHT;
    const wAfterQuestion = nextTurnShare(weights, true);
    const wAfterStatement = nextTurnShare(weights, false);
    const boost = this.speakerBoost;
    const halfLifeDays = this.halfLifeDays;
    const recencyWeight = this.recencyWeight;
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
      const json =
        condition === null
          ? this.stmts.neighbourRows.get(ids)
          : this.filteredStatement("neighbours", condition.sql).get(ids, ...condition.params);
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
      if (this.filteredStatements.size >= FILTERED_STATEMENTS_KEPT)
        this.filteredStatements.delete(this.filteredStatements.keys().next().value!);
    }
    this.filteredStatements.set(key, stmt);
    return stmt;
  }
}

/** How one search ranks: FTS5's bm25() over a MATCH expression, or the layered ranker; `fallback` fills a short list. */
type RankPlan = { mode: "bm25"; match: string; fallback?: RankPlan } | { mode: "layered"; terms: CountedTerm[]; fallback?: RankPlan };

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

/** The filter of the single-value options `kind`, `sessionId` and `userId`. */
function singleValueFilter(options: StoreSearchOptions): ParsedMemoryFilter {
  const filter: { kinds?: MemoryKind[]; sessionId?: string; userId?: string } = {};
  if (options.kind !== undefined) filter.kinds = [options.kind];
  if (options.sessionId !== undefined) filter.sessionId = options.sessionId;
  if (options.userId !== undefined) filter.userId = options.userId;
  return filter;
}

function ascending(a: number, b: number): number {
  return a - b;
}

/** An item id as the API gives it (decimal text) as the stored integer, or `null`. */
export function parseId(id: unknown): number | null {
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
