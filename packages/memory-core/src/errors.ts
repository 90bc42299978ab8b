const ERROR_MARKER = Symbol.for("@hermes/memory.error");

/**
 * Stable machine-readable error codes. New codes may be added in minor releases; existing codes
 * never change meaning.
 */
export type HermesMemoryErrorCode =
  | "PROVIDER_NOT_FOUND"
  | "PROVIDER_LOAD_FAILED"
  | "PROVIDER_NAME_MISMATCH"
  | "PROVIDER_DISABLED"
  | "PROVIDER_UNAVAILABLE"
  | "PROVIDER_TIMEOUT"
  | "INVALID_MANIFEST"
  | "INVALID_PROVIDER"
  | "INVALID_ARGUMENT"
  | "INVALID_CONFIG"
  | "INVALID_ENV_NAME"
  | "SETUP_INCOMPLETE"
  | "POST_SETUP_FAILED"
  | "UNSUPPORTED_TOOL"
  | "CHECKPOINT_UNAVAILABLE"
  | "EMBEDDING_DIMENSION_MISMATCH"
  | "SCHEMA_TOO_NEW"
  | "STORAGE_FAILED"
  | "NATIVE_MODULE_MISSING"
  | (string & {});

/** What `new HermesMemoryError(...)` takes: a stable `code`, a message saying what was wrong and how to fix it, and the underlying `cause`. */
export interface HermesMemoryErrorOptions {
  code: HermesMemoryErrorCode;
  message: string;
  cause?: unknown;
}

/**
 * Base class of every error this project throws on purpose. `code` is stable; `message` says what
 * was wrong and how to fix it. Use `HermesMemoryError.isInstance(e)` rather than `instanceof`: it
 * also recognises errors thrown by a second copy of the package (duplicate installs).
 */
export class HermesMemoryError extends Error {
  readonly [ERROR_MARKER] = true;
  readonly code: HermesMemoryErrorCode;

  constructor({ code, message, cause }: HermesMemoryErrorOptions) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "HermesMemoryError";
    this.code = code;
  }

  /** True for any HermesMemoryError, from this copy of the package or another one. */
  static isInstance(error: unknown): error is HermesMemoryError {
    return typeof error === "object" && error !== null && (error as Record<symbol, unknown>)[ERROR_MARKER] === true;
  }

  /** True when `error` is a HermesMemoryError with the given code. */
  static hasCode(error: unknown, code: HermesMemoryErrorCode): error is HermesMemoryError {
    return HermesMemoryError.isInstance(error) && error.code === code;
  }
}

/** Thrown by the default `MemoryProvider.handleToolCall` when a provider does not handle a tool. */
export class UnsupportedToolError extends HermesMemoryError {
  readonly providerName: string;
  readonly toolName: string;

  constructor(providerName: string, toolName: string) {
    super({
      code: "UNSUPPORTED_TOOL",
      message: `Provider ${providerName} does not handle tool ${toolName}. Override handleToolCall() for every tool returned by getToolSchemas().`,
    });
    this.name = "UnsupportedToolError";
    this.providerName = providerName;
    this.toolName = toolName;
  }

  static override isInstance(error: unknown): error is UnsupportedToolError {
    return HermesMemoryError.hasCode(error, "UNSUPPORTED_TOOL");
  }
}

/**
 * Thrown by `preCompress()` when `compression.checkpoint_required` is on and no provider could
 * commit a durable checkpoint. The message always starts with `BLOCKED_MISSING_PREREQUISITE:` so
 * hosts and operators can match it; compression must abort before any lossy rewrite.
 */
export class CheckpointUnavailableError extends HermesMemoryError {
  readonly reason: string;

  constructor(reason: string, options: { remediation?: boolean; cause?: unknown } = {}) {
    const remediation = options.remediation
      ? ". Recover by set compression.checkpoint_required: false, or switch to a memory provider that implements checkpoint API v2"
      : "";
    super({
      code: "CHECKPOINT_UNAVAILABLE",
      message: `BLOCKED_MISSING_PREREQUISITE: required pre-compress checkpoint unavailable: ${reason}${remediation}`,
      cause: options.cause,
    });
    this.name = "CheckpointUnavailableError";
    this.reason = reason;
  }

  static override isInstance(error: unknown): error is CheckpointUnavailableError {
    return HermesMemoryError.hasCode(error, "CHECKPOINT_UNAVAILABLE");
  }
}

/**
 * Short human-readable text for any thrown value (used in logs and JSON error strings). Never
 * throws, whatever was thrown: an Error whose `message` getter throws, a Proxy whose traps throw,
 * an object whose `toJSON` and `toString` both throw.
 */
export function describeError(error: unknown): string {
  try {
    if (error instanceof Error) {
      const message: unknown = error.message;
      if (typeof message === "string" && message !== "") return message;
      const name: unknown = error.name;
      return typeof name === "string" && name !== "" ? name : "Error";
    }
    if (typeof error === "string") return error;
    try {
      return JSON.stringify(error) ?? String(error);
    } catch {
      return String(error);
    }
  } catch {
    return "a thrown value whose message could not be read";
  }
}

/** What a command prints on stdout when it fails under `--json` (see `errorDocument`). */
export interface ErrorDocument {
  error: { code: string; message: string };
}

/**
 * The one JSON document of a failed command under `--json`, for the `hermes-memory` CLI and the
 * provider subcommands it hosts alike, so a script reads every failure the same way: a
 * `HermesMemoryError`'s code and message, or `INTERNAL_ERROR` with the text of anything else (a
 * bug). Never throws.
 */
export function errorDocument(error: unknown): ErrorDocument {
  let code = "INTERNAL_ERROR";
  try {
    if (HermesMemoryError.isInstance(error) && typeof error.code === "string" && error.code !== "") code = error.code;
  } catch {
    // A thrown value whose code cannot be read (a throwing getter, a Proxy) has none.
  }
  return { error: { code, message: describeError(error) } };
}

/** Characters of a text value `describeValue` quotes before cutting it. */
const DESCRIBED_TEXT_CHARS = 40;

/**
 * A short description of a value for an error message ("…; got 12", "… is a list, not text"),
 * never a dump of it: text quoted as JSON, cut at 40 characters with "…" marking the cut ("" is
 * "an empty string"); a number, boolean or bigint as written; "null"; "missing" for `undefined`;
 * "a list", "an object", "a function" or "a symbol" for the rest (nested values are never read).
 */
export function describeValue(value: unknown): string {
  if (value === undefined) return "missing";
  if (value === null) return "null";
  switch (typeof value) {
    case "string":
      if (value === "") return "an empty string";
      return JSON.stringify(value.length > DESCRIBED_TEXT_CHARS ? `${value.slice(0, DESCRIBED_TEXT_CHARS)}…` : value);
    case "number":
    case "boolean":
    case "bigint":
      return String(value);
    case "function":
      return "a function";
    case "symbol":
      return "a symbol";
    default:
      try {
        return Array.isArray(value) ? "a list" : "an object";
      } catch {
        // A revoked Proxy throws even from Array.isArray.
        return "an object";
      }
  }
}
