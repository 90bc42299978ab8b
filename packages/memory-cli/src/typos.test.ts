import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseJson, runCli, tempDir, writeUserProvider } from "./test-support/cli-harness.js";

const CLI = `export function registerCli(command) {
  command.command("stats").action(() => {});
  command.command("search <query>").action(() => {});
}
`;

describe("mistyped command and provider names", { timeout: 60_000 }, () => {
  let root: string;
  let home: string;
  let cleanup: () => void;

  beforeEach(() => {
    ({ dir: root, cleanup } = tempDir("hermes-cli-typos-"));
    home = path.join(root, "home");
    writeUserProvider(home, "alpha", { cli: CLI });
  });
  afterEach(() => cleanup());

  const run = (...args: string[]) => runCli(["--hermes-home", home, ...args], { cwd: root });

  it("a nested subcommand typo exits 1 with one line suggesting the subcommand, as a top-level one does", async () => {
    for (const [args, line] of [
      [["memory", "stauts"], "hermes-memory: unknown command 'stauts' (Did you mean status?)\n"],
      [["plugins", "lst"], "hermes-memory: unknown command 'lst' (Did you mean list?)\n"],
      [["memory", "shwo"], "hermes-memory: unknown command 'shwo' (Did you mean show?)\n"],
      [["memory", "xyzzy"], "hermes-memory: unknown command 'xyzzy'\n"],
    ] as const) {
      const result = await run(...args);
      expect({ args, code: result.code, stderr: result.stderr, stdout: result.stdout }).toEqual({
        args,
        code: 1,
        stderr: line,
        stdout: "",
      });
    }
    // A provider's own subcommands get the same.
    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  provider: alpha\n");
    const provider = await run("alpha", "stast");
    expect(provider.code).toBe(1);
    expect(provider.stderr).toBe("hermes-memory: unknown command 'stast' (Did you mean stats?)\n");
  });

  it("the default subcommands still run without a name", async () => {
    expect((await run("memory")).stdout).toContain("Memory status");
    expect((await run("plugins")).stdout).toContain("alpha");
  });

  it("a mistyped provider name is answered with the installed provider it most likely means", async () => {
    const setup = await run("memory", "setup", "alpah", "--yes");
    expect(setup.code).toBe(1);
    expect(setup.stderr.trim().split("\n")).toHaveLength(1);
    expect(setup.stderr).toMatch(/^hermes-memory: Memory provider 'alpah' not found\. Did you mean 'alpha'\?/);

    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  provider: alpah\n");
    const status = parseJson(await run("memory", "status", "--json"));
    expect(status.provider.reason).toContain("did you mean 'alpha'? Run `hermes-memory memory setup alpha`");

    const demo = await run("demo", "--provider", "alpah");
    expect(demo.stdout).toContain("alpah is not installed. Did you mean alpha? Run `hermes-memory demo --provider alpha`.");
  });
});
