/**
 * Related words for widening a full-text search, shared by every provider that ranks with BM25.
 * People rarely say a thing the way they later ask about it: a question about "kids" is answered by
 * a turn about "children", one about "dogs" by a turn about "pets". A search therefore also ranks
 * the query words' related words (from a table of word-embedding neighbours, see
 * `scripts/build-related-words.mjs`) and adds that ranking, weighted by `RELATED_TERM_WEIGHT`, to
 * the query's own: an item that holds the query's words still ranks first, and an item that holds
 * only related words can reach the first pages instead of none. Only related words few items hold
 * are ranked (`planRelated`).
 */
import { RELATED_WORDS_TEXT } from "./related-words-data.js";

/**
 * Weight of the related words' BM25 score against the query words' own. Chosen on the LoCoMo
 * development set with the table's four words per word and `RELATED_TERM_MAX_SHARE`: 0.2 to 0.4
 * did about equally well there (0.5 lost recall in the first ten hits).
 */
export const RELATED_TERM_WEIGHT = 0.3;

/**
 * A related word is ranked only when at most this share of the items hold it. A word that common
 * ("friends", "think" in a chat) mostly adds rows that share nothing with the question, and its
 * long document list makes the search dearer: on the development set, ranking every related word
 * took 55 % longer per query than ranking none, and recall@10 was no better than with this share.
 */
export const RELATED_TERM_MAX_SHARE = 0.05;

/** Most related words one search adds (the query builder's own cap on words is the same). */
export const MAX_RELATED_TERMS = 24;

let table: Map<string, readonly string[]> | undefined;

/** The table, parsed on first use (about 9,000 words; about 15 ms once per process, so the first search pays it). */
function relatedTable(): Map<string, readonly string[]> {
  if (table === undefined) {
    const parsed = new Map<string, readonly string[]>();
    for (const line of RELATED_WORDS_TEXT.split("\n")) {
      const [word, ...related] = line.split(" ");
      if (word && related.length > 0) parsed.set(word, related);
    }
    table = parsed;
  }
  return table;
}

/** The related words the table holds for one lower-case word, most similar first (none: `[]`). */
export function relatedWords(word: string): readonly string[] {
  return relatedTable().get(word) ?? [];
}

/**
 * The words a search for `terms` (query words as `uniqueTerms` gives them) also ranks: each word's
 * related words in the order of `terms`, most similar first, without the query's own words or
 * repeats, at most `max`. Words the table does not hold (names, made-up or non-English words) add
 * nothing, so most queries in other languages are searched exactly as before.
 */
export function relatedTerms(terms: readonly string[], max = MAX_RELATED_TERMS): string[] {
  if (terms.length === 0 || !(max > 0)) return [];
  const own = new Set(terms);
  const out: string[] = [];
  const seen = new Set<string>();
  for (const term of terms) {
    for (const word of relatedWords(term)) {
      if (own.has(word) || seen.has(word)) continue;
      seen.add(word);
      out.push(word);
      if (out.length >= max) return out;
    }
  }
  return out;
}
