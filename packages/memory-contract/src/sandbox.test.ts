import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { isMainThread } from "node:worker_threads";
import { afterEach, describe, expect, it } from "vitest";
import { diffSnapshots, isInside, Sandbox } from "./sandbox.js";

let sandbox: Sandbox | undefined;
afterEach(() => sandbox?.dispose());

describe("Sandbox", () => {
  it("points HOME into the sandbox and restores it", () => {
    const before = { home: process.env.HOME, cwd: process.cwd(), hermes: process.env.HERMES_HOME };
    sandbox = Sandbox.create();
    sandbox.enter();
    expect(os.homedir()).toBe(sandbox.home);
    expect(process.env.HERMES_HOME).toBeUndefined();
    sandbox.leave();
    expect({ home: process.env.HOME, cwd: process.cwd(), hermes: process.env.HERMES_HOME }).toEqual(before);
  });

  // process.chdir throws in worker threads, where the sandbox cannot move cwd; say so instead of
  // passing silently.
  it.skipIf(!isMainThread)("points cwd into the sandbox and restores it (main thread only: worker threads cannot chdir)", () => {
    const cwd = process.cwd();
    sandbox = Sandbox.create();
    sandbox.enter();
    expect(sandbox.cwdSandboxed).toBe(true);
    expect(process.cwd()).toBe(sandbox.workDir);
    sandbox.leave();
    expect(process.cwd()).toBe(cwd);
  });

  it("detects writes outside an excluded profile directory", () => {
    sandbox = Sandbox.create();
    const home = sandbox.newHermesHome("p");
    const before = sandbox.snapshot([home]);
    fs.writeFileSync(path.join(home, "inside.json"), "{}");
    expect(diffSnapshots(before, sandbox.snapshot([home]))).toEqual([]);
    fs.mkdirSync(path.join(sandbox.home, ".cache"));
    fs.writeFileSync(path.join(sandbox.home, ".cache", "x"), "1");
    expect(diffSnapshots(before, sandbox.snapshot([home]))).toEqual([
      path.join(sandbox.home, ".cache"),
      path.join(sandbox.home, ".cache", "x"),
    ]);
    expect(isInside(home, path.join(home, "a", "b"))).toBe(true);
    expect(isInside(home, `${home}-other`)).toBe(false);
  });

  it("dispose removes the tree", () => {
    const s = Sandbox.create();
    s.dispose();
    expect(fs.existsSync(s.root)).toBe(false);
  });
});
