import { queryTokens, uniqueTerms } from "@hermes/memory-provider-kit";
import type { VectorMetadata } from "./metadata-filter.js";
import type { SidecarRow } from "./sidecar.js";

/**
 * Share of a matching turn's score passed to the next turn, the one after it, and the previous
 * turn of the same session: an answer usually follows the question that matched, and a reply
 * is often matched through the turn it answers. Same values as @hermes/memory-sqlite.
 */
export const NEIGHBOUR_WEIGHTS = [0.5, 0.3, 0.3] as const;

/** Score multiplier for a speaker's own turns when the query names that speaker. */
export const SPEAKER_BOOST = 1.3;

/** A scored candidate of one search. */
export interface ContextCandidate {
  id: string;
  score: number;
  metadata: VectorMetadata;
  /** Its sidecar row; absent for items only the remote store knows (they pass no context on). */
  row?: SidecarRow;
}

/** Where {@link propagateContext} finds a turn's neighbours (the sidecar, in production). */
export type NeighbourLookup = (row: SidecarRow) => { next: SidecarRow[]; previous: SidecarRow[] };

/** Options of {@link propagateContext}. */
export interface PropagateOptions {
  /** Rejects neighbours the search's filter excludes (default: accept all). */
  accept?: (row: SidecarRow) => boolean;
  /** Only this many leading candidates (map order = best first) pass context on (default all). */
  maxGivers?: number;
  /** Shares for next, next-but-one and previous turn (default `NEIGHBOUR_WEIGHTS`). */
  weights?: readonly [number, number, number];
}

/**
 * Add to candidate turns' neighbours a share of the turn's score (`NEIGHBOUR_WEIGHTS`), creating
 * candidates for neighbours neither ranking found. Shares come from the scores before
 * propagation, so a chain of matches does not snowball. Only rows of kind `turn` with a session
 * pass anything on. `candidates` must be ordered best first; returns a new map (same order, then
 * new neighbours), the input is not modified.
 */
export function propagateContext(candidates: ReadonlyMap<string, ContextCandidate>, lookup: NeighbourLookup, options: PropagateOptions = {}): Map<string, ContextCandidate> {
  const weights = options.weights ?? NEIGHBOUR_WEIGHTS;
  const accept = options.accept ?? (() => true);
  let givers = options.maxGivers ?? Infinity;
  const out = new Map<string, ContextCandidate>();
  for (const [id, c] of candidates) out.set(id, { ...c });
  const give = (row: SidecarRow | undefined, share: number): void => {
    if (!row || share <= 0 || !accept(row)) return;
    const entry = out.get(row.id);
    if (entry) entry.score += share;
    else out.set(row.id, { id: row.id, score: share, metadata: row.metadata, row });
  };
  for (const c of candidates.values()) {
    if (givers-- <= 0) break;
    if (!c.row || c.score <= 0 || c.row.metadata.kind !== "turn" || typeof c.row.metadata.session_id !== "string") continue;
    const { next, previous } = lookup(c.row);
    give(next[0], weights[0] * c.score);
    give(next[1], weights[1] * c.score);
    give(previous[0], weights[2] * c.score);
  }
  return out;
}

/** The `speaker` a caller stored in an item's metadata (kept in the JSON `extra` field), if any. */
export function speakerOf(metadata: VectorMetadata): string | undefined {
  if (typeof metadata.speaker === "string") return metadata.speaker;
  if (typeof metadata.extra !== "string" || !metadata.extra.includes("speaker")) return undefined;
  try {
    const extra = JSON.parse(metadata.extra) as Record<string, unknown>;
    return typeof extra.speaker === "string" ? extra.speaker : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Multiply by `boost` the score of candidates whose speaker is named in the query ("What did
 * Caroline paint?" favours Caroline's own turns). In place; no-op when the query names nobody.
 */
export function boostNamedSpeakers(query: string, candidates: Map<string, ContextCandidate>, boost = SPEAKER_BOOST): void {
  if (boost === 1) return;
  const terms = new Set(uniqueTerms(query));
  if (terms.size === 0) return;
  const named = new Map<string, boolean>();
  for (const c of candidates.values()) {
    const speaker = speakerOf(c.metadata);
    if (!speaker) continue;
    let hit = named.get(speaker);
    if (hit === undefined) {
      hit = queryTokens(speaker).some((w) => terms.has(w));
      named.set(speaker, hit);
    }
    if (hit) c.score *= boost;
  }
}
