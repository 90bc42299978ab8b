/**
 * Copying a store's write-ahead log back into its database file on a second thread.
 *
 * In WAL mode a commit appends pages to the `-wal` file; a checkpoint later copies them into the
 * database file and syncs both. SQLite runs that checkpoint inside the commit that takes the log
 * past `wal_autocheckpoint` pages (1,000 by default), on the writing thread. In a burst of turns
 * (an import, a flush of a long queue) those checkpoints took about a fifth of the write time.
 *
 * `WalCheckpointer` moves them to a thread of their own with its own connection, asked after every
 * `CHECKPOINT_ITEMS` items or `CHECKPOINT_COMMITS` write transactions. The log only starts over
 * when a checkpoint has copied all of it before the next write begins, which a thread working
 * beside a writer that never pauses rarely manages; so once the log file holds more than
 * `WAL_LIMIT_BYTES`, the writer waits for the thread's checkpoint and runs one itself, as SQLite
 * would have, and the log starts over at the next write (unless a reader still needs it, as with
 * SQLite's own checkpoints). A store that writes less never starts the thread and keeps SQLite's
 * usual checkpoints.
 *
 * A checkpoint is PASSIVE: it copies what no reader still needs and never waits for, or blocks,
 * a reader or the writer. What it copies was committed already; a checkpoint that fails (a full
 * disk) leaves it in the log, where it is as safe as before, and is tried again later.
 *
 * Measured with the bench's sync suite (20,000 turns through `syncAll`, six alternating rounds):
 * the SQLite provider persisted 61 % of the raw insert rate with checkpoints on their own thread,
 * against 46 % with SQLite's checkpoints on the writer.
 */
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { Worker } from "node:worker_threads";
import { describeError } from "@hermes/memory-core";
import type { SqliteDb } from "./sqlite-store.js";

/** Items written since the last checkpoint request that make the next commit ask for one. */
export const CHECKPOINT_ITEMS = 256;

/** Write transactions since the last checkpoint request that make the next commit ask for one. */
export const CHECKPOINT_COMMITS = 64;

/**
 * Size of the log file past which, while the thread runs, the writer checkpoints itself after a
 * commit (and to which SQLite cuts the file when the log starts over).
 */
export const WAL_LIMIT_BYTES = 16 * 1024 * 1024;

/** Failed checkpoints in a row after which the thread is stopped. */
const MAX_FAILURES = 3;

/** Default of `WalCheckpointerOptions.waitMs`. */
const DEFAULT_WAIT_MS = 2000;

// Shared control words (Int32): [0] the thread's state (0 opening, 1 open, 2 closed, -1 could not
// open); [1] 1 while a requested checkpoint has not finished; [2] checkpoints run.
const STATE = 0;
const PENDING = 1;
const DONE = 2;
const CONTROL_WORDS = 3;

