/**
 * The vector provider's write queue: writes accepted by `syncTurn`/`remember`/`onMemoryWrite` are
 * queued and delivered in background batches. A failing store keeps the failed batch and
 * everything behind it (in the durable outbox when the store needs one, else in memory) instead of
 * paying the retries once per batch; `flush()` re-tries them and reports what is still undelivered.
 */
import { HermesMemoryError, describeError, type Logger } from "@hermes/memory-core";
import { storageWriteError } from "../local/store-files.js";
import type { PendingWrite } from "./maintenance.js";
import { FailureRun } from "./failure-run.js";
import { HeldWriteLimit } from "./held-write-limit.js";
import { deliverIsolating, type Outbox } from "../pinecone/outbox.js";
import { isolateRefused } from "../retry-policy.js";

/**
 * Where the queue's batches are stored: the sidecar layout's storage. A named interface, so a reader
 * can follow a turn from `syncTurn` through `enqueue` to `storeBatch` and the insert.
 */
export interface BatchWriter {
  /** Embed and store one batch now; throws on failure. */
  storeBatch(batch: PendingWrite[]): Promise<void>;
  /**
   * Store writes whose text the embedder refused for its content (without a vector: their text
   * stays searchable by keyword), when the store needs no outbox; throws on failure.
   */
  storeWithoutVectors(refused: Array<{ write: PendingWrite; error: unknown }>): Promise<void>;
  /** Items per background batch (read at each batch). */
  readonly batchSize: number;
}

/** What the queue needs from the provider. */
export interface WriteQueueOptions {
  /** Stores the batches. */
  writer: BatchWriter;
  logger: Logger;
  /** True once the provider is shut down: background delivery stops. */
  isClosed(): boolean;
  /**
   * True for failures that clear by themselves (another process holding the write lock): the
   * writes are held quietly and tried again on a timer, backing off.
   */
  isTransient?(error: unknown): boolean;
}

/** First pause before a batch that met a transient failure is tried again (ms); it doubles each time. */
const RETRY_FIRST_MS = 25;
/** Longest pause between two tries of a batch that keeps meeting a transient failure (ms). */
const RETRY_MAX_MS = 1000;

/** Background delivery of accepted writes, with the outbox for stores that acknowledge remotely. */
export class WriteQueue {
  private pending: PendingWrite[] = [];
  /**
   * Accepted writes whose attempt failed and that are not in the outbox (local store: disk full;
   * Pinecone store: the outbox itself could not be written). Kept until stored: re-tried with the
   * next write and every `flush()`, which rejects while any are left.
   */
  private held: PendingWrite[] = [];
  private outbox: Outbox | null = null;
  private resending: Promise<void> | null = null;
  private draining: Promise<void> | null = null;
  private drainScheduled = false;
  /** See `storeAccepted`. */
  private accepted = false;
  /** The last delivery failed (the store refuses writes): writes kept in memory are bounded meanwhile. */
  private failing = false;
  /** The timer that tries held writes again after a transient failure. */
  private retryTimer: NodeJS.Timeout | null = null;
  private retryPause = RETRY_FIRST_MS;

  /** True once the store took a write in this process, through the queue or a direct write (`noteAccepted`): a refusal after that is about a text, not the set-up. */
  get storeAccepted(): boolean {
    return this.accepted;
  }

  /** Record that the store took a write made outside the queue (a synchronous write). */
  noteAccepted(): void {
    this.accepted = true;
  }
  /** The last delivery failure (for reports). */
  lastFailure: unknown = null;

  /** Failures to store a batch (held writes). */
  private readonly storeFailures: FailureRun;
  /** Failures to put writes in the outbox (they are sent without it). */
  private readonly outboxFailures: FailureRun;
  /** The bound on writes kept in memory while the store refuses them. */
  private readonly limit: HeldWriteLimit;

  /** See `WriteQueueOptions`. */
  constructor(private readonly options: WriteQueueOptions) {
    this.storeFailures = new FailureRun(options.logger);
    this.outboxFailures = new FailureRun(options.logger);
    this.limit = new HeldWriteLimit(options.logger, "for the vector store");
  }

