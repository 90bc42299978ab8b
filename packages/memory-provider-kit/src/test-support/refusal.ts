import { HermesMemoryError } from "@hermes/memory-core";
import { expect } from "vitest";

/** The `INVALID_ARGUMENT` message `fn` throws (fails when it throws anything else or nothing). */
export function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(HermesMemoryError.hasCode(error, "INVALID_ARGUMENT")).toBe(true);
    return (error as Error).message;
  }
  throw new Error("expected INVALID_ARGUMENT, nothing was thrown");
}
