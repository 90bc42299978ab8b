import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { tokenize } from "../bm25.js";
import { CorpusGenerator } from "../corpus.js";
import { cachedFile } from "../corpus-cache.js";
import crypto from "node:crypto";
import { summarize, type Summary } from "../stats.js";
import { SuiteRecorder, type SuiteContext, type SuiteResult } from "../suite-result.js";
import { LATENCY_COLUMNS, fmt, latencyCells, ratio } from "../table.js";
import { loadCore, loadProviderKit, loadSqliteModule, settle, type SqliteProviderClass } from "../targets.js";
import { makeTempDir } from "../temp-dir.js";
import { timeTask, wallClock } from "../timing.js";
import { keptOfExactTop } from "../top-k.js";

const SEED = 20260;
/** Bumped whenever the generated text changes, so an old cached corpus is never reused. */
const CORPUS_VERSION = 2;
const TURNS_PER_SESSION = 20;
const QUERY_COUNT = 200;
/** Queries whose provider top 5 is compared with the exact FTS5 top 5. */
const AGREEMENT_QUERIES = 30;
/**
 * Untimed passes over the queries before timing, at most. A provider keeps state as it is used
 * (the SQLite provider keeps the lengths of the rows it has pooled, and its helper thread reads
 * the id lists of query words at a million items); passes repeat until one's median latency
 * improves on the previous pass's by less than `SETTLED_SHARE`, so the timing measures a store in
 * use rather than one just opened. The first pass is reported on its own row. The calls run back
 * to back without yielding to the event loop, so work a provider schedules on timers (the SQLite
 * provider's reading of every row's length after opening) does not run before or during timing.
 */
const MAX_WARM_PASSES = 8;
const SETTLED_SHARE = 0.03;
/** Generation stops being worth it past this: a suite must stay near 3 minutes. */
const BUILD_BUDGET_MS = 150_000;

/**
 * Fills a fresh SQLite provider database with `size` seeded turns through the provider's public
 * write path. `syncTurn` (one stored item per user/assistant turn, written in batched transactions)
 * rather than `remember`, which commits each item on its own and would take minutes per 100k.
 */
async function buildCorpus(Provider: SqliteProviderClass, file: string, size: number, hermesHome: string): Promise<void> {
  const provider = new Provider({ path: file });
  await settle(provider.initialize("bench-prefetch-build", { hermesHome, agentContext: "primary" }));
  if (typeof provider.syncTurn !== "function") throw new Error("the sqlite provider has no syncTurn()");
  const gen = new CorpusGenerator(SEED);
  for (let i = 0; i < size; i++) {
    await settle(provider.syncTurn(gen.userTurn(), gen.assistantTurn(), { sessionId: `session-${Math.floor(i / TURNS_PER_SESSION)}` }));
    if (i % 10_000 === 9_999) await settle(provider.flush());
  }
  await settle(provider.flush());
  await settle(provider.shutdown?.());
}

/**
 * Hash of a database's schema (every CREATE statement, and the settings of its FTS5 tables, such as
 * `automerge`, which shape how the index was written), to tell whether a cached corpus still fits.
 */
export function schemaHashOfFile(file: string): string {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const rows = db.prepare<{ sql: string }>("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY type, name").all();
    const version = db.pragma("user_version", { simple: true });
    const settings = ftsTables(db).map((name) => {
      const config = db.prepare<{ k: string; v: unknown }>(`SELECT k, v FROM "${name.replace(/"/g, '""')}_config" ORDER BY k`).all();
      return `${name}: ${config.map((c) => `${c.k}=${String(c.v)}`).join(", ")}`;
    });
    return crypto
      .createHash("sha256")
      .update(`${String(version)}\n${rows.map((r) => r.sql).join("\n")}\n${settings.join("\n")}`)
      .digest("hex")
      .slice(0, 12);
  } finally {
    db.close();
  }
}

/** Schema hash of an empty database created by the current provider build. */
async function currentSchemaHash(Provider: SqliteProviderClass, dir: string): Promise<string> {
  const file = path.join(dir, "schema-probe.db");
  const provider = new Provider({ path: file });
  await settle(provider.initialize("bench-schema-probe", { hermesHome: dir }));
  await settle(provider.shutdown?.());
  return schemaHashOfFile(file);
}

