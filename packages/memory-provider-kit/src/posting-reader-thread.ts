import { createRequire } from "node:module";
import { MessageChannel, MessagePort, Worker, receiveMessageOnPort } from "node:worker_threads";
import type { PostingList } from "./posting-cache.js";

/** One read the helper can run: `sql` (a statement returning one column) called with `args`, as `stmt.pluck().all(...args)`. */
export interface PoolQuery {
  sql: string;
  args: readonly unknown[];
}

/** Options of `PostingReaderThread.start`. */
export interface PostingReaderThreadOptions {
  /** The database file the helper opens, read-only (never a `:memory:` or temporary database). */
  file: string;
  /** Most ids one query returns (the helper's result slots hold this many). */
  maxRows: number;
  /** How long `take` waits for a query the helper is running before running it itself (ms). */
  waitMs?: number;
  /** Called once when the helper stops for good (it failed to open, crashed, or stopped answering). */
  onStopped?: (reason: string) => void;
}

/** Queries one batch can offer (the first `MAX_LAYERS` layers' pairs of at most `MAX_LAYERED_TERMS` words fit). */
export const MAX_BATCH_QUERIES = 16;
/** Default of `PostingReaderThreadOptions.waitMs`: far above a pool read (a few ms), far below a stuck helper. */
const DEFAULT_WAIT_MS = 200;
/** Page cache of the helper's connection: it reads without a memory map (see the worker source). */
const HELPER_CACHE_KIB = 32 * 1024;
/** Timed-out waits in a row after which the helper is stopped. */
const MAX_MISSED_WAITS = 3;
/** Statements the helper keeps prepared (pool statements differ only by their filter condition). */
const HELPER_STATEMENTS_KEPT = 64;

// Shared control words (Int32): [0] the current batch (0: none); [1] 1 once the helper has opened the
// database, -1 when it could not (read without waiting for the thread's messages, which a caller
// that never yields to the event loop would not see); then per query slot its claim
// (batch * 2 + 1 when the helper took it, batch * 2 when the caller did), the batch it was answered
// for, and how many ids it holds (-1: the helper's read failed). Ids follow as Float64 per slot.
const CURRENT = 0;
const STATE = 1;
const CLAIM = 2;
const DONE = CLAIM + MAX_BATCH_QUERIES;
const COUNT = DONE + MAX_BATCH_QUERIES;
const CONTROL_WORDS = COUNT + MAX_BATCH_QUERIES;
/** Byte offset of the ids (a Float64Array must start at a multiple of 8). */
const IDS_OFFSET = Math.ceil((CONTROL_WORDS * 4) / 8) * 8;
/** Batch numbers cycle below this, so `batch * 2 + 1` fits an Int32; 0 is never a batch. */
const BATCH_CYCLE = 1 << 29;

