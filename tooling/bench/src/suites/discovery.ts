import { spawnSync } from "node:child_process";
import path from "node:path";
import {
  NODE_FIRST_CALL_TIMER,
  PYTHON_ENTRY_POINT_GROUP,
  PYTHON_TIMER,
  writePackageRoot,
  writeSitePackages,
  type DependencyLayout,
} from "../discovery-fixture.js";
import { summarize, type Summary } from "../stats.js";
import { SuiteRecorder, type SuiteContext, type SuiteResult } from "../suite-result.js";
import { LATENCY_COLUMNS, fmt, latencyCells, ratio } from "../table.js";
import { loadCore, settle } from "../targets.js";
import { makeTempDir } from "../temp-dir.js";
import { timeTask, wallClock } from "../timing.js";

const TOTAL = 1000;
const LAYOUTS = ["npm-flat", "pnpm-symlinked"] as const;
const WITH_MANIFEST = 10;

/** Counts the generated providers in whatever shape discovery returns (array or `{providers}`). */
function countGenerated(result: unknown): number {
  const list = Array.isArray(result) ? result : ((result as { providers?: unknown[] } | null)?.providers ?? []);
  return list.filter(
    (p) => typeof (p as { name?: unknown }).name === "string" && (p as { name: string }).name.startsWith("bench-provider-"),
  ).length;
}

function runPython(
  site: string,
  quick: boolean,
): { ok: true; samples: number[]; first: number; found: number; version: string } | { ok: false; reason: string } {
  const runs = quick ? 10 : 60;
  const r = spawnSync("python3", ["-c", PYTHON_TIMER, site, "3", String(runs), PYTHON_ENTRY_POINT_GROUP], {
    encoding: "utf8",
    timeout: 120_000,
  });
  if (r.error) return { ok: false, reason: `python3 is not available (${(r.error as NodeJS.ErrnoException).code ?? r.error.message})` };
  if (r.status !== 0) return { ok: false, reason: `python3 failed: ${r.stderr.trim().split("\n").pop()}` };
  try {
    return {
      ok: true,
      ...(JSON.parse(r.stdout.trim().split("\n").pop() as string) as { samples: number[]; first: number; found: number; version: string }),
    };
  } catch {
    return { ok: false, reason: `python3 printed no timing JSON: ${r.stdout.slice(0, 200)}` };
  }
}

/** One JSON line printed by a child process, or why there is none. */
function childJson<T>(command: string, args: string[]): { ok: true; value: T } | { ok: false; reason: string } {
  const r = spawnSync(command, args, { encoding: "utf8", timeout: 60_000 });
  if (r.error) return { ok: false, reason: `${command} could not run (${(r.error as NodeJS.ErrnoException).code ?? r.error.message})` };
  if (r.status !== 0) return { ok: false, reason: `${command} failed: ${r.stderr.trim().split("\n").pop()}` };
  try {
    return { ok: true, value: JSON.parse(r.stdout.trim().split("\n").pop() as string) as T };
  } catch {
    return { ok: false, reason: `${command} printed no JSON: ${r.stdout.slice(0, 200)}` };
  }
}

/**
 * The first call in `runs` fresh processes (nothing cached in the process): Python's
 * `entry_points()` and `discoverMemoryProviders` in each layout, as a table of its own.
 */
function firstCallTable(
  rec: SuiteRecorder,
  ctx: SuiteContext,
  site: string,
  roots: Array<{ layout: DependencyLayout; options: Record<string, unknown> }>,
  data: Record<string, unknown>,
): void {
  const runs = ctx.quick ? 3 : 10;
  const rows: Array<Array<string | number>> = [];
  const python: number[] = [];
  for (let i = 0; i < runs; i++) {
    const r = childJson<{ first: number }>("python3", ["-c", PYTHON_TIMER, site, "0", "0", PYTHON_ENTRY_POINT_GROUP]);
    if (!r.ok) {
      rec.skip(`Python first call: ${r.reason}`);
      break;
    }
    python.push(r.value.first);
  }
  const py = python.length === runs ? summarize(python) : null;
  if (py) rows.push([`Python importlib.metadata.entry_points() (baseline)`, "site-packages", ...latencyCells(py, "ms"), "1×", ""]);
  const coreUrl = import.meta.resolve("@hermes/memory-core");
  const firstCalls: Record<string, Summary> = {};
  for (const { layout, options } of roots) {
    const samples: number[] = [];
    let found = 0;
    for (let i = 0; i < runs; i++) {
      const r = childJson<{ ms: number; found: number }>(process.execPath, [
        "--input-type=module",
        "-e",
        NODE_FIRST_CALL_TIMER,
        coreUrl,
        JSON.stringify(options),
      ]);
      if (!r.ok) {
        rec.skip(`discoverMemoryProviders first call (${layout}): ${r.reason}`);
        return;
      }
      samples.push(r.value.ms);
      found = r.value.found;
    }
    const s = summarize(samples);
    firstCalls[layout] = s;
    rows.push(["discoverMemoryProviders", layout, ...latencyCells(s, "ms"), py ? ratio(s.median, py.median) : "n/a", String(found)]);
  }
  data.firstCall = { runs, python: py, ...firstCalls };
  rec.table({
    title: `discovery: first call in a fresh process (nothing cached in the process), ${runs} processes each (ratio = median vs Python's first call)`,
    columns: ["what", "layout", ...LATENCY_COLUMNS, "ratio", "found"],
    rows,
  });
}

