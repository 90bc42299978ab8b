/**
 * The remote layout's writes that have no caller to fail, turns from `syncTurn` and mirrored
 * built-in facts, when its outbox cannot take them (a full disk, another process's lock): kept in
 * memory, in order, offered to the outbox again before each later one and by `flush()`, which
 * rejects while any are kept, so a turn that cannot be stored is never acknowledged. At most
 * `MAX_HELD_WRITES` are kept: past it the oldest are dropped, and the next `flush()` says so.
 */
import { HermesMemoryError, describeError, type Logger, type MemoryItem } from "@hermes/memory-core";
import { FailureRun } from "../backends/failure-run.js";
import { HeldWriteLimit } from "../backends/held-write-limit.js";
import type { PineconeRemoteMemory } from "./pinecone-remote-store.js";
import type { RememberOptions } from "./remote-records.js";

interface HeldWrite {
  item: MemoryItem;
  options: RememberOptions;
}

/** See the module comment. */
export class RemoteHeldWrites {
  private held: HeldWrite[] = [];
  private lastFailure: unknown = null;
  private readonly failures: FailureRun;
  private readonly limit: HeldWriteLimit;

  constructor(private readonly logger: Logger) {
    this.failures = new FailureRun(logger);
    this.limit = new HeldWriteLimit(logger, "for the Pinecone outbox");
  }

  /** Writes dropped past the bound and not yet reported by `error()`. */
  get dropped(): number {
    return this.limit.dropped;
  }

  /** Writes kept in memory (lost if the process exits). */
  get count(): number {
    return this.held.length;
  }

  /** Queue `item` in `remote`'s outbox behind the writes kept before it; what the outbox does not take is kept. */
  add(remote: PineconeRemoteMemory, item: MemoryItem, options: RememberOptions = {}): void {
    this.held.push({ item, options });
    this.retry(remote);
    this.limit.trim(this.held, describeError(this.lastFailure));
  }

  /**
   * Offer the kept writes to the outbox again, oldest first, until it refuses one. Only a storage
   * failure keeps a write: one refused for itself (`INVALID_ARGUMENT`) would be refused again, so
   * it is dropped with a warning instead of holding up the writes behind it.
   */
  retry(remote: PineconeRemoteMemory): void {
    while (this.held.length > 0) {
      const { item, options } = this.held[0]!;
      try {
        remote.remember(item, options);
      } catch (error) {
        if (!HermesMemoryError.hasCode(error, "STORAGE_FAILED")) {
          this.held.shift();
          this.logger.warn(
            `vector memory: a ${String(item.kind ?? "write")} could not be queued for Pinecone and is not stored: ${describeError(error)}`,
          );
          continue;
        }
        this.lastFailure = error;
        this.failures.report(
          `vector memory: ${this.held.length} writes could not be queued for Pinecone (${describeError(error)}); they are kept in memory and queued again with the next write or flush()`,
        );
        return;
      }
      this.held.shift();
      this.failures.recovered();
      this.limit.recovered();
    }
  }

  /**
   * `STORAGE_FAILED` naming how many writes are kept, how many were dropped since the last call
   * (reported once), and why; `null` when none are kept or dropped.
   */
  error(): HermesMemoryError | null {
    const dropped = this.limit.takeReport();
    if (this.held.length === 0 && !dropped) return null;
    const kept =
      this.held.length > 0
        ? `${this.held.length} accepted writes are not stored yet: the Pinecone outbox could not take them (kept in memory, queued again by the next flush(); lost if the process exits)`
        : "";
    return new HermesMemoryError({
      code: "STORAGE_FAILED",
      message: `vector memory: ${[kept, dropped].filter(Boolean).join("; ")}. Last failure: ${describeError(this.lastFailure)}`,
      cause: this.lastFailure,
    });
  }
}
