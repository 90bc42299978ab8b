import fs from "node:fs";
import path from "node:path";
import { create as createOrama, insert as oramaInsert, search as oramaSearch } from "@orama/orama";
import MiniSearch from "minisearch";
import { Bm25Index } from "../bm25.js";
import { RECALL_KS, RecallAccumulator, loadLocomo, recallAtKs, type LocomoConversation } from "../locomo-data.js";
import { summarize, type Summary } from "../stats.js";
import { SuiteRecorder, type SuiteContext, type SuiteResult } from "../suite-result.js";
import { fmt, type Table } from "../table.js";
import { loadSqliteProvider, loadVector, settle, type SearchableTarget } from "../targets.js";
import { makeTempDir } from "../temp-dir.js";

/** Published reference: LoCoMo paper, Table 3, DRAGON retriever, dialog setting, all categories. */
export const DRAGON_RECALL = [56.7, 66.2, 76.7, 82.7];

/** A retrieval system under test: a fresh store per conversation, searched by question. */
interface Retriever {
  label: string;
  /** Short legend name for the chart. */
  short: string;
  /** Ingests one conversation and returns a search function mapping a question to ranked dia ids. */
  open(conv: LocomoConversation, dir: string): Promise<{ search(question: string): Promise<string[]>; close(): Promise<void> }>;
}

function bm25Retriever(): Retriever {
  return {
    label: "BM25 (k1 1.2, b 0.75) in the bench (baseline)",
    short: "BM25 (bench baseline)",
    open: async (conv) => {
      const index = new Bm25Index(1.2, 0.75);
      for (const t of conv.turns) index.add(t.content);
      return {
        search: async (q) => index.search(q, 50).map((h) => conv.turns[h.doc]!.diaId),
        close: async () => {},
      };
    },
  };
}

/**
 * MiniSearch with its default options (OR of the query terms, no prefix or fuzzy matching, its own
 * BM25+ scoring): what a TypeScript developer might use instead of a memory provider. Only the
 * protocol's limit of 50 hits is applied.
 */
function miniSearchRetriever(): Retriever {
  return {
    label: "MiniSearch 7.2 (default options), in memory",
    short: "MiniSearch",
    open: async (conv) => {
      const index = new MiniSearch<{ id: number; content: string }>({ fields: ["content"] });
      index.addAll(conv.turns.map((t, id) => ({ id, content: t.content })));
      return {
        search: async (q) =>
          index
            .search(q)
            .slice(0, 50)
            .map((h) => conv.turns[h.id as number]!.diaId),
        close: async () => {},
      };
    },
  };
}

/** Orama with its default options (threshold 1: any query term matches, BM25 ranking), in memory. */
function oramaRetriever(): Retriever {
  return {
    label: "Orama 3.1 (default options), in memory",
    short: "Orama",
    open: async (conv) => {
      const db = createOrama({ schema: { content: "string" } as const });
      for (const t of conv.turns) await oramaInsert(db, { id: t.diaId, content: t.content });
      return {
        search: async (q) => {
          const res = await oramaSearch(db, { term: q, limit: 50 });
          return res.hits.map((h) => h.id);
        },
        close: async () => {},
      };
    },
  };
}

/** Drives a SearchableMemory provider exactly as the protocol says (public API only). */
function providerRetriever(label: string, short: string, create: (dir: string) => SearchableTarget): Retriever {
  return {
    label,
    short,
    open: async (conv, dir) => {
      fs.mkdirSync(dir, { recursive: true });
      const provider = create(dir);
      await settle(provider.initialize(`locomo-${conv.sampleId}`, { hermesHome: dir, agentContext: "primary" }));
      for (const t of conv.turns) {
        await settle(
          provider.remember({
            content: t.content,
            kind: "turn",
            sessionId: t.sessionId,
            metadata: { dia_id: t.diaId, speaker: t.speaker, date: t.date },
          }),
        );
      }
      // Let background writers scheduled with setImmediate start before flush(): on 2 Dec a
      // VectorMemoryProvider build spun forever in flush() when called in the same tick as remember().
      await new Promise((resolve) => setImmediate(resolve));
      await settle(provider.flush());
      return {
        search: async (q) => {
          const hits = await settle(provider.search(q, { limit: 50 }));
          return hits.map((h) => String(h.metadata?.dia_id ?? ""));
        },
        close: async () => void (await settle(provider.shutdown?.())),
      };
    },
  };
}

