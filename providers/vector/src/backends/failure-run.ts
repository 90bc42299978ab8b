import type { Logger } from "@hermes/memory-core";

/**
 * One warning per run of failures: a store that keeps failing (read-only, a full disk, an outbox it
 * cannot write) is reported once, not once per turn; the failures after it are logged at debug
 * level until `recovered()` says a write went through again.
 */
export class FailureRun {
  private warned = false;
  constructor(private readonly logger: Logger) {}

  /** Log a failure: a warning when it starts a run, at debug level while the run goes on. */
  report(message: string): void {
    if (this.warned) return this.logger.debug(message);
    this.warned = true;
    this.logger.warn(`${message} (further failures are logged at debug level until a write succeeds again)`);
  }

  /** A write went through: the next failure starts a new run (and is warned about). */
  recovered(): void {
    this.warned = false;
  }
}