/** Open `file` with the provider and close it again (applies the upgrades it makes on open). */
async function openOnce(Provider: SqliteProviderClass, file: string, dir: string): Promise<void> {
  const provider = new Provider({ path: file });
  await settle(provider.initialize("bench-schema-upgrade", { hermesHome: dir }));
  await settle(provider.shutdown?.());
}

/** The names of a database's FTS5 tables, found by their schema rather than assumed, in name order. */
function ftsTables(db: Database.Database): string[] {
  return db
    .prepare<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%USING fts5%' ORDER BY name")
    .all()
    .map((r) => r.name);
}

/** The provider's FTS5 table, found by its schema rather than assumed. */
export function findFtsTable(db: Database.Database): string | null {
  return ftsTables(db)[0] ?? null;
}

/** A query string FTS5 always accepts: each word quoted, OR-ed (what a careful caller would do). */
export function ftsOrQuery(text: string): string {
  const words = [...new Set(tokenize(text))];
  return words.map((w) => `"${w.replace(/"/g, '""')}"`).join(" OR ");
}

/** `prefetch`: `prefetchAll` latency at growing store sizes vs raw FTS5 on the same database. */
export async function runPrefetchSuite(ctx: SuiteContext): Promise<SuiteResult> {
  const rec = new SuiteRecorder("prefetch", ctx.quick);
  const sizes = ctx.quick ? [10_000] : [10_000, 100_000, 1_000_000];
  const core = await loadCore(["MemoryManager"]);
  const kit = await loadProviderKit();
  const sqliteModule = await loadSqliteModule();
  if (!core.ok || !sqliteModule.ok) {
    rec.skip([!core.ok ? core.reason : "", !sqliteModule.ok ? sqliteModule.reason : ""].filter(Boolean).join("; "));
    return rec.finish();
  }
  const sqlite = { value: sqliteModule.value.SqliteMemoryProvider };
  // The baseline runs the very MATCH expression the provider builds (so the ratio is the provider's
  // own overhead); a second row shows the naive "every word OR-ed" expression for reference.
  const buildFtsQuery = kit.ok ? kit.value.buildFtsQuery : undefined;
  const queryGen = new CorpusGenerator(SEED + 1);
  const queries = Array.from({ length: QUERY_COUNT }, () => queryGen.query());
  // A cached corpus is valid while its schema (and its FTS5 tables' settings) equals what the
  // current provider creates (the schema is compared, not the code, so unrelated edits keep the 1M
  // cache). Delete bench-results/.cache after changing how the provider fills the same schema.
  const timing = ctx.quick ? { timeMs: 300, iterations: 100 } : { timeMs: 3_000, iterations: 100 };
  const tmp = makeTempDir("prefetch");
  const rows: Array<Array<string | number>> = [];
  const measured: Array<{
    size: number;
    prefetch: Summary;
    cold: Summary;
    warmPasses: number;
    raw: Summary;
    naive: Summary | null;
    matchesMedian: number;
    top5Agreement: number | null;
    buildMs: number | null;
    reused: boolean;
    ftsTable: string;
    emptyResults: number;
  }> = [];
  let buildRate: number | null = null;
  let schema = "";
  try {
    schema = await currentSchemaHash(sqlite.value, tmp.dir);
    for (const size of sizes) {
      const cacheFile = path.join(ctx.cacheDir, `prefetch-${size}-s${SEED}-c${CORPUS_VERSION}.db`);
      // A cached corpus is opened by the provider first, as a user's older database would be, so
      // the upgrades the provider makes in place on open (added indexes) apply before the schemas
      // are compared; only a corpus the provider cannot bring to its schema is discarded.
      if (fs.existsSync(`${cacheFile}.complete`)) await openOnce(sqlite.value, cacheFile, tmp.dir);
      if (fs.existsSync(`${cacheFile}.complete`) && schemaHashOfFile(cacheFile) !== schema) {
        rec.note(`${size.toLocaleString("en-US")} items: the cached corpus had another schema and was discarded`);
        for (const suffix of ["", "-wal", "-shm", ".complete"]) fs.rmSync(cacheFile + suffix, { force: true });
      }
      const cached = fs.existsSync(`${cacheFile}.complete`);
      if (!cached && !ctx.buildCache && size > 100_000) {
        const eta = buildRate !== null ? ` (about ${fmt(size / buildRate / 1000)} s at the measured ${fmt(buildRate * 1000)} items/s)` : "";
        if (buildRate === null || size / buildRate > BUILD_BUDGET_MS) {
          rec.skip(
            `${size.toLocaleString("en-US")} items: no cached corpus, and building one${eta} does not fit the suite's time budget; run \`pnpm bench prefetch --build-cache\` once`,
          );
          continue;
        }
      }
      ctx.log(`prefetch: corpus of ${size.toLocaleString("en-US")} items (${cacheFile})`);
      const built = await wallClock(() =>
        cachedFile(cacheFile, (tmpFile) => buildCorpus(sqlite.value, tmpFile, size, path.join(tmp.dir, `build-${size}`))),
      );
      if (!built.value.reused) buildRate = size / built.ms;

      const hermesHome = path.join(tmp.dir, `home-${size}`);
      const provider = new sqlite.value({ path: cacheFile });
      const manager = new core.value.MemoryManager({ hermesHome });
      manager.addProvider(provider);
      await settle(manager.initializeAll("bench-prefetch", { hermesHome }));

      let emptyResults = 0;
      const firstPass: number[] = [];
      for (const q of queries) {
        const call = await wallClock(() => settle(manager.prefetchAll(q, { sessionId: "bench-prefetch" })));
        firstPass.push(call.ms);
        if ((call.value ?? "").trim() === "") emptyResults++;
      }
      const cold = summarize(firstPass);
      let warmPasses = 1;
      for (let previous = cold.median; warmPasses < MAX_WARM_PASSES;) {
        const pass: number[] = [];
        for (const q of queries) pass.push((await wallClock(() => settle(manager.prefetchAll(q, { sessionId: "bench-prefetch" })))).ms);
        warmPasses++;
        const median = summarize(pass).median;
        if (median >= previous * (1 - SETTLED_SHARE)) break;
        previous = median;
      }
      // Which rows the provider ranks first, to compare with the exact FTS5 ranking below.
      const providerTop: string[][] = [];
      for (const q of queries.slice(0, AGREEMENT_QUERIES))
        providerTop.push((await settle(provider.search(q, { limit: 5 }))).map((h) => String(h.id)));
      let qi = 0;
      ctx.log(`prefetch: timing prefetchAll at ${size.toLocaleString("en-US")}`);
      const prefetch = await timeTask(
        `prefetchAll ${size}`,
        () => manager.prefetchAll(queries[qi++ % QUERY_COUNT] as string, { sessionId: "bench-prefetch" }),
        timing,
      );
      await settle(manager.shutdownAll());

      const db = new Database(cacheFile, { readonly: true, fileMustExist: true });
      const fts = findFtsTable(db);
      if (!fts) {
        db.close();
        rec.skip(`${size}: the provider's database has no FTS5 table to run the raw baseline against`);
        continue;
      }
      const stmt = db.prepare(`SELECT rowid, * FROM "${fts}" WHERE "${fts}" MATCH ? ORDER BY rank LIMIT 5`);
      const naiveQueries = queries.map(ftsOrQuery);
      const providerQueries = buildFtsQuery ? queries.map((q) => buildFtsQuery(q) ?? ftsOrQuery(q)) : naiveQueries;
      let ri = 0;
      ctx.log(`prefetch: timing raw FTS5 at ${size.toLocaleString("en-US")}`);
      const raw = await timeTask(`raw FTS5 ${size}`, () => stmt.all(providerQueries[ri++ % QUERY_COUNT]), { ...timing, sync: true });
      // How selective the queries are on this corpus, so readers can judge the workload.
      const countStmt = db.prepare<{ n: number }>(`SELECT count(*) AS n FROM "${fts}" WHERE "${fts}" MATCH ?`);
      const matchCounts = providerQueries.slice(0, 30).map((m) => countStmt.get(m)?.n ?? 0);
      const matches = summarize(matchCounts);
      const idStmt = db.prepare<{ id: number; rank: number }>(
        `SELECT rowid AS id, rank FROM "${fts}" WHERE "${fts}" MATCH ? ORDER BY rank LIMIT 5`,
      );
      const rankOf = db.prepare<{ id: number; rank: number }>(
        `SELECT rowid AS id, rank FROM "${fts}" WHERE "${fts}" MATCH ? AND rowid IN (SELECT value FROM json_each(?))`,
      );
      let agreeSum = 0;
      let strictSum = 0;
      providerTop.forEach((top, i) => {
        const exact = idStmt.all(providerQueries[i]);
        if (exact.length === 0) {
          agreeSum += 1;
          strictSum += 1;
          return;
        }
        agreeSum += keptOfExactTop(exact, rankOf.all(providerQueries[i], JSON.stringify(top.map(Number))), top) / exact.length;
        const exactIds = new Set(exact.map((r) => String(r.id)));
        strictSum += top.filter((id) => exactIds.has(id)).length / exact.length;
      });
      const agreement = providerTop.length > 0 ? agreeSum / providerTop.length : null;
      const strictAgreement = providerTop.length > 0 ? strictSum / providerTop.length : null;
      let naive: Summary | null = null;
      if (buildFtsQuery) {
        let ni = 0;
        // Reference only, and slow (stop words hit most rows): a small fixed sample keeps the suite short.
        naive = await timeTask(`raw FTS5 naive ${size}`, () => stmt.all(naiveQueries[ni++ % QUERY_COUNT]), {
          timeMs: ctx.quick ? 200 : 1_000,
          iterations: ctx.quick ? 10 : 30,
          sync: true,
        });
      }
      db.close();

      measured.push({
        size,
        prefetch,
        cold,
        warmPasses,
        raw,
        naive,
        matchesMedian: matches.median,
        top5Agreement: agreement,
        buildMs: built.value.reused ? null : built.ms,
        reused: built.value.reused,
        ftsTable: fts,
        emptyResults,
      });
      const label = size.toLocaleString("en-US");
      rows.push([
        `${label}`,
        `raw FTS5 MATCH … ORDER BY rank LIMIT 5${buildFtsQuery ? ", provider's MATCH expression" : ""} (baseline)`,
        ...latencyCells(raw, "ms"),
        "1×",
        "100 %",
      ]);
      if (naive)
        rows.push([
          `${label}`,
          "raw FTS5, every query word OR-ed (reference)",
          ...latencyCells(naive, "ms"),
          ratio(naive.p99, raw.p99),
          "",
        ]);
      rows.push([
        `${label}`,
        "manager.prefetchAll (sqlite), first call of each query after opening",
        ...latencyCells(cold, "ms"),
        ratio(cold.p99, raw.p99),
        "",
      ]);
      rows.push([
        `${label}`,
        "manager.prefetchAll (sqlite)",
        ...latencyCells(prefetch, "ms"),
        ratio(prefetch.p99, raw.p99),
        agreement === null ? "n/a" : `${fmt(100 * agreement)} %`,
      ]);
      rec.note(
        `${label} items: prefetchAll timed after ${warmPasses} untimed passes over the ${QUERY_COUNT} queries (until a pass's median improved on the previous one's by less than ${fmt(100 * SETTLED_SHARE)} %)`,
      );
      if (agreement !== null)
        rec.note(
          `${label} items: ${fmt(100 * agreement)} % of the provider's top 5 belongs to an exact FTS5 top 5 (ORDER BY rank; rows tied with the 5th best score count) (search(), ${AGREEMENT_QUERIES} queries; the provider also weighs recency)`,
        );
      if (strictAgreement !== null)
        rec.note(
          `${label} items: counting only the ids FTS5 itself lists first (ties broken by row order), ${fmt(100 * strictAgreement)} %`,
        );
      rec.note(
        `${label} items: a query matches ${fmt(matches.median)} rows at the median (${fmt((100 * matches.median) / size)} % of the corpus; min–max ${fmt(matches.min)}–${fmt(matches.max)})`,
      );
      if (emptyResults > 0) rec.note(`${label} items: prefetchAll returned nothing for ${emptyResults} of ${QUERY_COUNT} queries`);
      if (built.value.reused) rec.note(`${label} items: corpus reused from bench-results/.cache`);
      else
        rec.note(
          `${label} items: corpus generated through syncTurn() in ${fmt(built.ms / 1000)} s (${fmt(size / (built.ms / 1000))} items/s)`,
        );
    }
  } finally {
    tmp.remove();
  }
  if (rows.length > 0)
    rec.table({
      title:
        "prefetch: latency per query (ratio = p99 vs raw FTS5 p99; exact top 5 kept = share of the provider's top 5 that belongs to an exact BM25 top 5, a row tied with the 5th best score included)",
      columns: ["items", "what", ...LATENCY_COLUMNS, "ratio", "exact top 5 kept"],
      rows,
    });
  const top = measured.find((m) => m.size === 1_000_000);
  if (top) {
    rec.goal(
      "prefetchAll p99 ≤ 2× raw FTS5 at 1M",
      `${fmt(top.prefetch.p99)} ms vs ${fmt(top.raw.p99)} ms (${ratio(top.prefetch.p99, top.raw.p99)})`,
      top.prefetch.p99 <= 2 * top.raw.p99,
    );
    rec.goal(
      "prefetchAll p99 < 10 ms at 1M",
      `${fmt(top.prefetch.p99)} ms` +
        (top.top5Agreement !== null ? ` (keeps ${fmt(100 * top.top5Agreement)} % of the exact BM25 top 5)` : ""),
      top.prefetch.p99 < 10,
    );
    rec.goal(
      "1M: ≥ 95 % of the exact BM25 top 5 kept",
      top.top5Agreement === null ? "not measured" : `${fmt(100 * top.top5Agreement)} %`,
      top.top5Agreement === null ? null : top.top5Agreement >= 0.95,
    );
  } else {
    const largest = measured[measured.length - 1];
    rec.goal(
      "prefetchAll p99 ≤ 2× raw FTS5 at 1M",
      largest
        ? `1M not measured; at ${largest.size.toLocaleString("en-US")}: ${ratio(largest.prefetch.p99, largest.raw.p99)}`
        : "not measured",
      null,
    );
    rec.goal(
      "prefetchAll p99 < 10 ms at 1M",
      largest ? `1M not measured; at ${largest.size.toLocaleString("en-US")}: ${fmt(largest.prefetch.p99)} ms` : "not measured",
      null,
    );
  }
  const hundredK = measured.find((m) => m.size === 100_000);
  rec.goal(
    "100k: ≥ 99 % of the exact BM25 top 5 kept",
    hundredK?.top5Agreement == null ? "not measured" : `${fmt(100 * hundredK.top5Agreement)} %`,
    hundredK?.top5Agreement == null ? null : hundredK.top5Agreement >= 0.99,
  );
  rec.result.data = { seed: SEED, queries: QUERY_COUNT, sampleQueries: queries.slice(0, 5), schemaHash: schema, measured };
  rec.result.chart = {
    kind: "line",
    title: "prefetch: latency vs store size",
    xLabel: "stored items",
    yLabel: "ms per query (log)",
    logX: true,
    logY: true,
    series: [
      { name: "prefetchAll p99", points: measured.map((m) => [m.size, m.prefetch.p99]) },
      { name: "prefetchAll median", points: measured.map((m) => [m.size, m.prefetch.median]) },
      { name: "raw FTS5 p99", points: measured.map((m) => [m.size, m.raw.p99]), dashed: true },
      { name: "raw FTS5 median", points: measured.map((m) => [m.size, m.raw.median]), dashed: true },
    ],
    thresholds: [{ label: "goal < 10 ms", y: 10 }],
  };
  return rec.finish();
}
