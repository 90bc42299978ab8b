import type { Writable } from "node:stream";
import { describeError, type Logger } from "@hermes/memory-core";

/**
 * A logger writing one line per message to `stream` (stderr): under the stdio transport stdout
 * carries the protocol, so nothing else may ever be written there. `verbose` adds info and debug.
 */
export function streamLogger(stream: Writable, options: { verbose?: boolean; prefix?: string } = {}): Logger {
  const prefix = options.prefix ?? "hermes-memory mcp";
  const write = (level: string, message: string, details: unknown[]): void => {
    const extra = details.length > 0 ? ` ${details.map((d) => (d instanceof Error ? describeError(d) : String(d))).join(" ")}` : "";
    stream.write(`${prefix}: ${level}${message}${extra}\n`);
  };
  const noop = (): void => {};
  return {
    debug: options.verbose ? (m, ...d) => write("debug: ", m, d) : noop,
    info: options.verbose ? (m, ...d) => write("", m, d) : noop,
    warn: (m, ...d) => write("warning: ", m, d),
    error: (m, ...d) => write("error: ", m, d),
  };
}
