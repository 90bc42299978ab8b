/**
 * `pnpm bench [suite...] [--quick] [--data <file>] [--out <dir>]`: runs the suites one after the
 * other, prints a markdown table per suite with its same-run baseline, writes
 * `bench-results/<suite>.json` and `<suite>.svg`, and (full runs only) refreshes the results in
 * `tooling/bench/README.md`.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { USAGE, parseArgs } from "./cli-args.js";
import { renderSuiteMarkdown, updateReadmeBlock, writeSuiteFiles } from "./report-writer.js";
import { SuiteRecorder, type SuiteContext, type SuiteResult } from "./suite-result.js";
import { runDiscoverySuite } from "./suites/discovery.js";
import { runErasureSuite } from "./suites/erasure.js";
import { runFilteredSuite } from "./suites/filtered.js";
import { runIsolationSuite } from "./suites/isolation.js";
import { runLocomoSuite } from "./suites/locomo.js";
import { runPrefetchSuite } from "./suites/prefetch.js";
import { runSyncSuite } from "./suites/sync.js";
import { runVectorSuite } from "./suites/vector.js";

const SUITES: Record<string, (ctx: SuiteContext) => Promise<SuiteResult>> = {
  sync: runSyncSuite,
  prefetch: runPrefetchSuite,
  discovery: runDiscoverySuite,
  vector: runVectorSuite,
  locomo: runLocomoSuite,
  filtered: runFilteredSuite,
  isolation: runIsolationSuite,
  erasure: runErasureSuite,
};

const benchDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const repoRoot = path.resolve(benchDir, "../..");

async function main(): Promise<number> {
  let args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (error) {
    console.error((error as Error).message);
    return 2;
  }
  if (args.help) {
    console.log(USAGE);
    return 0;
  }
  const resultsDir = path.join(repoRoot, "bench-results");
  const outDir = args.outDir
    ? path.resolve(process.env.INIT_CWD ?? process.cwd(), args.outDir)
    : args.quick
      ? path.join(resultsDir, ".quick")
      : resultsDir;
  const ctx: SuiteContext = {
    quick: args.quick,
    buildCache: args.buildCache,
    repoRoot,
    cacheDir: path.join(resultsDir, ".cache"),
    ...(args.dataFile ? { dataFile: path.resolve(process.env.INIT_CWD ?? process.cwd(), args.dataFile) } : {}),
    log: (m) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${m}\n`),
  };
  const readmePath = path.join(benchDir, "README.md");
  let failed = 0;
  for (const name of args.suites) {
    const run = SUITES[name]!;
    let result: SuiteResult;
    try {
      result = await run(ctx);
    } catch (error) {
      // A crashing suite is reported, not hidden; the others still run.
      failed++;
      const rec = new SuiteRecorder(name, args.quick);
      rec.skip(`the suite crashed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      result = rec.finish();
    }
    const files = writeSuiteFiles(result, outDir);
    const svgLink = files.svg ? path.relative(benchDir, files.svg).split(path.sep).join("/") : undefined;
    const markdown = renderSuiteMarkdown(result, svgLink);
    process.stdout.write(`${markdown}\n`);
    if (!args.quick && !args.outDir && fs.existsSync(readmePath)) {
      const updated = updateReadmeBlock(fs.readFileSync(readmePath, "utf8"), name, markdown);
      if (updated !== null) fs.writeFileSync(readmePath, updated);
    }
  }
  ctx.log(`results written to ${path.relative(process.env.INIT_CWD ?? process.cwd(), outDir) || "."}`);
  return failed > 0 ? 1 : 0;
}

process.exitCode = await main();
