import { HermesMemoryError, boundedCall } from "@hermes/memory-core";

/**
 * Run one call into memory with core's `boundedCall` and turn its outcome into a value or a thrown
 * error: a rejection is rethrown, a call that ran past `ms` becomes `PROVIDER_TIMEOUT` (the call
 * keeps running detached and its late result is dropped, so it can never take the server down).
 */
export async function boundedProviderCall<T>(label: string, ms: number, work: () => PromiseLike<T> | T): Promise<T> {
  const outcome = await boundedCall(work, ms);
  if (outcome.status === "ok") return outcome.value as T;
  if (outcome.status === "error") throw outcome.error;
  throw new HermesMemoryError({
    code: "PROVIDER_TIMEOUT",
    message: `${label} did not finish within ${ms} ms; the memory provider may be stuck. Check it with \`hermes-memory memory status\`, or raise the limit with --tool-timeout.`,
  });
}
