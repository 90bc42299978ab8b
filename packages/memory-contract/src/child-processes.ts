import { randomBytes } from "node:crypto";
import fs from "node:fs";
import { isMainThread } from "node:worker_threads";
import { delay, hasOwn, killProcess, toText } from "./intrinsics.js";

/**
 * Environment variable set while a contract run is going on; every process the provider starts
 * inherits it unless it is given an environment of its own, so even a process that was detached
 * and re-parented (a double-forked daemon) is recognised as started by the run.
 */
export const RUN_MARKER_ENV = "HERMES_CONTRACT_RUN";

/** How long a process gets between SIGTERM and SIGKILL. */
export const KILL_GRACE_MS = 2_000;

/** Set by `watchChildProcessesFromNow()`: the processes already running then, and the marker. */
let early: { before: Set<string>; marker: string } | undefined;

/** One running process, read from `/proc/<pid>/stat`. */
export interface ProcessEntry {
  pid: number;
  ppid: number;
  /** `S`, `R`, `Z`…; a zombie (`Z`, `X`) has exited and is not counted as running. */
  state: string;
  /** Start time in clock ticks since boot: tells a process from a later one that reused its pid. */
  startTime: string;
}

function readStat(pid: number): ProcessEntry | undefined {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, "latin1");
  } catch {
    return undefined;
  }
  // "pid (comm) state ppid …": comm may itself contain spaces and parentheses.
  const close = text.lastIndexOf(")");
  if (close < 0) return undefined;
  const fields = text.slice(close + 2).split(" ");
  const state = fields[0] ?? "";
  const ppid = Number(fields[1]);
  const startTime = fields[19] ?? "";
  return { pid, ppid, state, startTime };
}

function isRunning(entry: ProcessEntry | undefined): entry is ProcessEntry {
  return entry !== undefined && entry.state !== "Z" && entry.state !== "X";
}

function allProcesses(): ProcessEntry[] {
  const out: ProcessEntry[] = [];
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const entry = readStat(Number(name));
    if (isRunning(entry)) out.push(entry);
  }
  return out;
}

function carriesMarker(pid: number, marker: string): boolean {
  try {
    return fs.readFileSync(`/proc/${pid}/environ`, "latin1").split("\0").includes(marker);
  } catch {
    return false;
  }
}

/** The command line of `pid`, shortened, for the report. */
function commandLine(pid: number): string {
  try {
    const text = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").replace(/\s+/g, " ").trim();
    return text.length > 120 ? `${text.slice(0, 120)}…` : text || "?";
  } catch {
    return "?";
  }
}

function identity(entry: ProcessEntry): string {
  return `${entry.pid}:${entry.startTime}`;
}

/** A process the provider left behind, as reported. */
export interface LeftoverProcess {
  entry: ProcessEntry;
  command: string;
}

/**
 * Finds the processes a contract run started and left running: descendants of this process that
 * were not there when the run began, and any process carrying the run's marker variable. Linux
 * only (it reads `/proc`); elsewhere `unsupportedReason` says why nothing is checked.
 */
export class ChildProcessWatch {
  readonly unsupportedReason: string | undefined;
  private readonly marker: string;
  private readonly before = new Set<string>();
  private savedEnv: { value: string | undefined } | undefined;

  constructor() {
    this.marker = early?.marker ?? `${RUN_MARKER_ENV}=${randomBytes(8).toString("hex")}`;
    if (process.platform !== "linux") {
      this.unsupportedReason = `child processes are found through /proc, which ${process.platform} does not have`;
    } else if (readStat(process.pid) === undefined) {
      this.unsupportedReason = "/proc/<pid>/stat cannot be read here, so child processes cannot be listed";
    } else {
      this.unsupportedReason = undefined;
    }
  }

  /** Remember the processes already running and set the marker variable. */
  start(): void {
    if (this.unsupportedReason !== undefined || this.savedEnv) return;
    if (early) {
      // The marker is already set; processes started since (at import) count as the run's.
      for (const id of early.before) this.before.add(id);
      return;
    }
    for (const entry of this.descendants(allProcesses())) this.before.add(identity(entry));
    this.savedEnv = { value: hasOwn(process.env, RUN_MARKER_ENV) ? process.env[RUN_MARKER_ENV] : undefined };
    process.env[RUN_MARKER_ENV] = this.marker.slice(RUN_MARKER_ENV.length + 1);
  }

  /** Put the marker variable back as it was. */
  stop(): void {
    if (!this.savedEnv) return;
    if (this.savedEnv.value === undefined) delete process.env[RUN_MARKER_ENV];
    else process.env[RUN_MARKER_ENV] = this.savedEnv.value;
    this.savedEnv = undefined;
  }

