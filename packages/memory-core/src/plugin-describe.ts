import { describeError } from "./errors.js";

/** Longest error text taken from a provider for a log line, a JSON tool error or a report. */
export const MAX_PROVIDER_ERROR_CHARS = 2000;

/**
 * `describeError` (which never throws, whatever provider code threw) cut to
 * `MAX_PROVIDER_ERROR_CHARS`, so a 100 MB message never reaches a log line, a JSON tool error or a
 * report.
 */
export function describeProviderError(error: unknown): string {
  const text = describeError(error);
  return text.length > MAX_PROVIDER_ERROR_CHARS ? `${text.slice(0, MAX_PROVIDER_ERROR_CHARS)}… (${text.length} characters)` : text;
}

/**
 * A provider's `name`, read once and safely: `null` when the getter throws or the value is not a
 * string. Used wherever the loader, the manager and `openMemory` read the name of provider code.
 */
export function readProviderName(provider: unknown): string | null {
  try {
    const name: unknown = (provider as { name?: unknown }).name;
    return typeof name === "string" ? name : null;
  } catch {
    return null;
  }
}
