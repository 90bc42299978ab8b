/**
 * The vector provider's search: vector nearest neighbours, fused with BM25 keyword hits from the
 * sidecar (hybrid mode), then conversational context (neighbour score spreading, speaker boost).
 */
import type { MemoryHit, MemoryKind } from "@hermes/memory-core";
import { clipQuery, isEmptyFilter, matchesMemoryFilter, MEMORY_ITEM_KINDS, type ParsedMemoryFilter } from "@hermes/memory-provider-kit";
import {
  boostNamedSpeakers as boostSpeakers,
  contextGivers,
  NEIGHBOUR_WEIGHTS,
  nextTurnShare,
  SECOND_PREVIOUS_WEIGHT,
} from "@hermes/memory-provider-kit/sqlite";
import { SPEAKER_BOOST, speakerOf } from "./conversation-context.js";
import type { Embedder } from "../embedders/embedder.js";
import type { VectorMetadata } from "../metadata-filter.js";
import { PINECONE_USER_FIELD_PREFIX, toPineconeFilter } from "../pinecone/pinecone-metadata.js";
import { fusionWeightsFor, scoreFusion, scoreFusionByKey, type FusedResult } from "./rank-fusion.js";
import type { Sidecar } from "../local/sidecar.js";
import type { KeywordRank, LinkedRef, RowCondition } from "../local/sidecar-rows.js";
import { userMetadataOf } from "../local/sidecar-schema.js";
import type { VectorMatch, VectorQueryOptions, VectorStore } from "../backends/vector-store.js";

/** What a search reads: the sidecar, the vector store, the embedder, and whether BM25 joins in. */
export interface HybridSearchParts {
  sidecar: Sidecar;
  store: VectorStore;
  embedder: Embedder;
  /** Fuse with BM25 (hybrid) or rank by vectors only. */
  hybrid: boolean;
}

/** What a search looks at: one namespace, the items passing `filter` and not expired at `now`. */
export interface HybridSearchOptions {
  namespace: string;
  limit?: number;
  /** The validated filter (the namespace already stands for its `userId` when `userInNamespace`). */
  filter: ParsedMemoryFilter;
  /** Epoch ms: items expired at this time are never returned. Default `Date.now()`. */
  now?: number;
  /** The namespace holds one user's items only, so `filter.userId` need not be checked in Pinecone. */
  userInNamespace?: boolean;
  /** Time budget for remote stores. */
  budgetMs?: number;
  /** The caller knows that no item of the sidecar has expired at `now` (skips the look-up). */
  noneExpired?: boolean;
}

/** A filter passing at most this many items is scored exactly over exactly those items. */
export const SELECTIVE_FILTER_ITEMS = 2000;

/**
 * Hybrid (or pure vector) search, best first, over the items passing the filter (never a
 * post-filtered top-k): BM25 runs with the filter inside its SQL; the vector side scores the
 * passing items' vectors directly when at most `SELECTIVE_FILTER_ITEMS` pass, otherwise queries
 * the index keeping passing items only (Pinecone: its native filter); context spreads only to
 * passing neighbours. Vector and BM25 candidates are fused
 * (`scoreFusion` with `fusionWeightsFor(embedder.id)`: BM25-led for the lexical `hashing`
 * embedder, balanced for semantic ones), each candidate turn passes part of its score to the next
 * two and the two previous turns of its session (the kit's rules: less to the next turn when it
 * asks no question), and turns of a speaker named in the query are boosted.
 * Hits carry `metadata.scores = {vector, bm25, fused}` (`null` = not found by that ranking).
 */
