import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { CorpusGenerator } from "../corpus.js";
import { scaleSummary, summarize, type Summary } from "../stats.js";
import { SuiteRecorder, type SuiteContext, type SuiteResult } from "../suite-result.js";
import { LATENCY_COLUMNS, fmt, latencyCells, ratio } from "../table.js";
import { loadCore, loadSqliteProvider, settle } from "../targets.js";
import { makeTempDir } from "../temp-dir.js";
import { timeTask, wallClock } from "../timing.js";

const SESSION = "bench-sync";
const BATCH = 256;

/**
 * Raw better-sqlite3 baseline: the same turns into a plain table plus an FTS5 index (the provider
 * indexes every turn too, so leaving the index out would flatter the baseline), in transactions of
 * BATCH rows, WAL mode.
 */
function rawInsert(file: string, turns: Array<[string, string]>): number {
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.exec(`CREATE TABLE items(id INTEGER PRIMARY KEY, kind TEXT NOT NULL, session_id TEXT, content TEXT NOT NULL, created_at TEXT NOT NULL);
           CREATE VIRTUAL TABLE items_fts USING fts5(content, content='items', content_rowid='id', tokenize='porter unicode61');`);
  const insert = db.prepare("INSERT INTO items(kind, session_id, content, created_at) VALUES ('turn', ?, ?, ?)");
  const index = db.prepare("INSERT INTO items_fts(rowid, content) VALUES (?, ?)");
  const batch = db.transaction((rows: Array<[string, string]>) => {
    for (const [user, assistant] of rows) {
      const content = `User: ${user}\nAssistant: ${assistant}`;
      const { lastInsertRowid } = insert.run(SESSION, content, new Date().toISOString());
      index.run(lastInsertRowid, content);
    }
  });
  const start = process.hrtime.bigint();
  for (let i = 0; i < turns.length; i += BATCH) batch(turns.slice(i, i + BATCH));
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  db.close();
  return ms;
}

/** Size of a SQLite database with its WAL and shared-memory files, in bytes (0 for a missing file). */
function fileBytes(file: string): number {
  let total = 0;
  for (const suffix of ["", "-wal", "-shm"]) {
    try {
      total += fs.statSync(file + suffix).size;
    } catch {
      // absent: nothing on disk
    }
  }
  return total;
}

