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