  /** Writes dropped past the bound on writes kept in memory, not yet reported by `undeliveredError()`. */
  get dropped(): number {
    return this.limit.dropped;
  }

  /** Use `outbox` for writes the store has not acknowledged (a remote store), or none. */
  attachOutbox(outbox: Outbox | null): void {
    this.outbox = outbox;
  }

  /** The attached outbox (to close it), if any. */
  get attachedOutbox(): Outbox | null {
    return this.outbox;
  }

  /** Writes waiting in the outbox. */
  get inOutbox(): number {
    return this.outbox?.count() ?? 0;
  }

  /** Writes kept only in memory (queued or held after a failure); lost if the process exits. */
  get inMemory(): number {
    return this.held.length + this.pending.length;
  }

  /** Writes accepted but not acknowledged by their store (outbox and memory). */
  get undelivered(): number {
    return this.inMemory + this.inOutbox;
  }

  /** Queue writes (and re-queue held ones) and schedule a background drain; returns at once. */
  enqueue(writes: PendingWrite[]): void {
    // Pushed, not copied: a turn costs the same however many writes wait.
    if (this.held.length > 0) this.pending = this.pending.concat(this.held.splice(0));
    for (const write of writes) this.pending.push(write);
    if (this.failing) this.limit.trim(this.pending, describeError(this.lastFailure));
    if (this.drainScheduled || this.draining) return;
    this.drainScheduled = true;
    setImmediate(() => {
      if (this.drainScheduled) void this.drain();
    });
  }

  /**
   * Drop every undelivered write `inScope` selects (queued, held after a failure, or in the
   * outbox), so an erased item is never sent later. Returns the writes dropped. Call after
   * `deliverAll()` and `settled()`, so no batch holding them is in flight.
   */
  discard(inScope: (write: PendingWrite) => boolean): PendingWrite[] {
    const dropped: PendingWrite[] = [];
    const keep = (list: PendingWrite[]): PendingWrite[] =>
      list.filter((w) => {
        if (!inScope(w)) return true;
        dropped.push(w);
        return false;
      });
    this.pending = keep(this.pending);
    this.held = keep(this.held);
    if (this.outbox) {
      const gone = this.outbox.list(Number.MAX_SAFE_INTEGER).filter((w) => inScope(w));
      this.outbox.remove(gone.map((w) => w.seq));
      dropped.push(...gone);
      // Set-aside (refused) writes too: a later `refused --retry` must not bring an erased item back.
      dropped.push(...this.outbox.dropRefusedWhere((w) => inScope(w)).map(({ seq: _seq, ...w }) => w));
    }
    return dropped;
  }

  /** Resolves when no re-send of the outbox is in flight. */
  async settled(): Promise<void> {
    await this.resending?.catch(() => undefined);
  }

  /** Put writes held after a failure back in front of the queue (flush re-tries them). */
  requeueHeld(): void {
    if (this.held.length > 0) this.pending = this.held.splice(0).concat(this.pending);
  }

  /** Deliver everything queued once (a failing batch is held, not thrown). */
  private async drainAll(): Promise<void> {
    while (this.pending.length > 0 || this.draining || this.drainScheduled) {
      await (this.draining ?? this.drain());
    }
  }

  /** True when held writes or the outbox still wait for their store. */
  get hasUndelivered(): boolean {
    return this.held.length > 0 || this.inOutbox > 0;
  }

  /**
   * Deliver everything queued (with `resendOutbox`, what the outbox holds too). Writes held by a
   * transient failure (see `isTransient`) are tried again on timers, with the same doubling pause
   * as background retries, until `deadlineMs` has passed; any other failure ends the tries at once
   * (the writes stay held, and `hasUndelivered` says so).
   */
  async deliverAll(deadlineMs: number, options: { resendOutbox?: boolean } = {}): Promise<void> {
    const deadline = Date.now() + deadlineMs;
    for (let pause = RETRY_FIRST_MS; ; pause = Math.min(RETRY_MAX_MS, pause * 2)) {
      await this.drainAll();
      if (options.resendOutbox && this.inOutbox > 0) await this.resendOutbox();
      if (!(this.hasUndelivered && this.isTransient(this.lastFailure)) || Date.now() + pause > deadline) return;
      await new Promise((resolve) => setTimeout(resolve, pause));
      this.requeueHeld();
    }
  }

