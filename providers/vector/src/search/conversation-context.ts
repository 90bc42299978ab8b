/**
 * Conversational context for the vector provider's hybrid search: the kit's neighbour score
 * spreading and speaker boost, over sidecar rows (the same rules and constants as the SQLite
 * provider, both from `@hermes/memory-provider-kit`).
 */
import {
  boostNamedSpeakers as boostSpeakers,
  propagateContext as propagate,
  NEIGHBOUR_WEIGHTS,
  SPEAKER_BOOST,
  type ContextCandidate as KitCandidate,
  type NeighbourLookup as KitLookup,
  type PropagateOptions as KitPropagateOptions,
} from "@hermes/memory-provider-kit/sqlite";
import type { VectorMetadata } from "../metadata-filter.js";
import type { SidecarRef } from "../local/sidecar-rows.js";

export { NEIGHBOUR_WEIGHTS, SPEAKER_BOOST };

/** A scored candidate of one search (its row: key, id and metadata; a full `SidecarRow` fits too). */
export type ContextCandidate = KitCandidate<SidecarRef>;

/** Where {@link propagateContext} finds a turn's neighbours (the sidecar, in production). */
export type NeighbourLookup = KitLookup<SidecarRef>;

/** Options of {@link propagateContext}. */
export type PropagateOptions = KitPropagateOptions<SidecarRef>;

/** The kit's `propagateContext` over sidecar rows. */
export function propagateContext(
  candidates: ReadonlyMap<string, ContextCandidate>,
  lookup: NeighbourLookup,
  options: PropagateOptions = {},
): Map<string, ContextCandidate> {
  return propagate(candidates, lookup, options);
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
  boostSpeakers(query, candidates.values(), (c) => speakerOf(c.metadata as VectorMetadata), boost);
}
