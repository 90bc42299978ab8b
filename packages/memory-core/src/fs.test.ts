import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import fsp from "node:fs/promises";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { makeTempDir } from "./test-support/temp-tree.js";
import v8 from "node:v8";
import vm from "node:vm";
import { fileLockMode, normalizeNewlines, withFileLock } from "./fs.js";
import { parseConfig, readConfig, setConfigValue } from "./config/config-file.js";
import { parseEnv } from "./config/env-file.js";
import { parsePluginYaml } from "./discovery/manifest.js";

let tmp: ReturnType<typeof makeTempDir>;
let file: string;
const savedMode = process.env.HERMES_FILE_LOCK;
beforeEach(() => {
  tmp = makeTempDir("hermes-fs-");
  file = path.join(tmp.dir, "MEMORY.md");
});
afterEach(() => {
  if (savedMode === undefined) delete process.env.HERMES_FILE_LOCK;
  else process.env.HERMES_FILE_LOCK = savedMode;
  tmp.cleanup();
});

const openFds = () => fs.readdirSync("/proc/self/fd").length;
const hasProcFd = fs.existsSync("/proc/self/fd");

/** A pid that certainly belongs to no running process: a child that has already exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ["-e", ""]);
  return child.pid as number;
}

function useMode(mode: "flock" | "pidfile"): void {
  if (mode === "pidfile") process.env.HERMES_FILE_LOCK = "pidfile";
  else delete process.env.HERMES_FILE_LOCK;
}

describe("normalizeNewlines", () => {
  it("turns CRLF and lone CR into LF", () => {
    expect(normalizeNewlines("a\r\nb\rc\nd\r\n\r\n")).toBe("a\nb\nc\nd\n\n");
    expect(normalizeNewlines("plain")).toBe("plain");
  });
});

describe("text files shared with the Python agent parse the same with CRLF / CR line endings", () => {
  const yaml = "# comment\nmemory:\n  provider: sqlite\n  memory_char_limit: 1234\nplugins:\n  disabled: [a, b]\n";
  it.each([
    ["CRLF", "\r\n"],
    ["lone CR", "\r"],
  ])("%s", async (_name, eol) => {
    const lf = parseConfig(yaml).raw;
    expect(parseConfig(yaml.replace(/\n/g, eol)).raw).toEqual(lf);
    expect(parseEnv("A=1\nB='two words'\nexport C=3\n".replace(/\n/g, eol))).toEqual({ A: "1", B: "two words", C: "3" });
    const manifest = "name: my-provider\nversion: 1.2.0\ndescription: test\nhooks:\n  - on_turn\n";
    expect(parsePluginYaml(manifest.replace(/\n/g, eol))).toEqual(parsePluginYaml(manifest));
    expect(parsePluginYaml(manifest.replace(/\n/g, eol))).toMatchObject({ ok: true, value: { name: "my-provider" } });
    // Editing a CRLF/CR config.yaml keeps every key and the comment.
    fs.writeFileSync(path.join(tmp.dir, "config.yaml"), yaml.replace(/\n/g, eol));
    await setConfigValue(tmp.dir, ["memory", "user_char_limit"], 999);
    expect((await readConfig(tmp.dir)).raw).toEqual({ ...lf, memory: { ...(lf.memory as object), user_char_limit: 999 } });
    expect(fs.readFileSync(path.join(tmp.dir, "config.yaml"), "utf8")).toContain("# comment");
  });
});

describe("withFileLock", () => {
  it("uses flock(2) here: fs-ext is built in this workspace", () => {
    // The optional dependency must build wherever pnpm allows it (onlyBuiltDependencies);
    // without it the lock does not exclude the Python agent.
    expect(fileLockMode()).toBe("flock");
  });

  describe.each(["flock", "pidfile"] as const)("%s mode", (mode) => {
    beforeEach(() => useMode(mode));

    it("never lets two callers in at once and runs them all", async () => {
      let active = 0;
      let maxActive = 0;
      const done: number[] = [];
      await Promise.all(
        Array.from({ length: 25 }, (_, i) =>
          withFileLock(file, async () => {
            active++;
            maxActive = Math.max(maxActive, active);
            await new Promise((resolve) => setImmediate(resolve));
            done.push(i);
            active--;
          }),
        ),
      );
      expect(maxActive).toBe(1);
      expect(done).toHaveLength(25);
    });

    it("releases the lock and its descriptor when fn throws", async () => {
      const before = hasProcFd ? openFds() : 0;
      await expect(withFileLock(file, () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
      const started = Date.now();
      expect(await withFileLock(file, () => "next", { timeoutMs: 500 })).toBe("next");
      expect(Date.now() - started).toBeLessThan(500);
      if (hasProcFd) expect(openFds()).toBe(before);
    });

    it("fails with LOCK_FAILED, holding nothing, when the lock file cannot be created", async () => {
      fs.writeFileSync(path.join(tmp.dir, "not-a-dir"), "");
      const before = hasProcFd ? openFds() : 0;
      const error = await withFileLock(path.join(tmp.dir, "not-a-dir", "MEMORY.md"), () => "never").catch((e: unknown) => e);
      expect(error).toMatchObject({ code: "LOCK_FAILED" });
      expect(String((error as Error).message)).toContain("not-a-dir");
      if (hasProcFd) expect(openFds()).toBe(before);
      expect(await withFileLock(file, () => "ok")).toBe("ok");
    });
  });

  it("flock: keeps the persistent <file>.lock (0600) and is not stalled by one left by the Python agent", async () => {
    useMode("flock");
    fs.writeFileSync(`${file}.lock`, ""); // Python's persistent lock file, not held by anyone
    const started = Date.now();
    await withFileLock(file, () => undefined, { timeoutMs: 2000 });
    expect(Date.now() - started).toBeLessThan(1000);
    expect(fs.existsSync(`${file}.lock`)).toBe(true);
    fs.rmSync(`${file}.lock`);
    await withFileLock(file, () => undefined);
    expect(fs.statSync(`${file}.lock`).mode & 0o777).toBe(0o600);
  });

  it("flock: an empty lock file (its own or one the Python agent left) is given a line saying what it is; one with content is left as it is", async () => {
    useMode("flock");
    await withFileLock(file, () => undefined);
    const note = fs.readFileSync(`${file}.lock`, "utf8");
    expect(note).toMatch(/^Lock file of MEMORY\.md: Hermes .* takes flock\(2\) on it .*holds no data.*Leave it in place/);
    expect(note.endsWith("\n")).toBe(true);
    await withFileLock(file, () => undefined);
    expect(fs.readFileSync(`${file}.lock`, "utf8")).toBe(note);
    fs.writeFileSync(`${file}.lock`, "4242\n"); // an older protocol's pid, or anything else: not ours to rewrite
    await withFileLock(file, () => undefined);
    expect(fs.readFileSync(`${file}.lock`, "utf8")).toBe("4242\n");
  });

  it("flock: waits for a flock held elsewhere and times out with LOCK_TIMEOUT naming the file", async () => {
    useMode("flock");
    const fsExt = createRequire(import.meta.url)("fs-ext") as { flockSync(fd: number, op: string): void };
    const fd = fs.openSync(`${file}.lock`, "a+");
    try {
      fsExt.flockSync(fd, "exnb");
      const before = hasProcFd ? openFds() : 0;
      const error = await withFileLock(file, () => "never", { timeoutMs: 150 }).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: "LOCK_TIMEOUT" });
      expect((error as Error).message).toContain(file);
      expect((error as Error).message).toContain("Do not delete");
      if (hasProcFd) expect(openFds()).toBe(before);
    } finally {
      fs.closeSync(fd); // closing releases the flock
    }
    expect(await withFileLock(file, () => "after", { timeoutMs: 500 })).toBe("after");
  });

  it("flock: a holder keeps its lock through garbage collection while its section awaits what nothing else references", async () => {
    useMode("flock");
    v8.setFlagsFromString("--expose-gc");
    const gc = vm.runInNewContext("gc") as () => void;
    let entered = false;
    // Never settles, and nothing keeps a reference to it: only the lock's own bookkeeping can.
    void withFileLock(file, () => {
      entered = true;
      return new Promise<never>(() => undefined);
    });
    while (!entered) await new Promise((resolve) => setTimeout(resolve, 1));
    for (let i = 0; i < 5; i++) {
      gc();
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const fsExt = createRequire(import.meta.url)("fs-ext") as { flockSync(fd: number, op: string): void };
    const fd = fs.openSync(`${file}.lock`, "r+");
    try {
      expect(() => fsExt.flockSync(fd, "exnb")).toThrow(/EAGAIN|EWOULDBLOCK/);
    } finally {
      fs.closeSync(fd);
    }
  });

  it("pidfile: takes over at once from a dead holder on this host, and never uses <file>.lock", async () => {
    useMode("pidfile");
    const owner = `${file}.lock.owner`;
    fs.writeFileSync(`${file}.lock`, ""); // the flock file of the other mode: not ours to judge
    fs.writeFileSync(owner, JSON.stringify({ pid: deadPid(), host: os.hostname(), nonce: "0123456789abcdef01234567" }) + "\n");
    const started = Date.now();
    let seen = "";
    await withFileLock(
      file,
      () => {
        seen = fs.readFileSync(owner, "utf8");
      },
      { timeoutMs: 5000 },
    );
    expect(Date.now() - started).toBeLessThan(1000);
    expect(JSON.parse(seen)).toMatchObject({ pid: process.pid, host: os.hostname() });
    expect(fs.existsSync(owner)).toBe(false);
    expect(fs.existsSync(`${file}.lock`)).toBe(true);
    expect(fs.readdirSync(tmp.dir).filter((f) => f.includes(".break-") || f.endsWith(".tmp"))).toEqual([]);
  });

  it("pidfile: never takes over from a live holder, and says who holds it", async () => {
    useMode("pidfile");
    const owner = `${file}.lock.owner`;
    const holder = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
    try {
      const record = JSON.stringify({ pid: holder.pid, host: os.hostname(), nonce: "fedcba9876543210fedcba98" }) + "\n";
      fs.writeFileSync(owner, record);
      const error = await withFileLock(file, () => "never", { timeoutMs: 200 }).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: "LOCK_TIMEOUT" });
      expect((error as Error).message).toContain(`pid ${holder.pid}`);
      expect(fs.readFileSync(owner, "utf8")).toBe(record);
    } finally {
      holder.kill("SIGKILL");
    }
  });

  it("pidfile: takes over a record naming this process that it does not hold (a reused pid)", async () => {
    useMode("pidfile");
    fs.writeFileSync(
      `${file}.lock.owner`,
      JSON.stringify({ pid: process.pid, host: os.hostname(), nonce: "00000000000000000000aaaa" }) + "\n",
    );
    expect(await withFileLock(file, () => "ok", { timeoutMs: 1000 })).toBe("ok");
  });

  it("pidfile: still excludes and takes over on a filesystem without hard links", async () => {
    useMode("pidfile");
    const link = vi
      .spyOn(fsp, "link")
      .mockRejectedValue(Object.assign(new Error("EPERM: operation not permitted, link"), { code: "EPERM" }));
    try {
      fs.writeFileSync(
        `${file}.lock.owner`,
        JSON.stringify({ pid: deadPid(), host: os.hostname(), nonce: "0123456789abcdef0123aaaa" }) + "\n",
      );
      let active = 0;
      let maxActive = 0;
      await Promise.all(
        Array.from({ length: 10 }, () =>
          withFileLock(
            file,
            async () => {
              active++;
              maxActive = Math.max(maxActive, active);
              await new Promise((resolve) => setImmediate(resolve));
              active--;
            },
            { timeoutMs: 2000 },
          ),
        ),
      );
      expect(maxActive).toBe(1);
      expect(link).toHaveBeenCalled();
      expect(fs.existsSync(`${file}.lock.owner`)).toBe(false);
    } finally {
      link.mockRestore();
    }
  });
});

describe("atomicWriteFile through symlinks", () => {
  it("keeps a link whose target does not exist yet and creates the file it names", async () => {
    const { atomicWriteFile } = await import("./fs.js");
    const dotfiles = path.join(tmp.dir, "dotfiles");
    fs.mkdirSync(dotfiles);
    const link = path.join(tmp.dir, "config.yaml");
    // A relative link to a second, also dangling, link: both are followed.
    fs.symlinkSync("dotfiles/hop.yaml", link);
    fs.symlinkSync(path.join(dotfiles, "config.yaml"), path.join(dotfiles, "hop.yaml"));
    await atomicWriteFile(link, "memory:\n  provider: sqlite\n");
    expect(fs.lstatSync(link).isSymbolicLink()).toBe(true);
    expect(fs.lstatSync(path.join(dotfiles, "hop.yaml")).isSymbolicLink()).toBe(true);
    expect(fs.readFileSync(path.join(dotfiles, "config.yaml"), "utf8")).toBe("memory:\n  provider: sqlite\n");
    expect(fs.readFileSync(link, "utf8")).toBe("memory:\n  provider: sqlite\n");
  });

  it("refuses a link cycle with ELOOP and writes nothing", async () => {
    const { atomicWriteFile } = await import("./fs.js");
    const a = path.join(tmp.dir, "a.md");
    const b = path.join(tmp.dir, "b.md");
    fs.symlinkSync(b, a);
    fs.symlinkSync(a, b);
    await expect(atomicWriteFile(a, "x")).rejects.toMatchObject({ code: "ELOOP" });
    expect(fs.lstatSync(a).isSymbolicLink()).toBe(true);
    expect(fs.readdirSync(tmp.dir).sort()).toEqual(["a.md", "b.md"]);
  });
});