  /** The running descendants of this process (none in a worker thread). */
  listDescendants(): ProcessEntry[] {
    return this.unsupportedReason === undefined ? this.descendants(allProcesses()) : [];
  }

  private descendants(processes: readonly ProcessEntry[]): ProcessEntry[] {
    // In a worker thread, process.pid is shared with every other thread (a test runner's other
    // workers), so only the marker tells this run's processes apart.
    if (!isMainThread) return [];
    const byParent = new Map<number, ProcessEntry[]>();
    for (const entry of processes) {
      const list = byParent.get(entry.ppid) ?? [];
      list.push(entry);
      byParent.set(entry.ppid, list);
    }
    const out: ProcessEntry[] = [];
    const queue = [process.pid];
    while (queue.length > 0) {
      const parent = queue.shift() as number;
      for (const child of byParent.get(parent) ?? []) {
        out.push(child);
        queue.push(child.pid);
      }
    }
    return out;
  }

  /** Processes started during the run that are still running. */
  leftovers(): LeftoverProcess[] {
    if (this.unsupportedReason !== undefined) return [];
    const processes = allProcesses();
    const found = new Map<string, ProcessEntry>();
    for (const entry of this.descendants(processes)) {
      if (!this.before.has(identity(entry))) found.set(identity(entry), entry);
    }
    for (const entry of processes) {
      if (entry.pid !== process.pid && !found.has(identity(entry)) && carriesMarker(entry.pid, this.marker))
        found.set(identity(entry), entry);
    }
    return [...found.values()].sort((a, b) => a.pid - b.pid).map((entry) => ({ entry, command: commandLine(entry.pid) }));
  }

  /** Wait up to `graceMs` for the run's processes to end by themselves; returns those still running. */
  async settle(graceMs: number): Promise<LeftoverProcess[]> {
    const deadline = Date.now() + graceMs;
    for (;;) {
      const left = this.leftovers();
      if (left.length === 0 || Date.now() >= deadline) return left;
      await delay(50);
    }
  }

  /**
   * Stop `processes`: SIGTERM, then SIGKILL for those still running after `graceMs`. A pid that
   * now belongs to another process (different start time) is left alone. Returns one line per
   * process saying how it ended.
   */
  async stopAll(processes: readonly LeftoverProcess[], graceMs = KILL_GRACE_MS): Promise<string[]> {
    const stillSame = (entry: ProcessEntry): boolean => {
      const now = readStat(entry.pid);
      return isRunning(now) && now.startTime === entry.startTime;
    };
    const signal = (entry: ProcessEntry, sig: NodeJS.Signals): boolean => {
      try {
        return stillSame(entry) && killProcess(entry.pid, sig);
      } catch {
        return false;
      }
    };
    const outcome = new Map<number, string>();
    for (const { entry } of processes) outcome.set(entry.pid, signal(entry, "SIGTERM") ? "ended by SIGTERM" : "had already ended");
    const deadline = Date.now() + graceMs;
    while (processes.some(({ entry }) => stillSame(entry)) && Date.now() < deadline) await delay(50);
    for (const { entry } of processes) {
      if (stillSame(entry) && signal(entry, "SIGKILL")) outcome.set(entry.pid, `ignored SIGTERM for ${graceMs} ms, killed with SIGKILL`);
    }
    const killDeadline = Date.now() + 1_000;
    while (processes.some(({ entry }) => stillSame(entry)) && Date.now() < killDeadline) await delay(20);
    return processes.map(({ entry, command }) => {
      const how = stillSame(entry) ? "still running after SIGKILL" : (outcome.get(entry.pid) ?? "ended");
      return `pid ${toText(entry.pid)} (${command}): ${how}`;
    });
  }
}

/**
 * For the CLI, before it imports the package: list the processes already running and set the
 * marker variable now, so that processes the package starts while it is imported count as the
 * run's too (a test runner calling the kit in-process takes the list when each run starts
 * instead, after its own set-up). The marker stays set for the rest of the process.
 */
export function watchChildProcessesFromNow(): void {
  if (early || process.platform !== "linux" || readStat(process.pid) === undefined) return;
  const marker = `${RUN_MARKER_ENV}=${randomBytes(8).toString("hex")}`;
  const before = new Set<string>();
  for (const entry of new ChildProcessWatch().listDescendants()) before.add(identity(entry));
  early = { before, marker };
  process.env[RUN_MARKER_ENV] = marker.slice(RUN_MARKER_ENV.length + 1);
}
