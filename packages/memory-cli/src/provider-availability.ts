import { describeError, envFileOnlyHint, type MemoryProvider } from "@hermes/memory-core";

/** Whether a loaded provider can run here (`isAvailable()`), and the provider's own reason when not. */
export type ProviderAvailability = { available: true } | { available: false; reason: string };

/**
 * Ask `provider` whether it can run, as every command reports it: its `unavailableReason()` (which
 * names the fix: a key to set, a native addon to build), else a plain statement. A hook that
 * throws makes the provider unavailable with that error as the reason; this never throws. With
 * `where`, the reason also names keys set in that home's `.env` but not in `where.env` (a provider
 * reading `process.env` does not see them; `getEnv` does).
 */
export function providerAvailability(
  provider: MemoryProvider,
  where?: { hermesHome: string; env: NodeJS.ProcessEnv },
): ProviderAvailability {
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
  const said = typeof reason === "string" && reason.trim() !== "" ? reason : "isAvailable() returned false";
  const hint = where ? envFileOnlyHint(provider, where.hermesHome, where.env) : "";
  return { available: false, reason: hint ? `${said.replace(/\.$/, "")}.${hint}` : said };
}
