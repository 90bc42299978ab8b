import { HermesMemoryError } from "@hermes/memory-core";

/**
 * Thrown by commands for a user error: printed as one line (`hermes-memory: <message>`) with exit
 * code 1. The message must say what was wrong and what to do instead.
 */
export class CliUsageError extends HermesMemoryError {
  constructor(message: string, code = "INVALID_ARGUMENT") {
    super({ code, message });
    this.name = "CliUsageError";
  }
}

/**
 * Thrown by a command that has already printed its whole answer, the failure included (under
 * `--json`: one document holding an `error`), and only needs its exit code: nothing more is printed.
 */
export class ReportedFailure extends CliUsageError {
  constructor(message: string, code: string) {
    super(message, code);
    this.name = "ReportedFailure";
  }
}
