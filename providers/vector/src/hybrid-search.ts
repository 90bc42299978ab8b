/**
 * The vector provider's search: vector nearest neighbours, fused with BM25 keyword hits from the
 * sidecar (hybrid mode), then conversational context (neighbour score spreading, speaker boost).
 */
import type { MemoryHit, MemoryKind } from "@hermes/memory-core";
import { clipQuery, isEmptyFilter, matchesFilter as matchesMemoryFilter, MEMORY_ITEM_KINDS, type ParsedMemoryFilter } from "@hermes/memory-provider-kit";
import { boostNamedSpeakers, propagateContext, SPEAKER_BOOST, type ContextCandidate } from "./conversation-context.js";
import type { Embedder } from "./embedder.js";
import type { VectorMetadata } from "./metadata-filter.js";
import { PINECONE_USER_FIELD_PREFIX, toPineconeFilter } from "./pinecone-metadata.js";
import { fusionWeightsFor, scoreFusion } from "./rank-fusion.js";
import { userMetadataOf, type RowCondition, type Sidecar, type SidecarRef } from "./sidecar.js";
import type { VectorMatch, VectorQueryOptions, VectorStore } from "./vector-store.js";


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
  const expired = sidecar.hasExpired(namespace, now);
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
  let vectorHits = await store.query(vector!, {
    topK: depth,
    namespace,
    ...(pineconeFilter ? { filter: pineconeFilter } : {}),
    ...local,
    ...(options.budgetMs ? { budgetMs: options.budgetMs } : {}),
    ...(parts.hybrid || condition ? { idsOnly: true } : {}),
  });
  if (condition) vectorHits = keepPassing(sidecar, namespace, vectorHits, condition, filter, now);
  if (!parts.hybrid) {
    if (!condition) return vectorHits.slice(0, limit).map((h) => toMemoryHit(h.id, h.metadata, h.score, { vector: h.score, bm25: null }));
    const rows = sidecar.getByIds(namespace, vectorHits.slice(0, limit).map((h) => h.id));
    const byId = new Map(rows.map((r) => [r.id, r.metadata]));
    return vectorHits.slice(0, limit).map((h) => toMemoryHit(h.id, byId.get(h.id) ?? h.metadata, h.score, { vector: h.score, bm25: null }));
  }
  // Rows holding only words in half the rows or more (BM25 about 0) are left to the vector ranking.
  const keywordHits = sidecar.keywordRanks(namespace, query, depth, undefined, condition, false);
  // Candidates are read without text (key, id, metadata and neighbour keys in one statement, the
  // neighbours not among them in a second); text is read only for the hits returned.
  const fused = scoreFusion(vectorHits, keywordHits, fusionWeightsFor(embedder.id));
  const components = new Map(fused.map((f) => [f.id, f]));
  // Far down the list the shares are too small to change the top `limit`.
  const maxGivers = Math.max(limit * 2, 40);
  // Metadata is read for the givers (kind and session; with a filter, for every candidate, as
  // neighbours are filtered by it); the rest is read below only for candidates that can place.
  // Candidates whose sidecar keys are all known (a local store) are looked up by key.
  const keyOf = new Map<string, number>();
  for (const h of keywordHits) keyOf.set(h.id, h.key);
  for (const h of vectorHits) if (h.key !== undefined) keyOf.set(h.id, h.key);
  const ids = fused.map((f) => f.id);
  const keys = ids.every((id) => keyOf.has(id)) ? ids.map((id) => keyOf.get(id)!) : undefined;
  const refs = sidecar.linkedRefs(namespace, ids, maxGivers, maxGivers, keys);
  // Items only a remote store knows have no sidecar row: their metadata is the store's.
  let storeMetadata: Map<string, VectorMetadata> | undefined;
  const candidates = new Map<string, ContextCandidate>();
  const neighbours = new Map<number, SidecarRef>();
  for (const row of refs.values()) neighbours.set(row.key, row);
  const wanted: number[] = [];
  for (const f of fused) {
    const row = refs.get(f.id);
    if (row) {
      candidates.set(f.id, { id: f.id, score: f.score, metadata: row.metadata, row });
      for (const key of row.next) if (!neighbours.has(key)) wanted.push(key);
      for (const key of row.previous) if (!neighbours.has(key)) wanted.push(key);
    } else {
      storeMetadata ??= new Map(vectorHits.map((h) => [h.id, h.metadata]));
      candidates.set(f.id, { id: f.id, score: f.score, metadata: storeMetadata.get(f.id) ?? {} });
    }
  }
  for (const [key, row] of sidecar.refsByKeys(wanted)) neighbours.set(key, row);
  // Context spreads only to neighbours that pass the filter (and have not expired).
  const passingNeighbours = condition ? sidecar.filterKeys([...neighbours.keys()], condition) : null;
  const resolve = (keys: readonly number[]): SidecarRef[] => {
    const out: SidecarRef[] = [];
    for (const key of keys) {
      const row = neighbours.get(key);
      if (row) out.push(row);
    }
    return out;
  };
  const contextual = propagateContext(
    candidates,
    (row) => {
      const linked = refs.get(row.id);
      return linked ? { next: resolve(linked.next), previous: resolve(linked.previous) } : { next: [], previous: [] };
    },
    { accept: (row) => !passingNeighbours || passingNeighbours.has(row.key), maxGivers, asksQuestion: (row) => refs.get(row.id)?.asksQuestion ?? false },
  );
  // A boost only raises scores, so a candidate whose boosted score would still be below the
  // `limit`-th best score cannot place: only the others need their speaker looked up.
  const scores = Float64Array.from(contextual.values(), (c) => c.score).sort();
  const floor = scores.length > limit ? scores[scores.length - limit]! : -Infinity;
  const boostable = new Map<string, ContextCandidate>();
  const unread: number[] = [];
  for (const [id, c] of contextual) {
    if (c.score * SPEAKER_BOOST < floor) continue;
    boostable.set(id, c);
    if (c.row && refs.get(id)?.hasMetadata === false) unread.push(c.row.key);
  }
  if (unread.length > 0) {
    const read = sidecar.refsByKeys(unread);
    for (const c of boostable.values()) {
      const row = c.row && read.get(c.row.key);
      if (row) {
        c.metadata = row.metadata;
        c.row = row;
      }
    }
  }
  boostNamedSpeakers(query, boostable);
  const order = (c: ContextCandidate): number => c.row?.key ?? Number.MAX_SAFE_INTEGER;
  const top = [...contextual.values()].sort((a, b) => b.score - a.score || order(a) - order(b)).slice(0, limit);
  const texts = sidecar.textsByKeys(top.flatMap((c) => (c.row ? [c.row.key] : [])));
  return top.map((c) => {
    const f = components.get(c.id);
    const text = c.row ? texts.get(c.row.key) : undefined;
    const metadata = text ? { ...c.metadata, text } : c.metadata;
    return toMemoryHit(c.id, metadata, c.score, { vector: f?.vector ?? null, bm25: f?.bm25 ?? null, fused: c.score });
  });
}

