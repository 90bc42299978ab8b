import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import type { MemoryHit, MemorySearchOptions } from "@hermes/memory-core";
import { CorpusGenerator } from "../corpus.js";
import { cachedFile } from "../corpus-cache.js";
import {
  FILTER_SHAPES,
  OTHER_USER,
  OWNER_USER,
  createdAtWindow,
  filteredItem,
  filteredTexts,
  userOf,
  type CreatedAtWindow,
  type FilterShape,
} from "../filtered-corpus.js";
import { summarize, type Summary } from "../stats.js";
import { SuiteRecorder, type SuiteContext, type SuiteResult } from "../suite-result.js";
import { fmt, ratio } from "../table.js";
import { loadProviderKit, loadSqliteModule, loadVector, settle, type SearchableTarget } from "../targets.js";
import { timeTask, wallClock } from "../timing.js";
import { bestByRank, keptOfExactTop } from "../top-k.js";
import { findFtsTable, ftsOrQuery } from "./prefetch.js";

const SEED = 4242;
/** Bumped whenever the generated items change, so an old cached corpus is never reused. */
const CORPUS_VERSION = 1;
const QUERY_COUNT = 50;
const K = 10;
/** Items read back on each side of the createdAt window, to find items tied with its bounds. */
const WINDOW_MARGIN = 200;

/** A provider as the suite drives it: `SearchableMemory` through its public API. */
interface FilteredTarget extends SearchableTarget {
  get(id: string): MemoryHit | null | Promise<MemoryHit | null>;
}

/** An exact ranking of corpus items (by index) for one query; `rank`: lower is better, as in FTS5. */
interface ExactRanker {
  /** The exact top `k` among `candidates` (all items when null). */
  top(query: string, candidates: readonly number[] | null, k: number): Promise<Array<{ id: number; rank: number }>>;
  /** The exact rank of each of `items` that matches the query at all. */
  ranksOf(query: string, items: readonly number[]): Promise<Array<{ id: number; rank: number }>>;
  close(): void;
}

/** One provider under test. */
interface Driver {
  name: string;
  label: string;
  /** An unfiltered search sees every user's items (`all`) or only the instance's own user's (`owner`). */
  unfilteredScope: "all" | "owner";
  /** `search` returns a value, not a promise (timed without a promise wrapper). */
  syncSearch: boolean;
  /** What the exact ranking is, for the report. */
  exactLabel: string;
  create(dir: string): FilteredTarget;
  exact(dir: string, ids: readonly string[], texts: readonly string[]): Promise<ExactRanker>;
}

/** What one filter shape measured on one provider. */
interface ShapeMeasurement {
  provider: string;
  shape: string;
  passing: number;
  status: "ok" | "unsupported" | "failed";
  reason?: string;
  latency?: Summary;
  recall?: number | null;
  /** Share of returned hits that fail the filter. */
  failingShare?: number;
  /** Queries skipped for recall because no passing item matches them at all. */
  queriesWithoutExact?: number;
  exactHitsMedian?: number;
}

const errorCode = (error: unknown): string | undefined => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
};
const errorMessage = (error: unknown): string => (error instanceof Error ? error.message : String(error)).split("\n")[0]!.slice(0, 200);

/** Writes the corpus through `remember()` and keeps the ids it returned in `corpus.json`. */
async function buildCorpus(driver: Driver, dir: string, size: number): Promise<void> {
  fs.mkdirSync(dir, { recursive: true });
  const provider = driver.create(dir);
  await settle(provider.initialize("bench-filtered-build", { hermesHome: dir, agentContext: "primary", userId: OWNER_USER }));
  const gen = new CorpusGenerator(SEED);
  const ids: string[] = [];
  for (let i = 0; i < size; i++) {
    ids.push(String(await settle(provider.remember(filteredItem(gen, i)))));
    if (i % 5_000 === 4_999) {
      // Background writers scheduled with setImmediate start before flush() (see the locomo suite).
      await new Promise((resolve) => setImmediate(resolve));
      await settle(provider.flush());
    }
  }
  await new Promise((resolve) => setImmediate(resolve));
  await settle(provider.flush());
  await settle(provider.shutdown?.());
  fs.writeFileSync(path.join(dir, "corpus.json"), JSON.stringify({ version: CORPUS_VERSION, seed: SEED, size, ids }));
}

