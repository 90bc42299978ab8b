import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { childEnv, runCli, tempDir, writeUserProvider } from "./test-support/cli-harness.js";

describe("hermes-memory global behaviour", { timeout: 60_000 }, () => {
  let root: string;
  let home: string;
  let cleanup: () => void;

  beforeEach(() => {
    ({ dir: root, cleanup } = tempDir("hermes-cli-program-"));
    home = path.join(root, "home");
    writeUserProvider(home, "alpha");
  });
  afterEach(() => cleanup());

  it("takes the home from HERMES_HOME when --hermes-home is absent", async () => {
    const result = await runCli(["plugins", "list", "--json"], { cwd: root, env: childEnv({ HERMES_HOME: home }) });
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).hermesHome).toBe(home);
  });

  it("exits 1 with one line for an unknown command or option", async () => {
    const unknown = await runCli(["--hermes-home", home, "plugin", "list"], { cwd: root });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^hermes-memory: unknown command 'plugin'/);
    expect(unknown.stderr).toContain("(Did you mean plugins?)");
    const option = await runCli(["--hermes-home", home, "plugins", "list", "--bogus"], { cwd: root });
    expect(option.code).toBe(1);
    expect(option.stderr).toBe("hermes-memory: unknown option '--bogus'\n");
  });

  it("prints help and the version with exit 0", async () => {
    const help = await runCli([], { cwd: root, env: childEnv({ HERMES_HOME: home }) });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("Usage: hermes-memory");
    const version = await runCli(["--version"], { cwd: root });
    expect(version.code).toBe(0);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  it("colours only when asked, and never with --no-color or NO_COLOR", async () => {
    const args = ["--hermes-home", home, "plugins", "list"];
    const forced = await runCli(args, { cwd: root, env: childEnv({ FORCE_COLOR: "1" }) });
    expect(forced.stdout).toContain("\u001b[");
    const flag = await runCli([...args, "--no-color"], { cwd: root, env: childEnv({ FORCE_COLOR: "1" }) });
    expect(flag.stdout).not.toContain("\u001b[");
    const env = await runCli(args, { cwd: root, env: childEnv({ FORCE_COLOR: "1", NO_COLOR: "1" }) });
    expect(env.stdout).not.toContain("\u001b[");
  });
});
