/**
 * Every hint that says how to install a provider names the command that fits where this CLI is
 * installed: `npm install -g <package>` beside a global CLI, `npm install <package>` in the
 * project whose CLI runs (`--prefix <project>` from elsewhere), and `hermes-memory plugins add`,
 * which works for both — in the demo, `memory status`, `plugins list` and `memory setup`.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { childEnv, tempDir, type RunResult } from "../test-support/cli-harness.js";
import { installCliCopy } from "../test-support/installed-cli.js";

let root: string;
let cleanup: () => void;
let home: string;
let elsewhere: string;

beforeEach(() => {
  ({ dir: root, cleanup } = tempDir("hermes-cli-hints-"));
  home = path.join(root, "home");
  elsewhere = path.join(root, "elsewhere");
  fs.mkdirSync(home);
  fs.mkdirSync(elsewhere);
});
afterEach(() => cleanup());

function run(bin: string, args: string[], cwd: string, env: Record<string, string | undefined> = {}): RunResult {
  const result = spawnSync(process.execPath, [bin, "--no-color", ...args], {
    cwd,
    env: childEnv({ HERMES_HOME: home, ...env }),
    encoding: "utf8",
    timeout: 60_000,
  });
  return { code: result.status ?? -1, stdout: result.stdout, stderr: result.stderr };
}

/** What each command says about installing a provider, run with `env` from `cwd`. */
function hints(bin: string, cwd: string, env: Record<string, string | undefined>) {
  const demo = run(bin, ["demo"], cwd, env);
  const list = run(bin, ["plugins", "list"], cwd, env);
  const setup = run(bin, ["memory", "setup", "ghost", "--yes"], cwd, env);
  fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  provider: ghost\n");
  const status = run(bin, ["memory", "status"], cwd, env);
  fs.rmSync(path.join(home, "config.yaml"));
  expect([demo.code, list.code, setup.code, status.code]).toEqual([0, 0, 1, 1]);
  return { demo: demo.stdout, list: list.stdout, setup: setup.stderr, status: status.stderr };
}

describe("install hints of a CLI installed", { timeout: 180_000 }, () => {
  it("globally: npm install -g, and never a bare npm install", () => {
    const { bin, location } = installCliCopy(root, "global");
    // npm's global prefix is the one the CLI was installed into.
    const said = hints(bin, elsewhere, { npm_config_prefix: location });
    expect(said.demo).toContain(
      "sqlite is not installed. Install it with `npm install -g @hermes/memory-sqlite` or `hermes-memory plugins add @hermes/memory-sqlite`.",
    );
    expect(said.list).toContain(
      "Install one with `npm install -g @hermes/memory-sqlite` or `hermes-memory plugins add @hermes/memory-sqlite`.",
    );
    expect(said.setup).toContain("Install it with `npm install -g <package>` or `hermes-memory plugins add <package>`");
    expect(said.status).toContain(
      "install it with `npm install -g <package>` or `hermes-memory plugins add <package>`, or run `hermes-memory memory off`",
    );
    for (const text of Object.values(said)) expect(text).not.toMatch(/`npm install (?!-g)/);
  });

  it("globally into a prefix that is not npm's default: npm install -g --prefix <prefix>", () => {
    const { bin, location } = installCliCopy(root, "global");
    const said = hints(bin, elsewhere, { npm_config_prefix: path.join(root, "npm-default") });
    expect(said.demo).toContain(`Install it with \`npm install -g --prefix ${location} @hermes/memory-sqlite\``);
  });

  it("in a project: npm install there, with --prefix <project> from another directory", () => {
    const { bin, location } = installCliCopy(root, "project");
    const inProject = hints(bin, location, {});
    expect(inProject.demo).toContain(
      "Install it with `npm install @hermes/memory-sqlite` or `hermes-memory plugins add @hermes/memory-sqlite`.",
    );
    expect(inProject.list).toContain("Install one with `npm install @hermes/memory-sqlite` or");
    expect(inProject.setup).toContain("Install it with `npm install <package>` or `hermes-memory plugins add <package>`");
    expect(inProject.status).toContain("install it with `npm install <package>` or");
    for (const text of Object.values(inProject)) expect(text).not.toMatch(/npm install -g/);
    const outside = hints(bin, elsewhere, {});
    expect(outside.demo).toContain(`Install it with \`npm install --prefix ${location} @hermes/memory-sqlite\``);
    expect(outside.status).toContain(`install it with \`npm install --prefix ${location} <package>\``);
  });
});
