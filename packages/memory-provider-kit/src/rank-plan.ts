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
 * any item: nothing matches).
 */
export type RankPlan = { mode: "bm25"; terms: string[] } | { mode: "layered"; terms: CountedTerm[] } | null;

/**
 * The ranking rule. Stores of at most `max(COMMON_TERM_MIN_DOCS, COMMON_TERM_SHARE · total)` items
 * use FTS5's bm25() over every word, without counting anything. In larger stores each word's
 * document count is asked for (`documentFrequency`, which may cache and may stop counting past
 * half the store); words found nowhere are dropped; when every remaining word is in at most that
 * many items FTS5's bm25() ranks them, otherwise the layered ranker does. `total` is the number of
 * items (or an upper bound such as the largest row id); no words gives `null`.
 */
export function planRanking(terms: readonly string[], total: number, documentFrequency: (term: string) => number): RankPlan {
  if (terms.length === 0) return null;
  const threshold = Math.max(COMMON_TERM_MIN_DOCS, Math.floor(total * COMMON_TERM_SHARE));
  if (total <= threshold) return { mode: "bm25", terms: [...terms] };
  const found = terms.map((term) => ({ term, df: documentFrequency(term) })).filter((c) => c.df > 0);
  if (found.length === 0) return null;
  if (found.every((c) => c.df <= threshold)) return { mode: "bm25", terms: found.map((c) => c.term) };
  return { mode: "layered", terms: found };
}

/** Words whose document counts a `DocumentFrequencies` cache keeps (least recently used dropped). */
export const DOCUMENT_FREQUENCY_CACHE_SIZE = 20_000;

/**
 * Document counts of query words (the IDF input and `planRanking`'s `documentFrequency`), counted
 * up to half the store — beyond that FTS5's IDF is at its floor anyway — and cached until the store
 * grows by 20 %. `count(term, limit)` counts the items holding `term`, stopping at `limit`; a miss
 * walks the word's document list once (about 1 ms per 30,000 items holding it).
 */
export class DocumentFrequencies {
  private readonly cache = new Map<string, { df: number; atCount: number }>();

  constructor(private readonly count: (term: string, limit: number) => number) {}

  /** Items holding `term` in a store of `total` items (cached or counted). */
  get(term: string, total: number): number {
    const cached = this.cache.get(term);
    if (cached && total <= cached.atCount * 1.2) return cached.df;
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
