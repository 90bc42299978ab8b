import { spawnSync } from "node:child_process";
import path from "node:path";
import {
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

    const core = await loadCore(["discoverMemoryProviders"]);
    if (!core.ok) {
      rec.skip(`discoverMemoryProviders: ${core.reason}`);
    } else {
      const discover = core.value.discoverMemoryProviders!;
      for (const layout of ["npm-flat", "pnpm-symlinked"] as const) {
        const root = path.join(tmp.dir, layout);
        ctx.log(`discovery: generating a ${layout} root with ${TOTAL} dependencies`);
        writePackageRoot(root, layout, TOTAL, WITH_MANIFEST);
        const hermesHome = path.join(tmp.dir, `home-${layout}`);
        const options = { packageRoots: [root], hermesHome, cwd: root };
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
