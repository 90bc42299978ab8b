/**
 * How many of a retriever's returned ids belong to an exact top k.
 *
 * The exact top k is a set defined by scores: when several rows tie with the k-th best score, any
 * of them completes an exact top k, and which one FTS5's `ORDER BY rank` lists first is an
 * accident of row order. So a returned id counts when it is one of `exact`, or when its exact
 * score equals the k-th best score (relative tolerance 1e-9, for floating-point sums). Ranks are
 * FTS5 ranks: lower is better. The count is capped at `exact.length`.
 */
export function keptOfExactTop(
  exact: ReadonlyArray<{ id: number; rank: number }>,
  returnedRanks: ReadonlyArray<{ id: number; rank: number }>,
  returned: readonly string[],
): number {
  if (exact.length === 0) return 0;
  const exactIds = new Set(exact.map((r) => String(r.id)));
  const worst = Math.max(...exact.map((r) => r.rank));
  const tolerance = 1e-9 * Math.max(1, Math.abs(worst));
  const rankById = new Map(returnedRanks.map((r) => [String(r.id), r.rank]));
  let kept = 0;
  for (const id of new Set(returned)) {
    const rank = rankById.get(id);
    if (exactIds.has(id) || (rank !== undefined && rank <= worst + tolerance)) kept++;
  }
  return Math.min(kept, exact.length);
}
