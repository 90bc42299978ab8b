/** Parsed command line of `pnpm bench`. */
export interface BenchArgs {
  suites: string[];
  quick: boolean;
  buildCache: boolean;
  dataFile?: string;
  outDir?: string;
  help: boolean;
}

/** The suites, in the order `pnpm bench` runs them. */
export const SUITE_NAMES = ["sync", "prefetch", "discovery", "vector", "locomo", "filtered", "isolation", "erasure"] as const;

/**
 * The suites a bare `pnpm bench` runs: all but `filtered`, which takes about a minute even with its
 * corpora cached and minutes to build them, and `erasure`, which builds stores of 100,000 items per
 * provider; they run only when named.
 */
export const DEFAULT_SUITES: readonly string[] = SUITE_NAMES.filter((name) => name !== "filtered" && name !== "erasure");

/**
 * Parses `[suite...] [--quick] [--build-cache] [--data <file>] [--out <dir>]`. A bare `--` (pnpm forwards it) is
 * ignored. Throws with the usage on anything unknown, so a typo never runs the wrong suites.
 */
export function parseArgs(argv: readonly string[]): BenchArgs {
  const args: BenchArgs = { suites: [], quick: false, buildCache: false, help: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === "--") continue;
    if (a === "--quick") args.quick = true;
    else if (a === "--build-cache") args.buildCache = true;
    else if (a === "--help" || a === "-h") args.help = true;
    else if (a === "--data" || a === "--out") {
      const value = argv[++i];
      if (value === undefined || value.startsWith("--")) throw new Error(`${a} needs a value.\n${USAGE}`);
      if (a === "--data") args.dataFile = value;
      else args.outDir = value;
    } else if (a.startsWith("--data=")) args.dataFile = a.slice(7);
    else if (a.startsWith("--out=")) args.outDir = a.slice(6);
    else if ((SUITE_NAMES as readonly string[]).includes(a)) {
      if (!args.suites.includes(a)) args.suites.push(a);
    } else throw new Error(`Unknown argument "${a}".\n${USAGE}`);
  }
  if (args.suites.length === 0) args.suites = [...DEFAULT_SUITES];
  else args.suites.sort((x, y) => SUITE_NAMES.indexOf(x as never) - SUITE_NAMES.indexOf(y as never));
  return args;
}

/** Usage text. */
export const USAGE = `usage: pnpm bench [${SUITE_NAMES.join("|")} ...] [--quick] [--build-cache] [--data <locomo.json>] [--out <dir>]
  (no suite: every suite but filtered, which runs only when named)
  --quick   small sizes (10k) for CI smoke runs; results go to bench-results/.quick/ unless --out is given
  --build-cache  build cached corpora (1M-item prefetch DB) even past the per-suite time budget
  --data    LoCoMo file for the locomo suite (default: ../shared/data/locomo/locomo-dev.json)
  --out     where to write <suite>.json and <suite>.svg (default: bench-results/)`;