// The helper thread's code (plain JavaScript, run with `eval`, so that it works the same from the
// built package and from sources run by a test runner). It opens the file read-only without a memory
// map: a file truncated by another program would raise SIGBUS on a mapped page, and a signal ends the
// whole process, while a read() of a missing page is an error this code catches. It takes the offered
// queries from the last one backwards, claiming each before running it, and stops at the first the
// caller has claimed (the caller takes them from the first one forwards).
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const { file, driverPath, maxRows, cacheKib, statementsKept, answers, CURRENT, STATE, CLAIM, DONE, COUNT, CONTROL_WORDS, IDS_OFFSET } = workerData;
const control = new Int32Array(workerData.buffer, 0, CONTROL_WORDS);
const ids = new Float64Array(workerData.buffer, IDS_OFFSET);
let db;
try {
  const Database = require(driverPath);
  db = new Database(file, { readonly: true, fileMustExist: true });
  db.pragma("mmap_size = 0");
  db.pragma("cache_size = -" + cacheKib);
} catch (error) {
  Atomics.store(control, STATE, -1);
  parentPort.postMessage({ type: "failed", message: String(error && error.message || error) });
  process.exit(0);
}
const statements = new Map();
function statement(sql) {
  let stmt = statements.get(sql);
  if (stmt === undefined) {
    stmt = db.prepare(sql).pluck();
    if (statements.size >= statementsKept) statements.delete(statements.keys().next().value);
    statements.set(sql, stmt);
  }
  return stmt;
}
parentPort.on("message", (message) => {
  if (message.type === "close") {
    db.close();
    process.exit(0);
  }
  if (message.type === "postings") {
    // A word's complete id list and the table's largest id, in one snapshot.
    let ids = null;
    let seenTo = 0;
    try {
      const [found, max] = db.transaction(() => [statement(message.sql).all(...message.args), statement(message.maxSql).get()])();
      if (Number.isInteger(max) && found.every((id, i) => Number.isInteger(id) && id >= -2147483648 && id <= 2147483647 && (i === 0 || id > found[i - 1]))) {
        ids = Int32Array.from(found);
        seenTo = max;
      }
    } catch {}
    answers.postMessage({ request: message.request, ids, seenTo }, ids === null ? [] : [ids.buffer]);
    return;
  }
  const { batch, queries } = message;
  for (let slot = queries.length - 1; slot >= 0; slot--) {
    if (Atomics.load(control, CURRENT) !== batch) return;
    const claim = Atomics.load(control, CLAIM + slot);
    if (claim >> 1 === batch || Atomics.compareExchange(control, CLAIM + slot, claim, batch * 2 + 1) !== claim) return;
    let count = -1;
    try {
      const found = statement(queries[slot].sql).all(...queries[slot].args);
      if (found.length <= maxRows && found.every((id) => typeof id === "number")) {
        ids.set(found, slot * maxRows);
        count = found.length;
      }
    } catch {}
    Atomics.store(control, COUNT + slot, count);
    Atomics.store(control, DONE + slot, batch);
    Atomics.notify(control, DONE + slot);
  }
});
Atomics.store(control, STATE, 1);
`;

/**
 * A worker thread that reads part of a search's postings on its own read-only connection: the pool
 * reads (`LayeredRanker`'s `t_i AND t_j` id lists) the calling thread has not reached yet, and the
 * complete id lists of query words (`readPostings`, for the posting cache). A ranking that needs
 * several pool reads takes about half as long on a machine with a free core. The calling thread stays
 * synchronous: it offers a batch of queries, takes them in order, and for one the helper is running
 * waits on shared memory (at most `waitMs`) instead of running it again. Any failure of the helper
 * only makes the caller run the query itself: it never changes a result.
 *
 * The thread is unreferenced (it never keeps the process alive) and stops with `close()`.
 */
export class PostingReaderThread {
  private readonly worker: Worker;
  private readonly control: Int32Array;
  private readonly ids: Float64Array;
  private readonly maxRows: number;
  private readonly waitMs: number;
  private readonly onStopped: ((reason: string) => void) | undefined;
  private stoppedReason: string | null = null;
  private batch = 0;
  /** The batch in which a wait timed out: its later queries run on the caller without waiting. */
  private abandoned = 0;
  private missedWaits = 0;
  /** Queries whose ids the caller took from the helper (for tests and diagnostics). */
  answered = 0;
  /** Word lists asked for with `readPostings` and not yet answered, by request number. */
  private readonly postingRequests = new Map<number, (list: PostingList | null) => void>();
  private postingRequest = 0;

  /** Where the helper sends word lists: read synchronously (`receivePostings`), so a caller that never yields to the event loop gets them too. */
  private readonly answers: MessagePort;

  private constructor(worker: Worker, buffer: SharedArrayBuffer, answers: MessagePort, options: PostingReaderThreadOptions) {
    this.worker = worker;
    this.answers = answers;
    this.control = new Int32Array(buffer, 0, CONTROL_WORDS);
    this.ids = new Float64Array(buffer, IDS_OFFSET);
    this.maxRows = options.maxRows;
    this.waitMs = options.waitMs ?? DEFAULT_WAIT_MS;
    this.onStopped = options.onStopped;
    worker.on("message", (message: { type?: unknown; message?: unknown }) => {
      if (message?.type === "failed") this.stop(`the helper could not open the database: ${String(message.message)}`);
    });
    worker.on("error", (error) => this.stop(`the helper failed: ${error instanceof Error ? error.message : String(error)}`));
    worker.on("exit", () => this.stop("the helper exited"));
    // After the listeners: a message listener would otherwise keep the thread, and so the process, alive.
    worker.unref();
  }

  /**
   * Start a helper on `options.file`, or return `null` when no thread can be started (better-sqlite3
   * not resolvable, worker threads unavailable). The helper takes work once it has opened the file.
   */
  static start(options: PostingReaderThreadOptions): PostingReaderThread | null {
    try {
      const driverPath = createRequire(import.meta.url).resolve("better-sqlite3");
      const buffer = new SharedArrayBuffer(IDS_OFFSET + MAX_BATCH_QUERIES * options.maxRows * 8);
      const { port1, port2 } = new MessageChannel();
      const worker = new Worker(WORKER_SOURCE, {
        eval: true,
        transferList: [port2],
        workerData: {
          buffer,
          answers: port2,
          file: options.file,
          driverPath,
          maxRows: options.maxRows,
          cacheKib: HELPER_CACHE_KIB,
          statementsKept: HELPER_STATEMENTS_KEPT,
          CURRENT,
          STATE,
          CLAIM,
          DONE,
          COUNT,
          CONTROL_WORDS,
          IDS_OFFSET,
        },
      });
      return new PostingReaderThread(worker, buffer, port1, options);
    } catch {
      return null;
    }
  }

  /** True once the helper has opened the database and until it stops. */
  get usable(): boolean {
    return this.stoppedReason === null && Atomics.load(this.control, STATE) === 1;
  }

  /** Why the helper stopped, or `null` while it runs. */
  get stopped(): string | null {
    return this.stoppedReason;
  }

  /**
   * Offer `queries` (at most `MAX_BATCH_QUERIES`, in the order the caller will take them) and return
   * the batch to take them from; `null` when the helper is not usable (the caller runs every query
   * itself). Only one batch is open at a time: `end()` the previous one first.
   */
  offer(queries: readonly PoolQuery[]): PoolBatch | null {
    if (!this.usable || queries.length < 2 || queries.length > MAX_BATCH_QUERIES) return null;
    this.batch = (this.batch % (BATCH_CYCLE - 1)) + 1;
    Atomics.store(this.control, CURRENT, this.batch);
    try {
      this.worker.postMessage({ batch: this.batch, queries });
    } catch {
      // A value the thread cannot receive (structured clone): this batch runs on the caller.
      Atomics.store(this.control, CURRENT, 0);
      return null;
    }
    return new PoolBatch(this, this.batch);
  }

  /**
   * Read a word's complete id list on the helper's thread: `read.sql` (one id column, ascending)
   * with `read.args`, and in the same snapshot `read.maxSql` (the table's largest id). `done` gets
   * the list, or `null` when the read failed, an id was outside the Int32 range, or the helper
   * stopped first; it is called from a later `receivePostings()` (or `close()`), never during this
   * call. Returns `false`, without calling `done`, when the helper is not usable.
   */
  readPostings(read: { sql: string; args: readonly unknown[]; maxSql: string }, done: (list: PostingList | null) => void): boolean {
    if (!this.usable) return false;
    const request = ++this.postingRequest;
    try {
      this.worker.postMessage({ type: "postings", request, sql: read.sql, args: read.args, maxSql: read.maxSql });
    } catch {
      return false;
    }
    this.postingRequests.set(request, done);
    return true;
  }

  /** Hand every word list the helper has sent since the last call to its `readPostings` callback (synchronous). */
  receivePostings(): void {
    for (;;) {
      let received: { message: unknown } | undefined;
      try {
        received = receiveMessageOnPort(this.answers);
      } catch {
        return;
      }
      if (received === undefined) return;
      const { request, ids, seenTo } = (received.message ?? {}) as { request?: unknown; ids?: unknown; seenTo?: unknown };
      if (typeof request !== "number") continue;
      const done = this.postingRequests.get(request);
      this.postingRequests.delete(request);
      done?.(ids instanceof Int32Array && typeof seenTo === "number" ? { ids, seenTo } : null);
    }
  }

  /** Stop the thread. Idempotent; results already taken stay valid. */
  close(): void {
    if (this.stoppedReason === null) this.stoppedReason = "closed";
    this.dropPostingRequests();
    Atomics.store(this.control, CURRENT, 0);
    try {
      this.worker.postMessage({ type: "close" });
    } catch {
      // Already gone.
    }
    void this.worker.terminate().catch(() => undefined);
  }

  /** @internal Take query `slot` of `batch`: the helper's ids, or `local()`'s when the caller runs it. */
  take(batch: number, slot: number, local: () => number[]): number[] {
    const claim = Atomics.load(this.control, CLAIM + slot);
    if (claim >> 1 !== batch) {
      if (Atomics.compareExchange(this.control, CLAIM + slot, claim, batch * 2) === claim) return local();
    }
    // The helper took it (its claim is the only other one possible for this batch): wait for it,
    // unless a wait of this batch already timed out (the thread is starved or stuck).
    if (this.stoppedReason === null && this.abandoned !== batch) {
      const deadline = performance.now() + this.waitMs;
      for (;;) {
        const done = Atomics.load(this.control, DONE + slot);
        if (done === batch) break;
        const left = deadline - performance.now();
        if (left <= 0) break;
        Atomics.wait(this.control, DONE + slot, done, left);
      }
    }
    if (Atomics.load(this.control, DONE + slot) !== batch) {
      if (this.abandoned === batch) return local();
      this.abandoned = batch;
      if (++this.missedWaits >= MAX_MISSED_WAITS)
        this.stop(`the helper did not answer within ${this.waitMs} ms ${MAX_MISSED_WAITS} times in a row`);
      return local();
    }
    this.missedWaits = 0;
    const count = Atomics.load(this.control, COUNT + slot);
    if (count < 0) return local();
    this.answered++;
    return Array.from(this.ids.subarray(slot * this.maxRows, slot * this.maxRows + count));
  }

  /** @internal Whether the helper has finished query `slot` of `batch` (with ids, or failed). */
  finished(batch: number, slot: number): boolean {
    return Atomics.load(this.control, DONE + slot) === batch;
  }

  /** @internal Whether the helper has taken query `slot` of `batch` (it is running it, or has finished it). */
  took(batch: number, slot: number): boolean {
    return Atomics.load(this.control, CLAIM + slot) === batch * 2 + 1;
  }

  /** @internal Close `batch`: the helper skips what it has not started. */
  endBatch(batch: number): void {
    if (Atomics.load(this.control, CURRENT) === batch) Atomics.store(this.control, CURRENT, 0);
  }

  private stop(reason: string): void {
    if (this.stoppedReason !== null) return;
    this.stoppedReason = reason;
    Atomics.store(this.control, CURRENT, 0);
    void this.worker.terminate().catch(() => undefined);
    this.dropPostingRequests();
    this.onStopped?.(reason);
  }

  /** Answer every open `readPostings` request with `null` (the helper will not), and close the port lists come on. */
  private dropPostingRequests(): void {
    const open = [...this.postingRequests.values()];
    this.postingRequests.clear();
    this.answers.close();
    for (const done of open) done(null);
  }
}

/** The queries of one `PostingReaderThread.offer`, taken in order with `take` and closed with `end`. */
export class PoolBatch {
  constructor(
    private readonly helper: PostingReaderThread,
    private readonly batch: number,
  ) {}

  /** The ids of query `slot`: the helper's result when it ran it, else `local()` run now. */
  take(slot: number, local: () => number[]): number[] {
    return this.helper.take(this.batch, slot, local);
  }

  /** Whether the helper has finished query `slot` (its ids, or a failure, are waiting to be taken). */
  finished(slot: number): boolean {
    return this.helper.finished(this.batch, slot);
  }

  /** Whether the helper has taken query `slot` (it is running it, or its ids or failure wait to be taken). */
  took(slot: number): boolean {
    return this.helper.took(this.batch, slot);
  }

  /** Close the batch (call once, after the last `take`). */
  end(): void {
    this.helper.endBatch(this.batch);
  }
}
