import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CLI_DIR, runCli, tempDir } from "../test-support/cli-harness.js";

const hasMkfifo = spawnSync("mkfifo", ["--version"]).status === 0;

/** The real binary with the real sqlite provider (a dev dependency of this package). */
describe("hermes-memory sqlite: output, files and a damaged config", { timeout: 60_000 }, () => {
  let home: string;
  let cleanup: () => void;
  const cli = (args: string[], input?: string) =>
    runCli(["--hermes-home", home, ...args], { cwd: CLI_DIR, ...(input !== undefined ? { input } : {}) });

  beforeEach(async () => {
    ({ dir: home, cleanup } = tempDir("hermes-cli-sqlite-files-"));
    expect((await cli(["memory", "setup", "sqlite", "--yes"])).code).toBe(0);
  });
  afterEach(() => cleanup());

  /** Import `text` through a named pipe (as `import <(gunzip -c dump.jsonl.gz)` would). */
  async function importThroughPipe(text: string, json = false) {
    const source = path.join(home, `source-${Date.now()}.jsonl`);
    const fifo = path.join(home, `pipe-${Date.now()}`);
    fs.writeFileSync(source, text);
    expect(spawnSync("mkfifo", [fifo]).status).toBe(0);
    const writer = spawn("sh", ["-c", `cat "${source}" > "${fifo}"`]);
    const written = new Promise((resolve) => writer.on("close", resolve));
    const result = await cli(["sqlite", "import", fifo, ...(json ? ["--json"] : [])]);
    await written;
    return result;
  }

  it.skipIf(!hasMkfifo)(
    "`sqlite export` to stdout is JSON Lines, `sqlite import` reads it back from a pipe, and text ends with a newline",
    async () => {
      const seed = ['{"content":"Deploys run on Fridays"}', '{"content":"The staging database is in eu-west-1","tags":["ops"]}'].join("\n");
      const imported = await importThroughPipe(seed);
      expect(imported.stderr).toBe("");
      expect(imported.code).toBe(0);
      expect(imported.stdout).toBe("Imported 2 item(s), skipped 0 already present, 0 invalid.\n");

      const exported = await cli(["sqlite", "export"]);
      expect(exported.code).toBe(0);
      const lines = exported.stdout.split("\n");
      expect(lines.pop()).toBe("");
      expect(lines.map((l) => JSON.parse(l).content)).toEqual(["Deploys run on Fridays", "The staging database is in eu-west-1"]);

      // The export, piped back in, is recognised as already present.
      const again = await importThroughPipe(exported.stdout, true);
      expect(again.code).toBe(0);
      expect(JSON.parse(again.stdout)).toMatchObject({ imported: 0, skipped: 2, invalid: 0 });

      const stats = await cli(["sqlite", "stats"]);
      expect(stats.stdout).toMatch(/\nsize: {5}\S+ \S+\n$/);
    },
  );

  it("`sqlite import` of a file with refused lines exits 1 and keeps the valid lines", async () => {
    const file = path.join(home, "mixed.jsonl");
    fs.writeFileSync(file, '{"content":"kept"}\n{"content":"bad tags","tags":"x"}\n');
    const result = await cli(["sqlite", "import", file]);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(
      /^Imported 1 item\(s\), skipped 0 already present, 1 invalid\.\nline 2: tags must be a list of non-empty text/,
    );
  });

  it.skipIf(!fs.existsSync("/dev/zero"))("`sqlite import /dev/zero` fails at once with the reason", async () => {
    const started = Date.now();
    const result = await cli(["sqlite", "import", "/dev/zero"]);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      "hermes-memory sqlite: Cannot read /dev/zero: it is not a regular file (a device or socket). Pass a JSONL file written by `hermes-memory sqlite export`.\n",
    );
  });

  it("with an unreadable config.yaml, `sqlite stats` reports the config error, not an unknown command", async () => {
    fs.writeFileSync(path.join(home, "config.yaml"), "memory: [1, 2\n");
    const result = await cli(["sqlite", "stats"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^hermes-memory: .*config\.yaml is not valid YAML: .*Fix the file \(or move it aside to start from defaults\)\.\n$/,
    );
    expect(result.stderr).not.toMatch(/unknown command/);
    // Help still prints.
    expect((await cli(["--help"])).code).toBe(0);
  });
});
