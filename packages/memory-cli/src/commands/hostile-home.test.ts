import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { childEnv, runCli, tempDir } from "../test-support/cli-harness.js";

/** Commands run against a Hermes home that is unusable: typed one-line errors (exit 1), nothing clobbered. */
describe("hermes-memory with a hostile Hermes home", { timeout: 60_000 }, () => {
  let root: string;
  let cleanup: () => void;
  // npm must never be reached in these tests: a fake npm that fails loudly if it is.
  let env: NodeJS.ProcessEnv;

  beforeEach(() => {
    ({ dir: root, cleanup } = tempDir("hermes-cli-hostile-home-"));
    const bin = path.join(root, "fake-bin");
    fs.mkdirSync(bin);
    fs.writeFileSync(path.join(bin, "npm"), "#!/bin/sh\necho 'npm error fake npm was called' >&2\nexit 1\n", { mode: 0o755 });
    env = childEnv({ PATH: `${bin}${path.delimiter}${process.env.PATH ?? ""}` });
  });
  afterEach(() => cleanup());

  it("plugins add never overwrites a $HERMES_HOME/package.json it cannot parse", async () => {
    const home = path.join(root, "home");
    fs.mkdirSync(home);
    const mine = '{ "name": "my-own", broken\n';
    fs.writeFileSync(path.join(home, "package.json"), mine);
    const result = await runCli(["--hermes-home", home, "plugins", "add", "some-provider"], { cwd: root, env });
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toMatch(/^hermes-memory: .*package\.json.*not valid JSON/);
    expect(result.stderr).not.toContain("fake npm was called");
    expect(fs.readFileSync(path.join(home, "package.json"), "utf8")).toBe(mine);
  });

  it("plugins add with a home that is a file, or a package.json that is a directory, is a user error (exit 1)", async () => {
    const file = path.join(root, "home-file");
    fs.writeFileSync(file, "not a directory");
    const onFile = await runCli(["--hermes-home", file, "plugins", "add", "some-provider"], { cwd: root, env });
    expect(onFile.code).toBe(1);
    expect(onFile.stderr.trim().split("\n")).toHaveLength(1);
    expect(onFile.stderr).not.toContain("internal error");
    expect(onFile.stderr).toContain(file);
    expect(fs.readFileSync(file, "utf8")).toBe("not a directory");

    const home = path.join(root, "home");
    fs.mkdirSync(path.join(home, "package.json"), { recursive: true });
    const onDir = await runCli(["--hermes-home", home, "plugins", "add", "some-provider"], { cwd: root, env });
    expect(onDir.code).toBe(1);
    expect(onDir.stderr.trim().split("\n")).toHaveLength(1);
    expect(onDir.stderr).not.toContain("internal error");
    expect(onDir.stderr).toContain(path.join(home, "package.json"));
  });

  it("demo --hermes-home <a file> is a user error (exit 1), not an internal error", async () => {
    const file = path.join(root, "home-file");
    fs.writeFileSync(file, "not a directory");
    const result = await runCli(["demo", "--no-color", "--hermes-home", file], { cwd: root, env });
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toMatch(/^hermes-memory: .*home-file.*directory/);
    expect(result.stderr).not.toContain("internal error");
    expect(fs.readFileSync(file, "utf8")).toBe("not a directory");
  });
});
