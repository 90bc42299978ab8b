import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CLI_DIR, projectWithProvider, runCli, tempDir, type RunResult } from "./test-support/cli-harness.js";

/** Not UTF-8: every command reading config.yaml refuses it. */
const UNREADABLE_CONFIG = Buffer.from("memory:\n  provider: \xff\xfe\n", "latin1");

/** The one JSON error document of a failed `--json` command, checked for shape and exit code. */
function jsonError(result: RunResult, label: string): { code: string; message: string } {
  expect(result.code, `${label}: exit code\n${result.stderr}`).toBeGreaterThan(0);
  let document: unknown;
  try {
    document = JSON.parse(result.stdout);
  } catch {
    throw new Error(`${label}: stdout is not one JSON document:\n${result.stdout}\nstderr:\n${result.stderr}`);
  }
  expect(document, label).toEqual({ error: { code: expect.stringMatching(/^[A-Z_]+$/), message: expect.any(String) } });
  // Warnings may go to stderr; the error itself must not be printed there as well.
  expect(result.stderr, label).not.toMatch(/^hermes-memory[^:]*: /m);
  return (document as { error: { code: string; message: string } }).error;
}

describe("errors under --json and not-found messages", { timeout: 120_000 }, () => {
  let root: string;
  let home: string;
  let cleanup: () => void;

  beforeEach(() => {
    ({ dir: root, cleanup } = tempDir("hermes-cli-json-errors-"));
    home = path.join(root, "home");
    fs.mkdirSync(home);
  });
  afterEach(() => cleanup());

  const run = (args: string[], cwd = root) => runCli(["--hermes-home", home, ...args], { cwd });

  it("every built-in command prints {error: {code, message}} on stdout and exits non-zero", async () => {
    const usage: Array<[string[], string]> = [
      [["memory", "stauts"], "UNKNOWN_COMMAND"],
      [["nosuch"], "UNKNOWN_COMMAND"],
      [["plugins", "list", "--bogus"], "UNKNOWN_OPTION"],
      [["plugins", "add"], "INVALID_ARGUMENT"],
      [["memory", "show", "nosuch"], "INVALID_ARGUMENT"],
      [["memory", "setup", "nosuch", "--yes"], "PROVIDER_NOT_FOUND"],
      [["plugins", "remove", "nosuch"], "INVALID_ARGUMENT"],
      [["memory", "setup", "--yes"], "INVALID_ARGUMENT"],
    ];
    for (const [args, code] of usage) {
      for (const placed of [
        ["--json", ...args],
        [...args, "--json"],
      ]) {
        expect(jsonError(await run(placed), placed.join(" ")).code, placed.join(" ")).toBe(code);
      }
    }
    fs.writeFileSync(path.join(home, "config.yaml"), UNREADABLE_CONFIG);
    for (const args of [
      ["plugins", "list"],
      ["memory", "status"],
      ["memory", "off"],
      ["memory", "show"],
    ]) {
      const error = jsonError(await run([...args, "--json"]), args.join(" "));
      expect(error.message, args.join(" ")).toContain("is not valid UTF-8 text");
    }
  });

  it("the sqlite provider's subcommands do the same, and say 'not found' on stderr without --json", async () => {
    expect((await run(["memory", "setup", "sqlite", "--yes"], CLI_DIR)).code).toBe(0);
    const missing = jsonError(await run(["sqlite", "forget", "no-such-id", "--json"], CLI_DIR), "sqlite forget");
    expect(missing).toEqual({ code: "ITEM_NOT_FOUND", message: expect.stringContaining("no-such-id") });
    expect(jsonError(await run(["sqlite", "search", "x", "--kind", "bogus", "--json"], CLI_DIR), "sqlite search --kind").code).toBe(
      "INVALID_ARGUMENT",
    );
    expect(jsonError(await run(["--json", "sqlite", "search"], CLI_DIR), "sqlite search").code).toBe("INVALID_ARGUMENT");
    expect(jsonError(await run(["sqlite", "stast", "--json"], CLI_DIR), "sqlite stast").code).toBe("UNKNOWN_COMMAND");

    const text = await run(["sqlite", "forget", "no-such-id"], CLI_DIR);
    expect({ code: text.code, stdout: text.stdout }).toEqual({ code: 1, stdout: "" });
    expect(text.stderr).toMatch(/^hermes-memory sqlite: No item with id no-such-id/);
  });

  it("the vector provider's subcommands do the same", async () => {
    const project = projectWithProvider(root, "@hermes/memory-vector", "vector");
    expect((await run(["memory", "setup", "vector", "--yes"], project)).code).toBe(0);
    const missing = jsonError(await run(["vector", "forget", "no-such-id", "--json"], project), "vector forget");
    expect(missing).toEqual({ code: "ITEM_NOT_FOUND", message: expect.stringContaining("no-such-id") });
    expect(jsonError(await run(["vector", "import", path.join(root, "missing.jsonl"), "--json"], project), "vector import").code).toBe(
      "INVALID_ARGUMENT",
    );

    const text = await run(["vector", "forget", "no-such-id"], project);
    expect({ code: text.code, stdout: text.stdout }).toEqual({ code: 1, stdout: "" });
    expect(text.stderr).toMatch(/^vector: No item with id no-such-id/);
  });
});