/** `discovery`: `discoverMemoryProviders` over 1,000 direct dependencies vs Python entry points. */
export async function runDiscoverySuite(ctx: SuiteContext): Promise<SuiteResult> {
  const rec = new SuiteRecorder("discovery", ctx.quick);
  const tmp = makeTempDir("discovery");
  const rows: Array<Array<string | number>> = [];
  const data: Record<string, unknown> = { dependencies: TOTAL, withManifest: WITH_MANIFEST };
  const node: Partial<Record<DependencyLayout, Summary>> = {};
  try {
    ctx.log("discovery: generating 1,000 .dist-info folders for the Python baseline");
    const site = path.join(tmp.dir, "site-packages");
    writeSitePackages(site, TOTAL, WITH_MANIFEST);
    // The roots are written before the Python baseline runs, so their files are seconds old when
    // timed, as an installed project's are: discovery reads a manifest changed in the last 2 s again.
    for (const layout of LAYOUTS) {
      ctx.log(`discovery: generating a ${layout} root with ${TOTAL} dependencies`);
      writePackageRoot(path.join(tmp.dir, layout), layout, TOTAL, WITH_MANIFEST);
    }
    const py = runPython(site, ctx.quick);
    let pySummary: Summary | null = null;
    if (py.ok) {
      pySummary = summarize(py.samples);
      data.python = { version: py.version, found: py.found, firstCallMs: py.first, summary: pySummary };
      rows.push([
        `Python ${py.version} importlib.metadata.entry_points() (baseline)`,
        "site-packages",
        ...latencyCells(pySummary, "ms"),
        "1×",
        String(py.found),
      ]);
      if (py.found !== WITH_MANIFEST) rec.note(`Python found ${py.found} entry points, expected ${WITH_MANIFEST}`);
    } else {
      rec.skip(`Python baseline: ${py.reason}`);
    }

    const roots: Array<{ layout: DependencyLayout; options: Record<string, unknown> }> = [];
    const core = await loadCore(["discoverMemoryProviders"]);
    if (!core.ok) {
      rec.skip(`discoverMemoryProviders: ${core.reason}`);
    } else {
      const discover = core.value.discoverMemoryProviders!;
      for (const layout of LAYOUTS) {
        const root = path.join(tmp.dir, layout);
        const hermesHome = path.join(tmp.dir, `home-${layout}`);
        const options = { packageRoots: [root], hermesHome, cwd: root };
        roots.push({ layout, options });
        const first = await wallClock(() => settle(discover(options)));
        const found = countGenerated(first.value);
        ctx.log(`discovery: timing ${layout}`);
        const s = await timeTask(
          `discover ${layout}`,
          () => discover(options),
          ctx.quick ? { timeMs: 300, iterations: 10 } : { timeMs: 3_000, iterations: 40 },
        );
        node[layout] = s;
        data[layout] = { firstCallMs: first.ms, found, summary: s };
        rows.push([
          "discoverMemoryProviders",
          layout,
          ...latencyCells(s, "ms"),
          pySummary ? ratio(s.median, pySummary.median) : "n/a",
          String(found),
        ]);
        if (found !== WITH_MANIFEST) rec.note(`${layout}: discovery found ${found} of the ${WITH_MANIFEST} generated providers`);
        rec.note(`${layout}: first (cold-ish) call ${fmt(first.ms)} ms`);
      }
    }
    if (py.ok)
      rec.note(
        `Python first call ${fmt(py.first)} ms; repeated calls reuse importlib.metadata's path caches, as repeated Node calls reuse the OS file cache`,
      );
    rec.table({
      title: `discovery: ${TOTAL.toLocaleString("en-US")} direct dependencies, ${WITH_MANIFEST} providers (ratio = median vs Python)`,
      columns: ["what", "layout", ...LATENCY_COLUMNS, "ratio", "found"],
      rows,
    });
    if (roots.length > 0) firstCallTable(rec, ctx, site, roots, data);
    for (const layout of ["npm-flat", "pnpm-symlinked"] as const) {
      const s = node[layout];
      rec.goal(
        `${layout}: ≤ 0.5× Python (median)`,
        s && pySummary ? `${fmt(s.median)} vs ${fmt(pySummary.median)} ms (${ratio(s.median, pySummary.median)})` : "not measured",
        s && pySummary ? s.median <= 0.5 * pySummary.median : null,
      );
      rec.goal(`${layout}: < 50 ms (p99)`, s ? `${fmt(s.p99)} ms` : "not measured", s ? s.p99 < 50 : null);
    }
    rec.result.data = data;
    const series = [
      ...(pySummary ? [{ name: "Python entry_points()", s: pySummary, dashed: true }] : []),
      ...(["npm-flat", "pnpm-symlinked"] as const).flatMap((l) =>
        node[l] ? [{ name: `discover (${l})`, s: node[l]!, dashed: false }] : [],
      ),
    ];
    rec.result.chart = {
      kind: "bar",
      title: "discovery: 1,000 dependencies, 10 providers",
      xLabel: "statistic",
      yLabel: "ms per call",
      categories: ["median", "p95", "p99"],
      series: series.map(({ name, s, dashed }) => ({
        name,
        dashed,
        points: [
          [0, s.median],
          [1, s.p95],
          [2, s.p99],
        ] as Array<[number, number]>,
      })),
      thresholds: [{ label: "goal < 50 ms", y: 50 }],
    };
  } finally {
    tmp.remove();
  }
  return rec.finish();
}
