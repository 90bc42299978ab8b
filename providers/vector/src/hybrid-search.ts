/**
 * The vector provider's search: vector nearest neighbours, fused with BM25 keyword hits from the
 * sidecar (hybrid mode), then conversational context (neighbour score spreading, speaker boost).
 */
import type { MemoryHit, MemoryKind, MemorySearchOptions } from "@hermes/memory-core";
import { boostNamedSpeakers, propagateContext, SPEAKER_BOOST, type ContextCandidate } from "./conversation-context.js";
import type { Embedder } from "./embedder.js";
import { matchesFilter, type MetadataFilter, type VectorMetadata } from "./metadata-filter.js";
import { fusionWeightsFor, scoreFusion } from "./rank-fusion.js";
import type { Sidecar, SidecarRef } from "./sidecar.js";
import type { VectorStore } from "./vector-store.js";

const KINDS: MemoryKind[] = ["turn", "fact", "checkpoint"];

/** What a search reads: the sidecar, the vector store, the embedder, and whether BM25 joins in. */
export interface HybridSearchParts {
  sidecar: Sidecar;
  store: VectorStore;
  embedder: Embedder;
  /** Fuse with BM25 (hybrid) or rank by vectors only. */
  hybrid: boolean;
}

/** `MemorySearchOptions` plus the namespace to search and a time budget for remote stores. */
export type HybridSearchOptions = MemorySearchOptions & { namespace: string; budgetMs?: number };

/**
 * Hybrid (or pure vector) search, best first. Hybrid: vector and BM25 candidates are fused
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
  const clauses: MetadataFilter[] = [];
  if (options.kind) clauses.push({ kind: options.kind });
  if (options.sessionId) clauses.push({ session_id: options.sessionId });
  const filter = clauses.length === 0 ? undefined : clauses.length === 1 ? clauses[0] : { $and: clauses };
  const depth = parts.hybrid ? Math.max(limit * 3, 20) : limit;
  const [vector] = await embedder.embed([query]);
  // Hybrid reads candidates' metadata from the sidecar, so the store need not (idsOnly).
  const vectorHits = await store.query(vector!, {
    topK: depth,
    namespace,
    ...(filter ? { filter } : {}),
    ...(options.budgetMs ? { budgetMs: options.budgetMs } : {}),
    ...(parts.hybrid ? { idsOnly: true } : {}),
  });
  if (!parts.hybrid) {
    return vectorHits.slice(0, limit).map((h) => toMemoryHit(h.id, h.metadata, h.score, { vector: h.score, bm25: null }));
  }
  // Candidates are read without text (key, id, metadata and neighbour keys in one statement, the
  // neighbours not among them in a second); text is read only for the hits returned.
  const keywordHits = sidecar.keywordRanks(namespace, query, depth, filter);
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
  const refs = sidecar.linkedRefs(namespace, ids, maxGivers, filter ? fused.length : maxGivers, keys);
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
    { accept: (row) => !filter || matchesFilter(row.metadata, filter), maxGivers, asksQuestion: (row) => refs.get(row.id)?.asksQuestion ?? false },
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

/** A stored record as a `MemoryHit` (caller metadata unpacked from `extra`, `scores` added). */
export function toMemoryHit(id: string, metadata: VectorMetadata, score: number, scores: Record<string, number | null>): MemoryHit {
  const { text, kind, session_id, user_id, created_at, extra, ...rest } = metadata;
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
    kind: KINDS.includes(kind as MemoryKind) ? (kind as MemoryKind) : "fact",
    score,
    ...(typeof session_id === "string" ? { sessionId: session_id } : {}),
    ...(typeof user_id === "string" ? { userId: user_id } : {}),
    createdAt: typeof created_at === "string" ? created_at : new Date(0).toISOString(),
    metadata: { ...user, ...rest, scores },
  };
}
