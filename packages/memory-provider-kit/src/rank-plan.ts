/**
 * When a provider ranks a full-text query with FTS5's own bm25() and when with the `LayeredRanker`.
 * FTS5's bm25() walks the whole document list of every query word on each call, which dominates
 * latency in large stores once a word is common; the layered ranker scores a bounded candidate set
 * with the same formula instead.
 */
import type BetterSqlite3 from "better-sqlite3";
import type { CountedTerm } from "./layered-ranker.js";
import { quoteTerm } from "./fts-query.js";
import type { SqliteDb } from "./sqlite-store.js";
import { RELATED_TERM_MAX_SHARE, relatedTerms } from "./related-terms.js";

/**
 * A query word found in more than this share of all items (and in more than `COMMON_TERM_MIN_DOCS`
 * items) makes a query go to the layered ranker.
 */
export const COMMON_TERM_SHARE = 0.002;
/** Below this many items containing a word, FTS5's bm25() is cheap enough whatever the store size. */
export const COMMON_TERM_MIN_DOCS = 2000;

/**
 * How to rank: `bm25` (FTS5's own ranking over `terms`, the words to OR together), `layered`
 * (the `LayeredRanker` over the words found, with their document counts) or `null` (no word is in
 * any item: nothing matches). `floored` lists the words left out because their IDF is at FTS5's
 * floor and that are in few enough items for FTS5's bm25() to rank cheaply: they only order rows
 * that hold none of `terms`, after every row that does, so a caller that finds fewer hits than it
 * wants can rank again with them added (with bm25()).
 */
export type RankPlan =
  { mode: "bm25"; terms: string[]; floored: string[] } | { mode: "layered"; terms: CountedTerm[]; floored: string[] } | null;

/**
 * The ranking rule. Each word's document count is asked for (`documentFrequency`, which may cache
 * and may stop counting past half the store); words found nowhere are dropped, and so are words
 * counted in at least half of `total` items unless every word is: FTS5 floors such a word's IDF at
 * 1e-6, so it adds nothing to any score, yet every row holding it would match and be scored (in a
 * two-person chat each name is in about half the turns). Stores of at most
 * `max(COMMON_TERM_MIN_DOCS, COMMON_TERM_SHARE · total)` items, and stores where every word left is
 * in at most that many items, use FTS5's bm25() over those words; otherwise the layered ranker
 * does. `total` is the number of items or an upper bound such as the largest row id (an upper bound
 * only makes fewer words count as floored); no words gives `null`.
 */
export function planRanking(terms: readonly string[], total: number, documentFrequency: (term: string) => number): RankPlan {
  if (terms.length === 0) return null;
  const found = terms.map((term) => ({ term, df: documentFrequency(term) })).filter((c) => c.df > 0);
  if (found.length === 0) return null;
  const weighted = found.filter((c) => 2 * c.df < total);
  const ranked = weighted.length > 0 ? weighted : found;
  const threshold = Math.max(COMMON_TERM_MIN_DOCS, Math.floor(total * COMMON_TERM_SHARE));
  // Floored words cheap enough for FTS5's bm25() are offered back; the others are left out for good.
  const floored = weighted.length > 0 ? found.filter((c) => 2 * c.df >= total && c.df <= threshold).map((c) => c.term) : [];
  if (total <= threshold || ranked.every((c) => c.df <= threshold)) return { mode: "bm25", terms: ranked.map((c) => c.term), floored };
  return { mode: "layered", terms: ranked, floored };
}

/**
 * Which related words (`relatedTerms`) a search ranks, with FTS5's bm25(), beside the query's own:
 * those found in at least one item and in at most `RELATED_TERM_MAX_SHARE` of `total` items (a
 * word most items hold says little about any of them), and never in more than
 * `max(COMMON_TERM_MIN_DOCS, COMMON_TERM_SHARE · total)` items, so their ranking stays as cheap as a
 * rare word's whatever the store size (`relatedTermCap`). Returns them in the order given.
 */
export function planRelated(related: readonly string[], total: number, documentFrequency: (term: string) => number): string[] {
  const cap = relatedTermCap(total);
  if (related.length === 0 || cap < 1) return [];
  return related.filter((term) => {
    const df = documentFrequency(term);
    return df > 0 && df <= cap;
  });
}

/**
 * The related words a search for `terms` ranks beside them: `relatedTerms(terms)` kept by
 * `planRelated`, their counts taken from `frequencies` in one call and only up to the cap plus one
 * (a related word's whole list is never walked just to be refused). Both reference providers call
 * this; `[]` when none is kept.
 */
export function relatedToRank(terms: readonly string[], total: number, frequencies: DocumentFrequencies): string[] {
  const candidates = relatedTerms(terms);
  if (candidates.length === 0) return [];
  return planRelated(candidates, total, frequencies.lookup(candidates, total, relatedTermCap(total) + 1));
}

/**
 * What a provider decides before ranking a query's words `terms` in a store of `total` items:
 * `planRanking` over their counts in `frequencies` (counted together), then, when some word is
 * found, the related words ranked beside them (`relatedToRank`). `null` when no word is found.
 */
export function planQueryRanking(
  terms: readonly string[],
  total: number,
  frequencies: DocumentFrequencies,
): { plan: NonNullable<RankPlan>; related: string[] } | null {
  const plan = planRanking(terms, total, frequencies.lookup(terms, total));
  if (plan === null) return null;
  return { plan, related: relatedToRank(terms, total, frequencies) };
}

