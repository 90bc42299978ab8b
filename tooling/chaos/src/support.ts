/**
 * Shared helpers of the chaos suite: child processes running small scripts against the built
 * packages, line-based waiting with deadlines, tmpfs mounts (skipped with the reason when the
 * machine does not allow them), and the per-class figures each file reports.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export { mountTmpfs } from "@hermes/test-support";

export const CHAOS_DIR = fileURLToPath(new URL("..", import.meta.url));
export const FIXTURES = path.join(CHAOS_DIR, "fixtures");
export const CLI_BIN = fileURLToPath(new URL("../../../packages/memory-cli/dist/bin.js", import.meta.url));

/** A running child: its output so far, and a promise of how it ended. */
export interface Child {
  proc: ChildProcess;
  stdout: string;
  stderr: string;
  startedAt: number;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number }>;
  /** Every complete stdout line so far. */
  lines(): string[];
  /** Wait (polling, with a deadline) until a stdout line matches. */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<string>;
  send(line: string): void;
}

/** Run `node <script> ...args` (script relative to fixtures/) with cwd in the chaos package, so it imports the built packages. */
export function runNode(script: string, args: string[], env: Record<string, string> = {}): Child {
  const file = path.isAbsolute(script) ? script : path.join(FIXTURES, script);
  // stdin is a pipe the child only reads when it waits for the parent (see the fixtures).
  const proc = spawn(process.execPath, [file, ...args], {
    cwd: CHAOS_DIR,
    env: { ...process.env, ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  return wrap(proc);
}

/** Run the real `hermes-memory` CLI. */
export function runCli(args: string[], env: Record<string, string>): Child {
  return runNode(CLI_BIN, args, env);
}

function wrap(proc: ChildProcess): Child {
  const startedAt = Date.now();
  const child: Child = {
    proc,
    stdout: "",
    stderr: "",
    startedAt,
    exited: new Promise((resolve) => proc.on("close", (code, signal) => resolve({ code, signal, ms: Date.now() - startedAt }))),
    lines: () => child.stdout.split("\n").slice(0, -1),
    async waitForLine(pattern, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      let ended = false;
      void child.exited.then(() => (ended = true));
      for (;;) {
        const hit = child.lines().find((l) => pattern.test(l));
        if (hit !== undefined) return hit;
        if (ended) throw new Error(`child exited before printing ${pattern}: stdout=${child.stdout} stderr=${child.stderr}`);
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${pattern}: stdout=${child.stdout} stderr=${child.stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    },
    send(line) {
      proc.stdin?.write(`${line}\n`);
    },
  };
  proc.stdout?.on("data", (d: Buffer) => (child.stdout += d.toString()));
  proc.stderr?.on("data", (d: Buffer) => (child.stderr += d.toString()));
  return child;
}

/** A fresh temporary directory, removed by `cleanup()`. */
export function tempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `hermes-chaos-${prefix}-`));
}

/** Fill the file system holding `dir` until it is full (ENOSPC); returns the filler's path. */
export function fillDisk(dir: string): string {
  const filler = path.join(dir, "filler.bin");
  const fd = fs.openSync(filler, "w");
  const chunk = Buffer.alloc(64 * 1024, 1);
  try {
    for (let size = chunk.length; size >= 512;) {
      try {
        fs.writeSync(fd, chunk, 0, size);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
        size = size / 2;
      }
    }
  } finally {
    fs.closeSync(fd);
  }
  return filler;
}

/** Figures of one failure class, printed once per file (the report collects them). */
export class ClassFigures {
  trials = 0;
  acknowledgedLost = 0;
  longestStallMs = 0;
  constructor(readonly name: string) {}
  stall(ms: number): void {
    this.longestStallMs = Math.max(this.longestStallMs, ms);
  }
  print(): void {
    console.log(
      `CHAOS ${this.name}: trials=${this.trials} acknowledged_lost=${this.acknowledgedLost} longest_stall_ms=${this.longestStallMs}`,
    );
  }
}

/** The `vector` provider config for a home (local store or Pinecone at `pineconeUrl`). */
export function writeVectorHome(
  home: string,
  options: { pineconeUrl?: string; maxRetries?: number; requestTimeoutMs?: number } = {},
): void {
  fs.mkdirSync(home, { recursive: true });
  const lines = ["memory:", "  provider: vector", "  vector:", "    dimensions: 64", "    embedder: hashing"];
  if (options.pineconeUrl) {
    lines.push("    store: pinecone", "    pinecone_index: chaos", `    pinecone_host: ${options.pineconeUrl}`);
    lines.push(`    max_retries: ${options.maxRetries ?? 2}`, `    request_timeout_ms: ${options.requestTimeoutMs ?? 1000}`);
    fs.writeFileSync(path.join(home, ".env"), "PINECONE_API_KEY=test-key\n");
  }
  fs.writeFileSync(path.join(home, "config.yaml"), `${lines.join("\n")}\n`);
}
