import { isLexicalEmbedder } from "../embedders/embedder.js";

/** RRF constant from Cormack et al.: dampens the weight of top ranks so neither list dominates. */
export const RRF_K = 60;

/** One fused result with the component scores it came from (`null` = absent from that list). */
export interface FusedResult {
  id: string;
  score: number;
  vector: number | null;
  bm25: number | null;
}

/**
 * Reciprocal-rank fusion of a vector-similarity ranking and a BM25 ranking (both best first):
 * `score = Σ 1 / (RRF_K + rank)`. Scale-free, so cosine and BM25 never need calibrating.
 */
export function reciprocalRankFusion(
  vectorHits: Array<{ id: string; score: number }>,
  keywordHits: Array<{ id: string; score: number }>,
): FusedResult[] {
  const fused = new Map<string, FusedResult>();
  const add = (hits: Array<{ id: string; score: number }>, field: "vector" | "bm25"): void => {
    hits.forEach((hit, rank) => {
      const entry = fused.get(hit.id) ?? { id: hit.id, score: 0, vector: null, bm25: null };
      if (entry[field] !== null) return; // duplicate id within one list: keep the better rank
      entry[field] = hit.score;
      entry.score += 1 / (RRF_K + rank + 1);
      fused.set(hit.id, entry);
    });
  };
  add(vectorHits, "vector");
  add(keywordHits, "bm25");
  return [...fused.values()].sort((a, b) => b.score - a.score || (b.vector ?? -1) - (a.vector ?? -1));
}

/** Weights of {@link scoreFusion}. */
export interface FusionWeights {
  /** Weight of the normalised BM25 score. */
  bm25: number;
  /** Weight of the normalised vector similarity on its own (reaches items BM25 missed). */
  vector: number;
  /** Bonus factor on the BM25 part for vector agreement: `bm25 · b · (1 + agreement · v)`. */
  agreement: number;
}

/**
 * Fusion for the `hashing` embedder, a lexical model: BM25 leads, vector similarity re-orders
 * the keyword matches (up to ×1.5) and lets items BM25 missed (spelling variants) in at the tail.
 * Measured on LoCoMo: flat between agreement 0.2 and 0.6.
 */
export const LEXICAL_EMBEDDER_FUSION: FusionWeights = { bm25: 1, vector: 0.05, agreement: 0.5 };

/**
 * Fusion for semantic embedders (openai, onnx, custom): both rankings count equally, so a
 * paraphrase with no shared word can still reach the top. Not measured here (no model offline).
 */
export const SEMANTIC_EMBEDDER_FUSION: FusionWeights = { bm25: 1, vector: 1, agreement: 0 };

/**
 * The fusion weights for an embedder: `LEXICAL_EMBEDDER_FUSION` for the lexical `hashing`
 * embedder (ids starting with `hashing`), `SEMANTIC_EMBEDDER_FUSION` for every other embedder.
 */
export function fusionWeightsFor(embedderId: string): FusionWeights {
  return isLexicalEmbedder(embedderId) ? LEXICAL_EMBEDDER_FUSION : SEMANTIC_EMBEDDER_FUSION;
}

/**
 * Score-normalised fusion of a vector ranking and a BM25 ranking (both best first). BM25 scores
 * are divided by the best one (`b` in 0..1); cosines are min-max scaled over the vector list
 * (`v` in 0..1: raw cosines of a hashing embedder all sit close together, so dividing by the
 * best would flatten them). `score = weights.bm25 · b · (1 + weights.agreement · v) +
 * weights.vector · v`. Unlike RRF it keeps how far apart candidates are — a turn matching three
 * rare words stays well ahead of one matching a single common word. Duplicate ids within a list
 * keep their first (best) entry.
 */
export function scoreFusion(
  vectorHits: Array<{ id: string; score: number }>,
  keywordHits: Array<{ id: string; score: number }>,
  weights: FusionWeights,
): FusedResult[] {
  return fuseScores(vectorHits, keywordHits, weights, (hit) => hit.id).map(({ id, score, vector, bm25 }) => ({ id, score, vector, bm25 }));
}

/** A result of {@link scoreFusionByKey}: a fused result with its sidecar row key. */
export interface KeyedFusedResult extends FusedResult {
  key: number;
}

/**
 * `scoreFusion` of hits that all carry their sidecar row key (a local store's vector hits and the
 * sidecar's keyword hits), matched by key instead of id: one namespace's rows and ids go one to one,
 * so the results, scores and order are `scoreFusion`'s, each with its key.
 */
export function scoreFusionByKey(
  vectorHits: ReadonlyArray<{ id: string; score: number; key: number }>,
  keywordHits: ReadonlyArray<{ id: string; score: number; key: number }>,
  weights: FusionWeights,
): KeyedFusedResult[] {
  return fuseScores(vectorHits, keywordHits, weights, (hit) => hit.key);
}

/** `scoreFusion`'s rule over hits matched by `keyOf` (id or row key); each result keeps its key. */
function fuseScores<K, H extends { id: string; score: number }>(
  vectorHits: readonly H[],
  keywordHits: readonly H[],
  weights: FusionWeights,
  keyOf: (hit: H) => K,
): Array<FusedResult & { key: K }> {
  const fused = new Map<K, { key: K; id: string; vector: number | null; bm25: number | null; v: number; b: number }>();
  const entry = (hit: H) => {
    const key = keyOf(hit);
    let e = fused.get(key);
    if (!e) {
      e = { key, id: hit.id, vector: null, bm25: null, v: 0, b: 0 };
      fused.set(key, e);
    }
    return e;
  };
  const bestBm25 = keywordHits.reduce((m, h) => Math.max(m, h.score), 0);
  for (const hit of keywordHits) {
    const e = entry(hit);
    if (e.bm25 !== null) continue;
    e.bm25 = hit.score;
    e.b = bestBm25 > 0 ? Math.max(0, hit.score) / bestBm25 : 0;
  }
  const best = vectorHits.reduce((m, h) => Math.max(m, h.score), -Infinity);
  const worst = vectorHits.reduce((m, h) => Math.min(m, h.score), Infinity);
  for (const hit of vectorHits) {
    const e = entry(hit);
    if (e.vector !== null) continue;
    e.vector = hit.score;
    // One hit (or all equal): it is the best the vector side has.
    e.v = best > worst ? (hit.score - worst) / (best - worst) : 1;
  }
  const out: Array<FusedResult & { key: K }> = [];
  for (const e of fused.values()) {
    out.push({
      key: e.key,
      id: e.id,
      score: weights.bm25 * e.b * (1 + weights.agreement * e.v) + weights.vector * e.v,
      vector: e.vector,
      bm25: e.bm25,
    });
  }
  return out.sort((a, b) => b.score - a.score || (b.bm25 ?? -1) - (a.bm25 ?? -1) || (b.vector ?? -1) - (a.vector ?? -1));
}