function resolveDataFile(ctx: SuiteContext): string {
  return ctx.dataFile ?? path.resolve(ctx.repoRoot, "../shared/data/locomo/locomo-dev.json");
}

/** `locomo`: retrieval recall@5/10/25/50 per category on LoCoMo, per provider, vs BM25 and DRAGON. */
export async function runLocomoSuite(ctx: SuiteContext): Promise<SuiteResult> {
  const rec = new SuiteRecorder("locomo", ctx.quick);
  const file = resolveDataFile(ctx);
  if (!fs.existsSync(file)) {
    rec.skip(`no LoCoMo data at ${file} (pass --data <file>; the data is CC BY-NC and is not part of this repository)`);
    return rec.finish();
  }
  let conversations = loadLocomo(file);
  // --quick: one conversation is enough to prove the pipeline end to end.
  if (ctx.quick) conversations = conversations.slice(0, 1);
  const questionCount = conversations.reduce((n, c) => n + c.questions.length, 0);
  const dropped = conversations.reduce((n, c) => n + c.droppedQuestions, 0);
  rec.note(
    `data: ${path.basename(file)}, ${conversations.length} conversation(s) (${conversations.map((c) => c.sampleId).join(", ")}), ` +
      `${conversations.reduce((n, c) => n + c.turns.length, 0)} turns, ${questionCount} questions` +
      (dropped > 0 ? `, ${dropped} dropped (no evidence id matches a turn)` : ""),
  );

  const retrievers: Retriever[] = [bm25Retriever(), miniSearchRetriever(), oramaRetriever()];
  const sqlite = await loadSqliteProvider();
  if (sqlite.ok)
    retrievers.push(
      providerRetriever("SqliteMemoryProvider (FTS5 BM25)", "sqlite", (dir) => new sqlite.value({ path: path.join(dir, "memory.db") })),
    );
  else rec.skip(`sqlite provider: ${sqlite.reason}`);
  const vector = await loadVector(["VectorMemoryProvider"]);
  if (vector.ok) {
    const VectorProvider = vector.value.VectorMemoryProvider as new (options: Record<string, unknown>) => SearchableTarget;
    retrievers.push(
      providerRetriever(
        "VectorMemoryProvider (local, hashing embedder, vector only)",
        "vector",
        () => new VectorProvider({ hybrid: false, env: {} }),
      ),
    );
    retrievers.push(
      providerRetriever(
        "VectorMemoryProvider (local, hashing embedder, hybrid fusion with BM25)",
        "vector hybrid",
        () => new VectorProvider({ hybrid: true, env: {} }),
      ),
    );
  } else rec.skip(`vector provider: ${vector.reason}`);

  const tmp = makeTempDir("locomo");
  let paired: { a: Summary; b: Summary } | undefined;
  const results: Array<{
    label: string;
    short: string;
    rows: ReturnType<RecallAccumulator["rows"]>;
    latency: Summary;
    /** Per-query search time per conversation, keyed by sample id. */
    latencyByConversation: Record<string, Summary>;
    ingestMs: number;
  }> = [];
  try {
    for (const [ri, r] of retrievers.entries()) {
      ctx.log(`locomo: ${r.label}`);
      const acc = new RecallAccumulator();
      const latencies: number[] = [];
      const latencyByConversation: Record<string, Summary> = {};
      let ingestMs = 0;
      try {
        for (const conv of conversations) {
          const t0 = process.hrtime.bigint();
          const handle = await r.open(conv, path.join(tmp.dir, `r${ri}-${conv.sampleId}`));
          ingestMs += Number(process.hrtime.bigint() - t0) / 1e6;
          // Warm-up: a few untimed searches (JIT, statement caches).
          for (const q of conv.questions.slice(0, 5)) await handle.search(q.question);
          const convLatencies: number[] = [];
          for (const q of conv.questions) {
            const s0 = process.hrtime.bigint();
            const ranked = await handle.search(q.question);
            convLatencies.push(Number(process.hrtime.bigint() - s0) / 1e6);
            acc.add(q.category, recallAtKs(q.evidence, ranked));
          }
          latencies.push(...convLatencies);
          if (convLatencies.length > 0) latencyByConversation[conv.sampleId] = summarize(convLatencies);
          await handle.close();
        }
        results.push({ label: r.label, short: r.short, rows: acc.rows(), latency: summarize(latencies), latencyByConversation, ingestMs });
      } catch (error) {
        rec.skip(`${r.label}: failed (${error instanceof Error ? error.message : String(error)})`);
      }
    }
    // The hybrid against the SQLite provider once more, question by question in alternation, so
    // that load on a shared machine falls on both alike.
    const sqliteR = retrievers.find((r) => r.short === "sqlite");
    const hybridR = retrievers.find((r) => r.short === "vector hybrid");
    if (sqliteR && hybridR && results.some((r) => r.short === "sqlite") && results.some((r) => r.short === "vector hybrid")) {
      try {
        paired = await pairedLatency(conversations, hybridR, sqliteR, tmp.dir);
      } catch (error) {
        rec.skip(`hybrid against SQLite in alternation: failed (${error instanceof Error ? error.message : String(error)})`);
      }
    }
  } finally {
    tmp.remove();
  }

  const kCols = RECALL_KS.map((k) => `R@${k}`);
  const overall: Table = {
    title: `locomo: overall recall (%), ${questionCount} questions`,
    columns: ["retriever", ...kCols, "query median", "query p95", "query p99", "query min–max", "ingest"],
    rows: [
      ...results.map((r) => {
        const o = r.rows.find((x) => x.label === "overall")!;
        const l = r.latency;
        return [
          r.label,
          ...o.recall.map((v) => v.toFixed(1)),
          `${fmt(l.median)} ms`,
          `${fmt(l.p95)} ms`,
          `${fmt(l.p99)} ms`,
          `${fmt(l.min)}–${fmt(l.max)} ms`,
          `${fmt(r.ingestMs)} ms`,
        ];
      }),
      ["DRAGON (paper, Table 3; published, not run here)", ...DRAGON_RECALL.map((v) => v.toFixed(1)), "", "", "", "", ""],
    ],
  };
  rec.table(overall);
  const categories = results[0]?.rows.map((x) => x.label).filter((l) => l !== "overall") ?? [];
  rec.table({
    title: "locomo: recall@10 (%) per category",
    columns: ["retriever", ...categories.map((c) => `${c} (n=${results[0]!.rows.find((x) => x.label === c)!.n})`)],
    rows: results.map((r) => [r.label, ...categories.map((c) => r.rows.find((x) => x.label === c)!.recall[1]!.toFixed(1))]),
  });
  rec.table({
    title: "locomo: recall@5/10/25/50 (%) per category",
    columns: ["retriever", "category", ...kCols],
    rows: results.flatMap((r) => r.rows.map((x) => [r.label, `${x.label} (n=${x.n})`, ...x.recall.map((v) => v.toFixed(1))])),
  });
  latencyComparison(rec, conversations, results);
  hybridGoals(rec, paired?.a, paired?.b);
  for (const r of results.filter((x) => x.short === "sqlite" || x.short.startsWith("vector"))) {
    const o = r.rows.find((x) => x.label === "overall")!;
    rec.goal(`${r.label}: recall@10 ≥ 70`, o.recall[1]!.toFixed(1), o.recall[1]! >= 70);
    rec.goal(`${r.label}: recall@5 ≥ 60`, o.recall[0]!.toFixed(1), o.recall[0]! >= 60);
  }
  if (ctx.quick) rec.note("--quick: first conversation only; numbers are not comparable with full runs");
  rec.result.data = { file: path.basename(file), questions: questionCount, dragon: DRAGON_RECALL, results };
  rec.result.chart = {
    kind: "line",
    title: "locomo: recall@k (overall)",
    xLabel: "k",
    yLabel: "recall (%)",
    logX: true,
    series: [
      ...results.map((r) => ({
        name: r.short,
        points: RECALL_KS.map((k, i) => [k, r.rows.find((x) => x.label === "overall")!.recall[i]!] as [number, number]),
      })),
      { name: "DRAGON (published)", dashed: true, points: RECALL_KS.map((k, i) => [k, DRAGON_RECALL[i]!] as [number, number]) },
    ],
    thresholds: [
      { label: "goal R@10 ≥ 70", y: 70 },
      { label: "goal R@5 ≥ 60", y: 60 },
    ],
  };
  return rec.finish();
}

