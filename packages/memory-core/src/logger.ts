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

/** A logger writing warnings and errors (and, with `verbose`, everything) to the console. */
export function consoleLogger(options: { verbose?: boolean; prefix?: string } = {}): Logger {
  const prefix = options.prefix ?? "[hermes-memory]";
  return {
    debug: options.verbose ? (m, ...d) => console.debug(prefix, m, ...d) : noop,
    info: options.verbose ? (m, ...d) => console.info(prefix, m, ...d) : noop,
    warn: (m, ...d) => console.warn(prefix, m, ...d),
    error: (m, ...d) => console.error(prefix, m, ...d),
  };
}
