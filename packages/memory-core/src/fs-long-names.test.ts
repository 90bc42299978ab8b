/**
 * A target whose name is as long as the file system allows (255 bytes, in ASCII or in multi-byte
 * characters) is a valid file: the atomic write's temporary file and the lock's files beside it
 * are named within the limit too, and every other property of the write and the lock holds.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { until } from "@hermes/test-support";
import { atomicWriteFile, withFileLock } from "./index.js";
import { makeTempDir } from "./test-support/temp-tree.js";

/** 255 bytes of UTF-8 each: ASCII, two-byte and three-byte characters. */
const NAMES: Array<[string, string]> = [
  ["ASCII", `${"n".repeat(252)}.md`],
  ["two-byte", `${"é".repeat(126)}.md`],
  ["three-byte", `${"日".repeat(84)}.md`],
];
for (const [, name] of NAMES) if (Buffer.byteLength(name) !== 255) throw new Error(`fixture name of ${Buffer.byteLength(name)} bytes`);

let tmp: ReturnType<typeof makeTempDir>;
const savedMode = process.env.HERMES_FILE_LOCK;
beforeEach(() => {
  tmp = makeTempDir("hermes-long-names-");
});
afterEach(() => {
  if (savedMode === undefined) delete process.env.HERMES_FILE_LOCK;
  else process.env.HERMES_FILE_LOCK = savedMode;
  tmp.cleanup();
});

const bytes = (name: string) => Buffer.byteLength(name);

describe.each(["flock", "pidfile"] as const)("a 255-byte file name, %s lock", (mode) => {
  beforeEach(() => {
    if (mode === "pidfile") process.env.HERMES_FILE_LOCK = "pidfile";
    else delete process.env.HERMES_FILE_LOCK;
  });

  it.each(NAMES)("%s: written and rewritten under its lock, mode kept, nothing left beside it but the lock file", async (_kind, name) => {
    const target = path.join(tmp.dir, name);
    await withFileLock(target, () => atomicWriteFile(target, "first\n", { mode: 0o600 }));
    expect(fs.readFileSync(target, "utf8")).toBe("first\n");
    // A rewrite without a mode keeps the file's own.
    await withFileLock(target, () => atomicWriteFile(target, "second\n"));
    expect(fs.readFileSync(target, "utf8")).toBe("second\n");
    expect(fs.statSync(target).mode & 0o777).toBe(0o600);
    const others = fs.readdirSync(tmp.dir).filter((n) => n !== name);
    if (mode === "pidfile") {
      expect(others).toEqual([]);
    } else {
      // The persistent lock file: a readable start of the target's name, within the limit.
      expect(others).toHaveLength(1);
      const lock = others[0]!;
      expect(lock.endsWith(".lock")).toBe(true);
      expect(bytes(lock)).toBeLessThanOrEqual(255);
      expect(name.startsWith(lock.slice(0, 16))).toBe(true);
    }
  });

  it("two long names that differ only at their end are locked apart", async () => {
    const a = path.join(tmp.dir, `${"x".repeat(250)}a.md`);
    const b = path.join(tmp.dir, `${"x".repeat(250)}b.md`);
    let release!: () => void;
    let entered = false;
    const holding = withFileLock(a, () => {
      entered = true;
      return new Promise<void>((resolve) => (release = resolve));
    });
    // A lock that cannot be taken fails `holding`: report that rather than wait for `entered`.
    await Promise.race([until(() => entered), holding]);
    try {
      expect(await withFileLock(b, () => atomicWriteFile(b, "b\n").then(() => "b"), { timeoutMs: 2000 })).toBe("b");
    } finally {
      release();
      await holding;
    }
    // And each name's callers exclude each other.
    let active = 0;
    let maxActive = 0;
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        withFileLock(a, async () => {
          active++;
          maxActive = Math.max(maxActive, active);
          await atomicWriteFile(a, `${i}\n`);
          active--;
        }),
      ),
    );
    expect(maxActive).toBe(1);
    expect(fs.readdirSync(tmp.dir).filter((n) => n.endsWith(".tmp") || n.includes(".owner") || n.includes(".break-"))).toEqual([]);
  });
});

describe("the lock file of a 255-byte name is the same one every time", () => {
  it("a flock held on it by another holder makes the next withFileLock wait and time out", async () => {
    delete process.env.HERMES_FILE_LOCK;
    const name = NAMES[2]![1];
    const target = path.join(tmp.dir, name);
    await withFileLock(target, () => atomicWriteFile(target, "x\n"));
    const [lock] = fs.readdirSync(tmp.dir).filter((n) => n !== name);
    const fsExt = createRequire(import.meta.url)("fs-ext") as { flockSync(fd: number, op: string): void };
    const fd = fs.openSync(path.join(tmp.dir, lock!), "r+");
    try {
      fsExt.flockSync(fd, "exnb");
      await expect(withFileLock(target, () => "never", { timeoutMs: 150 })).rejects.toMatchObject({ code: "LOCK_TIMEOUT" });
    } finally {
      fs.closeSync(fd);
    }
    expect(await withFileLock(target, () => "after", { timeoutMs: 1000 })).toBe("after");
    expect(fs.readdirSync(tmp.dir).sort()).toEqual([lock!, name].sort());
  });

  it("pidfile: a dead holder's record on it is taken over at once, through a break marker named within the limit", async () => {
    process.env.HERMES_FILE_LOCK = "pidfile";
    const name = NAMES[1]![1];
    const target = path.join(tmp.dir, name);
    let owner = "";
    await withFileLock(target, () => {
      owner = fs.readdirSync(tmp.dir).find((n) => n !== name)!;
    });
    expect(owner).toMatch(/\.lock\.owner$/);
    const dead = spawnSync(process.execPath, ["-e", ""]).pid!;
    fs.writeFileSync(
      path.join(tmp.dir, owner),
      `${JSON.stringify({ pid: dead, host: os.hostname(), nonce: "0123456789abcdef01234567" })}\n`,
    );
    const started = Date.now();
    expect(await withFileLock(target, () => atomicWriteFile(target, "taken over\n").then(() => "ok"), { timeoutMs: 5000 })).toBe("ok");
    expect(Date.now() - started).toBeLessThan(4000);
    expect(fs.readdirSync(tmp.dir)).toEqual([name]);
  });

  it("a name that fits with its suffix keeps the lock file <name>.lock the Python agent also takes", async () => {
    delete process.env.HERMES_FILE_LOCK;
    const name = `${"k".repeat(247)}.md`; // 250 bytes: `.lock` still fits
    const target = path.join(tmp.dir, name);
    await withFileLock(target, () => atomicWriteFile(target, "x\n"));
    expect(fs.existsSync(`${target}.lock`)).toBe(true);
  });
});
