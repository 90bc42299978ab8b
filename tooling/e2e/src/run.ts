import { spawnSync, type SpawnSyncOptions } from "node:child_process";

export interface RunResult {
  status: number;
  stdout: string;
  stderr: string;
}

/** Run a command, capture its output, and throw with both streams when it fails (unless `allowFail`). */
export function run(command: string, args: string[], options: SpawnSyncOptions & { allowFail?: boolean } = {}): RunResult {
  const { allowFail, ...spawnOptions } = options;
  const r = spawnSync(command, args, { encoding: "utf8", maxBuffer: 64 * 1024 * 1024, ...spawnOptions });
  const result = { status: r.status ?? 1, stdout: String(r.stdout ?? ""), stderr: String(r.stderr ?? "") };
  if (!allowFail && result.status !== 0) {
    throw new Error(
      `\`${command} ${args.join(" ")}\` exited ${result.status} in ${String(spawnOptions.cwd ?? process.cwd())}\n--- stdout\n${result.stdout.slice(-6000)}\n--- stderr\n${result.stderr.slice(-6000)}`,
    );
  }
  return result;
}
