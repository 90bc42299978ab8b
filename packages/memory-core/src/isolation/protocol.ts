/**
 * The messages between a worker-hosted provider's proxy (host thread) and its worker. Everything
 * crossing the boundary is structured-cloned: plain data only, errors as `SerializedError`.
 */
import { HermesMemoryError, describeError } from "../errors.js";
import type { DiscoveryResult } from "../discovery/types.js";
import type { ProviderSkill } from "../skills.js";

/** How a provider runs: `inline` on the host's event loop (the default) or `worker` in a worker thread. */
export type IsolationMode = "inline" | "worker";

/** The isolation modes, as config.yaml and manifests spell them. */
export const ISOLATION_MODES: readonly IsolationMode[] = ["inline", "worker"];

/** True for `"inline"` or `"worker"`. */
export function isIsolationMode(value: unknown): value is IsolationMode {
  return value === "inline" || value === "worker";
}

/** An error as it crosses the thread boundary. A `code` marks a `HermesMemoryError`. */
export interface SerializedError {
  message: string;
  name: string;
  code?: string;
}

/** A value read from the provider, or the error reading it threw. */
export type Settled<T> = { ok: true; value: T } | { ok: false; error: SerializedError };

/**
 * What the proxy answers synchronously: read in the worker after it loaded the provider and after
 * every call, and sent to the host whenever it changed.
 */
export interface ProviderSnapshot {
  name: string;
  preCompressCheckpointApiVersion: 1 | 2;
  isAvailable: Settled<boolean>;
  unavailableReason: Settled<string>;
  getToolSchemas: Settled<unknown[]>;
  getConfigSchema: Settled<unknown[]>;
  recallStatus: Settled<unknown>;
  backupPaths: Settled<string[]>;
  /** Absent when the provider has no `capabilities()`. */
  capabilities?: Settled<unknown>;
}

/** What the worker is started with. */
export interface WorkerStart {
  name: string;
  hermesHome: string;
  cwd?: string;
  bundledDir?: string;
  packageRoots?: string[];
  hostDir?: string;
  importTimeoutMs?: number;
  registerSkills?: boolean;
  enableProjectPlugins?: boolean;
  /** A discovery already made by the host, so the worker does not discover again. */
  discovery?: DiscoveryResult;
}

/** Host → worker. */
export interface CallMessage {
  type: "call";
  id: number;
  method: string;
  args: unknown[];
}

/** Worker → host. */
export type WorkerMessage =
  | { type: "ready"; methods: string[]; snapshot: ProviderSnapshot; skills: ProviderSkill[]; registrations: string[] }
  | { type: "load-failed"; error: SerializedError }
  | { type: "result"; id: number; outcome: Settled<unknown>; snapshot?: ProviderSnapshot }
  | { type: "log"; level: "debug" | "info" | "warn" | "error"; message: string };

/** Turn any thrown value into data that survives `postMessage`. */
export function serializeError(error: unknown): SerializedError {
  const message = describeError(error);
  let name = "Error";
  let code: string | undefined;
  try {
    if (error instanceof Error && typeof error.name === "string") name = error.name;
    if (HermesMemoryError.isInstance(error) && typeof error.code === "string") code = error.code;
  } catch {
    // A value whose properties throw is described by its message alone.
  }
  return code === undefined ? { message, name } : { message, name, code };
}

/**
 * Rebuild a worker's error on the host: typed errors keep their `code` and name; anything else
 * becomes `PROVIDER_FAILED` with the original message.
 */
export function deserializeError(error: SerializedError, provider: string): HermesMemoryError {
  if (error.code !== undefined) {
    const rebuilt = new HermesMemoryError({ code: error.code, message: error.message });
    rebuilt.name = error.name;
    return rebuilt;
  }
  return new HermesMemoryError({
    code: "PROVIDER_FAILED",
    message: `Memory provider '${provider}' (in its worker thread) threw ${error.name}: ${error.message}`,
  });
}

/** The value, or the error it settled with, thrown as a typed error. */
export function unwrapSettled<T>(settled: Settled<T>, provider: string): T {
  if (settled.ok) return settled.value;
  throw deserializeError(settled.error, provider);
}