/**
 * Per-query median search time per conversation, side by side: the SQLite provider against MiniSearch
 * (goal: within 2×) and the vector provider's hybrid against the SQLite provider, in the same run.
 */
function latencyComparison(
  rec: SuiteRecorder,
  conversations: LocomoConversation[],
  results: Array<{ label: string; short: string; latency: Summary; latencyByConversation: Record<string, Summary> }>,
): void {
  const by = (short: string) => results.find((r) => r.short === short);
  const sqlite = by("sqlite");
  const mini = by("MiniSearch");
  const hybrid = by("vector hybrid");
  const ratio = (a: number | undefined, b: number | undefined) => (a !== undefined && b !== undefined && b > 0 ? `${fmt(a / b)}×` : "");
  const convs = conversations.filter((c) => results.some((r) => r.latencyByConversation[c.sampleId]));
  rec.table({
    title: "locomo: per-query search time, median (ms), per conversation",
    columns: ["retriever", ...convs.map((c) => `${c.sampleId} (${c.turns.length} turns)`), "all", "vs MiniSearch", "vs SQLite provider"],
    rows: results.map((r) => [
      r.label,
      ...convs.map((c) => {
        const s = r.latencyByConversation[c.sampleId];
        return s ? fmt(s.median) : "";
      }),
      fmt(r.latency.median),
      ratio(r.latency.median, mini?.latency.median),
      ratio(r.latency.median, sqlite?.latency.median),
    ]),
  });
  // The largest conversation is the one closest to a real long-running agent's store.
  const largest = [...convs].sort((a, b) => b.turns.length - a.turns.length)[0];
  if (!largest) return;
  const med = (r: (typeof results)[number] | undefined) => r?.latencyByConversation[largest.sampleId]?.median;
  const where = `${largest.sampleId}, ${largest.turns.length} turns`;
  const sqliteVsMini = med(sqlite) !== undefined && med(mini) ? med(sqlite)! / med(mini)! : undefined;
  rec.goal(
    `SqliteMemoryProvider median search ≤ 2× MiniSearch's (${where})`,
    sqliteVsMini === undefined ? "not measured" : `${fmt(med(sqlite)!)} ms vs ${fmt(med(mini)!)} ms = ${fmt(sqliteVsMini)}×`,
    sqliteVsMini === undefined ? null : sqliteVsMini <= 2,
  );
  const hybridVsSqlite = med(hybrid) !== undefined && med(sqlite) ? med(hybrid)! / med(sqlite)! : undefined;
  if (hybridVsSqlite !== undefined) {
    rec.note(
      `vector hybrid vs SQLite provider, median search (${where}): ${fmt(med(hybrid)!)} ms vs ${fmt(med(sqlite)!)} ms = ${fmt(hybridVsSqlite)}×`,
    );
  }
}

