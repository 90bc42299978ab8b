import type { Readable, Writable } from "node:stream";

/**
 * Everything the CLI touches in the outside world, injected so the program can run in-process with
 * fake streams. `bin.ts` passes the real process streams.
 */
export interface CliIo {
  stdin: Readable & { isTTY?: boolean };
  stdout: Writable & { isTTY?: boolean; columns?: number };
  stderr: Writable & { isTTY?: boolean };
  env: NodeJS.ProcessEnv;
  /** The process working directory (`--cwd` overrides it for discovery). */
  cwd: string;
}

/** The real process streams and environment. */
export function processIo(): CliIo {
  return { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, env: process.env, cwd: process.cwd() };
}