export async function hybridSearch(parts: HybridSearchParts, query: string, options: HybridSearchOptions): Promise<MemoryHit[]> {
  const { sidecar, store, embedder } = parts;
  const limit = Math.max(1, Math.min(200, options.limit ?? 10));
  if (!query.trim()) return [];
  const namespace = options.namespace;
  const now = options.now ?? Date.now();
  const filter = options.filter;
  const filtered = !isEmptyFilter(filter);
  // Expiry is a condition only when some item of the namespace has expired (the index answers).
  const expired = options.noneExpired !== true && sidecar.hasExpired(namespace, now);
  const condition = filtered || expired ? sidecar.condition(filter, now) : null;
  const depth = parts.hybrid ? Math.max(limit * 3, 20) : limit;
  // The query as the keyword side reads it (its first MAX_QUERY_CHARS characters): embedding a
  // whole pasted document cost about a second per megabyte, and a remote model refuses long input.
  const [vector] = await embedder.embed([clipQuery(query)]);
  // Local store: the passing items, scored exactly when few, else a predicate on the index's hits.
  // Pinecone: its native filter (which may select more, e.g. ids: checked below).
  let local: Pick<VectorQueryOptions, "candidateKeys" | "acceptKey"> = {};
  if (condition && store.kind === "local") {
    const passing = sidecar.passingKeys(namespace, condition, filtered ? Number.MAX_SAFE_INTEGER : 0);
    if (passing && passing.length <= SELECTIVE_FILTER_ITEMS) local = { candidateKeys: passing };
    else if (passing) {
      const set = new Set(passing);
      local = { acceptKey: (key) => set.has(key) };
    } else {
      const gone = new Set(sidecar.expiredKeys(namespace, now));
      local = { acceptKey: (key) => !gone.has(key) };
    }
  }
  const pineconeFilter = condition ? toPineconeFilter(filter, now, { withUser: options.userInNamespace !== true }) : undefined;
  // Hybrid reads candidates' metadata from the sidecar, so the store need not (idsOnly).
  const vectorHits = await store.query(vector!, {
    topK: depth,
    namespace,
    ...(pineconeFilter ? { filter: pineconeFilter } : {}),
    ...local,
    ...(options.budgetMs ? { budgetMs: options.budgetMs } : {}),
    ...(parts.hybrid || condition ? { idsOnly: true } : {}),
  });
  if (!parts.hybrid && !condition)
    return vectorHits.slice(0, limit).map((h) => toMemoryHit(h.id, h.metadata, h.score, { vector: h.score, bm25: null }));
  // The rest reads the sidecar only, synchronously: one check of whether anything else wrote serves it all.
  return sidecar.readingOnce(() => {
    const hits = condition ? keepPassing(sidecar, namespace, vectorHits, condition, filter, now) : vectorHits;
    return parts.hybrid
      ? fuseWithKeywords(parts, query, namespace, limit, depth, hits, condition)
      : filteredVectorOnly(sidecar, namespace, limit, hits);
  });
}

/** A filtered vector-only search's hits: the best `limit` passing vector hits, with the sidecar's metadata. */
function filteredVectorOnly(sidecar: Sidecar, namespace: string, limit: number, vectorHits: VectorMatch[]): MemoryHit[] {
  const rows = sidecar.getByIds(
    namespace,
    vectorHits.slice(0, limit).map((h) => h.id),
  );
  const byId = new Map(rows.map((r) => [r.id, r.metadata]));
  return vectorHits.slice(0, limit).map((h) => toMemoryHit(h.id, byId.get(h.id) ?? h.metadata, h.score, { vector: h.score, bm25: null }));
}

/** A hybrid search's hits: the vector hits fused with the BM25 ranking, then conversational context. */
function fuseWithKeywords(
  parts: HybridSearchParts,
  query: string,
  namespace: string,
  limit: number,
  depth: number,
  vectorHits: VectorMatch[],
  condition: RowCondition | null,
): MemoryHit[] {
  const { sidecar, embedder } = parts;
  // The vector hits' rows exist (their keys came from the sidecar): their ids need no look-up.
  const knownIds = new Map<number, string>();
  for (const h of vectorHits) if (h.key !== undefined) knownIds.set(h.key, h.id);
  // Rows holding only words in half the rows or more (BM25 about 0) are left to the vector ranking.
  const keywordHits = sidecar.keywordRanks(namespace, query, depth, undefined, condition, false, knownIds);
  const weights = fusionWeightsFor(embedder.id);
  // A local store's hits all carry their row keys: fused by key, no id needs matching.
  const keyed = vectorHits.every((h) => h.key !== undefined);
  const fused = keyed
    ? scoreFusionByKey(vectorHits as Array<VectorMatch & { key: number }>, keywordHits, weights)
    : scoreFusion(vectorHits, keywordHits, weights);
  return withContext(sidecar, namespace, query, limit, fused, vectorHits, keywordHits, condition);
}