  /** Stop trying held writes again on a timer (at shutdown). */
  stop(): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
  }

  private isTransient(error: unknown): boolean {
    return error != null && this.options.isTransient?.(error) === true;
  }

  /** Try held writes (and the outbox) again after a pause that doubles with each transient failure. */
  private retryLater(): void {
    if (this.retryTimer || this.options.isClosed()) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      if (this.options.isClosed()) return;
      this.requeueHeld();
      if (this.pending.length > 0 && !this.draining) void this.drain();
      if (this.inOutbox > 0) void this.resendOutbox();
    }, this.retryPause);
    this.retryTimer.unref();
    this.retryPause = Math.min(RETRY_MAX_MS, this.retryPause * 2);
  }

  private drain(): Promise<void> {
    this.drainScheduled = false;
    if (this.draining) return this.draining;
    this.draining = (async () => {
      try {
        while (this.pending.length > 0 && !this.options.isClosed()) {
          const batch = this.pending.splice(0, this.options.writer.batchSize);
          try {
            await this.deliver(batch);
            this.retryPause = RETRY_FIRST_MS;
            this.storeFailures.recovered();
            this.failing = false;
            this.limit.recovered();
          } catch (error) {
            // The store is failing (down, disk full, locked by another process): keep this batch
            // and everything queued behind it instead of paying the retries once per batch;
            // flush() reports them. A transient failure is tried again on a timer, quietly.
            this.lastFailure = error;
            this.failing = true;
            const kept = this.hold(batch.concat(this.pending.splice(0)));
            if (this.isTransient(error)) {
              this.options.logger.debug(
                `vector memory: storing ${batch.length} items waits for another process's write lock (${describeError(error)}); ${kept}`,
              );
              this.retryLater();
            } else {
              this.storeFailures.report(`vector memory: storing ${batch.length} items failed (${describeError(error)}); ${kept}`);
            }
          }
        }
      } finally {
        this.draining = null;
      }
    })();
    return this.draining;
  }

  /**
   * With an outbox: put the batch there (fsynced) before sending, remove it once the store
   * acknowledged it. A failed send leaves it there for the next start or `flush()`. Without one
   * (local store): texts the embedder refuses for their content are found by `isolateRefused` and
   * stored without a vector, so they do not hold up the writes behind them; while the embedder has
   * embedded nothing (a misconfigured one refuses every text), the refusal is thrown and the batch held.
   */
  private async deliver(batch: PendingWrite[]): Promise<void> {
    if (!this.outbox) {
      const { delivered, refused } = await isolateRefused(batch, (part) => this.options.writer.storeBatch(part), {
        accepted: this.storeAccepted,
      });
      if (delivered.length > 0) this.accepted = true;
      if (refused.length > 0) await this.options.writer.storeWithoutVectors(refused.map(({ item, error }) => ({ write: item, error })));
      return;
    }
    const fresh = batch.filter((w) => w.seq === undefined);
    try {
      this.outbox.put(fresh).forEach((seq, i) => (fresh[i]!.seq = seq));
      this.outboxFailures.recovered();
    } catch (error) {
      this.outboxFailures.report(`vector memory: ${describeError(storageWriteError(`the outbox ${this.outbox.file}`, error))}`);
    }
    if (batch.every((w): w is PendingWrite & { seq: number } => w.seq !== undefined)) {
      // In the outbox: a write refused for its content is set aside now, not held with the batch.
      const { delivered } = await deliverIsolating(this.outbox, batch, (part) => this.options.writer.storeBatch(part), {
        storeAccepted: this.storeAccepted,
      });
      if (delivered.length > 0) this.accepted = true;
      return;
    }
    // The outbox could not take the batch: it is sent without it. Nothing is removed afterwards: a
    // batch holds no outbox entry, since writes put there leave the queue (`hold`) and only
    // `resendOutbox` sends them.
    await this.options.writer.storeBatch(batch);
    this.accepted = true;
  }

  /** Keep failed writes: in the outbox when they are there (or can be put there), else in memory. Returns what happened, for the log. */
  private hold(writes: PendingWrite[]): string {
    let memory = writes.filter((w) => w.seq === undefined);
    if (this.outbox && memory.length > 0) {
      try {
        this.outbox.put(memory).forEach((seq, i) => (memory[i]!.seq = seq));
        memory = [];
      } catch {
        // The outbox is on the same failing disk: keep them in memory.
      }
    }
    this.held = this.held.concat(memory);
    this.limit.trim(this.held, describeError(this.lastFailure));
    const durable = writes.length - memory.length;
    return [
      durable > 0 ? `${durable} kept in the outbox ${this.outbox!.file} (re-sent on flush() or the next start)` : "",
      memory.length > 0 ? `${memory.length} kept in memory and retried with the next write or flush()` : "",
    ]
      .filter(Boolean)
      .join("; ");
  }

  /** Re-send what the outbox holds, oldest first, until it is empty or a send fails (one at a time). */
  resendOutbox(): Promise<void> {
    this.resending ??= (async () => {
      try {
        while (this.outbox && !this.options.isClosed()) {
          const entries = this.outbox.list(this.options.writer.batchSize);
          if (entries.length === 0) return;
          // A write refused for its content is set aside (once another went through), so it does
          // not hold up the writes behind it; flush() reports it.
          try {
            const { delivered } = await deliverIsolating(this.outbox, entries, (part) => this.options.writer.storeBatch(part), {
              storeAccepted: this.storeAccepted,
            });
            if (delivered.length > 0) this.accepted = true;
            this.retryPause = RETRY_FIRST_MS;
            this.storeFailures.recovered();
          } catch (error) {
            this.lastFailure = error;
            if (this.isTransient(error)) this.retryLater();
            return;
          }
        }
      } finally {
        this.resending = null;
      }
    })();
    return this.resending;
  }

  /** `STORAGE_FAILED` naming what is undelivered, where it is kept, what was dropped (reported once), and the last failure. */
  undeliveredError(): HermesMemoryError {
    const inOutbox = this.inOutbox;
    const inMemory = this.inMemory;
    const cause = this.lastFailure;
    const why = cause ? describeError(cause) : "the store did not acknowledge them";
    const parts = [
      inOutbox > 0
        ? `${inOutbox} writes are not acknowledged by Pinecone yet; they are kept in the outbox ${this.outbox!.file} and re-sent by the next flush() or start`
        : "",
      inMemory > 0
        ? `${inMemory} accepted writes are not stored yet (kept in memory, retried by the next flush(); lost if the process exits)`
        : "",
      this.limit.takeReport(),
    ].filter(Boolean);
    return new HermesMemoryError({ code: "STORAGE_FAILED", message: `vector memory: ${parts.join("; ")}. Last failure: ${why}`, cause });
  }
}