/** Exact BM25 over the provider's own FTS5 table: the provider's MATCH expression, no candidate cap. */
function sqliteExact(buildFtsQuery: ((text: string) => string | null) | undefined) {
  return async (dir: string, ids: readonly string[]): Promise<ExactRanker> => {
    const db = new Database(path.join(dir, "memory.db"), { readonly: true, fileMustExist: true });
    const fts = findFtsTable(db);
    if (!fts) {
      db.close();
      throw new Error("the provider's database has no FTS5 table to rank against");
    }
    const indexOfRow = new Map(ids.map((id, i) => [Number(id), i]));
    const match = (q: string): string => (buildFtsQuery ? (buildFtsQuery(q) ?? ftsOrQuery(q)) : ftsOrQuery(q));
    const all = db.prepare<{ id: number; rank: number }>(
      `SELECT rowid AS id, rank FROM "${fts}" WHERE "${fts}" MATCH ? ORDER BY rank LIMIT ?`,
    );
    const among = db.prepare<{ id: number; rank: number }>(
      `SELECT rowid AS id, rank FROM "${fts}" WHERE "${fts}" MATCH ? AND rowid IN (SELECT value FROM json_each(?)) ORDER BY rank LIMIT ?`,
    );
    const toIndex = (rows: Array<{ id: number; rank: number }>) =>
      rows.filter((r) => indexOfRow.has(r.id)).map((r) => ({ id: indexOfRow.get(r.id)!, rank: r.rank }));
    const rowsOf = (items: readonly number[]) => JSON.stringify(items.map((i) => Number(ids[i])));
    return {
      top: async (q, candidates, k) => toIndex(candidates === null ? all.all(match(q), k) : among.all(match(q), rowsOf(candidates), k)),
      ranksOf: async (q, items) => (items.length === 0 ? [] : toIndex(among.all(match(q), rowsOf(items), items.length))),
      close: () => db.close(),
    };
  };
}

interface VectorEmbedder {
  embed(texts: string[]): Promise<Float32Array[]>;
}

/** `v` scaled to unit length (a zero vector stays zero), so cosine similarity is a dot product. */
function unit(v: Float32Array): Float32Array {
  let norm = 0;
  for (let d = 0; d < v.length; d++) norm += v[d]! * v[d]!;
  const out = new Float32Array(v.length);
  if (norm > 0) {
    const scale = 1 / Math.sqrt(norm);
    for (let d = 0; d < v.length; d++) out[d] = v[d]! * scale;
  }
  return out;
}

/** Exact cosine similarity with the provider's own embedder over the candidate items' text. */
function vectorExact(embedder: VectorEmbedder) {
  return async (_dir: string, _ids: readonly string[], texts: readonly string[]): Promise<ExactRanker> => {
    // Embedded once per item and kept: the unfiltered baseline ranks the whole corpus for every query.
    const vectors = new Map<number, Float32Array>();
    const vectorsOf = async (items: readonly number[]): Promise<Float32Array[]> => {
      const missing = items.filter((i) => !vectors.has(i));
      for (let s = 0; s < missing.length; s += 2_000) {
        const batch = missing.slice(s, s + 2_000);
        const embedded = await embedder.embed(batch.map((i) => texts[i]!));
        batch.forEach((i, j) => vectors.set(i, unit(embedded[j]!)));
      }
      return items.map((i) => vectors.get(i)!);
    };
    const ranks = async (q: string, items: readonly number[]) => {
      const qv = unit((await embedder.embed([q]))[0]!);
      const vs = await vectorsOf(items);
      return items.map((id, j) => {
        const v = vs[j]!;
        let dot = 0;
        for (let d = 0; d < qv.length; d++) dot += qv[d]! * v[d]!;
        return { id, rank: -dot };
      });
    };
    return {
      top: async (q, candidates, k) => {
        if (candidates === null) throw new Error("the vector exact ranking needs the candidate list");
        return bestByRank(await ranks(q, candidates), k);
      },
      ranksOf: ranks,
      close: () => vectors.clear(),
    };
  };
}

