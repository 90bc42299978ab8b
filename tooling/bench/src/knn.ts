/**
 * Exact k-nearest-neighbour search by brute force over one contiguous Float32Array: the ground
 * truth and the time baseline of the vector suite.
 */

/** A neighbour: row index and its inner-product score (vectors are unit length, so = cosine). */
export interface Neighbour {
  index: number;
  score: number;
}

/**
 * Top-k rows of `data` (`rows × dim`, row-major) by inner product with `query`, best first.
 * Keeps a small sorted buffer instead of sorting all scores, like a tight production loop would.
 */
export function bruteForceTopK(data: Float32Array, dim: number, query: Float32Array, k: number): Neighbour[] {
  const rows = Math.floor(data.length / dim);
  const topScore = new Float64Array(k).fill(-Infinity);
  const topIndex = new Int32Array(k).fill(-1);
  for (let r = 0; r < rows; r++) {
    const off = r * dim;
    let s = 0;
    for (let d = 0; d < dim; d++) s += (data[off + d] as number) * (query[d] as number);
    if (s <= (topScore[k - 1] as number)) continue;
    let i = k - 1;
    while (i > 0 && (topScore[i - 1] as number) < s) {
      topScore[i] = topScore[i - 1] as number;
      topIndex[i] = topIndex[i - 1] as number;
      i--;
    }
    topScore[i] = s;
    topIndex[i] = r;
  }
  const out: Neighbour[] = [];
  for (let i = 0; i < k; i++) if ((topIndex[i] as number) >= 0) out.push({ index: topIndex[i] as number, score: topScore[i] as number });
  return out;
}

/** Share of `truth` ids present in `found` (recall@k with k = truth.length). */
export function recallAt(truth: ReadonlyArray<number | string>, found: ReadonlyArray<number | string>): number {
  if (truth.length === 0) return 1;
  const set = new Set(found);
  let hit = 0;
  for (const t of truth) if (set.has(t)) hit++;
  return hit / truth.length;
}
