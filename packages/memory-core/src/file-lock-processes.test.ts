/**
 * `withFileLock` across real processes when the lock file changes under a waiting contender.
 * flock mode: the lock file deleted or replaced while one process holds it and another waits on
 * it; a third process then locks the new file, and the waiting one must not enter beside it when
 * the first leaves. pid-file mode: an owner record replaced (a holder that over-stayed `staleMs`
 * was taken over) is never removed by the holder it replaced.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeTempDir } from "./test-support/temp-tree.js";

const TSX = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
const CONTENDER = fileURLToPath(new URL("./test-support/lock-contender.ts", import.meta.url));
const hasProcFd = fs.existsSync("/proc/self/fd");

/** A contender process and the lines it printed. */
interface Contender {
  proc: ChildProcess;
  lines: string[];
  /** Wait (polling, with a deadline) until it printed a line matching `pattern`. */
  line(pattern: RegExp, timeoutMs?: number): Promise<string>;
  release(): void;
}

const running: ChildProcess[] = [];
let tmp: ReturnType<typeof makeTempDir>;
let file: string;
beforeEach(() => {
  tmp = makeTempDir("hermes-lock-processes-");
  file = path.join(tmp.dir, "MEMORY.md");
});
afterEach(() => {
  for (const proc of running.splice(0)) proc.kill("SIGKILL");
  tmp.cleanup();
});

async function until(condition: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

function contender(mode: "flock" | "pidfile", options: { timeoutMs: number; staleMs: number; mark?: boolean }): Contender {
  const env = { ...process.env, HERMES_FILE_LOCK: mode === "pidfile" ? "pidfile" : "" };
  const args = ["--import", TSX, CONTENDER, file, String(options.timeoutMs), String(options.staleMs), options.mark ? "mark" : "-"];
  const proc = spawn(process.execPath, args, { env, stdio: ["pipe", "pipe", "inherit"] });
  running.push(proc);
  const lines: string[] = [];
  let partial = "";
  proc.stdout!.on("data", (chunk: Buffer) => {
    const parts = (partial + chunk.toString()).split("\n");
    partial = parts.pop()!;
    lines.push(...parts);
  });
  return {
    proc,
    lines,
    async line(pattern, timeoutMs = 15_000) {
      await until(
        () => lines.some((l) => pattern.test(l)),
        `pid ${proc.pid} printed ${pattern} (it printed ${JSON.stringify(lines)})`,
        timeoutMs,
      );
      return lines.find((l) => pattern.test(l))!;
    },
    release() {
      proc.stdin!.write("RELEASE\n");
    },
  };
}

/** The inode numbers of the files process `pid` has open (Linux `/proc`). */
function openInodes(pid: number): Set<number> {
  const inodes = new Set<number>();
  const dir = `/proc/${pid}/fd`;
  let fds: string[] = [];
  try {
    fds = fs.readdirSync(dir);
  } catch {
    return inodes;
  }
  for (const fd of fds) {
    try {
      inodes.add(fs.statSync(path.join(dir, fd)).ino);
    } catch {
      // Closed meanwhile.
    }
  }
  return inodes;
}

describe.skipIf(!hasProcFd)("flock: the lock file changes while a contender waits on it", () => {
  for (const change of ["deleted", "replaced by another file"] as const) {
    it(`${change}: the waiting contender does not enter beside the process that locked the new file`, async () => {
      const lockPath = `${file}.lock`;
      // The first holder does not mark: whoever deletes a held lock file lets a newcomer in beside
      // it (why the file is never deleted). What is checked is that no third holder comes of it.
      const first = contender("flock", { timeoutMs: 20_000, staleMs: 30_000 });
      await first.line(/^HELD$/);
      const waiting = contender("flock", { timeoutMs: 20_000, staleMs: 30_000, mark: true });
      const oldInode = fs.statSync(lockPath).ino;
      await until(() => openInodes(waiting.proc.pid!).has(oldInode), "the second contender has the lock file open");

      if (change === "deleted") {
        fs.rmSync(lockPath);
      } else {
        fs.writeFileSync(`${lockPath}.new`, "");
        fs.renameSync(`${lockPath}.new`, lockPath);
      }
      const third = contender("flock", { timeoutMs: 20_000, staleMs: 30_000, mark: true });
      await third.line(/^HELD$/);
      const newInode = fs.statSync(lockPath).ino;
      expect(newInode).not.toBe(oldInode);

      // The first holder leaves: the waiting contender now gets the old file's lock, sees that it is
      // no longer the file at the lock path, and waits on the new one, which the third holds.
      first.release();
      await first.line(/^RELEASED$/);
      await until(
        () => waiting.lines.some((l) => l.startsWith("HELD")) || openInodes(waiting.proc.pid!).has(newInode),
        "the second contender moved to the new lock file",
      );
      expect(waiting.lines).toEqual([]);

      third.release();
      await third.line(/^RELEASED$/);
      expect(await waiting.line(/^HELD/)).toBe("HELD");
      waiting.release();
      await waiting.line(/^RELEASED$/);
      expect([...first.lines, ...third.lines, ...waiting.lines].filter((l) => l.includes("CLASH"))).toEqual([]);
    }, 60_000);
  }
});

describe("pidfile: an owner record replaced while its old holder is inside", () => {
  it("the old holder's release leaves the new holder's record, so a third contender stays out", async () => {
    const ownerPath = `${file}.lock.owner`;
    const first = contender("pidfile", { timeoutMs: 20_000, staleMs: 30_000 });
    await first.line(/^HELD$/);
    // This contender counts a record older than 300 ms as abandoned (the holder may be a reused
    // pid): it takes over from the first, which over-stays, as `staleMs` documents.
    const second = contender("pidfile", { timeoutMs: 20_000, staleMs: 300 });
    await second.line(/^HELD$/);
    const record = fs.readFileSync(ownerPath, "utf8");
    expect(JSON.parse(record)).toMatchObject({ pid: second.proc.pid });

    first.release();
    await first.line(/^RELEASED$/);
    expect(fs.readFileSync(ownerPath, "utf8")).toBe(record);
    const third = contender("pidfile", { timeoutMs: 400, staleMs: 60_000 });
    expect(await third.line(/^(HELD|FAILED)/)).toMatch(new RegExp(`^FAILED LOCK_TIMEOUT .*pid ${second.proc.pid}`));

    second.release();
    await second.line(/^RELEASED$/);
    expect(fs.existsSync(ownerPath)).toBe(false);
  }, 60_000);
});
