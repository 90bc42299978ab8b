/**
 * The ids of a keyword ranking's rows, for fusing it with the vector ranking by id: those the
 * caller or the read cache knows need no look-up.
 */
import type { ReadCache } from "./read-cache.js";

/**
 * The ids of the `ranked` rows (`[key, rank]`) that are not in `knownIds`: kept ones from `kept`
 * (synced by the caller), the others read by `read` (rows as `[key, id]`), and kept when stored as
 * text. `undefined` when a ranked row has no stored row.
 */
export function idsOfRanked(
  kept: ReadCache,
  ranked: ReadonlyArray<readonly [key: number, rank: number]>,
  knownIds: ReadonlyMap<number, unknown>,
  read: (keys: readonly number[]) => Array<[key: number, id: unknown]>,
): Map<number, unknown> | undefined {
  const ids = new Map<number, unknown>();
  const unknown: number[] = [];
  for (const [key] of ranked) {
    if (knownIds.has(key)) continue;
    const id = kept.idOf(key);
    if (id === undefined) unknown.push(key);
    else ids.set(key, id);
  }
  if (unknown.length === 0) return ids;
  let found = 0;
  for (const [key, id] of read(unknown)) {
    ids.set(key, id);
    found++;
    if (typeof id === "string") kept.keepId(key, id);
  }
  return found < unknown.length ? undefined : ids;
}
