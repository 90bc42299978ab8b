/**
 * Text → sparse vector for Pinecone's sparse–dense (hybrid) records: the lexical signal the BM25
 * path computes from SQLite FTS5, computed instead on the machine that writes or searches, so
 * every process sharing one Pinecone index ranks with the same keyword signal.
 *
 * Rules (every machine computes the same vector for the same text, with no corpus statistics):
 * - Terms are the BM25 path's query tokens (the kit's `queryTokens`: lower-case words, stopwords
 *   dropped, apostrophe suffixes cut), with diacritics removed from Latin letters (as FTS5's
 *   `remove_diacritics`) and Porter-stemmed when they are plain a–z words (as FTS5's `porter`
 *   tokenizer), so "running", "runs" and "run" are one term. Long documents are tokenized in
 *   pieces cut at whitespace, so no part of the text is skipped.
 * - A term's index is the FNV-1a 32-bit hash of its UTF-8 bytes (offset basis 2166136261, prime
 *   16777619): an unsigned 32-bit integer, as Pinecone's sparse indices are. Terms whose hashes
 *   collide share one index (their weights add up).
 * - Document weight of a term (BM25's term-frequency saturation and length normalisation, with a
 *   fixed average length instead of the corpus average): tf·(k1+1) / (tf + k1·(1 − b + b·len/avg))
 *   with k1 = 1.2, b = 0.75, avg = 64 terms, len = the document's number of terms. A term seen
 *   once in a document of average length weighs 1.
 * - Query weight: each distinct query term (at most 24, as the BM25 path) weighs 1/n for n terms,
 *   so a document of average length holding every query term once scores 1, like a cosine match.
 * - At most 1000 terms per vector (Pinecone's limit): a document with more keeps the 1000 heaviest
 *   (ties: the smaller index). Indices are returned in ascending order.
 * - Hybrid query: the dense vector scaled by alpha and the sparse vector by 1 − alpha (Pinecone's
 *   convex combination), so on a `dotproduct` index a match scores
 *   alpha·dense·dense + (1 − alpha)·sparse·sparse.
 */
import { HermesMemoryError } from "@hermes/memory-core";
import { MAX_QUERY_TERMS, queryTokens } from "@hermes/memory-provider-kit";
import { stemmer } from "stemmer";

/** A sparse vector as Pinecone takes it: parallel lists of unsigned 32-bit indices and their weights. */
export interface SparseVector {
  indices: number[];
  values: number[];
}

/**
 * Identity of this encoding (tokens, stemmer, hash, weights). Vectors of different encodings
 * must not be mixed in one index: a change to any rule above needs a new id and a reindex.
 */
export const SPARSE_ENCODER_ID = "bm25-porter-fnv1a32-v1";
/** BM25 term-frequency saturation. */
export const BM25_K1 = 1.2;
/** BM25 length normalisation. */
export const BM25_B = 0.75;
/** The fixed average document length (in terms) documents are normalised against. */
export const AVERAGE_DOCUMENT_TERMS = 64;
/** Most non-zero values one sparse vector may have (Pinecone's limit). */
export const MAX_SPARSE_TERMS = 1000;

/** The kit's tokenizer reads at most this many characters at a time. */
const TOKENIZER_WINDOW = 4096;
const LATIN_WITH_MARKS = /(\p{Script=Latin})\p{M}+/gu;

/** `text` in pieces of at most `TOKENIZER_WINDOW` characters, cut at whitespace when there is any. */
function pieces(text: string): string[] {
  if (text.length <= TOKENIZER_WINDOW) return [text];
  const out: string[] = [];
  let start = 0;
  while (start < text.length) {
    let end = Math.min(text.length, start + TOKENIZER_WINDOW);
    if (end < text.length) {
      const space = text.slice(start, end).search(/\s\S*$/);
      if (space > 0) end = start + space;
    }
    out.push(text.slice(start, end));
    start = end;
  }
  return out;
}

