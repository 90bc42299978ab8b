import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, onTestFinished, vi } from "vitest";
import { ChildProcessWatch, RUN_MARKER_ENV } from "./child-processes.js";

const started: number[] = [];
afterEach(() => {
  for (const pid of started.splice(0)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
});

function sleeper(options: { detached?: boolean; env?: NodeJS.ProcessEnv } = {}): number {
  const child = spawn("sleep", ["300"], { stdio: "ignore", detached: options.detached ?? false, env: options.env ?? process.env });
  child.unref();
  started.push(child.pid as number);
  return child.pid as number;
}

function running(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "latin1");
    const state = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
}

describe.runIf(process.platform === "linux")("ChildProcessWatch", () => {
  it("finds processes started during the run (detached or with their own environment), not those from before, and stops them", async () => {
    const before = sleeper();
    const watch = new ChildProcessWatch();
    expect(watch.unsupportedReason).toBeUndefined();
    watch.start();
    try {
      expect(process.env[RUN_MARKER_ENV]).toMatch(/^[0-9a-f]{16}$/);
      const detached = sleeper({ detached: true });
      const ownEnv = sleeper({ env: { PATH: process.env.PATH ?? "" } });
      // Re-parented away from this process: found by the marker it inherited.
      const daemonDir = fs.mkdtempSync(path.join(os.tmpdir(), "contract-daemon-"));
      onTestFinished(() => fs.rmSync(daemonDir, { recursive: true, force: true }));
      const daemonPidFile = path.join(daemonDir, "pid");
      spawn("sh", ["-c", `sleep 300 & echo $! > ${daemonPidFile}`], { stdio: "ignore" });
      // The pid file exists before the shell has written the pid into it.
      const daemon = await vi.waitFor(
        () => {
          const text = fs.readFileSync(daemonPidFile, "utf8").trim();
          if (!/^\d+$/.test(text)) throw new Error(`the pid file holds ${JSON.stringify(text)} so far`);
          return Number(text);
        },
        { timeout: 10_000, interval: 20 },
      );
      started.push(daemon);
      // Looked for once each runs `sleep` (a process is its parent's copy until it has exec'd).
      await vi.waitFor(
        () => {
          for (const pid of [detached, ownEnv, daemon])
            expect(fs.readFileSync(`/proc/${pid}/cmdline`, "latin1"), `pid ${pid}`).toBe("sleep\u0000300\u0000");
        },
        { timeout: 10_000, interval: 20 },
      );
      const left = watch.leftovers().map((l) => l.entry.pid);
      expect(left).toEqual(expect.arrayContaining([detached, ownEnv, daemon]));
      expect(left).not.toContain(before);
      const lines = await watch.stopAll(watch.leftovers(), 500);
      expect(lines.find((l) => l.startsWith(`pid ${detached} (sleep 300)`))).toContain("ended by SIGTERM");
      expect([detached, ownEnv, daemon].filter(running)).toEqual([]);
      expect(watch.leftovers()).toEqual([]);
      expect(running(before)).toBe(true);
    } finally {
      watch.stop();
    }
    expect(process.env[RUN_MARKER_ENV]).toBeUndefined();
  }, 20_000);

  it("kills with SIGKILL a process that ignores SIGTERM", async () => {
    const watch = new ChildProcessWatch();
    watch.start();
    try {
      const child = spawn(process.execPath, ["-e", "process.on('SIGTERM', () => {}); setInterval(() => {}, 1000); console.log('ready')"], {
        stdio: ["ignore", "pipe", "ignore"],
      });
      started.push(child.pid as number);
      await new Promise((resolve) => child.stdout.once("data", resolve));
      const lines = await watch.stopAll(watch.leftovers(), 300);
      expect(lines).toEqual([
        expect.stringMatching(new RegExp(`^pid ${child.pid} \\(.*\\): ignored SIGTERM for 300 ms, killed with SIGKILL$`)),
      ]);
      expect(running(child.pid as number)).toBe(false);
    } finally {
      watch.stop();
    }
  }, 20_000);
});