/**
 * The vector hits that pass `condition`: those the sidecar holds are checked there; those only a
 * remote store holds (another machine wrote them) are checked against their own metadata.
 */
function keepPassing(sidecar: Sidecar, namespace: string, hits: VectorMatch[], condition: RowCondition, filter: ParsedMemoryFilter, now: number): VectorMatch[] {
  if (hits.length === 0) return hits;
  const known = sidecar.linkedRefs(namespace, hits.map((h) => h.id), 0, 0);
  const passing = sidecar.filterKeys([...known.values()].map((r) => r.key), condition);
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

/** A stored record as a `MemoryHit` (caller metadata unpacked from `extra`, `scores` added). */
export function toMemoryHit(id: string, metadata: VectorMetadata, score: number, scores: Record<string, number | null>): MemoryHit {
  const { text, kind, session_id, user_id, created_at, extra, expires_at, created_ms: _createdMs, ...stored } = metadata;
  const rest: VectorMetadata = {};
  // Pinecone's copies of the caller's fields (`meta_<field>`) are the same values as in `extra`.
  for (const [key, value] of Object.entries(stored)) if (!key.startsWith(PINECONE_USER_FIELD_PREFIX)) rest[key] = value;
  const tags = Array.isArray(metadata.tags) ? metadata.tags : undefined;
  let user: Record<string, unknown> = {};
  if (typeof extra === "string") {
    try {
      user = JSON.parse(extra) as Record<string, unknown>;
    } catch {
      user = { extra };
    }
  }
  return {
    id,
    content: typeof text === "string" ? text : "",
    kind: MEMORY_ITEM_KINDS.includes(kind as MemoryKind) ? (kind as MemoryKind) : "fact",
    score,
    ...(typeof session_id === "string" ? { sessionId: session_id } : {}),
    ...(typeof user_id === "string" ? { userId: user_id } : {}),
    createdAt: typeof created_at === "string" ? created_at : new Date(0).toISOString(),
    metadata: { ...user, ...rest, scores },
    ...(tags && tags.length > 0 ? { tags: [...tags] } : {}),
    ...(typeof expires_at === "number" ? { expiresAt: new Date(expires_at).toISOString() } : {}),
  };
}