/** One scored item of a hybrid search: a fused candidate, or a turn that only context reached. */
interface Scored {
  /** The sidecar row's key; `undefined` for items only a remote store knows (no row). */
  key: number | undefined;
  /** The candidate's id; `undefined` for a neighbour until its row is read. */
  id: string | undefined;
  score: number;
  /** The candidate's fusion components (`undefined` for a neighbour). */
  fused: FusedResult | undefined;
  metadata: VectorMetadata | undefined;
  /** Its `metadata.extra` as parsed when its speaker was looked up (the hit's caller metadata). */
  user?: unknown;
}

/**
 * The fused candidates as scored entries, in fused order, with their row keys (from the keyword and
 * vector hits, else looked up by id), and the entries by key.
 */
function scoredCandidates(
  sidecar: Sidecar,
  namespace: string,
  fused: ReadonlyArray<FusedResult & { key?: number }>,
  vectorHits: readonly VectorMatch[],
  keywordHits: readonly KeywordRank[],
): { entries: Scored[]; byKey: Map<number, Scored> } {
  let keyOf: Map<string, number> | undefined;
  if (fused.some((f) => f.key === undefined)) {
    keyOf = new Map<string, number>();
    for (const h of keywordHits) keyOf.set(h.id, h.key);
    for (const h of vectorHits) if (h.key !== undefined) keyOf.set(h.id, h.key);
    // Vector hits of a remote store come without keys: their rows are looked up by id (none: the
    // item is only in the remote store).
    const unknown = fused.filter((f) => !keyOf!.has(f.id)).map((f) => f.id);
    if (unknown.length > 0) for (const ref of sidecar.linkedRefs(namespace, unknown, 0, 0).values()) keyOf.set(ref.id, ref.key);
  }
  const entries: Scored[] = [];
  const byKey = new Map<number, Scored>();
  for (const f of fused) {
    const key = f.key ?? keyOf?.get(f.id);
    const entry: Scored = { key, id: f.id, score: f.score, fused: f, metadata: undefined };
    entries.push(entry);
    if (key !== undefined) byKey.set(key, entry);
  }
  return { entries, byKey };
}

/**
 * The fused candidates with conversational context, best `limit` first, as `MemoryHit`s.
 *
 * The first `maxGivers` candidates that are turns with a session pass shares of their score to
 * their session's next two and previous two turns (the kit's rules), counted in fused order; only
 * neighbours passing `condition` receive. Turns of a speaker named in the query are boosted. Work is
 * done only for items that can place: scores are never negative, shares only add and the boost only
 * raises, so once `limit` candidates score at least `t` on their own, a neighbour whose shares times
 * the boost stay below `t` cannot place and is not read; an item whose boosted score would stay
 * below the `limit`-th best score cannot place either, and only the others get their metadata read.
 * Text is read for the hits returned. Ties are ordered by row key (rows before row-less items),
 * then by first appearance.
 */