/** Reads back the creation times around the createdAt window and fixes its bounds and passing items. */
async function readWindow(
  provider: FilteredTarget,
  ids: readonly string[],
  window: CreatedAtWindow,
): Promise<{ window: CreatedAtWindow; ties: number }> {
  const lo = Math.max(0, window.first - WINDOW_MARGIN);
  const hi = Math.min(ids.length - 1, window.last + WINDOW_MARGIN);
  const times = new Map<number, number>();
  for (let i = lo; i <= hi; i++) {
    const hit = await settle(provider.get(ids[i]!));
    if (hit) times.set(i, Date.parse(hit.createdAt));
  }
  const from = times.get(window.first);
  const to = times.get(window.last);
  if (from === undefined || to === undefined) throw new Error("get() did not return the items bounding the createdAt window");
  const passing = new Set<number>();
  for (const [i, t] of times) if (t >= from && t <= to) passing.add(i);
  // Items outside [lo, hi] are assumed outside the range; an edge item inside it would say otherwise.
  const edge = [times.get(lo), times.get(hi)].filter((t) => t !== undefined && t >= from && t <= to).length;
  const ties = [...passing].filter((i) => i < window.first || i > window.last).length + edge;
  return { window: { ...window, from: new Date(from).toISOString(), to: new Date(to).toISOString(), passing }, ties };
}

