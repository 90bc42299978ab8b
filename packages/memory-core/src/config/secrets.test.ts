import { execFileSync, spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runWithProfile } from "../profile.js";
import { makeTempDir } from "../test-support/temp-tree.js";
import { MAX_ENV_FILE_BYTES, writeEnvValues } from "./env-file.js";
import { getEnv, getEnvView } from "./secrets.js";

const NAME = "HERMES_SECRETS_TEST_KEY";
let tmp: ReturnType<typeof makeTempDir>;
let a: string;
let b: string;

beforeEach(() => {
  tmp = makeTempDir("hermes-secrets-");
  a = path.join(tmp.dir, "a");
  b = path.join(tmp.dir, "b");
  delete process.env[NAME];
});
afterEach(() => {
  delete process.env[NAME];
  tmp.cleanup();
});

describe("getEnv", () => {
  it("sees what writeEnvValues just saved in the active profile's .env, without touching process.env", async () => {
    expect(runWithProfile(a, () => getEnv(NAME))).toBeUndefined();
    await writeEnvValues(a, { [NAME]: "from-dotenv" });
    expect(runWithProfile(a, () => getEnv(NAME))).toBe("from-dotenv");
    expect(process.env[NAME]).toBeUndefined();
    // An update is seen too (the cache is keyed by mtime, size and inode).
    await writeEnvValues(a, { [NAME]: "rotated-key" });
    expect(runWithProfile(a, () => getEnv(NAME))).toBe("rotated-key");
  });

  it(".env wins over process.env; process.env is the fallback; blank counts as unset", async () => {
    process.env[NAME] = "from-process";
    expect(runWithProfile(a, () => getEnv(NAME))).toBe("from-process");
    await writeEnvValues(a, { [NAME]: "from-dotenv" });
    expect(runWithProfile(a, () => getEnv(NAME))).toBe("from-dotenv");
    expect(runWithProfile(a, () => getEnvView()[NAME])).toBe("from-dotenv");
    await writeEnvValues(a, { [NAME]: "" });
    expect(runWithProfile(a, () => getEnv(NAME))).toBe("from-process");
  });

  it("two profiles running concurrently in one process each see their own .env", async () => {
    await writeEnvValues(a, { [NAME]: "key-a" });
    await writeEnvValues(b, { [NAME]: "key-b" });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const seen = (home: string) =>
      runWithProfile(home, async () => {
        const before = getEnv(NAME);
        await gate;
        return [before, getEnv(NAME)];
      });
    const both = Promise.all([seen(a), seen(b)]);
    release();
    expect(await both).toEqual([
      ["key-a", "key-a"],
      ["key-b", "key-b"],
    ]);
    expect(getEnv(NAME, b)).toBe("key-b");
  });

  it("re-reads a .env changed within the same mtime: rewritten in place to another size, replaced by another file of the same size, or rewritten in place to the same size", () => {
    fs.mkdirSync(a, { recursive: true });
    const file = path.join(a, ".env");
    // Editors and fast successive saves can leave the mtime as it was (coarse timestamps), so the
    // cache must not trust the mtime alone.
    const sameTime = new Date(1_700_000_000_000);
    fs.writeFileSync(file, `${NAME}=first\n`);
    fs.utimesSync(file, sameTime, sameTime);
    expect(getEnv(NAME, a)).toBe("first");

    const before = fs.statSync(file);
    fs.writeFileSync(file, `${NAME}=second-longer\n`);
    fs.utimesSync(file, sameTime, sameTime);
    const rewritten = fs.statSync(file);
    expect([rewritten.mtimeMs, rewritten.ino]).toEqual([before.mtimeMs, before.ino]);
    expect(rewritten.size).not.toBe(before.size);
    expect(getEnv(NAME, a)).toBe("second-longer");

    fs.writeFileSync(`${file}.new`, `${NAME}=thirds-longer\n`);
    fs.utimesSync(`${file}.new`, sameTime, sameTime);
    fs.renameSync(`${file}.new`, file);
    const replaced = fs.statSync(file);
    expect([replaced.mtimeMs, replaced.size]).toEqual([rewritten.mtimeMs, rewritten.size]);
    expect(replaced.ino).not.toBe(rewritten.ino);
    expect(getEnv(NAME, a)).toBe("thirds-longer");

    // Same mtime, size and inode: only the ctime, which a write always moves, tells.
    fs.writeFileSync(file, `${NAME}=fourth-longer\n`);
    fs.utimesSync(file, sameTime, sameTime);
    const same = fs.statSync(file);
    expect([same.mtimeMs, same.size, same.ino]).toEqual([replaced.mtimeMs, replaced.size, replaced.ino]);
    expect(getEnv(NAME, a)).toBe("fourth-longer");
  });

  it("a missing or unreadable .env is empty", () => {
    fs.mkdirSync(path.join(a, ".env"), { recursive: true });
    expect(getEnv(NAME, a)).toBeUndefined();
  });
});

describe("a hostile .env in the profile home", () => {
  const canMkfifo = process.platform !== "win32" && spawnSync("mkfifo", ["--help"]).error === undefined;

  /**
   * Run `getEnv` / `getEnvView` in a child process: a synchronous read blocked on a FIFO freezes
   * its whole process, so only a child that is killed after a deadline lets a regression fail
   * this test instead of hanging the suite.
   */
  function envInChild(home: string): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
    const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
    const secretsUrl = pathToFileURL(path.join(import.meta.dirname, "secrets.ts")).href;
    const script = path.join(tmp.dir, "read-env.mts");
    fs.writeFileSync(
      script,
      `const { getEnv, getEnvView } = await import(${JSON.stringify(secretsUrl)});
const [home, name] = process.argv.slice(2);
console.log(JSON.stringify({ value: getEnv(name, home), view: getEnvView(home)[name] }));
`,
    );
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, ["--import", tsx, script, home, NAME], { env: { ...process.env, [NAME]: "from-process" } });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      // Far longer than a non-blocking read ever takes; only a process stuck on the FIFO reaches it.
      const deadline = setTimeout(() => child.kill("SIGKILL"), 15_000);
      child.on("error", reject);
      child.on("exit", (code, signal) => {
        clearTimeout(deadline);
        resolve({ code, signal, stdout, stderr });
      });
    });
  }

  it.skipIf(!canMkfifo)(
    "a FIFO in place of .env (no writer) is not waited on: no values from it, process.env still counts",
    async () => {
      fs.mkdirSync(a, { recursive: true });
      execFileSync("mkfifo", [path.join(a, ".env")]);
      const result = await envInChild(a);
      expect(result.signal, `getEnv blocked on the FIFO and was killed; stderr: ${result.stderr}`).toBeNull();
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout)).toEqual({ value: "from-process", view: "from-process" });
      expect(fs.statSync(path.join(a, ".env")).isFIFO()).toBe(true);
    },
    30_000,
  );

  it("a .env over MAX_ENV_FILE_BYTES is not read into memory: it gives no values, like an unreadable one", () => {
    fs.mkdirSync(a, { recursive: true });
    const file = path.join(a, ".env");
    fs.writeFileSync(file, `${NAME}=from-huge-file\n# ${"x".repeat(MAX_ENV_FILE_BYTES)}\n`);
    process.env[NAME] = "from-process";
    expect(getEnv(NAME, a)).toBe("from-process");
    expect(getEnvView(a)[NAME]).toBe("from-process");
    // Trimmed back under the cap, it is read again (the cache does not keep the refusal).
    fs.writeFileSync(file, `${NAME}=from-small-file\n`);
    expect(getEnv(NAME, a)).toBe("from-small-file");
  });
});
