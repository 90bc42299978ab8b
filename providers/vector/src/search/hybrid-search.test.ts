import { describe, expect, it } from "vitest";
import type { MemoryHit } from "@hermes/memory-core";
import { isEmptyFilter, parseMemoryFilter, type ParsedMemoryFilter } from "@hermes/memory-provider-kit";
import { asksQuestion, boostNamedSpeakers, propagateContext, type ContextCandidate } from "@hermes/memory-provider-kit/sqlite";
import { SPEAKER_BOOST, speakerOf } from "./conversation-context.js";
import { HashingEmbedder } from "../embedders/hashing-embedder.js";
import { hybridSearch, toMemoryHit } from "./hybrid-search.js";
import { LocalVectorStore } from "../local/local-vector-store.js";
import { fusionWeightsFor, scoreFusion } from "./rank-fusion.js";
import type { SidecarRow } from "../local/sidecar-rows.js";
import { sessionNeighbours } from "../test-support/session-neighbours.js";

const NS = "ns";
const WORDS = [
  "paint",
  "garden",
  "trip",
  "lake",
  "concert",
  "guitar",
  "sister",
  "dog",
  "museum",
  "recipe",
  "camping",
  "book",
  "photo",
  "school",
  "race",
  "birthday",
];
const SPEAKERS = ["Alice", "Bob", "Carol"];

/** A deterministic sequence in [0, 1) (a linear congruential generator). */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

/**
 * A store of chat turns in eight sessions written interleaved (a session's turns are not adjacent
 * rows), a few facts among them, some tagged items, and, when `otherNamespace`, rows of another
 * namespace too.
 */
async function conversationStore(otherNamespace: boolean): Promise<{ store: LocalVectorStore; embedder: HashingEmbedder }> {
  const embedder = new HashingEmbedder({ dimensions: 64 });
  const store = await LocalVectorStore.open({ dimensions: 64, lexicalVectors: true });
  const next = random(4);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!;
  let n = 0;
  const write = (namespace: string, count: number) => {
    const records = [];
    for (let i = 0; i < count; i++, n++) {
      const speaker = pick(SPEAKERS);
      const words = Array.from({ length: 3 + Math.floor(next() * 6) }, () => pick(WORDS));
      const text = `${words.join(" ")}${next() < 0.3 ? "?" : "."}`;
      const fact = n % 9 === 4;
      const metadata = {
        text,
        kind: fact ? "fact" : "turn",
        session_id: `s${n % 8}`,
        created_at: new Date(Date.UTC(2024, 0, 1) + n * 60_000).toISOString(),
        extra: JSON.stringify({ speaker, n }),
        ...(n % 5 === 0 ? { tags: ["red"] } : {}),
      };
      records.push({ id: `item-${n}`, vector: embedder.embedSync(text), metadata });
    }
    store.upsertSync(records, namespace);
  };
  write(NS, 240);
  if (otherNamespace) write("other", 60);
  return { store, embedder };
}

/**
 * The hybrid ranking computed the plain way, for comparison: every candidate's and neighbour's
 * whole row read, the kit's `propagateContext` over neighbours looked up one by one, every
 * candidate's speaker boosted, then the best `limit`.
 */
async function exhaustiveSearch(
  store: LocalVectorStore,
  embedder: HashingEmbedder,
  query: string,
  limit: number,
  filter: ParsedMemoryFilter,
  now: number,
): Promise<MemoryHit[]> {
  const sidecar = store.sidecar;
  const condition = isEmptyFilter(filter) ? null : sidecar.condition(filter, now);
  const passing = condition ? sidecar.passingKeys(NS, condition)! : null;
  const depth = Math.max(limit * 3, 20);
  const [vector] = await embedder.embed([query]);
  const vectorHits = await store.query(vector!, {
    topK: depth,
    namespace: NS,
    idsOnly: true,
    ...(passing ? { candidateKeys: passing } : {}),
  });
  const keywordHits = sidecar.keywordRanks(NS, query, depth, undefined, condition, false);
  const fused = scoreFusion(vectorHits, keywordHits, fusionWeightsFor(embedder.id));
  const keyOf = new Map<string, number>([
    ...keywordHits.map((h): [string, number] => [h.id, h.key]),
    ...vectorHits.map((h): [string, number] => [h.id, h.key!]),
  ]);
  const rows = sidecar.getByKeys([...keyOf.values()]);
  const candidates = new Map<string, ContextCandidate<SidecarRow>>();
  for (const f of fused) {
    const row = rows.get(keyOf.get(f.id)!)!;
    candidates.set(f.id, { id: f.id, score: f.score, metadata: row.metadata, row });
  }
  const accepted = passing ? new Set(passing) : null;
  const contextual = propagateContext(candidates, (row) => sessionNeighbours(sidecar, NS, String(row.metadata.session_id), row.key, 2, 2), {
    accept: (row) => !accepted || accepted.has(row.key),
    maxGivers: Math.max(limit * 2, 40),
    asksQuestion: (row) => asksQuestion(row.text),
  });
  boostNamedSpeakers(query, contextual.values(), (c) => speakerOf(c.metadata), SPEAKER_BOOST);
  const components = new Map(fused.map((f) => [f.id, f]));
  return [...contextual.values()]
    .sort((a, b) => b.score - a.score || a.row!.key - b.row!.key)
    .slice(0, limit)
    .map((c) => {
      const f = components.get(c.id);
      return toMemoryHit(c.id, c.row!.metadata, c.score, { vector: f?.vector ?? null, bm25: f?.bm25 ?? null, fused: c.score });
    });
}

describe("hybridSearch reads only what can place", () => {
  // The search prunes neighbours and metadata reads by score bounds, reads neighbour keys in
  // batches and (one namespace) ranks keywords without the row join; none of it may change a hit,
  // its score or its place.
  for (const otherNamespace of [false, true]) {
    it(`gives the hits, scores and order of the exhaustive ranking, with and without a filter (${otherNamespace ? "two namespaces" : "one namespace"})`, async () => {
      const { store, embedder } = await conversationStore(otherNamespace);
      try {
        const next = random(11);
        // Most queries name a speaker, whose turns are boosted (also turns only context reached).
        const queries = Array.from({ length: 36 }, (_, i) => {
          const words = Array.from({ length: 1 + (i % 4) }, () => WORDS[Math.floor(next() * WORDS.length)]!);
          return i % 3 === 0 ? words.join(" ") : `What did ${SPEAKERS[i % SPEAKERS.length]} say about ${words.join(" ")}?`;
        });
        const filters = [{}, { tags: { any: ["red"] } }, { kind: "turn" }, { sessionId: "s3" }].map((f) =>
          parseMemoryFilter(f, { what: "test filter" }),
        );
        const now = Date.now();
        let compared = 0;
        for (const query of queries) {
          for (const limit of [1, 5, 10, 50]) {
            for (const filter of filters) {
              const hits = await hybridSearch({ sidecar: store.sidecar, store, embedder, hybrid: true }, query, {
                namespace: NS,
                limit,
                filter,
                now,
              });
              expect(hits, `${query} (limit ${limit}, filter ${JSON.stringify(filter)})`).toEqual(
                await exhaustiveSearch(store, embedder, query, limit, filter, now),
              );
              compared += hits.length;
            }
          }
        }
        expect(compared).toBeGreaterThan(1000);
      } finally {
        await store.close();
      }
    });
  }
});
