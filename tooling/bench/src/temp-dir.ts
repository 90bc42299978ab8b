import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const live = new Set<string>();
let handlersInstalled = false;

// An interrupted run (Ctrl-C, a CI timeout) must not leave generated trees of up to gigabytes behind.
function installSignalHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  for (const [signal, code] of [
    ["SIGINT", 130],
    ["SIGTERM", 143],
  ] as const) {
    process.once(signal, () => {
      for (const dir of live) fs.rmSync(dir, { recursive: true, force: true });
      process.exit(code);
    });
  }
}

/**
 * Creates a private temp directory and returns it with a remover. The directory is also removed
 * when the process is interrupted with SIGINT or SIGTERM.
 */
export function makeTempDir(prefix: string): { dir: string; remove(): void } {
  installSignalHandlers();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `hermes-bench-${prefix}-`));
  live.add(dir);
  return {
    dir,
    remove: () => {
      live.delete(dir);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