/** `filtered`: filtered vs unfiltered search latency in the same run, and recall@10 against an exact filtered ranking. */
export async function runFilteredSuite(ctx: SuiteContext): Promise<SuiteResult> {
  const rec = new SuiteRecorder("filtered", ctx.quick);
  const size = ctx.quick ? 10_000 : 100_000;
  const timing = ctx.quick ? { timeMs: 300, iterations: 30 } : { timeMs: 1_500, iterations: 100 };
  const drivers: Driver[] = [];
  const kit = await loadProviderKit();
  const sqliteModule = await loadSqliteModule();
  if (sqliteModule.ok) {
    const Provider = sqliteModule.value.SqliteMemoryProvider;
    drivers.push({
      name: "sqlite",
      label: "SqliteMemoryProvider",
      unfilteredScope: "all",
      syncSearch: true,
      exactLabel:
        "uncapped FTS5 BM25 (ORDER BY rank) over the passing rows of the provider's own FTS5 table, with the provider's MATCH expression",
      create: (dir) => new Provider({ path: path.join(dir, "memory.db") }) as unknown as FilteredTarget,
      exact: sqliteExact(kit.ok ? kit.value.buildFtsQuery : undefined),
    });
  } else rec.skip(`sqlite provider: ${sqliteModule.reason}`);
  const vectorModule = await loadVector(["VectorMemoryProvider", "HashingEmbedder"]);
  if (vectorModule.ok) {
    const Provider = vectorModule.value.VectorMemoryProvider as new (options: Record<string, unknown>) => FilteredTarget;
    const Embedder = vectorModule.value.HashingEmbedder as new (options: { dimensions: number }) => VectorEmbedder;
    drivers.push({
      name: "vector",
      label: "VectorMemoryProvider (local store, hashing embedder, vector only)",
      unfilteredScope: "owner",
      syncSearch: false,
      exactLabel: "exact cosine similarity over the passing items, embedded with the provider's embedder (HashingEmbedder, 384-d)",
      create: () => new Provider({ env: {}, hybrid: false, dimensions: 384 }),
      exact: vectorExact(new Embedder({ dimensions: 384 })),
    });
  } else rec.skip(`vector provider: ${vectorModule.reason}`);
  if (drivers.length === 0) return rec.finish();

  const queryGen = new CorpusGenerator(SEED + 1);
  const queries = Array.from({ length: QUERY_COUNT }, () => queryGen.query());
  ctx.log(`filtered: generating the texts of ${size.toLocaleString("en-US")} items`);
  const texts = filteredTexts(SEED, size);
  const measured: ShapeMeasurement[] = [];
  const rows: Array<Array<string | number>> = [];
  for (const driver of drivers) {
    const cacheDir = path.join(ctx.cacheDir, `filtered-${driver.name}-${size}-s${SEED}-c${CORPUS_VERSION}`);
    ctx.log(`filtered: ${driver.name} corpus of ${size.toLocaleString("en-US")} items (${cacheDir})`);
    const built = await wallClock(() => cachedFile(cacheDir, (tmpDir) => buildCorpus(driver, tmpDir, size)));
    rec.note(
      `${driver.name}: ` +
        (built.value.reused
          ? "corpus reused from bench-results/.cache"
          : `corpus written through remember() in ${fmt(built.ms / 1000)} s (${fmt(size / (built.ms / 1000))} items/s)`),
    );
    const { ids } = JSON.parse(fs.readFileSync(path.join(cacheDir, "corpus.json"), "utf8")) as { ids: string[] };
    const indexOf = new Map(ids.map((id, i) => [id, i]));
    // The provider opens the cached store in place, as it would open a user's existing store.
    const provider = driver.create(cacheDir);
    await settle(provider.initialize("bench-filtered", { hermesHome: cacheDir, agentContext: "primary", userId: OWNER_USER }));
    const exact = await driver.exact(cacheDir, ids, texts);
    try {
      const { window, ties } = await readWindow(provider, ids, createdAtWindow(size));
      if (ties > 0)
        rec.note(`${driver.name}: ${ties} item(s) outside the createdAt window share a creation time with its bounds and pass it too`);
      const visibleUnfiltered = (i: number): boolean => driver.unfilteredScope === "all" || userOf(i) === OWNER_USER;
      const search = (q: string, options: MemorySearchOptions) => provider.search(q, options);

      // The unfiltered search, measured first, is every shape's baseline.
      const baseline = await measureShape(driver, null, window);
      for (const shape of FILTER_SHAPES) await measureShape(driver, shape, window);

      async function measureShape(d: Driver, shape: FilterShape | null, w: CreatedAtWindow): Promise<ShapeMeasurement> {
        const name = shape?.name ?? "none (baseline)";
        const options: MemorySearchOptions = { ...(shape ? shape.filter(w) : {}), limit: K };
        const visible = (i: number): boolean => (shape?.name === "userId" ? true : visibleUnfiltered(i));
        const passes = (i: number): boolean => (shape ? shape.passes(i, w) : true) && visible(i);
        const candidates: number[] = [];
        for (let i = 0; i < size; i++) if (passes(i)) candidates.push(i);
        const m: ShapeMeasurement = { provider: d.name, shape: name, passing: candidates.length, status: "ok" };
        measured.push(m);
        try {
          await settle(search(queries[0]!, options));
        } catch (error) {
          m.status = errorCode(error) === "INVALID_ARGUMENT" ? "unsupported" : "failed";
          m.reason = `${errorCode(error) ?? "error"}: ${errorMessage(error)}`;
          return m;
        }
        ctx.log(`filtered: ${d.name}, filter ${name}: recall`);
        let recallSum = 0;
        let recallCount = 0;
        let failing = 0;
        let returned = 0;
        const exactSizes: number[] = [];
        for (const q of queries) {
          const hits = await settle(search(q, options));
          const got = hits.map((h) => indexOf.get(String(h.id)));
          returned += got.length;
          const ok = got.filter((i): i is number => i !== undefined && passes(i));
          failing += got.length - ok.length;
          // The whole corpus unfiltered (sqlite) needs no candidate list; the rest rank the passing items.
          const top = await exact.top(q, shape === null && d.unfilteredScope === "all" ? null : candidates, K);
          exactSizes.push(top.length);
          if (top.length === 0) continue;
          const kept = keptOfExactTop(top, await exact.ranksOf(q, ok), ok.map(String));
          recallSum += kept / top.length;
          recallCount++;
        }
        m.recall = recallCount > 0 ? recallSum / recallCount : null;
        m.failingShare = returned > 0 ? failing / returned : 0;
        m.queriesWithoutExact = QUERY_COUNT - recallCount;
        m.exactHitsMedian = summarize(exactSizes).median;
        ctx.log(`filtered: ${d.name}, filter ${name}: timing`);
        let qi = 0;
        m.latency = await timeTask(`${d.name} ${name}`, () => search(queries[qi++ % QUERY_COUNT]!, options), {
          ...timing,
          sync: d.syncSearch,
        });
        return m;
      }

      for (const m of measured.filter((x) => x.provider === driver.name)) {
        const shape = FILTER_SHAPES.find((s) => s.name === m.shape);
        const cells = [
          driver.name,
          shape ? `${shape.name}: ${shape.describe}` : "none: unfiltered search (baseline)",
          m.passing.toLocaleString("en-US"),
        ];
        if (m.status !== "ok" || !m.latency || !baseline.latency) {
          rows.push([...cells, m.status === "unsupported" ? "unsupported" : "failed", "", "", "", "", ""]);
          rec.note(`${driver.name}, ${m.shape}: ${m.status} (${m.reason ?? "the baseline did not run"})`);
          continue;
        }
        rows.push([
          ...cells,
          `${fmt(m.latency.median)} ms`,
          `${fmt(m.latency.p95)} ms`,
          shape ? `${ratio(m.latency.median, baseline.latency.median)} / ${ratio(m.latency.p95, baseline.latency.p95)}` : "1× / 1×",
          m.recall == null ? "n/a" : m.recall.toFixed(3),
          `${fmt(100 * (m.failingShare ?? 0))} %`,
          `${fmt(m.exactHitsMedian ?? 0)}`,
        ]);
        if ((m.failingShare ?? 0) > 0)
          rec.note(
            `${driver.name}, ${m.shape}: ${fmt(100 * m.failingShare!)} % of the returned hits fail the filter (the provider accepted the filter but did not apply it)`,
          );
        if ((m.queriesWithoutExact ?? 0) > 0)
          rec.note(
            `${driver.name}, ${m.shape}: ${m.queriesWithoutExact} of ${QUERY_COUNT} queries match no passing item at all and are left out of recall@10`,
          );
      }
      rec.note(`${driver.name} = ${driver.label}; exact ranking = ${driver.exactLabel}`);
    } finally {
      exact.close();
      await settle(provider.shutdown?.());
    }
  }
  rec.table({
    title: `filtered: search(q, {…filter, limit: ${K}}) over ${size.toLocaleString("en-US")} items, ${QUERY_COUNT} queries (ratio = filtered vs unfiltered median / p95, same run; recall@${K} vs the exact ranking of the passing items)`,
    columns: [
      "provider",
      "filter",
      "passing items",
      "median",
      "p95",
      "ratio median / p95",
      `recall@${K}`,
      "hits failing the filter",
      "exact hits per query (median)",
    ],
    rows,
  });
  filteredGoals(rec, measured);
  rec.note(
    "the unfiltered rows' recall@10 is each provider's own approximation of its exact ranking (SQLite weighs recency into BM25; the vector store searches a namespace exactly up to its exact threshold, 500,000 items with the hashing embedder used here (int8 first pass, float32 scoring, from 20,000 items) and 10,000 with others, and through an HNSW graph above it), so a filtered row is read against it",
  );
  rec.note(
    `the vector provider keeps each user in its own namespace: its unfiltered search covers the instance's own user (${OWNER_USER}, 99 % of the items), and the userId filter searches ${OTHER_USER}'s namespace`,
  );
  rec.result.data = { seed: SEED, size, k: K, queries: QUERY_COUNT, sampleQueries: queries.slice(0, 3), measured };
  return rec.finish();
}

