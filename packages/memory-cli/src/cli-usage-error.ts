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
