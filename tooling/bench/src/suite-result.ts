import os from "node:os";
import type { Table } from "./table.js";
import type { Chart } from "./svg-chart.js";

/** One goal from the issue table and whether this run met it. `met: null` = not measured. */
export interface GoalCheck {
  goal: string;
  measured: string;
  met: boolean | null;
}

/** The machine a run came from; printed beside every result. */
export interface MachineInfo {
  cpu: string;
  cores: number;
  memoryGiB: number;
  platform: string;
  node: string;
  /** 1-minute load average when the suite started: other work on a shared machine skews timings. */
  loadAverage: number;
}

/** Everything one suite produced. Written as `bench-results/<suite>.json`. */
export interface SuiteResult {
  suite: string;
  status: "ok" | "skipped" | "partial";
  /** Why the suite (or a part of it) did not run; never replaced by made-up numbers. */
  skipped: string[];
  quick: boolean;
  startedAt: string;
  durationMs: number;
  machine: MachineInfo;
  tables: Table[];
  goals: GoalCheck[];
  notes: string[];
  chart: Chart | null;
  /** Raw measurements for anyone re-plotting. */
  data: Record<string, unknown>;
}

/** Describes the current machine. */
export function machineInfo(): MachineInfo {
  const cpus = os.cpus();
  return {
    cpu: cpus[0]?.model?.trim() ?? "unknown",
    cores: cpus.length,
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    node: process.version,
    loadAverage: Math.round(os.loadavg()[0]! * 100) / 100,
  };
}

/** What a suite receives from the runner. */
export interface SuiteContext {
  quick: boolean;
  /** Repository root (`bench-results/` lives here). */
  repoRoot: string;
  /** Directory for cached corpora (gitignored). */
  cacheDir: string;
  /** `--build-cache`: build cached corpora even when that takes longer than the suite budget. */
  buildCache: boolean;
  /** `--data <file>` for the locomo suite. */
  dataFile?: string;
  /** Progress lines go to stderr so stdout stays a clean markdown report. */
  log(message: string): void;
}

/** Builder used by suites so that skipped parts and goals are recorded uniformly. */
export class SuiteRecorder {
  readonly result: SuiteResult;
  private readonly start = Date.now();

  constructor(suite: string, quick: boolean) {
    this.result = {
      suite,
      status: "ok",
      skipped: [],
      quick,
      startedAt: new Date().toISOString(),
      durationMs: 0,
      machine: machineInfo(),
      tables: [],
      goals: [],
      notes: [],
      chart: null,
      data: {},
    };
  }

  /** Records a part that could not run, with the reason (e.g. "@hermes/memory-sqlite is not built"). */
  skip(reason: string): void {
    this.result.skipped.push(reason);
    this.result.status = "partial";
  }

  table(table: Table): void {
    this.result.tables.push(table);
  }

  goal(goal: string, measured: string, met: boolean | null): void {
    this.result.goals.push({ goal, measured, met });
  }

  note(text: string): void {
    this.result.notes.push(text);
  }

  /** Finalises: a suite with no table at all is "skipped". */
  finish(): SuiteResult {
    this.result.durationMs = Date.now() - this.start;
    if (this.result.tables.length === 0) this.result.status = "skipped";
    return this.result;
  }
}
