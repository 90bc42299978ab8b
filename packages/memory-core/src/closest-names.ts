/** Most edits a name may be away from a candidate and still be suggested for it. */
const MAX_EDITS = 2;

/**
 * Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
 * neighbouring characters each count one edit ("sqllite" → "sqlite" is one, "stauts" → "status"
 * is one).
 */
function editDistance(a: string, b: string): number {
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) rows.push([i]);
  for (let j = 1; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    const row = rows[i]!;
    const above = rows[i - 1]!;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(above[j]! + 1, row[j - 1]! + 1, above[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, rows[i - 2]![j - 2]! + 1);
      row[j] = best;
    }
  }
  return rows[a.length]![b.length]!;
}

/**
 * The candidates a mistyped `name` most likely meant, for a "did you mean …?" remedy: those the
 * fewest edits away (at most two, ignoring case), and only where the edits leave more than half of
 * the longer name alike, so a short name is never matched to an unrelated one. Sorted; empty when
 * nothing is close or `name` is itself a candidate.
 */
export function closestNames(name: string, candidates: Iterable<string>): string[] {
  const word = name.toLowerCase();
  let best = MAX_EDITS + 1;
  let found: string[] = [];
  for (const candidate of new Set(candidates)) {
    if (candidate === name) return [];
    // Far longer or shorter names cannot be within reach; skip the table for them.
    if (Math.abs(candidate.length - word.length) > MAX_EDITS) continue;
    const distance = editDistance(word, candidate.toLowerCase());
    if (distance > MAX_EDITS || distance * 2 >= Math.max(word.length, candidate.length)) continue;
    if (distance < best) {
      best = distance;
      found = [candidate];
    } else if (distance === best) {
      found.push(candidate);
    }
  }
  return found.sort();
}