function withContext(
  sidecar: Sidecar,
  namespace: string,
  query: string,
  limit: number,
  fused: ReadonlyArray<FusedResult & { key?: number }>,
  vectorHits: readonly VectorMatch[],
  keywordHits: readonly KeywordRank[],
  condition: RowCondition | null,
): MemoryHit[] {
  // Far down the list the shares are too small to change the top `limit`.
  const maxGivers = contextGivers(limit);
  const { entries, byKey } = scoredCandidates(sidecar, namespace, fused, vectorHits, keywordHits);
  // The givers' neighbour keys, whether they ask a question and whether they are turns with a
  // session (no metadata or text is read). A giver without a row gives nothing.
  const giverCount = Math.min(maxGivers, entries.length);
  const links = giverLinks(sidecar, namespace, entries, giverCount);
  const [, wNext2, wPrev] = NEIGHBOUR_WEIGHTS;
  const afterQuestion = nextTurnShare(NEIGHBOUR_WEIGHTS, true);
  const afterStatement = nextTurnShare(NEIGHBOUR_WEIGHTS, false);
  // Each giver's shares in giving order (next, next but one, previous, previous but one), as
  // parallel lists of receiving keys and shares.
  const giftKeys: number[] = [];
  const giftShares: number[] = [];
  const give = (key: number | undefined, share: number): void => {
    if (key !== undefined && share > 0) {
      giftKeys.push(key);
      giftShares.push(share);
    }
  };
  for (let i = 0; i < giverCount; i++) {
    const e = entries[i]!;
    const link = e.key === undefined ? undefined : links.get(e.key);
    if (!link || !link.sessionTurn || !(e.score > 0)) continue;
    give(link.next[0], (link.asksQuestion ? afterQuestion : afterStatement) * e.score);
    give(link.next[1], wNext2 * e.score);
    give(link.previous[0], wPrev * e.score);
    give(link.previous[1], SECOND_PREVIOUS_WEIGHT * e.score);
  }
  // Neighbours that are not candidates: their whole score is their shares (summed in giving order).
  const received = new Map<number, number>();
  for (let i = 0; i < giftKeys.length; i++) {
    const key = giftKeys[i]!;
    if (byKey.has(key)) continue;
    const sum = received.get(key);
    received.set(key, sum === undefined ? 0 + giftShares[i]! : sum + giftShares[i]!);
  }
  let threshold = -Infinity;
  if (received.size > 0 && entries.length >= limit) {
    const own = sortedScores(entries);
    const t = own[own.length - limit]!;
    if (t > 0 && own[0]! >= 0) threshold = t;
  }
  const placeable: number[] = [];
  for (const [key, sum] of received) if (!(sum * SPEAKER_BOOST < threshold)) placeable.push(key);
  // Context spreads only to neighbours that pass the filter (and have not expired); candidates do.
  const accepted = condition ? sidecar.filterKeys(placeable, condition) : new Set(placeable);
  for (let i = 0; i < giftKeys.length; i++) {
    const key = giftKeys[i]!;
    const e = byKey.get(key);
    if (e) {
      e.score += giftShares[i]!;
    } else if (accepted.has(key)) {
      const entry: Scored = { key, id: undefined, score: 0 + giftShares[i]!, fused: undefined, metadata: undefined };
      entries.push(entry);
      byKey.set(key, entry);
    }
  }
  // Only items whose boosted score would reach the `limit`-th best score are boosted. With that
  // score positive, a boost only raises scores, so the others cannot place: only the boosted items
  // have their metadata (and speaker) read.
  const scores = sortedScores(entries);
  const floor = scores.length > limit ? scores[scores.length - limit]! : -Infinity;
  const boostable: Scored[] = [];
  for (const e of entries) if (!(e.score * SPEAKER_BOOST < floor)) boostable.push(e);
  const kept = floor > 0 || boostable.length === entries.length ? boostable : entries;
  const rows = sidecar.refsByKeys(rowKeys(kept));
  let storeMetadata: Map<string, VectorMetadata> | undefined;
  for (const e of kept) {
    const row = e.key === undefined ? undefined : rows.get(e.key);
    if (row) {
      e.id ??= row.id;
      e.metadata = row.metadata;
    } else {
      // Items only a remote store knows have no sidecar row: their metadata is the store's.
      e.key = undefined;
      storeMetadata ??= new Map(vectorHits.map((h) => [h.id, h.metadata]));
      e.metadata = (e.id === undefined ? undefined : storeMetadata.get(e.id)) ?? {};
    }
  }
  boostSpeakers(query, boostable, speakerOfEntry, SPEAKER_BOOST);
  const order = (e: Scored): number => e.key ?? Number.MAX_SAFE_INTEGER;
  const top = kept
    .filter((e) => e.id !== undefined)
    .sort((a, b) => b.score - a.score || order(a) - order(b))
    .slice(0, limit);
  const texts = sidecar.textsByKeys(rowKeys(top));
  return top.map((e) =>
    toMemoryHit(
      e.id!,
      e.metadata!,
      e.score,
      { vector: e.fused?.vector ?? null, bm25: e.fused?.bm25 ?? null, fused: e.score },
      e.key === undefined ? undefined : texts.get(e.key),
      e.user,
    ),
  );
}

/** What a giver's shares need of its links: its neighbours' keys, whether it asks, whether it is a session turn. */
type GiverLinks = Pick<LinkedRef, "next" | "previous" | "asksQuestion" | "sessionTurn">;

/**
 * The links of the first `count` entries that have a row and a positive score, by key: those kept
 * from an earlier search as they are, the others read (and kept) in one statement. A giver without
 * a row gives nothing.
 */
