import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BIN, childEnv, providerModule, tempDir, writeUserProvider, type RunResult } from "../test-support/cli-harness.js";

// A provider that hangs AND holds the event loop open (an interval), the worst case: without the
// bounds the command never ends, and without the explicit exit it waits for the CLI's 3 s
// fallback timer. The bound here is 200 ms; each command is compared with the same command
// against a healthy provider, so machine load cancels out.
const BOUND_MS = 200;
const HANG = "setInterval(() => {}, 1000);\nawait new Promise(() => {});\n";

interface Timed extends RunResult {
  ms: number;
}

function run(args: string[], cwd: string): Promise<Timed> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const env = childEnv({ HERMES_MEMORY_IMPORT_TIMEOUT_MS: String(BOUND_MS), HERMES_MEMORY_HOOK_TIMEOUT_MS: String(BOUND_MS) });
    const child = spawn(process.execPath, [BIN, ...args], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    // A hang is a failure, not a stuck test run.
    const killer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(killer);
      resolve({ code: code ?? (signal ? -1 : -2), stdout, stderr, ms: performance.now() - started });
    });
  });
}

describe("CLI commands with a provider that never settles", { timeout: 90_000 }, () => {
  let root: string;
  let home: string;
  let cleanup: () => void;

  beforeEach(() => {
    ({ dir: root, cleanup } = tempDir("hermes-cli-hung-"));
    home = path.join(root, "home");
  });
  afterEach(() => cleanup());

  function hungImport(name: string): void {
    const dir = writeUserProvider(home, name);
    fs.writeFileSync(path.join(dir, "index.js"), providerModule(name).replace("\n", `\n${HANG}`));
  }

  async function baseline(args: string[]): Promise<Timed> {
    writeUserProvider(home, "healthy", { searchable: true });
    const result = await run(["--hermes-home", home, ...args], root);
    fs.rmSync(path.join(home, "plugins", "healthy"), { recursive: true, force: true });
    expect(result.code).toBe(0);
    return result;
  }

  it("plugins list --check: a hung import is reported and the command exits promptly", async () => {
    const healthy = await baseline(["plugins", "list", "--check"]);
    hungImport("stuck");
    const result = await run(["--hermes-home", home, "plugins", "list", "--check"], root);
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/Memory provider 'stuck': importing the entry from .* did not finish within 0\.2s/);
    expect(result.stdout).toContain("stuck");
    expect(result.ms).toBeGreaterThanOrEqual(BOUND_MS);
    expect(result.ms).toBeLessThan(healthy.ms + BOUND_MS + 1500);
  });

  it("memory status: a hung import of the configured provider is reported and the command exits promptly", async () => {
    fs.mkdirSync(home, { recursive: true });
    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  provider: healthy\n");
    const healthy = await baseline(["memory", "status"]);
    hungImport("stuck");
    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  provider: stuck\n");
    const result = await run(["--hermes-home", home, "memory", "status"], root);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain("Memory provider 'stuck': importing the entry");
    expect(result.stdout).toContain("did not finish within 0.2s");
    expect(result.ms).toBeLessThan(healthy.ms + BOUND_MS + 1500);
  });

  it("memory status: a hung initializeForInspection and shutdown are skipped with a warning naming provider and hook", async () => {
    fs.mkdirSync(home, { recursive: true });
    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  provider: healthy\n");
    const healthy = await baseline(["memory", "status"]);
    writeUserProvider(home, "slowpoke", {
      searchable: true,
      body: "initializeForInspection() { setInterval(() => {}, 1000); return new Promise(() => {}); }\n  shutdown() { return new Promise(() => {}); }",
    });
    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  provider: slowpoke\n");
    const result = await run(["--hermes-home", home, "memory", "status"], root);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain("Memory provider 'slowpoke' initializeForInspection timed out after 0.2s");
    expect(result.stderr).toContain("Memory provider 'slowpoke' shutdown timed out after 0.2s");
    expect(result.ms).toBeGreaterThanOrEqual(2 * BOUND_MS);
    expect(result.ms).toBeLessThan(healthy.ms + 2 * BOUND_MS + 1500);
  });
});
