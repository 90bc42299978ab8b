import { HermesMemoryError, describeError } from "./errors.js";

/**
 * Where the manager, loader and built-in memory report what they did. The default logs nothing
 * (a library must not write to the console on its own); pass `consoleLogger()` or your own.
 */
export interface Logger {
  debug(message: string, ...details: unknown[]): void;
  info(message: string, ...details: unknown[]): void;
  warn(message: string, ...details: unknown[]): void;
  error(message: string, ...details: unknown[]): void;
}

const noop = (): void => {};

/** A logger that discards everything (the default). */
export const silentLogger: Logger = Object.freeze({ debug: noop, info: noop, warn: noop, error: noop });

/**
 * Codes of typed errors that report a condition outside the program — the network or a remote
 * store failing, a provider unavailable or too slow, a full or read-only disk, a lock held by
 * another process, a native addon that was never built, a file or setting the user must change —
 * rather than a bug. Their message
 * already says what to do, so a stack trace would only bury it.
 */
const OUTSIDE_CONDITION_CODES: ReadonlySet<string> = new Set([
  "STORAGE_FAILED",
  "PROVIDER_UNAVAILABLE",
  "PROVIDER_TIMEOUT",
  "PROVIDER_NOT_FOUND",
  "PROVIDER_DISABLED",
  "LOCK_TIMEOUT",
  "LOCK_FAILED",
  "SCHEMA_TOO_NEW",
  "EMBEDDING_DIMENSION_MISMATCH",
  "NATIVE_MODULE_MISSING",
  "INVALID_CONFIG",
  "INVALID_ENV_NAME",
  "SETUP_INCOMPLETE",
  "POST_SETUP_FAILED",
  "CHECKPOINT_UNAVAILABLE",
  "ITEM_NOT_FOUND",
]);

/** The code of an expected failure (a typed error with an outside-condition code), else null. */
function expectedFailureCode(detail: unknown): string | null {
  try {
    return HermesMemoryError.isInstance(detail) && OUTSIDE_CONDITION_CODES.has(detail.code) ? detail.code : null;
  } catch {
    // A value whose marker or code cannot be read is not one of ours.
    return null;
  }
}

/**
 * The arguments `console` gets for one log call. Expected failures become text on the message's
 * line — `[CODE]`, after their message unless the line already says it — so an outage reads as
 * one line with its code and remedy; anything else (a bug: an untyped error with its stack, or
 * other details) is handed to `console` as it is.
 */
function consoleArguments(prefix: string, message: string, details: unknown[]): unknown[] {
  let line = message;
  const rest: unknown[] = [];
  for (const detail of details) {
    const code = expectedFailureCode(detail);
    if (code === null) {
      rest.push(detail);
      continue;
    }
    const text = describeError(detail);
    line += line.includes(text) ? ` [${code}]` : ` — ${text} [${code}]`;
  }
  return [prefix, line, ...rest];
}

/**
 * A logger writing warnings and errors (and, with `verbose`, everything) to the console. An
 * expected failure passed as a detail (a `HermesMemoryError` whose code reports an outside
 * condition such as `STORAGE_FAILED`, `PROVIDER_UNAVAILABLE` or `PROVIDER_TIMEOUT`) is printed as
 * its code on the message's line, without a stack; other errors keep their stack, which is what a
 * bug report needs.
 */
export function consoleLogger(options: { verbose?: boolean; prefix?: string } = {}): Logger {
  const prefix = options.prefix ?? "[hermes-memory]";
  return {
    debug: options.verbose ? (m, ...d) => console.debug(...consoleArguments(prefix, m, d)) : noop,
    info: options.verbose ? (m, ...d) => console.info(...consoleArguments(prefix, m, d)) : noop,
    warn: (m, ...d) => console.warn(...consoleArguments(prefix, m, d)),
    error: (m, ...d) => console.error(...consoleArguments(prefix, m, d)),
  };
}