/**
 * Per-query search time of retrievers `a` and `b` over every question, measured in alternation: each
 * question is searched by both, the first of the two alternating from question to question (after
 * five untimed searches by each), so neither runs while the machine is busier.
 */
async function pairedLatency(
  conversations: LocomoConversation[],
  a: Retriever,
  b: Retriever,
  dir: string,
): Promise<{ a: Summary; b: Summary }> {
  const times = { a: [] as number[], b: [] as number[] };
  for (const conv of conversations) {
    const handles = {
      a: await a.open(conv, path.join(dir, `paired-a-${conv.sampleId}`)),
      b: await b.open(conv, path.join(dir, `paired-b-${conv.sampleId}`)),
    };
    try {
      for (const q of conv.questions.slice(0, 5)) for (const h of [handles.a, handles.b]) await h.search(q.question);
      for (const [i, q] of conv.questions.entries()) {
        for (const side of i % 2 === 0 ? (["a", "b"] as const) : (["b", "a"] as const)) {
          const s0 = process.hrtime.bigint();
          await handles[side].search(q.question);
          times[side].push(Number(process.hrtime.bigint() - s0) / 1e6);
        }
      }
    } finally {
      await handles.a.close();
      await handles.b.close();
    }
  }
  return { a: summarize(times.a), b: summarize(times.b) };
}

/**
 * The vector provider's hybrid search against the SQLite provider's, per query over every question
 * (median and p95), measured in alternation: goal no slower (≤ 1×).
 */
function hybridGoals(rec: SuiteRecorder, hybrid: Summary | undefined, sqlite: Summary | undefined): void {
  for (const [name, of] of [
    ["median", (s: Summary) => s.median],
    ["p95", (s: Summary) => s.p95],
  ] as const) {
    const ratio = hybrid && sqlite && of(sqlite) > 0 ? of(hybrid) / of(sqlite) : undefined;
    rec.goal(
      `VectorMemoryProvider hybrid ${name} search ≤ 1× SqliteMemoryProvider's (every question, searched in alternation)`,
      ratio === undefined ? "not measured" : `${fmt(of(hybrid!))} ms vs ${fmt(of(sqlite!))} ms = ${fmt(ratio)}×`,
      ratio === undefined ? null : ratio <= 1,
    );
  }
}
