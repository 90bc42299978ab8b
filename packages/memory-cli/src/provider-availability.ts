import { describeError, type MemoryProvider } from "@hermes/memory-core";

/** Whether a loaded provider can run here (`isAvailable()`), and the provider's own reason when not. */
export type ProviderAvailability = { available: true } | { available: false; reason: string };

/**
 * Ask `provider` whether it can run, as every command reports it: its `unavailableReason()` (which
 * names the fix: a key to set, a native addon to build), else a plain statement. A hook that
 * throws makes the provider unavailable with that error as the reason; this never throws.
 */
export function providerAvailability(provider: MemoryProvider): ProviderAvailability {
  try {
    if (provider.isAvailable() === true) return { available: true };
  } catch (error) {
    return { available: false, reason: `isAvailable() failed: ${describeError(error)}` };
  }
  let reason: unknown;
  try {
    reason = provider.unavailableReason?.();
  } catch (error) {
    reason = `unavailableReason() failed: ${describeError(error)}`;
  }
  return { available: false, reason: typeof reason === "string" && reason.trim() !== "" ? reason : "isAvailable() returned false" };
}