function giverLinks(sidecar: Sidecar, namespace: string, entries: readonly Scored[], count: number): Map<number, GiverLinks> {
  const links = new Map<number, GiverLinks>();
  const ids: string[] = [];
  const keys: number[] = [];
  for (let i = 0; i < count; i++) {
    const e = entries[i]!;
    if (e.key === undefined || !(e.score > 0)) continue;
    const kept = sidecar.keptLinks(namespace, e.key);
    if (kept) {
      links.set(e.key, { next: kept.next, previous: kept.previous, asksQuestion: kept.asksQuestion, sessionTurn: true });
    } else {
      ids.push(e.id!);
      keys.push(e.key);
    }
  }
  if (ids.length > 0) for (const link of sidecar.linkedRefs(namespace, ids, ids.length, 0, keys).values()) links.set(link.key, link);
  return links;
}

/**
 * `speakerOf` an entry's metadata (a `speaker` field, else the caller's `speaker` in `extra`),
 * keeping `extra` as parsed for its hit when it was parsed here.
 */
function speakerOfEntry(e: Scored): string | undefined {
  const metadata = e.metadata!;
  if (typeof metadata.speaker === "string" || typeof metadata.extra !== "string" || !metadata.extra.includes("speaker"))
    return speakerOf(metadata);
  // The sidecar keeps what it read (frozen), so the same metadata object comes back search after search.
  if (speakers.has(metadata)) return speakers.get(metadata);
  let speaker: unknown;
  try {
    e.user = parseExtra(metadata, metadata.extra);
    speaker = e.user !== null && typeof e.user === "object" ? (e.user as Record<string, unknown>).speaker : undefined;
  } catch {
    speaker = undefined;
  }
  const found = typeof speaker === "string" ? speaker : undefined;
  if (Object.isFrozen(metadata)) speakers.set(metadata, found);
  return found;
}

/** The speaker in the caller's metadata (`extra`) of metadata the sidecar keeps (frozen, so it cannot change). */
const speakers = new WeakMap<VectorMetadata, string | undefined>();

/**
 * The caller's metadata (`extra`, parsed) of metadata the sidecar keeps (frozen, so it cannot
 * change) as its keys and values when it is an object of plain values only, `null` when it is
 * not: a hit then gets a copy built from them (nothing nested to share) instead of a parse.
 */
const flatExtras = new WeakMap<VectorMetadata, { keys: string[]; values: unknown[] } | null>();

/** `JSON.parse(extra)` of `metadata`: a value of its own on every call; throws as `JSON.parse` does. */
function parseExtra(metadata: VectorMetadata, extra: string): unknown {
  const kept = flatExtras.get(metadata);
  if (kept) {
    // Assigned one by one: several times faster than a spread or a parse (no `__proto__` key here).
    const copy: Record<string, unknown> = {};
    for (let i = 0; i < kept.keys.length; i++) copy[kept.keys[i]!] = kept.values[i];
    return copy;
  }
  const parsed: unknown = JSON.parse(extra);
  if (kept === undefined && Object.isFrozen(metadata)) flatExtras.set(metadata, flatEntries(parsed));
  return parsed;
}

/**
 * The keys and values of `value` when it is an object (not a list) whose values are all null,
 * strings, numbers or booleans and that has no `__proto__` key (assigning one would not copy it);
 * else `null`.
 */
function flatEntries(value: unknown): { keys: string[]; values: unknown[] } | null {
  if (value === null || typeof value !== "object" || Array.isArray(value) || Object.hasOwn(value, "__proto__")) return null;
  const keys = Object.keys(value);
  const values: unknown[] = [];
  for (const key of keys) {
    const inner = (value as Record<string, unknown>)[key];
    if (inner !== null && typeof inner === "object") return null;
    values.push(inner);
  }
  return { keys, values };
}

/** The scores of `entries`, ascending. */
function sortedScores(entries: readonly Scored[]): Float64Array {
  const scores = new Float64Array(entries.length);
  for (let i = 0; i < entries.length; i++) scores[i] = entries[i]!.score;
  return scores.sort();
}

/** The row keys of `entries` that have a row. */
function rowKeys(entries: readonly Scored[]): number[] {
  const keys: number[] = [];
  for (const e of entries) if (e.key !== undefined) keys.push(e.key);
  return keys;
}

/**
 * The vector hits that pass `condition`: those the sidecar holds are checked there; those only a
 * remote store holds (another machine wrote them) are checked against their own metadata.
 */