/**
 * The `STORAGE_FAILED` error a shutdown that met `failure` throws (the refused writes' own error
 * when nothing else is lost or kept): how many accepted writes are `lost` with the process, how many
 * are `kept` in `outboxFile` (re-sent on the next start), or that only the index file was not saved.
 */
export function shutdownFailureError(
  failure: unknown,
  report: { lost: number; kept: number; refused: HermesMemoryError | null; outboxFile: string; lastFailure: unknown },
): HermesMemoryError {
  const { lost, kept, refused } = report;
  // Writes set aside because their store refused their content: flush() named them.
  if (lost === 0 && kept === 0 && refused) return refused;
  if (lost === 0 && kept === 0) {
    // Only the index file failed to save: the sidecar holds everything and the next start rebuilds it.
    return new HermesMemoryError({
      code: "STORAGE_FAILED",
      message: `vector memory shutdown: the index file was not saved (${describeError(failure)}). Nothing is lost: the next start rebuilds it from the sidecar.`,
      cause: failure,
    });
  }
  const parts = [
    kept > 0 ? `${kept} writes not acknowledged by Pinecone are kept in the outbox ${report.outboxFile} and re-sent on the next start` : "",
    lost > 0 ? `${lost} accepted writes could not be stored and are lost` : "",
  ].filter(Boolean);
  return new HermesMemoryError({
    code: "STORAGE_FAILED",
    message: `vector memory shutdown: ${parts.join("; ")} (${describeError(report.lastFailure ?? failure)}).`,
    cause: failure,
  });
}
