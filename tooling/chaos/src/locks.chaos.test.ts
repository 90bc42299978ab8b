/**
 * File locks under failure: writers killed with SIGKILL while holding the lock, eight writer
 * processes racing over leftover lock files, the disk filling up while the lock is taken, and the
 * Python agent's flock on the same MEMORY.md. Both lock modes run (flock via fs-ext, and the
 * pid-file fallback forced with HERMES_FILE_LOCK=pidfile).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { BuiltinMemoryStore, HermesMemoryError, fileLockMode, parseMemoryEntries, withFileLock } from "@hermes/memory-core";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { LineProcess, deadPid, python3Unavailable } from "./proc.js";
import { FIXTURES, mountTmpfs } from "./support.js";

const writerScript = path.join(FIXTURES, "memory-writer.mjs");
const pythonWriter = path.join(FIXTURES, "python-agent-writer.py");

type Mode = "flock" | "pidfile";
const savedMode = process.env.HERMES_FILE_LOCK;
function useMode(mode: Mode): NodeJS.ProcessEnv {
  if (mode === "pidfile") process.env.HERMES_FILE_LOCK = "pidfile";
  else delete process.env.HERMES_FILE_LOCK;
  return { ...process.env };
}

let root: string;
beforeEach(() => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "hermes-locks-chaos-")));
});
afterEach(() => {
  if (savedMode === undefined) delete process.env.HERMES_FILE_LOCK;
  else process.env.HERMES_FILE_LOCK = savedMode;
  fs.rmSync(root, { recursive: true, force: true });
});

async function startWriter(tag: string, env: NodeJS.ProcessEnv): Promise<LineProcess> {
  const proc = new LineProcess(process.execPath, [writerScript, tag], env);
  await proc.waitForLine((l) => l === "READY");
  return proc;
}

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - started };
}

const entriesOf = (file: string) => (fs.existsSync(file) ? parseMemoryEntries(fs.readFileSync(file, "utf8")) : []);

it("runs the flock mode here (fs-ext built in this workspace)", () => {
  useMode("flock");
  expect(fileLockMode()).toBe("flock");
});

describe.each(["flock", "pidfile"] as const)("%s mode", (mode) => {
  const TRIALS = 20;

  it(`kill -9 of a writer holding the lock: the next writer gets it within 1 s (${TRIALS} trials)`, async () => {
    const env = useMode(mode);
    let longest = 0;
    for (let trial = 0; trial < TRIALS; trial++) {
      const file = path.join(root, `t${trial}`, "MEMORY.md");
      fs.mkdirSync(path.dirname(file), { recursive: true });
      const holder = await startWriter("holder", env);
      holder.send(`HOLD ${file}`);
      await holder.waitForLine((l) => l === "HELD");
      // It really holds the lock: we are kept out.
      await expect(withFileLock(file, () => "in", { timeoutMs: 50 })).rejects.toMatchObject({ code: "LOCK_TIMEOUT" });
      await holder.kill9();
      const { value, ms } = await timed(() => withFileLock(file, () => "next", { timeoutMs: 10_000 }));
      expect(value).toBe("next");
      longest = Math.max(longest, ms);
      expect(ms).toBeLessThan(1000);
    }
    console.log(`[locks/${mode}] kill -9 while holding: ${TRIALS} trials, longest wait for the next writer ${longest.toFixed(1)} ms`);
  });

  it(`kill -9 at a random point of a stream of MEMORY.md writes: nothing acknowledged is lost, the next write is not stalled (${TRIALS} trials)`, async () => {
    const env = useMode(mode);
    let longest = 0;
    let acknowledged = 0;
    for (let trial = 0; trial < TRIALS; trial++) {
      const dir = path.join(root, `t${trial}`);
      const writer = await startWriter("victim", env);
      writer.send(`ROUND ${trial} ${dir} 100000`);
      const target = 1 + Math.floor(Math.random() * 15);
      await writer.waitForLine((l) => l.startsWith("ACK ") && writer.acked().length >= target);
      await writer.kill9();
      const acked = writer.acked();
      acknowledged += acked.length;
      const store = new BuiltinMemoryStore({ dir, memoryCharLimit: 10_000_000 });
      const { value, ms } = await timed(() => store.add("memory", `after kill ${trial}`));
      expect(value).toMatchObject({ success: true });
      longest = Math.max(longest, ms);
      expect(ms).toBeLessThan(1000);
      const entries = new Set(await store.entries("memory"));
      expect(acked.filter((e) => !entries.has(e))).toEqual([]);
    }
    console.log(
      `[locks/${mode}] kill -9 mid-stream: ${TRIALS} trials, ${acknowledged} acknowledged entries, 0 lost, longest next write ${longest.toFixed(1)} ms`,
    );
  });

  it("8 writer processes x 30 rounds over leftover lock files (old format, Python's empty one, a dead owner): no acknowledged entry lost", async () => {
    const env = useMode(mode);
    const WRITERS = 8;
    const ROUNDS = 30;
    const PER_ROUND = 4;
    const writers = await Promise.all(Array.from({ length: WRITERS }, (_, i) => startWriter(`w${i}`, env)));
    try {
      let acknowledged = 0;
      let lost = 0;
      let slowestRound = 0;
      for (let round = 0; round < ROUNDS; round++) {
        const dir = path.join(root, `r${round}`);
        const file = path.join(dir, "MEMORY.md");
        fs.mkdirSync(dir, { recursive: true });
        // What earlier crashes leave: the old protocol's lock file (a pid, fresh mtime) or the
        // Python agent's persistent empty one, and a pid-file owner record of a dead process.
        fs.writeFileSync(`${file}.lock`, round % 2 === 0 ? `${deadPid()}\n` : "");
        fs.writeFileSync(
          `${file}.lock.owner`,
          JSON.stringify({ pid: deadPid(), host: os.hostname(), nonce: `${round.toString(16).padStart(4, "0")}deadbeefdeadbeefdeadbeef` }) +
            "\n",
        );
        const marks = writers.map((w) => w.lines.length);
        const started = performance.now();
        for (const w of writers) w.send(`ROUND ${round} ${dir} ${PER_ROUND}`);
        await Promise.all(writers.map((w, i) => w.waitForLine((l) => l === `DONE ${round}`, marks[i])));
        slowestRound = Math.max(slowestRound, performance.now() - started);
        const acked = writers.flatMap((w, i) =>
          w.lines
            .slice(marks[i])
            .filter((l) => l.startsWith("ACK "))
            .map((l) => l.slice(4)),
        );
        const failed = writers.flatMap((w, i) => w.lines.slice(marks[i]).filter((l) => l.startsWith("FAIL ")));
        expect(failed).toEqual([]);
        const onDisk = new Set(entriesOf(file));
        const missing = acked.filter((e) => !onDisk.has(e));
        acknowledged += acked.length;
        lost += missing.length;
        expect(missing).toEqual([]);
        expect(acked).toHaveLength(WRITERS * PER_ROUND);
      }
      console.log(
        `[locks/${mode}] ${WRITERS} writers x ${ROUNDS} rounds: ${acknowledged} acknowledged, ${lost} lost, slowest round ${slowestRound.toFixed(0)} ms`,
      );
    } finally {
      await Promise.all(writers.map((w) => w.kill9()));
    }
  });
});

describe("the Python agent's flock on MEMORY.md.lock", () => {
  const unavailable = python3Unavailable();

  it("Python writers and ours, concurrently on one MEMORY.md, lose nothing (5 rounds)", async (ctx) => {
    if (unavailable) ctx.skip(`needs python3: ${unavailable}`);
    const env = useMode("flock");
    const writers = await Promise.all([0, 1, 2].map((i) => startWriter(`ts${i}`, env)));
    try {
      let total = 0;
      for (let round = 0; round < 5; round++) {
        const dir = path.join(root, `r${round}`);
        const file = path.join(dir, "MEMORY.md");
        fs.mkdirSync(dir, { recursive: true });
        const marks = writers.map((w) => w.lines.length);
        const pythons = [0, 1, 2].map((i) => new LineProcess("python3", [pythonWriter, file, `py${i} r${round}`, "25"]));
        for (const w of writers) w.send(`ROUND ${round} ${dir} 25`);
        const [pyExits] = await Promise.all([
          Promise.all(pythons.map((p) => p.exited)),
          Promise.all(writers.map((w, i) => w.waitForLine((l) => l === `DONE ${round}`, marks[i]))),
        ]);
        expect(
          pyExits.map((e) => e.code),
          pythons.map((p) => p.stderr).join("\n"),
        ).toEqual([0, 0, 0]);
        const ours = writers.flatMap((w, i) =>
          w.lines
            .slice(marks[i])
            .filter((l) => l.startsWith("ACK "))
            .map((l) => l.slice(4)),
        );
        const theirs = pythons.flatMap((p) => p.acked());
        expect(ours).toHaveLength(75);
        expect(theirs).toHaveLength(75);
        const onDisk = entriesOf(file);
        expect([...ours, ...theirs].filter((e) => !onDisk.includes(e))).toEqual([]);
        expect(onDisk).toHaveLength(150);
        expect(fs.existsSync(`${file}.lock`)).toBe(true);
        total += onDisk.length;
      }
      console.log(`[locks/python] 3 Python + 3 TypeScript writers x 5 rounds: ${total} acknowledged entries, 0 lost`);
    } finally {
      await Promise.all(writers.map((w) => w.kill9()));
    }
  });

  it("while the Python agent holds its lock we wait, and get in within 1 s of its release", async (ctx) => {
    if (unavailable) ctx.skip(`needs python3: ${unavailable}`);
    useMode("flock");
    const file = path.join(root, "MEMORY.md");
    const python = new LineProcess("python3", [pythonWriter, file, "holder", "0"]);
    await python.waitForLine((l) => l === "HELD");
    await expect(withFileLock(file, () => "in", { timeoutMs: 300 })).rejects.toMatchObject({ code: "LOCK_TIMEOUT" });
    const store = new BuiltinMemoryStore({ dir: root });
    const pending = timed(() => store.add("memory", "written after Python let go"));
    python.child.stdin!.end();
    const { value, ms } = await pending;
    expect(value).toMatchObject({ success: true });
    expect(ms).toBeLessThan(1000 + 300);
    expect(fs.existsSync(`${file}.lock`)).toBe(true);
  });

  it("the pid-file fallback does not see the Python agent's lock (why flock mode is needed)", async (ctx) => {
    if (unavailable) ctx.skip(`needs python3: ${unavailable}`);
    useMode("pidfile");
    const file = path.join(root, "MEMORY.md");
    const python = new LineProcess("python3", [pythonWriter, file, "holder", "0"]);
    try {
      await python.waitForLine((l) => l === "HELD");
      expect(await withFileLock(file, () => "in", { timeoutMs: 300 })).toBe("in");
    } finally {
      python.child.stdin!.end();
      await python.exited;
    }
  });
});

describe.each(["flock", "pidfile"] as const)("ENOSPC on a full tmpfs (%s mode)", (mode) => {
  let mount = "";
  let cannotMount: string | null = null;
  let unmount = (): void => undefined;

  beforeAll(() => {
    const mounted = mountTmpfs("256k", "nr_inodes=64");
    if ("reason" in mounted) cannotMount = mounted.reason;
    else ({ dir: mount, unmount } = mounted);
  });
  afterAll(() => unmount());

  const openFds = () => fs.readdirSync("/proc/self/fd").length;

  /** Create files in `dir` until the filesystem refuses one; returns them. */
  function fillInodes(dir: string): string[] {
    const made: string[] = [];
    for (let i = 0; ; i++) {
      const f = path.join(dir, `inode-${i}`);
      try {
        fs.writeFileSync(f, "");
      } catch (error) {
        expect((error as NodeJS.ErrnoException).code).toBe("ENOSPC");
        return made;
      }
      made.push(f);
    }
  }

  /** Write one file until the filesystem is full. */
  function fillBlocks(file: string): void {
    const fd = fs.openSync(file, "w");
    const chunk = Buffer.alloc(4096, 1);
    try {
      for (;;) fs.writeSync(fd, chunk);
    } catch (error) {
      expect((error as NodeJS.ErrnoException).code).toBe("ENOSPC");
    } finally {
      fs.closeSync(fd);
    }
  }

  it("no inode left for the lock file: typed error, no leaked descriptor, the next write succeeds once space returns", async (ctx) => {
    if (cannotMount) ctx.skip(cannotMount);
    useMode(mode);
    const dir = path.join(mount, "memories");
    fs.mkdirSync(dir, { recursive: true });
    const store = new BuiltinMemoryStore({ dir });
    expect(await store.add("memory", "before the disk filled")).toMatchObject({ success: true });
    // A fresh file, so its lock file does not exist yet and must be created.
    const file = path.join(dir, "USER.md");
    const fillers = fillInodes(mount);
    const before = openFds();
    const error = await withFileLock(file, () => "never").catch((e: unknown) => e);
    expect(HermesMemoryError.isInstance(error) && error.code).toBe("LOCK_FAILED");
    expect((error as Error).message).toMatch(/ENOSPC/);
    expect((error as Error).message).toContain("free space");
    const result = await store.add("user", "while full");
    expect(result.success).toBe(false);
    expect(String(result.error)).toMatch(/ENOSPC/);
    expect(openFds()).toBe(before);
    for (const f of fillers) fs.rmSync(f);
    const { value, ms } = await timed(() => store.add("user", "after space returned"));
    expect(value).toMatchObject({ success: true });
    expect(ms).toBeLessThan(1000);
    expect(await store.entries("user")).toEqual(["after space returned"]);
    expect(fs.readdirSync(dir).filter((f) => f.endsWith(".tmp") || f.includes(".break-") || f.endsWith(".owner"))).toEqual([]);
  });

  it("no block left while taking the lock and writing: typed error, no leaked descriptor, the next write succeeds once space returns", async (ctx) => {
    if (cannotMount) ctx.skip(cannotMount);
    useMode(mode);
    const dir = path.join(mount, "memories-blocks");
    fs.mkdirSync(dir, { recursive: true });
    const store = new BuiltinMemoryStore({ dir });
    expect(await store.add("memory", "before the disk filled")).toMatchObject({ success: true });
    const filler = path.join(mount, "filler");
    fillBlocks(filler);
    const before = openFds();
    const result = await store.add("memory", "x".repeat(1500));
    expect(result.success).toBe(false);
    expect(String(result.error)).toMatch(/ENOSPC/);
    expect(openFds()).toBe(before);
    expect(fs.readFileSync(path.join(dir, "MEMORY.md"), "utf8")).toBe("before the disk filled");
    fs.rmSync(filler);
    const { value, ms } = await timed(() => store.add("memory", "after space returned"));
    expect(value).toMatchObject({ success: true });
    expect(ms).toBeLessThan(1000);
    expect(await store.entries("memory")).toEqual(["before the disk filled", "after space returned"]);
    expect(fs.readdirSync(dir).filter((f) => f.endsWith(".tmp") || f.includes(".break-") || f.endsWith(".owner"))).toEqual([]);
  });
});
