import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

/** The tsx loader, so a child process can import this package's TypeScript sources. */
export const TSX = pathToFileURL(createRequire(import.meta.url).resolve("tsx/esm")).href;

/** How a child run of `runScriptInChild` ended. */
export interface ScriptRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Its stdout. */
  out: string;
  /** It was killed after `ms`. */
  timedOut: boolean;
}

/**
 * Run the ES module `script` (with tsx loaded) in a child Node process, killed with SIGKILL after
 * `ms` (default 20 s), optionally with a `heapMb` heap limit. For calls that block synchronously
 * (a FIFO opened or a device read on the main thread, which no test timeout can interrupt) or that
 * may crash or run out of memory: the test sees a signal or a timeout instead of hanging or dying.
 */
export function runScriptInChild(script: string, options: { ms?: number; heapMb?: number } = {}): Promise<ScriptRun> {
  const flags = options.heapMb ? [`--max-old-space-size=${options.heapMb}`] : [];
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...flags, "--import", TSX, "--input-type=module", "-e", script], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, options.ms ?? 20_000);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, out, timedOut });
    });
  });
}
