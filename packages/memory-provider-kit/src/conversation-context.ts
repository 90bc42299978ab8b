/**
 * Conversational context in ranking, shared by every provider that stores chat turns: a matching
 * turn passes part of its score to its neighbours in the same session (an answer usually follows
 * the question that matched; a reply is often matched through the turn it answers), and a query
 * that names a speaker favours that speaker's own turns.
 */
import { queryTokens, uniqueTerms } from "./fts-query.js";

/**
 * Share of a matching turn's score passed to the next turn, the one after it, and the previous turn.
 * The next turn's share is for a matching turn that asks a question (see `STATEMENT_NEXT_FACTOR`).
 */
export const NEIGHBOUR_WEIGHTS: readonly [number, number, number] = [0.5, 0.3, 0.3];

/**
 * A matching turn that asks no question (`asksQuestion` is false) passes only this fraction of the
 * next turn's share to the next turn: after a question the next turn is usually its answer, after a
 * statement it is as often an acknowledgement or a new topic. Chosen on the LoCoMo dev set (0.4 to
 * 0.7 of a question's share did about equally well; 1, i.e. no distinction, did worse).
 */
export const STATEMENT_NEXT_FACTOR = 0.6;

/**
 * True when a turn's text asks a question: it holds a question mark ("?" or the full-width "？").
 * SQL applies the same rule as `instr(text, '?') > 0 OR instr(text, '？') > 0`.
 */
export function asksQuestion(text: string): boolean {
  return text.includes("?") || text.includes("\uff1f");
}

/** The share a matching turn passes to its next turn: `weights[0]`, scaled by `STATEMENT_NEXT_FACTOR` unless it asks a question. */
export function nextTurnShare(weights: readonly [number, number, number], asks: boolean): number {
  return asks ? weights[0] : weights[0] * STATEMENT_NEXT_FACTOR;
}

/**
 * Share of a matching turn's score passed to the turn before its previous one (the context window
 * is two turns each way; a question is often asked two turns before the reply that matches).
 * Chosen on the LoCoMo dev set (0.1 to 0.3 did about equally well; 0, i.e. none, did worse).
 */
export const SECOND_PREVIOUS_WEIGHT = 0.2;

/**
 * How many of a search's best matches pass context to their neighbours, for a search asking for
 * `limit` hits: twice `limit`, and at least 40. Further down, a match's shares are too small to
 * lift a neighbour into the hits (on the LoCoMo development set, recall at 5 to 50 hits was the same
 * within 0.3 points with 1.5 to 4 givers per hit), while each giver costs its neighbours' look-ups.
 */
export function contextGivers(limit: number): number {
  return Math.max(2 * limit, 40);
}

/** Score multiplier for a speaker's own turns when the query names that speaker. */
export const SPEAKER_BOOST = 1.3;

/** The query's words as a set, for `speakerNamed`. */
export function queryTermSet(query: string): Set<string> {
  return new Set(uniqueTerms(query));
}

/** True when one of `speaker`'s words is among the query's words ("What did Caroline paint?" names "Caroline"). */
export function speakerNamed(speaker: string | undefined, queryTerms: ReadonlySet<string>): boolean {
  if (!speaker || queryTerms.size === 0) return false;
  return queryTokens(speaker).some((w) => queryTerms.has(w));
}

/** A row that can pass context on: its id, and metadata saying whether it is a turn and of which session. */
export interface ContextRow {
  id: string;
  metadata: { kind?: unknown; session_id?: unknown; [key: string]: unknown };
}

/** A scored candidate of one search. */
export interface ContextCandidate<R extends ContextRow = ContextRow> {
  id: string;
  score: number;
  metadata: R["metadata"];
  /** Its stored row; absent for items only a remote store knows (they pass no context on). */
  row?: R;
}

/**
 * Where `propagateContext` finds a turn's neighbours in its session: the next turns and the previous
 * turns, nearest first (only the first two of each are used).
 */
export type NeighbourLookup<R extends ContextRow = ContextRow> = (row: R) => { next: R[]; previous: R[] };

/** Options of `propagateContext`. */
export interface PropagateOptions<R extends ContextRow = ContextRow> {
  /** Rejects neighbours the search's filter excludes (default: accept all). */
  accept?: (row: R) => boolean;
  /** Only this many leading candidates (map order = best first) pass context on (default all). */
  maxGivers?: number;
  /** Shares for next, next-but-one and previous turn (default `NEIGHBOUR_WEIGHTS`). */
  weights?: readonly [number, number, number];
  /**
   * Whether a candidate turn asks a question (e.g. `asksQuestion` of its text). When given, a turn
   * that does not passes `nextTurnShare(weights, false)` to its next turn; when absent, every turn
   * passes `weights[0]`.
   */
  asksQuestion?: (row: R) => boolean;
}

/**
 * Add to candidate turns' neighbours a share of the turn's score (`NEIGHBOUR_WEIGHTS`, the next
 * turn's share lowered after a statement when `asksQuestion` is given; `SECOND_PREVIOUS_WEIGHT`
 * for the second previous turn when the lookup returns one), creating
 * candidates for neighbours no ranking found. Shares come from the scores before propagation, so
 * a chain of matches does not snowball. Only rows of kind `turn` with a session pass anything on.
 * `candidates` must be ordered best first; returns a new map (same order, then new neighbours);
 * the input is not modified.
 */
export function propagateContext<R extends ContextRow>(
  candidates: ReadonlyMap<string, ContextCandidate<R>>,
  lookup: NeighbourLookup<R>,
  options: PropagateOptions<R> = {},
): Map<string, ContextCandidate<R>> {
  const weights = options.weights ?? NEIGHBOUR_WEIGHTS;
  const accept = options.accept ?? (() => true);
  let givers = options.maxGivers ?? Infinity;
  const out = new Map<string, ContextCandidate<R>>();
  for (const [id, c] of candidates) out.set(id, { ...c });
  const give = (row: R | undefined, share: number): void => {
    if (!row || share <= 0 || !accept(row)) return;
    const entry = out.get(row.id);
    if (entry) entry.score += share;
    else out.set(row.id, { id: row.id, score: share, metadata: row.metadata, row });
  };
  for (const c of candidates.values()) {
    if (givers-- <= 0) break;
    if (!c.row || c.score <= 0 || c.row.metadata.kind !== "turn" || typeof c.row.metadata.session_id !== "string") continue;
    const { next, previous } = lookup(c.row);
    give(next[0], (options.asksQuestion ? nextTurnShare(weights, options.asksQuestion(c.row)) : weights[0]) * c.score);
    give(next[1], weights[1] * c.score);
    give(previous[0], weights[2] * c.score);
    give(previous[1], SECOND_PREVIOUS_WEIGHT * c.score);
  }
  return out;
}

/**
 * Multiply by `boost` the score of candidates whose speaker (`speakerOf`) is named in the query.
 * In place; no-op when the query names nobody or `boost` is 1.
 */
export function boostNamedSpeakers<C extends { score: number }>(
  query: string,
  candidates: Iterable<C>,
  speakerOf: (candidate: C) => string | undefined,
  boost = SPEAKER_BOOST,
): void {
  if (boost === 1) return;
  const terms = queryTermSet(query);
  if (terms.size === 0) return;
  const named = new Map<string, boolean>();
  for (const c of candidates) {
    const speaker = speakerOf(c);
    if (!speaker) continue;
    let hit = named.get(speaker);
    if (hit === undefined) {
      hit = speakerNamed(speaker, terms);
      named.set(speaker, hit);
    }
    if (hit) c.score *= boost;
  }
}
