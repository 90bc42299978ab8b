/**
 * The bound on accepted writes kept in memory while their store refuses them (a read-only home, a
 * full disk, an outbox that cannot be written, another process's lock): the SQLite provider's
 * queue bound, 100,000 (the kit's `DEFAULT_MAX_QUEUE`). Past it the oldest are dropped, so an agent
 * that keeps talking to a broken store does not grow without end. A drop is reported by one warning
 * per run of drops and by the next `flush()` (and `shutdown()`), which rejects naming how many were
 * lost.
 */
import type { Logger } from "@hermes/memory-core";
import { DEFAULT_MAX_QUEUE } from "@hermes/memory-provider-kit";
import { FailureRun } from "./failure-run.js";

/** Most accepted writes the vector provider keeps in memory (in either layout), as the SQLite provider does. */
export const MAX_HELD_WRITES = DEFAULT_MAX_QUEUE;

/** Counts and reports the writes dropped past `MAX_HELD_WRITES`. */
export class HeldWriteLimit {
  /** Dropped since the last `flush()` reported them. */
  private unreported = 0;
  private readonly warnings: FailureRun;

  /** `where`: what the writes wait for, for the messages (e.g. "for the sidecar"). */
  constructor(
    logger: Logger,
    private readonly where: string,
  ) {
    this.warnings = new FailureRun(logger);
  }

  /** Writes dropped and not yet reported by a `flush()`. */
  get dropped(): number {
    return this.unreported;
  }

  /**
   * Drop the oldest writes of `held` (oldest first) beyond `MAX_HELD_WRITES`; `why` is what the
   * store answered. Returns how many were dropped.
   */
  trim<T>(held: T[], why: unknown): number {
    const over = held.length - MAX_HELD_WRITES;
    if (over <= 0) return 0;
    held.splice(0, over);
    this.unreported += over;
    this.warnings.report(
      `vector memory: more than ${MAX_HELD_WRITES.toLocaleString("en-US")} accepted writes wait in memory ${this.where}, which refuses them (${String(why).slice(0, 300)}); the oldest ${over} were dropped and are lost (${this.unreported} since the last flush())`,
    );
    return over;
  }

  /** A write went through again: the next drop is warned about anew. */
  recovered(): void {
    this.warnings.recovered();
  }

  /** The writes dropped since the last call, for `flush()`'s report (which clears them): how many and why; "" when none were. */
  takeReport(): string {
    if (this.unreported === 0) return "";
    const n = this.unreported;
    this.unreported = 0;
    return `${n} accepted writes were dropped and are lost (more than ${MAX_HELD_WRITES.toLocaleString("en-US")} waited in memory ${this.where})`;
  }
}