function keepPassing(
  sidecar: Sidecar,
  namespace: string,
  hits: VectorMatch[],
  condition: RowCondition,
  filter: ParsedMemoryFilter,
  now: number,
): VectorMatch[] {
  if (hits.length === 0) return hits;
  const known = sidecar.linkedRefs(
    namespace,
    hits.map((h) => h.id),
    0,
    0,
  );
  const passing = sidecar.filterKeys(
    [...known.values()].map((r) => r.key),
    condition,
  );
  return hits.flatMap((h) => {
    const row = known.get(h.id);
    if (row) return passing.has(row.key) ? [{ ...h, key: row.key }] : [];
    return recordPasses(h.metadata, filter, now) ? [h] : [];
  });
}

/** Whether a store record (flat metadata) passes `filter` and has not expired at `now`. */
export function recordPasses(metadata: VectorMetadata, filter: ParsedMemoryFilter, now: number, id?: string): boolean {
  const expires = metadata.expires_at;
  if (typeof expires === "number" && expires <= now) return false;
  const created = typeof metadata.created_at === "string" ? Date.parse(metadata.created_at) : NaN;
  return matchesMemoryFilter(filter, {
    ...(id !== undefined ? { id } : {}),
    kind: (MEMORY_ITEM_KINDS.includes(metadata.kind as MemoryKind) ? metadata.kind : "fact") as MemoryKind,
    sessionId: typeof metadata.session_id === "string" ? metadata.session_id : undefined,
    userId: typeof metadata.user_id === "string" ? metadata.user_id : undefined,
    tags: Array.isArray(metadata.tags) ? metadata.tags : [],
    metadata: userMetadataOf(metadata),
    createdAt: Number.isFinite(created) ? created : 0,
  });
}

/**
 * A stored record as a `MemoryHit` (caller metadata unpacked from `extra`, `scores` added); `text`,
 * when given and not empty, is its content instead of `metadata.text`; `parsedExtra`, when given,
 * is `metadata.extra` already parsed (and is then filled in place).
 */
export function toMemoryHit(
  id: string,
  metadata: VectorMetadata,
  score: number,
  scores: Record<string, number | null>,
  text?: string,
  parsedExtra?: unknown,
): MemoryHit {
  const { kind, session_id, user_id, created_at, extra, expires_at } = metadata;
  const content = text ? text : metadata.text;
  let user: unknown = {};
  if (parsedExtra !== undefined && typeof extra === "string") {
    user = parsedExtra;
  } else if (typeof extra === "string") {
    try {
      user = parseExtra(metadata, extra);
    } catch {
      user = { extra };
    }
  }
  // The caller's fields, then the stored fields other than the item's own ones (Pinecone's copies
  // of the caller's fields, `meta_<field>`, are the same values as in `extra`; a `__proto__` field
  // is left out), then the scores. A parsed object is filled in place: nothing else holds it.
  const out: Record<string, unknown> =
    user !== null && typeof user === "object" && !Array.isArray(user) ? (user as Record<string, unknown>) : { ...(user as object) };
  for (const key of Object.keys(metadata)) {
    switch (key) {
      case "text":
      case "kind":
      case "session_id":
      case "user_id":
      case "created_at":
      case "extra":
      case "expires_at":
      case "created_ms":
      case "__proto__":
        continue;
    }
    if (key.startsWith(PINECONE_USER_FIELD_PREFIX)) continue;
    // A list (or object) is copied: the metadata may be the sidecar's kept, frozen read.
    const value = metadata[key];
    out[key] = value !== null && typeof value === "object" ? structuredClone(value) : value;
  }
  out.scores = scores;
  const tags = Array.isArray(metadata.tags) ? metadata.tags : undefined;
  // Built field by field, in the order hits have always listed their fields.
  const hit = {
    id,
    content: typeof content === "string" ? content : "",
    kind: MEMORY_ITEM_KINDS.includes(kind as MemoryKind) ? (kind as MemoryKind) : "fact",
    score,
  } as MemoryHit;
  if (typeof session_id === "string") hit.sessionId = session_id;
  if (typeof user_id === "string") hit.userId = user_id;
  hit.createdAt = typeof created_at === "string" ? created_at : new Date(0).toISOString();
  hit.metadata = out;
  if (tags && tags.length > 0) hit.tags = [...tags];
  if (typeof expires_at === "number") hit.expiresAt = new Date(expires_at).toISOString();
  return hit;
}
