/**
 * `isolation`: what hosting a provider in a worker thread costs per call. The SQLite provider
 * (`@hermes/memory-sqlite`) over the same seeded store, called inline and through
 * `startWorkerHostedProvider` (core's loader in a worker thread) in the same run: `prefetch`, and a
 * turn written and made durable (`syncTurn` + `flush`). The added time is the structured-clone
 * hand-off both ways and a wake-up of each thread.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { CorpusGenerator } from "../corpus.js";
import type { Summary } from "../stats.js";
import { SuiteRecorder, type SuiteContext, type SuiteResult } from "../suite-result.js";
import { LATENCY_COLUMNS, fmt, latencyCells, ratio } from "../table.js";
import { loadSqliteProvider, settle, type SearchableTarget } from "../targets.js";
import { makeTempDir } from "../temp-dir.js";
import { timeTask } from "../timing.js";

const SEED = 46046;
const QUERY_COUNT = 200;
const WARM_PASSES = 3;
/** Timed rounds per mode, alternating inline and worker; each call's best median is kept. */
const ROUNDS = 3;
/** The bench package: its package.json depends on the SQLite provider, so discovery finds it from here. */
const BENCH_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * Goals. A prefetch runs once per turn before a model call of hundreds of milliseconds; 1 ms more
 * is under 1 % of a turn, and well under what a blocking provider costs inline (the whole call).
 * A durable turn (syncTurn + flush) is two hand-offs: 2 ms.
 */
const PREFETCH_GOAL_MS = 1;
const WRITE_GOAL_MS = 2;

interface Target extends SearchableTarget {
  prefetch(query: string, options: { sessionId: string }): unknown;
}

type StartWorker = (name: string, options: Record<string, unknown>) => Promise<Target>;

async function loadStartWorker(): Promise<StartWorker | string> {
  try {
    const core = (await import("@hermes/memory-core")) as Record<string, unknown>;
    return typeof core.startWorkerHostedProvider === "function"
      ? (core.startWorkerHostedProvider as StartWorker)
      : "@hermes/memory-core does not export startWorkerHostedProvider";
  } catch (error) {
    return `@hermes/memory-core could not be imported (${error instanceof Error ? error.message : String(error)})`;
  }
}

interface Run {
  prefetch: Summary;
  write: Summary;
}

/** The run with the lower median of each call, so a burst of other work on a shared machine does not decide the ratio. */
function better(a: Run | null, b: Run): Run {
  if (!a) return b;
  return {
    prefetch: a.prefetch.median <= b.prefetch.median ? a.prefetch : b.prefetch,
    write: a.write.median <= b.write.median ? a.write : b.write,
  };
}

async function warm(target: Target, queries: string[]): Promise<void> {
  // The provider keeps state as it is used (pooled row lengths, SQLite's page cache): both modes are
  // timed after the same untimed passes over the queries, so neither is measured cold.
  for (let pass = 0; pass < WARM_PASSES; pass++) for (const query of queries) await settle(target.prefetch(query, { sessionId: "bench" }));
}

async function measure(target: Target, queries: string[], quick: boolean, turn: { next: number }): Promise<Run> {
  let q = 0;
  const budget = quick ? { timeMs: 500, iterations: 50 } : { timeMs: 1_000, iterations: 150 };
  const prefetch = await timeTask("prefetch", () => target.prefetch(queries[q++ % queries.length]!, { sessionId: "bench" }), budget);
  const write = await timeTask(
    "syncTurn+flush",
    async () => {
      await settle(target.syncTurn!(`bench isolation turn ${turn.next++} about the ferry`, "noted", { sessionId: "bench" }));
      await settle(target.flush());
    },
    budget,
  );
  return { prefetch, write };
}