/**
 * The most items a related word may be found in for `planRelated` to keep it, in a store of
 * `total` items: `RELATED_TERM_MAX_SHARE` of them, and never more than
 * `max(COMMON_TERM_MIN_DOCS, COMMON_TERM_SHARE · total)`. Counting a related word can stop one past it.
 */
export function relatedTermCap(total: number): number {
  if (!(total > 0)) return 0;
  return Math.min(Math.floor(total * RELATED_TERM_MAX_SHARE), Math.max(COMMON_TERM_MIN_DOCS, Math.floor(total * COMMON_TERM_SHARE)));
}

/** Words whose document counts a `DocumentFrequencies` cache keeps (least recently used dropped). */
export const DOCUMENT_FREQUENCY_CACHE_SIZE = 20_000;

/**
 * Counts the items holding each of `terms` (query words as `uniqueTerms` gives them), stopping at
 * `limit` per word; one count per word, in the order given.
 */
export type TermCounter = (terms: readonly string[], limit: number) => readonly number[];

/**
 * Document counts of query words (the IDF input and `planRanking`'s `documentFrequency`), counted
 * up to half the store — beyond that FTS5's IDF is at its floor anyway — and cached until the store
 * grows by 20 % (a count of 0 only until the store grows at all, so a word first written after a
 * search is found). The words a search needs are counted together (`getMany`): one statement for
 * all the words not cached (`ftsTermCounter`) costs about half as much per word as one statement
 * each, most of a statement's cost on a small store being FTS5's set-up. A missed word's count
 * walks its document list once (about 1 ms per 30,000 items holding it).
 */
export class DocumentFrequencies {
  /** Per word: its count, the store size then, and the limit it was counted up to (a count at the limit means "at least"). */
  private readonly cache = new Map<string, { df: number; atCount: number; limit: number }>();

  constructor(private readonly count: TermCounter) {}

  /** Items holding `term` in a store of `total` items (cached or counted), counted up to `limit` (default: half the store, plus one). */
  get(term: string, total: number, limit?: number): number {
    return this.getMany([term], total, limit)[0]!;
  }

  /**
   * Items holding each of `terms` in a store of `total` items, in order; the words not cached are
   * counted in one call. Each is counted up to `limit` (default `floor(total / 2) + 1`, beyond which
   * FTS5's IDF is at its floor): a result of `limit` or more means "at least `limit`", so a caller
   * that only compares a count with a cap can pass the cap plus one and spare walking a common
   * word's whole list. A count cut short at a lower limit is counted again for a higher one.
   */
  getMany(terms: readonly string[], total: number, limit = Math.floor(total / 2) + 1): number[] {
    const counts = new Array<number>(terms.length);
    const missing = new Map<string, number[]>();
    terms.forEach((term, i) => {
      const cached = this.cache.get(term);
      // A word no item held is counted again as soon as the store has grown at all: the next item
      // may hold it, and a stale 0 would drop the word from every search until the store grew by 20 %.
      const fresh = cached !== undefined && (cached.df > 0 ? total <= cached.atCount * 1.2 : total === cached.atCount);
      if (fresh && (cached.df < cached.limit || limit <= cached.limit)) counts[i] = cached.df;
      else missing.set(term, [...(missing.get(term) ?? []), i]);
    });
    if (missing.size === 0) return counts;
    const words = [...missing.keys()];
    const found = this.count(words, limit);
    if (found.length !== words.length)
      throw new Error(`DocumentFrequencies: the counter returned ${found.length} counts for ${words.length} words`);
    words.forEach((term, w) => {
      const df = found[w]!;
      for (const i of missing.get(term)!) counts[i] = df;
      this.cache.delete(term);
      this.cache.set(term, { df, atCount: total, limit });
    });
    while (this.cache.size > DOCUMENT_FREQUENCY_CACHE_SIZE) {
      const oldest = this.cache.keys().next().value;
      if (oldest === undefined) break;
      this.cache.delete(oldest);
    }
    return counts;
  }

  /**
   * A `documentFrequency` function for `planRanking` or `planRelated` that counts all of `terms`
   * together (`getMany`, with `limit`) on its first call; a word outside `terms` is counted alone.
   */
  lookup(terms: readonly string[], total: number, limit?: number): (term: string) => number {
    let counts: Map<string, number> | undefined;
    return (term) => {
      if (counts === undefined) {
        const found = this.getMany(terms, total, limit);
        counts = new Map(terms.map((t, i) => [t, found[i]!]));
      }
      return counts.get(term) ?? this.get(term, total, limit);
    };
  }

  /** Forget every count (after the store shrank or was replaced). */
  clear(): void {
    this.cache.clear();
  }
}

/**
 * A `TermCounter` over an FTS5 table (a trusted SQL name, never user input): one statement counts
 * every word, each as a quoted term (so any text is safe) matched in any column, up to `limit`.
 */
export function ftsTermCounter(db: SqliteDb, fts: string): TermCounter {
  let statement: BetterSqlite3.Statement | undefined;
  return (terms, limit) => {
    if (terms.length === 0) return [];
    statement ??= db
      .prepare(`SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM ${fts} WHERE ${fts} MATCH j.value LIMIT ?)) FROM json_each(?) j ORDER BY j.key`)
      .pluck();
    return statement.all(limit, JSON.stringify(terms.map(quoteTerm))) as number[];
  };
}