/** `sync`: caller cost of `manager.syncAll` with the SQLite provider, and persisted turns/s. */
export async function runSyncSuite(ctx: SuiteContext): Promise<SuiteResult> {
  const rec = new SuiteRecorder("sync", ctx.quick);
  const turnCount = ctx.quick ? 2_000 : 20_000;
  const gen = new CorpusGenerator(9001);
  const turns: Array<[string, string]> = Array.from({ length: turnCount }, () => [gen.userTurn(), gen.assistantTurn()]);
  const timing = ctx.quick ? { timeMs: 250, iterations: 300 } : { timeMs: 2_000, iterations: 3_000 };
  const tmp = makeTempDir("sync");
  try {
    // Baseline 1: the cheapest possible hand-off, pushing the same turn onto an array.
    ctx.log("sync: Array.push hand-off");
    const handOff: unknown[] = [];
    let p = 0;
    const push = await timeTask(
      "Array.push",
      () => {
        const t = turns[p++ % turnCount] as [string, string];
        handOff.push({ user: t[0], assistant: t[1], sessionId: SESSION });
        if (handOff.length > 100_000) handOff.length = 0;
      },
      { ...timing, sync: true },
    );

    // Baseline 2: raw batched inserts of the same rows. Throughput runs alternate raw and provider
    // `repeats` times and report the median of each, so a burst of load on a shared machine does
    // not decide the ratio.
    const repeats = ctx.quick ? 1 : 3;
    const rawRuns: number[] = [];
    const persistedRuns: number[] = [];
    // Bytes on disk (database plus WAL, after close) of the last run of each, per 1,000 turns.
    let rawBytes = 0;
    let persistedBytes = 0;
    const runRaw = (r: number): void => {
      ctx.log(`sync: raw better-sqlite3 insert of ${turnCount} turns (run ${r + 1}/${repeats})`);
      const file = path.join(tmp.dir, `raw-${r}.db`);
      rawRuns.push(rawInsert(file, turns));
      rawBytes = fileBytes(file);
    };

    const core = await loadCore(["MemoryManager"]);
    const sqlite = await loadSqliteProvider();
    const rows: Array<Array<string | number>> = [["Array.push hand-off (baseline)", ...latencyCells(scaleSummary(push, 1000), "µs"), "1×"]];
    const chartSeries: Array<{ name: string; s: Summary }> = [{ name: "Array.push", s: push }];
    const data: Record<string, unknown> = { turnCount, batch: BATCH, repeats, arrayPushMs: push };
    let idle: Summary | null = null;
    let burst: Summary | null = null;
    let persistedRate: number | null = null;

    if (!core.ok || !sqlite.ok) {
      for (let r = 0; r < repeats; r++) runRaw(r);
      rec.skip(`syncAll: ${!core.ok ? core.reason : ""}${!core.ok && !sqlite.ok ? "; " : ""}${!sqlite.ok ? sqlite.reason : ""}`);
    } else {
      const openManager = async (name: string) => {
        const hermesHome = path.join(tmp.dir, name);
        const provider = new sqlite.value({ path: path.join(hermesHome, "memory.db") });
        const manager = new core.value.MemoryManager({ hermesHome });
        manager.addProvider(provider);
        await settle(manager.initializeAll(SESSION, { hermesHome }));
        return { manager, provider };
      };

      // Persisted throughput: hand off every turn, then wait until the provider has stored them.
      for (let r = 0; r < repeats; r++) {
        runRaw(r);
        ctx.log(`sync: persisting ${turnCount} turns through syncAll (run ${r + 1}/${repeats})`);
        const { manager, provider } = await openManager(`throughput-${r}`);
        const { ms } = await wallClock(async () => {
          for (const [u, a] of turns) manager.syncAll(u, a, { sessionId: SESSION });
          await settle(manager.flushPending(120_000));
          await settle(provider.flush());
        });
        const stats = await settle(provider.stats());
        persistedRuns.push(ms);
        if (stats.items < turnCount) rec.note(`run ${r + 1}: the provider reported ${stats.items} stored items for ${turnCount} turns`);
        await settle(manager.shutdownAll());
        persistedBytes = fileBytes(path.join(tmp.dir, `throughput-${r}`, "memory.db"));
      }
      const persistedMs = summarize(persistedRuns).median;
      persistedRate = turnCount / (persistedMs / 1000);
      data.persisted = { runsMs: persistedRuns, medianMs: persistedMs, turnsPerSecond: persistedRate };

      // Caller cost, one turn at a time with the queue drained between turns (how an agent calls it).
      ctx.log("sync: syncAll caller cost (queue drained between calls)");
      {
        const { manager } = await openManager("idle");
        let i = 0;
        idle = await timeTask(
          "syncAll idle",
          () => {
            const t = turns[i++ % turnCount] as [string, string];
            manager.syncAll(t[0], t[1], { sessionId: SESSION });
          },
          { ...timing, sync: true, afterEach: async () => void (await settle(manager.flushPending(60_000))) },
        );
        await settle(manager.shutdownAll());
      }

      // Caller cost back to back, the queue growing (a burst of turns, e.g. an import).
      ctx.log("sync: syncAll caller cost (back-to-back burst)");
      {
        const { manager } = await openManager("burst");
        let i = 0;
        burst = await timeTask(
          "syncAll burst",
          () => {
            const t = turns[i++ % turnCount] as [string, string];
            manager.syncAll(t[0], t[1], { sessionId: SESSION });
          },
          { ...(ctx.quick ? { timeMs: 100, iterations: 300 } : { timeMs: 500, iterations: 3_000 }), sync: true },
        );
        await settle(manager.flushPending(120_000));
        await settle(manager.shutdownAll());
      }
      rows.push(["manager.syncAll, one turn at a time", ...latencyCells(scaleSummary(idle, 1000), "µs"), ratio(idle.median, push.median)]);
      rows.push([
        "manager.syncAll, back-to-back burst",
        ...latencyCells(scaleSummary(burst, 1000), "µs"),
        ratio(burst.median, push.median),
      ]);
      chartSeries.push({ name: "syncAll (one at a time)", s: idle }, { name: "syncAll (burst)", s: burst });
      data.syncAllIdleMs = idle;
      data.syncAllBurstMs = burst;
    }

    rec.table({ title: "sync: caller cost per turn (ratio = median vs Array.push)", columns: ["what", ...LATENCY_COLUMNS, "ratio"], rows });
    const rawMs = summarize(rawRuns).median;
    const rawRate = turnCount / (rawMs / 1000);
    data.raw = { runsMs: rawRuns, medianMs: rawMs, turnsPerSecond: rawRate, bytes: rawBytes };
    if (persistedRate !== null) (data.persisted as Record<string, unknown>).bytes = persistedBytes;
    const perThousand = (bytes: number) => `${fmt(bytes / (turnCount / 1000) / 1024)} KiB`;
    const range = (runs: number[]) => (runs.length > 1 ? ` (runs ${runs.map((ms) => fmt(turnCount / (ms / 1000))).join(", ")})` : "");
    rec.table({
      title: `sync: persisted throughput (${turnCount.toLocaleString("en-US")} turns, median of ${repeats} alternating run${repeats > 1 ? "s" : ""})`,
      columns: ["what", "turns/s", "wall time", "vs raw", "on disk per 1,000 turns"],
      rows: [
        [
          `raw better-sqlite3, table + FTS5, ${BATCH}-row transactions (baseline)`,
          fmt(rawRate) + range(rawRuns),
          `${fmt(rawMs)} ms`,
          "100 %",
          perThousand(rawBytes),
        ],
        ...(persistedRate !== null
          ? [
              [
                "syncAll → SqliteMemoryProvider, until flushed",
                fmt(persistedRate) + range(persistedRuns),
                `${fmt((turnCount / persistedRate) * 1000)} ms`,
                `${fmt((100 * persistedRate) / rawRate)} %`,
                perThousand(persistedBytes),
              ],
            ]
          : []),
      ],
    });

    const p99Goal = (s: Summary | null) =>
      s ? { measured: `p99 ${fmt(s.p99 * 1000)} µs`, met: s.p99 * 1000 <= 50 } : { measured: "not measured", met: null };
    rec.goal("syncAll caller p99 ≤ 50 µs (one turn at a time)", p99Goal(idle).measured, p99Goal(idle).met);
    rec.goal("syncAll caller p99 ≤ 50 µs (burst)", p99Goal(burst).measured, p99Goal(burst).met);
    rec.goal(
      "persisted ≥ 50 % of raw",
      persistedRate !== null
        ? `${fmt((100 * persistedRate) / rawRate)} % (${fmt(persistedRate)} vs ${fmt(rawRate)} turns/s)`
        : "not measured",
      persistedRate !== null ? persistedRate >= 0.5 * rawRate : null,
    );
    rec.result.data = data;
    rec.result.chart = {
      kind: "bar",
      title: "sync: caller cost per turn",
      xLabel: "statistic",
      yLabel: "µs per call (log)",
      logY: true,
      categories: ["median", "p95", "p99"],
      series: chartSeries.map(({ name, s }) => ({
        name,
        points: [
          [0, s.median * 1000],
          [1, s.p95 * 1000],
          [2, s.p99 * 1000],
        ] as Array<[number, number]>,
      })),
      thresholds: [{ label: "goal p99 ≤ 50 µs", y: 50 }],
    };
  } finally {
    tmp.remove();
  }
  return rec.finish();
}
