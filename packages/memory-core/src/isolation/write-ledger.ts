/**
 * Which writes a worker-hosted provider handed to its worker and not yet saw acknowledged, and how
 * many were lost when a worker was replaced under them.
 *
 * A write is acknowledged when a `flush()` that started after it resolved (providers with `flush`),
 * or when its own call resolved (providers without). A write whose call rejected was refused, not
 * lost: its caller heard the error.
 */
import { HermesMemoryError } from "../errors.js";

/** Writes lost to replaced workers, not yet reported by a `flush()` or `shutdown()`. */
export class LostWrites {
  constructor(
    readonly count: number,
    readonly reasons: string[],
  ) {}

  /** The `WRITES_LOST` error reporting them. */
  error(provider: string): HermesMemoryError {
    const shown = this.reasons.slice(0, 3).join("; ") + (this.reasons.length > 3 ? `; and ${this.reasons.length - 3} more` : "");
    return new HermesMemoryError({
      code: "WRITES_LOST",
      message: `Memory provider '${provider}': ${this.count} write(s) handed to its worker thread were lost before a flush() acknowledged them, because the worker was replaced (${shown}). Writes after the replacement are stored; write the lost ones again if they matter, and fix what made the worker time out or crash.`,
    });
  }
}

export class WriteLedger {
  private seq = 0;
  /** Writes handed to the current worker and not yet acknowledged, by sequence number. */
  private readonly open = new Set<number>();
  private flushes = false;
  private lost: LostWrites | null = null;

  /** Whether writes wait for a `flush()` to be acknowledged. */
  setFlushes(flushes: boolean): void {
    this.flushes = flushes;
  }

  /** A write was handed to the worker; returns its ticket. */
  handed(_method: string): number {
    const ticket = ++this.seq;
    this.open.add(ticket);
    return ticket;
  }

  /** The write's call resolved: acknowledged unless the provider acknowledges through `flush()`. */
  resolved(ticket: number): void {
    if (!this.flushes) this.open.delete(ticket);
  }

  /** The write's call rejected: its caller knows it was not stored. */
  failed(ticket: number): void {
    this.open.delete(ticket);
  }

  /** A flush starts: it acknowledges every write handed before this mark. */
  flushStarted(): number {
    return this.seq;
  }

  flushed(mark: number): void {
    for (const ticket of this.open) if (ticket <= mark) this.open.delete(ticket);
  }

  /** The provider shut down cleanly: everything handed to it is stored. */
  acknowledgeAll(): void {
    this.open.clear();
  }

  /** The worker was replaced: every open write is lost. Returns how many. */
  workerLost(reason: string): number {
    const count = this.open.size;
    this.open.clear();
    if (count > 0) this.lost = new LostWrites((this.lost?.count ?? 0) + count, [...(this.lost?.reasons ?? []), reason]);
    return count;
  }

  /** The lost writes not yet reported, now taken to be reported. */
  takeLost(): LostWrites | null {
    const lost = this.lost;
    this.lost = null;
    return lost;
  }

  /** A report that could not be delivered goes back for the next one. */
  restoreLost(lost: LostWrites): void {
    this.lost = this.lost ? new LostWrites(lost.count + this.lost.count, [...lost.reasons, ...this.lost.reasons]) : lost;
  }
}