/** Filtered vs unfiltered median: a filter may cost at most this many times the unfiltered search. */
const FILTER_GOAL_RATIO = 5;
/** Vector-only recall@10 of the hashing embedder's vectors against exact cosine, store defaults. */
const VECTOR_RECALL_GOAL = 0.95;

/**
 * The goal rows: each filter of the vector provider within `FILTER_GOAL_RATIO`× its unfiltered
 * median (with the SQLite provider's time for the same filter beside it), and the vector
 * provider's unfiltered, vector-only recall@10 at `VECTOR_RECALL_GOAL` or more.
 */
function filteredGoals(rec: SuiteRecorder, measured: readonly ShapeMeasurement[]): void {
  const find = (provider: string, shape: string) => measured.find((m) => m.provider === provider && m.shape === shape && m.status === "ok");
  const baseline = find("vector", "none (baseline)");
  for (const shape of FILTER_SHAPES) {
    const m = find("vector", shape.name);
    const sqlite = find("sqlite", shape.name);
    const ok = m?.latency && baseline?.latency;
    rec.goal(
      `vector, ${shape.name} filter: ≤ ${FILTER_GOAL_RATIO}× the unfiltered median`,
      ok
        ? `${fmt(m.latency!.median)} vs ${fmt(baseline.latency!.median)} ms (${ratio(m.latency!.median, baseline.latency!.median)})` +
            (sqlite?.latency ? `; sqlite ${fmt(sqlite.latency.median)} ms for the same filter` : "")
        : "not measured",
      ok ? m.latency!.median <= FILTER_GOAL_RATIO * baseline.latency!.median : null,
    );
  }
  const recall = baseline?.recall;
  rec.goal(
    `vector only, hashing embedder, store defaults: recall@10 ≥ ${VECTOR_RECALL_GOAL} against exact cosine at ${baseline ? baseline.passing.toLocaleString("en-US") : "?"} items`,
    recall == null ? "not measured" : recall.toFixed(3),
    recall == null ? null : recall >= VECTOR_RECALL_GOAL,
  );
}
