/** Child processes driven line by line over stdin/stdout, for the chaos tests. */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";

export class LineProcess {
  readonly child: ChildProcess;
  readonly lines: string[] = [];
  stderr = "";
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private waiters: Array<() => void> = [];

  constructor(command: string, args: string[], env: NodeJS.ProcessEnv = process.env) {
    this.child = spawn(command, args, { env, stdio: ["pipe", "pipe", "pipe"] });
    createInterface({ input: this.child.stdout! }).on("line", (line) => {
      this.lines.push(line);
      this.wake();
    });
    this.child.stderr!.on("data", (chunk: Buffer) => (this.stderr += chunk.toString()));
    this.exited = new Promise((resolve) =>
      this.child.on("exit", (code, signal) => {
        resolve({ code, signal });
        this.wake();
      }),
    );
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }

  /** Resolve with the first line (from index `from`) matching `test`; reject if the process exits first. */
  async waitForLine(test: (line: string) => boolean, from = 0, timeoutMs = 60_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      for (let i = from; i < this.lines.length; i++) if (test(this.lines[i]!)) return this.lines[i]!;
      if (this.child.exitCode !== null || this.child.signalCode !== null) {
        throw new Error(
          `process ${this.child.pid} exited (${this.child.exitCode ?? this.child.signalCode}) before the expected line; stderr: ${this.stderr}`,
        );
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for a line from ${this.child.pid}; stderr: ${this.stderr}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  send(line: string): void {
    this.child.stdin!.write(`${line}\n`);
  }

  /** SIGKILL and wait until the process is gone. */
  async kill9(): Promise<void> {
    this.child.kill("SIGKILL");
    await this.exited;
  }

  acked(): string[] {
    return this.lines.filter((l) => l.startsWith("ACK ")).map((l) => l.slice(4));
  }

  failures(): string[] {
    return this.lines.filter((l) => l.startsWith("FAIL "));
  }
}

/** A pid that belongs to no running process: a child that has already exited. */
export function deadPid(): number {
  return spawnSync(process.execPath, ["-e", ""]).pid as number;
}

/** Why `python3` cannot be used here, or `null` when it can. */
export function python3Unavailable(): string | null {
  const probe = spawnSync("python3", ["-c", "import fcntl"], { encoding: "utf8" });
  if (probe.error) return `python3 is not installed (${probe.error.message})`;
  if (probe.status !== 0) return `python3 cannot import fcntl: ${probe.stderr.trim()}`;
  return null;
}
