import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

const BIN = fileURLToPath(new URL("../dist/bin.js", import.meta.url));
const temps: string[] = [];
function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "create-provider-bin-"));
  temps.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of temps.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function run(args: string[], cwd: string) {
  const env = { ...process.env, HERMES_MEMORY_DEBUG: "" };
  return spawnSync(process.execPath, [BIN, ...args, "--yes"], { cwd, encoding: "utf8", input: "", env, timeout: 15_000 });
}

describe("create-memory-provider (the binary)", () => {
  it("--version prints the package version and exits 0", () => {
    const { version } = JSON.parse(fs.readFileSync(fileURLToPath(new URL("../package.json", import.meta.url)), "utf8")) as {
      version: string;
    };
    const result = spawnSync(process.execPath, [BIN, "--version"], { cwd: tempDir(), encoding: "utf8", timeout: 15_000 });
    expect(result.stderr).toBe("");
    expect(result.stdout).toBe(`${version}\n`);
    expect(result.status).toBe(0);
  });

  it("a target that is a file is a one-line error with exit 1, no stack trace", () => {
    const cwd = tempDir();
    fs.writeFileSync(path.join(cwd, "taken"), "mine");
    const result = run(["taken"], cwd);
    expect(result.status).toBe(1);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toMatch(/^error: .*taken.*not a directory/);
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(fs.readFileSync(path.join(cwd, "taken"), "utf8")).toBe("mine");
  });

  it("a directory that cannot be created is a one-line error with exit 1 and does not hang", () => {
    const cwd = tempDir();
    fs.writeFileSync(path.join(cwd, "file"), "mine");
    // The parent is a file: mkdir fails with ENOTDIR.
    const result = run(["file/pkg"], cwd);
    expect(result.error).toBeUndefined();
    expect(result.status).toBe(1);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toMatch(/^error: Cannot create .*file/);
    expect(fs.readFileSync(path.join(cwd, "file"), "utf8")).toBe("mine");
  });

  it.runIf(process.platform === "linux")("a directory under /proc fails promptly instead of hanging", () => {
    const result = run([`/proc/hermes-create-provider-${process.pid}`], tempDir());
    expect(result.error).toBeUndefined();
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/^error: Cannot create /);
  });
});
