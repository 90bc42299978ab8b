/**
 * When a provider ranks a full-text query with FTS5's own bm25() and when with the `LayeredRanker`.
 * FTS5's bm25() walks the whole document list of every query word on each call, which dominates
 * latency in large stores once a word is common; the layered ranker scores a bounded candidate set
 * with the same formula instead.
 */
import type { CountedTerm } from "./layered-ranker.js";

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
export type RankPlan = { mode: "bm25"; terms: string[]; floored: string[] } | { mode: "layered"; terms: CountedTerm[]; floored: string[] } | null;

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

/** Words whose document counts a `DocumentFrequencies` cache keeps (least recently used dropped). */
export const DOCUMENT_FREQUENCY_CACHE_SIZE = 20_000;

/**
 * Document counts of query words (the IDF input and `planRanking`'s `documentFrequency`), counted
 * up to half the store — beyond that FTS5's IDF is at its floor anyway — and cached until the store
 * grows by 20 % (a count of 0 only until the store grows at all, so a word first written after a
 * search is found).
 * `count(term, limit)` counts the items holding `term`, stopping at `limit`; a miss
 * walks the word's document list once (about 1 ms per 30,000 items holding it).
 */
export class DocumentFrequencies {
  private readonly cache = new Map<string, { df: number; atCount: number }>();

  constructor(private readonly count: (term: string, limit: number) => number) {}

  /** Items holding `term` in a store of `total` items (cached or counted). */
  get(term: string, total: number): number {
    const cached = this.cache.get(term);
    // A word no item held is counted again as soon as the store has grown at all: the next item may
    // hold it, and a stale 0 would drop the word from every search until the store grew by 20 %.
    if (cached && (cached.df > 0 ? total <= cached.atCount * 1.2 : total === cached.atCount)) return cached.df;
    const df = this.count(term, Math.floor(total / 2) + 1);
    this.cache.delete(term);
    this.cache.set(term, { df, atCount: total });
    if (this.cache.size > DOCUMENT_FREQUENCY_CACHE_SIZE) {
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
    return df;
  }

  /** Forget every count (after the store shrank or was replaced). */
  clear(): void {
    this.cache.clear();
  }
}
