import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { diffSnapshots, isInside, Sandbox } from "./sandbox.js";

let sandbox: Sandbox | undefined;
afterEach(() => sandbox?.dispose());

describe("Sandbox", () => {
  it("points HOME and cwd into the sandbox and restores them", () => {
    const before = { home: process.env.HOME, cwd: process.cwd(), hermes: process.env.HERMES_HOME };
    sandbox = Sandbox.create();
    sandbox.enter();
    expect(os.homedir()).toBe(sandbox.home);
    expect(process.env.HERMES_HOME).toBeUndefined();
    if (sandbox.cwdSandboxed) expect(process.cwd()).toBe(sandbox.workDir);
    sandbox.leave();
    expect({ home: process.env.HOME, cwd: process.cwd(), hermes: process.env.HERMES_HOME }).toEqual(before);
  });

  it("detects writes outside an excluded profile directory", () => {
    sandbox = Sandbox.create();
    const home = sandbox.newHermesHome("p");
    const before = sandbox.snapshot([home]);
    fs.writeFileSync(path.join(home, "inside.json"), "{}");
    expect(diffSnapshots(before, sandbox.snapshot([home]))).toEqual([]);
    fs.mkdirSync(path.join(sandbox.home, ".cache"));
    fs.writeFileSync(path.join(sandbox.home, ".cache", "x"), "1");
    expect(diffSnapshots(before, sandbox.snapshot([home]))).toEqual([path.join(sandbox.home, ".cache"), path.join(sandbox.home, ".cache", "x")]);
    expect(isInside(home, path.join(home, "a", "b"))).toBe(true);
    expect(isInside(home, `${home}-other`)).toBe(false);
  });

  it("dispose removes the tree", () => {
    const s = Sandbox.create();
    s.dispose();
    expect(fs.existsSync(s.root)).toBe(false);
  });
});