// The thread's code (plain JavaScript run with `eval`, so that it works the same from the built
// package and from sources run by a test runner). It opens the file read-write without a memory map
// (a file truncated by another program would raise SIGBUS on a mapped page, which ends the process)
// and runs a PASSIVE checkpoint per request. It closes its connection before it exits, so that the
// writer's connection, closed after it, is the file's last.
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const { file, driverPath, STATE, PENDING, DONE } = workerData;
const control = new Int32Array(workerData.buffer);
function finish(state) {
  Atomics.store(control, PENDING, 0);
  Atomics.store(control, STATE, state);
  Atomics.notify(control, STATE);
}
let db;
try {
  const Database = require(driverPath);
  db = new Database(file, { fileMustExist: true });
  db.pragma("mmap_size = 0");
  db.pragma("busy_timeout = 0");
} catch (error) {
  parentPort.postMessage({ type: "failed", message: String((error && error.message) || error) });
  finish(-1);
  process.exit(0);
}
Atomics.store(control, STATE, 1);
parentPort.on("message", (message) => {
  if (message.type === "close") {
    try { db.close(); } catch {}
    finish(2);
    process.exit(0);
  }
  try {
    db.pragma("wal_checkpoint(PASSIVE)");
    Atomics.add(control, DONE, 1);
    parentPort.postMessage({ type: "done" });
  } catch (error) {
    parentPort.postMessage({ type: "error", message: String((error && error.message) || error) });
  }
  Atomics.store(control, PENDING, 0);
  Atomics.notify(control, PENDING);
});
`;

/** Options of `WalCheckpointer`. */
export interface WalCheckpointerOptions {
  /**
   * How long `close()` waits for the thread to close its connection, and a commit past
   * `WAL_LIMIT_BYTES` for its running checkpoint (ms; default 2,000). A checkpoint that outlasts
   * the commit's wait stops the thread.
   */
  waitMs?: number;
  /** Called once when the thread stops on its own (it could not open the file, failed or exited). */
  onStopped?: (reason: string) => void;
  /** @internal The better-sqlite3 module the thread loads (tests: a path that fails). */
  driverPath?: string;
}

/** What a `WalCheckpointer` is doing. */
export interface WalCheckpointerStatus {
  /** `idle`: not needed yet (no thread); `running`: the thread runs; `stopped`: it stopped (`reason`). */
  state: "idle" | "running" | "stopped";
  /** Checkpoints the thread has run. */
  checkpoints: number;
  reason?: string;
}

/**
 * Runs a WAL store's checkpoints on a second thread (see the module comment). One per writable
 * connection to a database file; the provider calls `afterCommit` once each write transaction has
 * committed, and `close` before it closes the connection. The thread is unreferenced: it never
 * keeps the process alive.
 */
export class WalCheckpointer {
  private readonly file: string | null;
  private readonly waitMs: number;
  private readonly onStopped: ((reason: string) => void) | undefined;
  private readonly driverPath: string | undefined;
  private worker: Worker | undefined;
  private control: Int32Array | undefined;
  /** The writer's `wal_autocheckpoint` and `journal_size_limit` before the thread started, put back when it stops. */
  private saved: { autocheckpoint: number; sizeLimit: number } | undefined;
  private stoppedReason: string | null = null;
  private items = 0;
  private commits = 0;
  private failures = 0;

  constructor(
    private readonly db: SqliteDb,
    options: WalCheckpointerOptions = {},
  ) {
    // Only a writable file in WAL mode has a log to copy.
    this.file =
      db.readonly || db.memory || db.name === "" || String(db.pragma("journal_mode", { simple: true })) !== "wal"
        ? null
        : path.resolve(db.name);
    this.waitMs = Math.max(0, options.waitMs ?? DEFAULT_WAIT_MS);
    this.onStopped = options.onStopped;
    this.driverPath = options.driverPath;
    if (this.file === null) this.stoppedReason = "not a writable WAL database";
  }

  /**
   * Call after a write transaction committed, with how many items it wrote. Every
   * `CHECKPOINT_ITEMS` items or `CHECKPOINT_COMMITS` transactions it asks the thread for a
   * checkpoint (starting the thread the first time), unless one is still running; while the thread
   * runs, a log file past `WAL_LIMIT_BYTES` is checkpointed here (see the module comment). Never throws.
   */
  afterCommit(items: number): void {
    if (this.stoppedReason !== null) return;
    this.items += items > 0 ? items : 0;
    this.commits++;
    if (this.worker !== undefined && logBytes(this.file!) > WAL_LIMIT_BYTES) this.catchUp();
    if (this.stoppedReason !== null || (this.items < CHECKPOINT_ITEMS && this.commits < CHECKPOINT_COMMITS)) return;
    const worker = this.worker ?? this.start();
    if (worker === undefined || Atomics.load(this.control!, PENDING) === 1) return;
    try {
      Atomics.store(this.control!, PENDING, 1);
      worker.postMessage({ type: "checkpoint" });
      this.items = 0;
      this.commits = 0;
    } catch (error) {
      this.stop(`the checkpoint thread could not be asked: ${describeError(error)}`);
    }
  }

  /**
   * Wait (up to `waitMs`) for the thread's running checkpoint, then checkpoint on this
   * connection: the log is then copied entirely unless a reader still needs part of it, and the
   * next write starts it over. A thread whose checkpoint outlasts the wait is stopped (SQLite's
   * own checkpoints take over), so no later commit waits for it again.
   */
  private catchUp(): void {
    const control = this.control!;
    const deadline = performance.now() + this.waitMs;
    for (;;) {
      if (Atomics.load(control, PENDING) === 0) break;
      const left = deadline - performance.now();
      if (left <= 0) {
        this.stop(`a checkpoint on the thread took more than ${this.waitMs} ms`);
        break;
      }
      Atomics.wait(control, PENDING, 1, left);
    }
    try {
      if (!this.db.inTransaction) this.db.pragma("wal_checkpoint(PASSIVE)");
    } catch {
      // The pages stay in the log, as safe as before; the next commit tries again.
    }
  }

  /** The thread's state and how many checkpoints it ran. */
  status(): WalCheckpointerStatus {
    const checkpoints = this.control === undefined ? 0 : Atomics.load(this.control, DONE);
    if (this.stoppedReason !== null) return { state: "stopped", checkpoints, reason: this.stoppedReason };
    return { state: this.worker === undefined ? "idle" : "running", checkpoints };
  }

  /**
   * Stop the thread: it finishes a running checkpoint and closes its connection, waited for up to
   * `waitMs` (so that the caller's connection, closed next, is the file's last). Idempotent;
   * puts the connection's usual `wal_autocheckpoint` back.
   */
  close(): void {
    const worker = this.worker;
    const control = this.control;
    this.end("closed");
    if (worker === undefined || control === undefined) return;
    try {
      worker.postMessage({ type: "close" });
      const deadline = performance.now() + this.waitMs;
      for (;;) {
        const state = Atomics.load(control, STATE);
        if (state === 2 || state === -1) break;
        const left = deadline - performance.now();
        if (left <= 0) break;
        Atomics.wait(control, STATE, state, left);
      }
    } catch {
      // Already gone.
    }
    void worker.terminate().catch(() => undefined);
  }

  private start(): Worker | undefined {
    try {
      const driverPath = this.driverPath ?? createRequire(import.meta.url).resolve("better-sqlite3");
      const buffer = new SharedArrayBuffer(CONTROL_WORDS * 4);
      const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { buffer, file: this.file, driverPath, STATE, PENDING, DONE } });
      worker.on("message", (message: { type?: unknown; message?: unknown }) => {
        if (message?.type === "done") this.failures = 0;
        else if (message?.type === "failed") this.stop(`the checkpoint thread could not open the database: ${String(message.message)}`);
        else if (message?.type === "error" && ++this.failures >= MAX_FAILURES)
          this.stop(`${MAX_FAILURES} checkpoints in a row failed: ${String(message.message)}`);
      });
      worker.on("error", (error) => this.stop(`the checkpoint thread failed: ${describeError(error)}`));
      worker.on("exit", () => this.stop("the checkpoint thread exited"));
      // After the listeners: a message listener would otherwise keep the thread, and so the process, alive.
      worker.unref();
      this.worker = worker;
      this.control = new Int32Array(buffer);
      this.saved = {
        autocheckpoint: this.db.pragma("wal_autocheckpoint", { simple: true }) as number,
        sizeLimit: this.db.pragma("journal_size_limit", { simple: true }) as number,
      };
      this.db.pragma("wal_autocheckpoint = 0");
      this.db.pragma(`journal_size_limit = ${WAL_LIMIT_BYTES}`);
      return worker;
    } catch (error) {
      this.stop(`no checkpoint thread could be started: ${describeError(error)}`);
      return undefined;
    }
  }

  private stop(reason: string): void {
    if (this.stoppedReason !== null) return;
    const worker = this.worker;
    this.end(reason);
    if (worker !== undefined) void worker.terminate().catch(() => undefined);
    this.onStopped?.(reason);
  }

  /** Mark the thread stopped and give checkpoints back to the writing connection. */
  private end(reason: string): void {
    if (this.stoppedReason === null) this.stoppedReason = reason;
    this.worker = undefined;
    const saved = this.saved;
    this.saved = undefined;
    if (saved === undefined) return;
    try {
      if (this.db.open) {
        this.db.pragma(`wal_autocheckpoint = ${saved.autocheckpoint}`);
        this.db.pragma(`journal_size_limit = ${saved.sizeLimit}`);
      }
    } catch {
      // Only thresholds: a closed or failing connection checkpoints nothing either way.
    }
  }
}

/** Size of `file`'s write-ahead log file in bytes (0 when there is none). */
function logBytes(file: string): number {
  try {
    return fs.statSync(`${file}-wal`, { throwIfNoEntry: false })?.size ?? 0;
  } catch {
    return 0;
  }
}
