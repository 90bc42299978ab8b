/**
 * Test support shared by the workspace's suites (never published): what several packages' tests
 * need and would otherwise copy.
 */
import { fork, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";

export { fenceTagsIn, fenceViolations, hostileFenceTag, hostileRecallText, type HostileRecall } from "./fence-fuzz.js";
export { fillDisk, mountTmpfs, type TmpfsMount } from "./tmpfs.js";

/**
 * A host project in `root` whose `package.json` depends on `packageName`, installed as a link to
 * `packageDir` (a workspace package, built): what `openMemory()` discovers the way an app's
 * dependency is found. Also makes `root/home` for the profile. Returns both paths.
 */
export function hostProjectWith(root: string, packageName: string, packageDir: string): { project: string; home: string } {
  const project = path.join(root, "project");
  const home = path.join(root, "home");
  const link = path.join(project, "node_modules", ...packageName.split("/"));
  fs.mkdirSync(path.dirname(link), { recursive: true });
  fs.mkdirSync(home, { recursive: true });
  fs.writeFileSync(
    path.join(project, "package.json"),
    JSON.stringify({ name: "host", private: true, dependencies: { [packageName]: "*" } }),
  );
  fs.symlinkSync(packageDir, link, "dir");
  return { project, home };
}

/** Deterministic pseudo-random numbers in [0, 1) (mulberry32): the same sequence for a seed on every run and platform. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Resolve once `condition()` holds, checking every few ms on timers; throw after `timeoutMs`. */
export async function until(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** How long the event loop was held up, measured by `stallMeter`. */
export interface StallMeter {
  /** The longest gap so far between two ticks (ms), counting the gap up to now. */
  longest(): number;
  /** Stop ticking; returns `longest()`. */
  stop(): number;
}

/**
 * Start measuring the longest gap between ticks of a 5 ms interval: how long the event loop was
 * held up by synchronous work (a blocking lock wait shows as a gap as long as the wait).
 */
export function stallMeter(): StallMeter {
  let last = performance.now();
  let longest = 0;
  const tick = (): void => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  };
  const ticker = setInterval(tick, 5);
  return {
    longest() {
      tick();
      return longest;
    },
    stop() {
      clearInterval(ticker);
      tick();
      return longest;
    },
  };
}

/** Run `work` and count how often a zero-delay timer fired before it settled (0: it held the event loop throughout). */
export async function ticksDuring<T>(work: () => Promise<T>): Promise<{ value: T; ticks: number }> {
  let ticks = 0;
  let running = true;
  const tick = (): void => {
    ticks++;
    if (running) setTimeout(tick, 0);
  };
  setTimeout(tick, 0);
  try {
    return { value: await work(), ticks };
  } finally {
    running = false;
  }
}

/** A write lock another process holds (see `holdWriteLock`). */
export interface HeldWriteLock {
  /** Ask the holder to roll back and exit; resolves once it has exited. */
  release(): Promise<void>;
}

/** The lock holder's script: compiled beside this module, or its source run through tsx (this package's own tests). */
const WRITE_LOCK_CHILD = ((): { file: string; execArgv: string[] } => {
  const compiled = fileURLToPath(new URL("./write-lock-child.js", import.meta.url));
  if (fs.existsSync(compiled)) return { file: compiled, execArgv: [] };
  return { file: fileURLToPath(new URL("./write-lock-child.ts", import.meta.url)), execArgv: ["--import", "tsx"] };
})();
const holders = new Set<ChildProcess>();

/**
 * Another process holding the write lock of the SQLite file `file` (`BEGIN IMMEDIATE`), as a second
 * agent or an import in the middle of a write transaction does, for `holdMs` or until `release()`.
 * Resolves once the lock is held; rejects with the child's stderr when it exits before locking.
 * Call `stopWriteLockHolders()` after each test, so a failing test leaves no holder behind.
 */
export async function holdWriteLock(file: string, holdMs: number): Promise<HeldWriteLock> {
  const child = fork(WRITE_LOCK_CHILD.file, [file, String(holdMs)], {
    execArgv: WRITE_LOCK_CHILD.execArgv,
    stdio: ["ignore", "ignore", "pipe", "ipc"],
  });
  holders.add(child);
  let stderr = "";
  child.stderr!.on("data", (chunk) => (stderr += String(chunk)));
  const exited = new Promise<void>((resolve) =>
    child.once("exit", () => {
      holders.delete(child);
      resolve();
    }),
  );
  await new Promise<void>((resolve, reject) => {
    child.on("message", (m) => (m as { type?: string }).type === "locked" && resolve());
    child.once("exit", (code) => reject(new Error(`lock holder exited with ${code} before locking: ${stderr}`)));
  });
  return {
    async release() {
      // The child may be releasing on its own already: a send that finds it gone is fine.
      if (child.connected) child.send("release", () => undefined);
      await exited;
    },
  };
}

/** Kill every lock holder still running (for `afterEach`). */
export function stopWriteLockHolders(): void {
  for (const child of holders) child.kill();
  holders.clear();
}

/**
 * Rows of `table` in the SQLite database `file` alone, without its write-ahead log: counted in a
 * copy of just that file, so only what checkpoints have copied into it counts. `-1` when the copy
 * is not a consistent database (a checkpoint was writing to the file while it was copied).
 */
export function rowsInFileAlone(file: string, table: string): number {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rows-in-file-"));
  try {
    const copy = path.join(dir, "copy.db");
    fs.copyFileSync(file, copy);
    const db = new Database(copy, { readonly: true });
    try {
      return db
        .prepare(`SELECT COUNT(*) FROM "${table.replace(/"/g, '""')}"`)
        .pluck()
        .get() as number;
    } catch {
      return -1;
    } finally {
      db.close();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
