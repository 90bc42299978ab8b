/**
 * Plain Okapi BM25 (k1 = 1.2, b = 0.75, Lucene's non-negative idf), implemented in the bench as the
 * same-run retrieval baseline. "Plain" on purpose: lower-cased word tokens, no stemming, no stop
 * words, so it stays comparable to the BM25 row in the LoCoMo README.
 */

/** Splits text into lower-case word tokens (letters and digits in any script). */
export function tokenize(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

/** A scored document index. */
export interface Bm25Hit {
  /** Index of the document in insertion order. */
  doc: number;
  score: number;
}

/** An in-memory BM25 index. Add all documents, then search; adding after searching is allowed. */
export class Bm25Index {
  private readonly postings = new Map<string, Array<[number, number]>>();
  private readonly lengths: number[] = [];
  private totalLength = 0;

  constructor(
    readonly k1 = 1.2,
    readonly b = 0.75,
  ) {}

  /** Number of documents. */
  get size(): number {
    return this.lengths.length;
  }

  /** Adds a document; returns its index. */
  add(text: string): number {
    const doc = this.lengths.length;
    const tokens = tokenize(text);
    const tf = new Map<string, number>();
    for (const t of tokens) tf.set(t, (tf.get(t) ?? 0) + 1);
    for (const [term, count] of tf) {
      let list = this.postings.get(term);
      if (!list) this.postings.set(term, (list = []));
      list.push([doc, count]);
    }
    this.lengths.push(tokens.length);
    this.totalLength += tokens.length;
    return doc;
  }

  /** Top `limit` documents by BM25 score (ties: earlier document first). Zero-score docs omitted. */
  search(query: string, limit: number): Bm25Hit[] {
    const n = this.lengths.length;
    if (n === 0) return [];
    const avgdl = this.totalLength / n || 1;
    const scores = new Map<number, number>();
    for (const term of new Set(tokenize(query))) {
      const list = this.postings.get(term);
      if (!list) continue;
      const idf = Math.log(1 + (n - list.length + 0.5) / (list.length + 0.5));
      for (const [doc, tf] of list) {
        const dl = this.lengths[doc] as number;
        const s = (idf * tf * (this.k1 + 1)) / (tf + this.k1 * (1 - this.b + (this.b * dl) / avgdl));
        scores.set(doc, (scores.get(doc) ?? 0) + s);
      }
    }
    return [...scores]
      .map(([doc, score]) => ({ doc, score }))
      .sort((x, y) => y.score - x.score || x.doc - y.doc)
      .slice(0, limit);
  }
}