/** `isolation`: per-call cost of the worker-thread mode against inline, same store, same run. */
export async function runIsolationSuite(ctx: SuiteContext): Promise<SuiteResult> {
  const rec = new SuiteRecorder("isolation", ctx.quick);
  const Provider = await loadSqliteProvider();
  const startWorker = await loadStartWorker();
  if (!Provider.ok) rec.skip(Provider.reason);
  if (typeof startWorker === "string") rec.skip(startWorker);
  if (!Provider.ok || typeof startWorker === "string") return rec.finish();
  const tmp = makeTempDir("isolation");
  try {
    const hermesHome = path.join(tmp.dir, "home");
    const turns = ctx.quick ? 2_000 : 10_000;
    ctx.log(`isolation: writing ${turns} seeded turns`);
    const gen = new CorpusGenerator(SEED);
    const builder = new Provider.value({}) as Target;
    await settle(builder.initialize("bench-build", { hermesHome }));
    for (let i = 0; i < turns; i++) await settle(builder.syncTurn!(gen.userTurn(), gen.assistantTurn(), { sessionId: `s${i % 50}` }));
    await settle(builder.flush());
    await settle(builder.shutdown?.());
    const queries = Array.from({ length: QUERY_COUNT }, () => gen.query());

    ctx.log("isolation: inline and worker thread, alternating rounds");
    const inline = new Provider.value({}) as Target;
    await settle(inline.initialize("bench", { hermesHome }));
    const worker = await startWorker("sqlite", { hermesHome, cwd: BENCH_DIR });
    await settle(worker.initialize("bench", { hermesHome }));
    await warm(inline, queries);
    await warm(worker, queries);
    let inlineRun: Run | null = null;
    let workerRun: Run | null = null;
    const turn = { next: 1_000_000 };
    for (let round = 0; round < (ctx.quick ? 1 : ROUNDS); round++) {
      inlineRun = better(inlineRun, await measure(inline, queries, ctx.quick, turn));
      workerRun = better(workerRun, await measure(worker, queries, ctx.quick, turn));
    }
    await settle(inline.shutdown?.());
    await settle(worker.shutdown?.());
    if (!inlineRun || !workerRun) throw new Error("no round was measured");

    const rows: Array<Array<string | number>> = [];
    for (const [call, key] of [
      ["prefetch", "prefetch"],
      ["syncTurn + flush", "write"],
    ] as const) {
      rows.push([call, "inline (baseline)", ...latencyCells(inlineRun[key], "ms"), "1×", "—"]);
      const added = workerRun[key].median - inlineRun[key].median;
      rows.push([
        call,
        "worker thread",
        ...latencyCells(workerRun[key], "ms"),
        ratio(workerRun[key].median, inlineRun[key].median),
        `${fmt(added)} ms`,
      ]);
    }
    rec.table({
      title: `isolation: SQLite provider, ${turns.toLocaleString("en-US")} stored turns, inline vs worker thread (ratio and added = median vs inline)`,
      columns: ["call", "mode", ...LATENCY_COLUMNS, "ratio", "added"],
      rows,
    });
    const prefetchAdded = workerRun.prefetch.median - inlineRun.prefetch.median;
    const writeAdded = workerRun.write.median - inlineRun.write.median;
    rec.goal(`worker prefetch adds ≤ ${PREFETCH_GOAL_MS} ms (median)`, `${fmt(prefetchAdded)} ms`, prefetchAdded <= PREFETCH_GOAL_MS);
    rec.goal(`worker syncTurn + flush adds ≤ ${WRITE_GOAL_MS} ms (median)`, `${fmt(writeAdded)} ms`, writeAdded <= WRITE_GOAL_MS);
    rec.note(
      `Both modes run side by side on the same store; ${ctx.quick ? "one round" : `${ROUNDS} alternating rounds`} per mode, and each call's round with the lower median is shown (the machine is shared).`,
    );
    rec.note("The worker mode's gain is not in this table: a provider's synchronous work no longer blocks the host's event loop.");
    rec.result.data = { turns, inline: inlineRun, worker: workerRun };
  } finally {
    tmp.remove();
  }
  return rec.finish();
}
