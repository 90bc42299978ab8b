import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli, tempDir, writePackageProvider, writeUserProvider } from "../test-support/cli-harness.js";

/** A provider CLI module: `hello` prints the context it was given; `crash` throws a plain Error. */
const HELLO_CLI = `
export function registerCli(command, context) {
  command.command("hello").option("--json").action((opts) => {
    const line = opts.json ? JSON.stringify({ provider: context.providerName, home: context.hermesHome }) : "hello from " + context.providerName + " in " + context.hermesHome;
    process.stdout.write(line + "\\n");
  });
  command.command("crash").action(() => { throw new Error("kaboom"); });
}
`;

describe("hermes-memory <provider> subcommands", { timeout: 60_000 }, () => {
  let root: string;
  let home: string;
  let cleanup: () => void;

  beforeEach(() => {
    ({ dir: root, cleanup } = tempDir("hermes-cli-provider-"));
    home = path.join(root, "home");
    writeUserProvider(home, "alpha", { cli: HELLO_CLI });
    writeUserProvider(home, "beta", { cli: HELLO_CLI.replace("hello", "wave") });
  });
  afterEach(() => cleanup());

  const activate = (name: string) => {
    fs.mkdirSync(home, { recursive: true });
    fs.writeFileSync(path.join(home, "config.yaml"), `memory:\n  provider: ${name}\n`);
  };

  it("adds the active provider's commands only", async () => {
    activate("alpha");
    const hello = await runCli(["--hermes-home", home, "alpha", "hello"], { cwd: root });
    expect(hello.stderr).toBe("");
    expect(hello.code).toBe(0);
    expect(hello.stdout).toBe(`hello from alpha in ${home}\n`);

    const help = await runCli(["--hermes-home", home, "--help"], { cwd: root });
    expect(help.stdout).toMatch(/^\s+alpha\s+commands of the active memory provider 'alpha'/m);
    expect(help.stdout).not.toMatch(/^\s+beta\s/m);

    const inactive = await runCli(["--hermes-home", home, "beta", "wave"], { cwd: root });
    expect(inactive.code).toBe(1);
    expect(inactive.stderr).toBe(
      "hermes-memory: 'beta' commands are only available while it is the active memory provider (now: 'alpha'); run `hermes-memory memory setup beta` to activate it.\n",
    );
  });

  it("passes the global --json to a provider subcommand that declares --json", async () => {
    activate("alpha");
    const result = await runCli(["--hermes-home", home, "--json", "alpha", "hello"], { cwd: root });
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ provider: "alpha", home });
  });

  it("works for package providers too", async () => {
    writePackageProvider(root, "gamma-memory", "gamma", { cli: HELLO_CLI });
    activate("gamma");
    const result = await runCli(["--hermes-home", home, "gamma", "hello"], { cwd: root });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("hello from gamma");
  });

  it("a failing cli module is one warning line and the rest of the CLI works", async () => {
    writeUserProvider(home, "broken", { cli: "throw new Error('cli exploded at import');\n" });
    activate("broken");
    const list = await runCli(["--hermes-home", home, "plugins", "list", "--json"], { cwd: root });
    expect(list.code).toBe(0);
    expect(list.stderr).toBe("");
    expect(JSON.parse(list.stdout).activeProvider).toBe("broken");

    const help = await runCli(["--hermes-home", home, "--help"], { cwd: root });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("plugins");
    const warnings = help.stderr.trim().split("\n");
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/^warning: broken commands unavailable: .*cli exploded at import/);

    const called = await runCli(["--hermes-home", home, "broken", "hello"], { cwd: root });
    expect(called.code).toBe(1);
    expect(called.stderr.trim().split("\n")).toHaveLength(1);
    expect(called.stderr).toMatch(/^hermes-memory: broken commands unavailable: .*cli exploded at import/);
  });

  it("an active provider without a CLI module says so in one line", async () => {
    writeUserProvider(home, "plain");
    activate("plain");
    const result = await runCli(["--hermes-home", home, "plain", "stats"], { cwd: root });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      "hermes-memory: memory provider 'plain' has no command-line commands (it ships no CLI module exporting registerCli); use `hermes-memory memory status` to inspect it.\n",
    );
  });

  it("an unexpected error inside a provider command exits 2 with one line", async () => {
    activate("alpha");
    const result = await runCli(["--hermes-home", home, "alpha", "crash"], { cwd: root });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      "hermes-memory: internal error: kaboom. This is a bug; rerun with HERMES_MEMORY_DEBUG=1 for details and report it.\n",
    );
  });
  it("passes core's ProviderCliContext: the settings and io writing to the CLI's own streams", async () => {
    writeUserProvider(home, "gamma", {
      cli: `
export function registerCli(command, context) {
  command.command("ctx").action(() => {
    const { io, ...rest } = context;
    io.stdout(JSON.stringify({ ...rest, isTTY: io.isTTY }) + "\\n");
    io.stderr("to stderr\\n");
  });
}
`,
    });
    activate("gamma");
    const result = await runCli(["--hermes-home", home, "gamma", "ctx"], { cwd: root });
    expect(result.code).toBe(0);
    expect(result.stderr).toBe("to stderr\n");
    expect(JSON.parse(result.stdout)).toEqual({
      hermesHome: home,
      providerName: "gamma",
      cwd: root,
      json: false,
      color: expect.any(Boolean),
      showProgress: false,
      isTTY: false,
    });
  });
});