/** One token as the index sees it: Latin diacritics removed, plain a–z words Porter-stemmed. */
function normalizeTerm(token: string): string {
  const folded = /\p{M}/u.test(token.normalize("NFD")) ? token.normalize("NFD").replace(LATIN_WITH_MARKS, "$1").normalize("NFC") : token;
  return /^[a-z]+$/.test(folded) ? stemmer(folded) : folded;
}

/** The terms of `text`, in order, repeats kept (see the rules at the top of this file). */
export function sparseTerms(text: string): string[] {
  const out: string[] = [];
  for (const piece of pieces(text)) for (const token of queryTokens(piece)) out.push(normalizeTerm(token));
  return out;
}

/** The sparse index of a term: FNV-1a 32-bit of its UTF-8 bytes. */
export function termIndex(term: string): number {
  let hash = 2166136261;
  for (const byte of Buffer.from(term, "utf8")) {
    hash ^= byte;
    hash = Math.imul(hash, 16777619) >>> 0;
  }
  return hash >>> 0;
}

/** Weights by index → a sparse vector of at most `MAX_SPARSE_TERMS` entries, indices ascending. */
function toSparse(weights: Map<number, number>): SparseVector {
  let entries = [...weights].filter(([, w]) => w > 0);
  if (entries.length > MAX_SPARSE_TERMS) {
    entries = entries.sort((a, b) => b[1] - a[1] || a[0] - b[0]).slice(0, MAX_SPARSE_TERMS);
  }
  entries.sort((a, b) => a[0] - b[0]);
  return { indices: entries.map(([i]) => i), values: entries.map(([, w]) => w) };
}

/** The document-side sparse vector of `text` (BM25 term weights against the fixed average length). */
export function encodeDocument(text: string): SparseVector {
  const terms = sparseTerms(text);
  const tf = new Map<string, number>();
  for (const term of terms) tf.set(term, (tf.get(term) ?? 0) + 1);
  const norm = BM25_K1 * (1 - BM25_B + (BM25_B * terms.length) / AVERAGE_DOCUMENT_TERMS);
  const weights = new Map<number, number>();
  for (const [term, n] of tf) {
    const index = termIndex(term);
    weights.set(index, (weights.get(index) ?? 0) + (n * (BM25_K1 + 1)) / (n + norm));
  }
  return toSparse(weights);
}

/** The query-side sparse vector of `text`: each distinct term (at most 24) weighs 1/n. */
export function encodeQuery(text: string): SparseVector {
  const distinct = [...new Set(sparseTerms(text))].slice(0, MAX_QUERY_TERMS);
  const weights = new Map<number, number>();
  for (const term of distinct) {
    const index = termIndex(term);
    weights.set(index, (weights.get(index) ?? 0) + 1 / distinct.length);
  }
  return toSparse(weights);
}

/** Dot product of two sparse vectors (what a `dotproduct` index computes for the sparse part). */
export function sparseDot(a: SparseVector, b: SparseVector): number {
  const byIndex = new Map<number, number>();
  a.indices.forEach((index, i) => byIndex.set(index, a.values[i]!));
  let sum = 0;
  b.indices.forEach((index, i) => (sum += (byIndex.get(index) ?? 0) * b.values[i]!));
  return sum;
}

/**
 * The query pair for a hybrid search: the dense vector scaled by `alpha`, the sparse one by
 * `1 − alpha`. `alpha` 1 is a pure dense (semantic) query, 0 a pure keyword one. Throws
 * `INVALID_ARGUMENT` when `alpha` is not a number from 0 to 1.
 */
export function hybridQuery(
  dense: ArrayLike<number>,
  sparse: SparseVector,
  alpha: number,
): { vector: number[]; sparseVector: SparseVector } {
  if (typeof alpha !== "number" || !(alpha >= 0 && alpha <= 1)) {
    throw new HermesMemoryError({
      code: "INVALID_ARGUMENT",
      message: `The hybrid weight alpha must be a number from 0 (keywords only) to 1 (meaning only); got ${String(alpha)}.`,
    });
  }
  return {
    vector: Array.from(dense, (v) => v * alpha),
    sparseVector: { indices: [...sparse.indices], values: sparse.values.map((v) => v * (1 - alpha)) },
  };
}
