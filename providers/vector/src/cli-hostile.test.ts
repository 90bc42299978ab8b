import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Command } from "commander";
import { afterEach, describe, expect, it } from "vitest";
import { registerCli, runExport, runImport, type CliIo } from "./cli.js";
import { runScriptInChild } from "./test-support/run-script.js";
import { VectorMemoryProvider } from "./vector-memory-provider.js";

const CLI_MODULE = pathToFileURL(fileURLToPath(new URL("./cli.ts", import.meta.url))).href;
const hasMkfifo = spawnSync("mkfifo", ["--version"]).status === 0;

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});
function tempHome(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-vector-cli-hostile-"));
  dirs.push(d);
  return d;
}
function capture(): CliIo & { out: string; err: string } {
  const io = { out: "", err: "", isTTY: false, stdout: (t: string) => (io.out += t), stderr: (t: string) => (io.err += t) };
  return io;
}
async function seed(home: string): Promise<void> {
  const p = new VectorMemoryProvider({ env: {} });
  await p.initialize("s1", { hermesHome: home });
  p.remember({ content: "The server room code is 2468", kind: "fact" });
  p.remember({ content: "Deploys run on Fridays", kind: "fact" });
  await p.shutdown();
}
const ctxFor = (home: string) => ({ hermesHome: home, providerName: "vector", providerOptions: { env: {} } });

/**
 * `runImport(file)` in a child process (a device such as /dev/zero is read synchronously, which no
 * test timeout can interrupt); killed after `ms`.
 */
function importInChild(home: string, file: string, ms = 20_000): Promise<{ code: number | null; out: string; timedOut: boolean }> {
  const script = `const { runImport } = await import(${JSON.stringify(CLI_MODULE)});
const io = { isTTY: false, stdout: (t) => process.stdout.write(t), stderr: (t) => process.stderr.write(t) };
process.exitCode = await runImport({ hermesHome: ${JSON.stringify(home)}, providerName: "vector", providerOptions: { env: {} } }, ${JSON.stringify(file)}, { json: true }, io);`;
  return runScriptInChild(script, { ms }).then(({ code, out, timedOut }) => ({ code, out, timedOut }));
}

describe("vector import: paths that are not JSON Lines files", () => {
  it("a missing file and a directory are typed INVALID_ARGUMENT failures (exit 1), not internal errors", async () => {
    const home = tempHome();
    let io = capture();
    expect(await runImport(ctxFor(home), path.join(home, "missing.jsonl"), { json: true }, io)).toBe(1);
    expect(JSON.parse(io.out)).toEqual({
      error: {
        code: "INVALID_ARGUMENT",
        message: expect.stringMatching(
          /^Cannot read .*missing\.jsonl \(ENOENT.*Pass a JSONL file written by `hermes-memory vector export`/,
        ),
      },
    });
    io = capture();
    expect(await runImport(ctxFor(home), home, {}, io)).toBe(1);
    expect(io.err).toMatch(/^vector: Cannot read .*: it is a directory\. Pass a JSONL file/);
  });

  it.skipIf(!fs.existsSync("/dev/zero"))("/dev/zero is refused at once instead of being read forever", { timeout: 60_000 }, async () => {
    const home = tempHome();
    const result = await importInChild(home, "/dev/zero");
    expect(result.timedOut).toBe(false);
    expect(result.code).toBe(1);
    expect(JSON.parse(result.out)).toEqual({
      error: { code: "INVALID_ARGUMENT", message: expect.stringMatching(/^Cannot read \/dev\/zero: it is not a regular file/) },
    });
  });

  it.skipIf(!hasMkfifo)(
    "a named pipe is imported completely (it is not read once to count and again to import)",
    { timeout: 60_000 },
    async () => {
      const source = tempHome();
      await seed(source);
      const file = path.join(source, "dump.jsonl");
      expect(await runExport(ctxFor(source), file, {}, capture())).toBe(0);
      const home = tempHome();
      const fifo = path.join(home, "pipe");
      expect(spawnSync("mkfifo", [fifo]).status).toBe(0);
      // The writer blocks until the import opens the pipe.
      const writer = spawn("sh", ["-c", `cat "${file}" > "${fifo}"`]);
      const written = new Promise((resolve) => writer.on("close", resolve));
      const io = capture();
      expect(await runImport(ctxFor(home), fifo, { json: true }, io)).toBe(0);
      expect(JSON.parse(io.out)).toEqual({ imported: 2 });
      await written;
    },
  );
});

describe("vector export: targets that are not files", () => {
  it("a directory or a missing folder is refused (INVALID_ARGUMENT, exit 1) before anything is written", async () => {
    const home = tempHome();
    await seed(home);
    const dir = path.join(home, "exports");
    fs.mkdirSync(dir);
    let io = capture();
    expect(await runExport(ctxFor(home), dir, { json: true }, io)).toBe(1);
    expect(JSON.parse(io.out)).toEqual({ error: { code: "INVALID_ARGUMENT", message: expect.stringMatching(/it is a directory/) } });
    expect(fs.readdirSync(home).filter((n) => n.endsWith(".tmp"))).toEqual([]);
    io = capture();
    expect(await runExport(ctxFor(home), path.join(home, "nowhere", "x.jsonl"), {}, io)).toBe(1);
    expect(io.err).toMatch(/^vector: Cannot export to .*x\.jsonl: the folder .*nowhere does not exist/);
    expect(fs.existsSync(path.join(home, "nowhere"))).toBe(false);
  });

  it.skipIf(!hasMkfifo)("a named pipe is refused and stays a pipe", async () => {
    const home = tempHome();
    await seed(home);
    const fifo = path.join(home, "pipe");
    expect(spawnSync("mkfifo", [fifo]).status).toBe(0);
    const io = capture();
    expect(await runExport(ctxFor(home), fifo, {}, io)).toBe(1);
    expect(io.err).toMatch(/not a regular file/);
    expect(fs.statSync(fifo).isFIFO()).toBe(true);
  });
});

describe("vector registerCli", () => {
  it("writes every subcommand's output to the host's io, and names the --limit the user typed", async () => {
    const home = tempHome();
    await seed(home);
    const io = capture();
    const program = new Command("hermes-memory").exitOverride();
    registerCli(program.command("vector"), { hermesHome: home, providerName: "vector", io });
    const previous = process.exitCode;
    try {
      await program.parseAsync(["node", "hermes-memory", "vector", "stats", "--json"]);
      expect(JSON.parse(io.out)).toMatchObject({ items: 2 });
      io.out = "";
      await program.parseAsync(["node", "hermes-memory", "vector", "search", "server", "--limit", "abc"]);
      expect(process.exitCode).toBe(1);
      expect(io.err).toBe('vector: search options: limit must be a number of at least 1; got "abc".\n');
    } finally {
      process.exitCode = previous;
    }
  });
});
