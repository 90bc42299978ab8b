import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { CONTRACT_CLAUSES } from "./clauses.js";
import type { ContractReport } from "./contract-report.js";

// Broken and hostile provider packages given to the built CLI: it must always print a report (valid
// --json), exit with the documented code, and leave nothing in its temp dir.
const here = path.dirname(fileURLToPath(import.meta.url));
const bin = path.resolve(here, "..", "dist", "bin.js");
const fixtures = path.join(here, "__fixtures__");
const minimalProvider = pathToFileURL(path.join(fixtures, "minimal-provider.js")).href;

const temps: string[] = [];
afterEach(() => {
  for (const dir of temps.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function tempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  temps.push(dir);
  return dir;
}

/** A provider package whose entry runs `code` and registers `new P()` (default: the minimal provider). */
function providerPackage(code: string, packageJsonText?: string): string {
  const dir = tempDir("contract-hostile-");
  const manifest = {
    name: "@contract-fixtures/hostile",
    version: "1.0.0",
    type: "module",
    hermesMemoryProvider: { name: "minimal", entry: "./index.js" },
  };
  fs.writeFileSync(path.join(dir, "package.json"), packageJsonText ?? JSON.stringify(manifest));
  fs.writeFileSync(
    path.join(dir, "index.js"),
    `import { MinimalProvider } from ${JSON.stringify(minimalProvider)};\nlet P = MinimalProvider;\n${code}\nexport function register(ctx) { ctx.registerMemoryProvider(new P()); }\n`,
  );
  return dir;
}

/** Run the CLI with its own TMPDIR, so whatever it leaves behind can be seen. */
function runBin(
  args: string[],
  extraEnv: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string; leftInTmp: string[] }> {
  const tmp = tempDir("contract-hostile-tmp-");
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [bin, ...args],
      { env: { ...process.env, TMPDIR: tmp, ...extraEnv }, timeout: 60_000, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : -1) : 0;
        resolve({ code, stdout, stderr, leftInTmp: fs.readdirSync(tmp) });
      },
    );
  });
}

function failures(report: ContractReport): Record<string, string> {
  return Object.fromEntries(report.results.filter((r) => r.status === "fail").map((r) => [r.id, r.reason ?? ""]));
}

/** True while `pid` is a running process (not gone, not a zombie); Linux only. */
function running(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "latin1");
    const state = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
}

// Each test starts the CLI in a child process that imports the provider and runs clauses: about a
// second on an idle machine, so the default 5 s per test is too tight on a busy one.
describe("hermes-memory-contract CLI with hostile provider packages", { timeout: 30_000 }, () => {
  beforeAll(() => {
    if (!fs.existsSync(bin)) throw new Error(`${bin} is missing: run pnpm --filter @hermes/memory-contract build first`);
  });

  it("reports process.exit(0) inside initialize() as a failure instead of exiting 0 without a report", async () => {
    const dir = providerPackage("P = class extends MinimalProvider { initialize() { process.exit(0); } };");
    const { code, stdout, leftInTmp } = await runBin([dir, "--json", "--only", "INIT"]);
    const report = JSON.parse(stdout) as ContractReport;
    expect(failures(report)["C-INIT-1"]).toContain("process.exit(0)");
    expect(code).toBe(1);
    expect(leftInTmp).toEqual([]);
  });

  it("reports process.exit(1) at import under C-MANIFEST-3", async () => {
    const dir = providerPackage("process.exit(1);");
    const { code, stdout, leftInTmp } = await runBin([dir, "--json", "--only", "MANIFEST"]);
    const report = JSON.parse(stdout) as ContractReport;
    expect(failures(report)["C-MANIFEST-3"]).toContain("process.exit(1)");
    expect(code).toBe(1);
    expect(leftInTmp).toEqual([]);
  });

  it.each([
    [
      "an exception thrown from a timer",
      "setTimeout(() => { throw new Error('hostile-timer-boom'); }, 1);",
      "uncaught exception: hostile-timer-boom",
    ],
    ["an unhandled rejection", "void Promise.reject(new Error('hostile-rejection'));", "unhandled promise rejection: hostile-rejection"],
  ])("fails the clause for %s instead of crashing with a stack", async (_label, statement, expected) => {
    const dir = providerPackage(
      `P = class extends MinimalProvider { initialize(...args) { ${statement} return super.initialize(...args); } };`,
    );
    const { code, stdout, stderr, leftInTmp } = await runBin([dir, "--json", "--only", "INIT"]);
    const report = JSON.parse(stdout) as ContractReport;
    expect(Object.values(failures(report)).join("\n")).toContain(expected);
    expect(stderr).not.toMatch(/^\s+at /m);
    expect(code).toBe(1);
    expect(leftInTmp).toEqual([]);
  });

  it("keeps --json valid when the provider writes to stdout (its output goes to stderr)", async () => {
    const dir = providerPackage(
      'process.stdout.write("garbage-at-import\\n"); P = class extends MinimalProvider { initialize(...args) { console.log("garbage-in-init"); return super.initialize(...args); } };',
    );
    const { code, stdout, stderr } = await runBin([dir, "--json", "--only", "IDENTITY", "INIT"]);
    const report = JSON.parse(stdout) as ContractReport;
    expect(failures(report)).toEqual({});
    expect(code).toBe(0);
    expect(stderr).toContain("garbage-at-import");
    expect(stderr).toContain("garbage-in-init");
  });

  it("reads a package.json with a byte-order mark, as core's discovery does", async () => {
    const manifest = {
      name: "@contract-fixtures/bom",
      version: "1.0.0",
      type: "module",
      hermesMemoryProvider: { name: "minimal", entry: "./index.js" },
    };
    const dir = providerPackage("", `\ufeff${JSON.stringify(manifest)}`);
    const { code, stdout, stderr } = await runBin([dir, "--json", "--only", "MANIFEST"]);
    expect(stderr).toBe("");
    expect(failures(JSON.parse(stdout) as ContractReport)).toEqual({});
    expect(code).toBe(0);
  });

  it("caps a clause's reason when the provider returns 10,000 failing tools", async () => {
    const dir = providerPackage(
      "P = class extends MinimalProvider { getToolSchemas() { return Array.from({ length: 10000 }, (_, i) => ({ name: `t${i}`, description: 'd', parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] } })); } handleToolCall() { return {}; } };",
    );
    const { code, stdout } = await runBin([dir, "--json", "--only", "C-TOOLS-6"]);
    const reason = failures(JSON.parse(stdout) as ContractReport)["C-TOOLS-6"] ?? "";
    expect(reason).toContain("t0 with no arguments");
    expect(reason.length).toBeLessThan(4200);
    expect(reason).toMatch(/more characters\)$/);
    expect(code).toBe(1);
  }, 30_000);

  describe("a package that changes built-ins cannot forge the verdict", () => {
    // Both fixtures register a provider whose tool name is invalid: the true verdict is C-TOOLS-1
    // failing (plus C-LIFECYCLE-4 for what they changed), so exit code 1.
    it("fields added to Object.prototype (skip lists, clause ids, timeouts, ok) skip nothing and fail C-LIFECYCLE-4", async () => {
      const dir = path.join(fixtures, "prototype-pollution-package");
      const { code, stdout, leftInTmp } = await runBin([dir, "--json"]);
      const report = JSON.parse(stdout) as ContractReport;
      expect(report.results.map((r) => r.id)).toEqual(CONTRACT_CLAUSES.map((c) => c.id));
      expect(report.results.filter((r) => (r.reason ?? "").includes("forged"))).toEqual([]);
      // userScoping is never inferred: a polluted prototype must not turn it on.
      expect(report.results.find((r) => r.id === "C-ISOLATION-2")?.status).toBe("skip");
      const failed = failures(report);
      expect(Object.keys(failed).sort()).toEqual(["C-LIFECYCLE-4", "C-TOOLS-1"]);
      expect(failed["C-LIFECYCLE-4"]).toContain("Object.prototype.skip added");
      expect(failed["C-LIFECYCLE-4"]).toContain("restored");
      expect(report.ok).toBe(false);
      expect(report.summary.fail).toBe(2);
      expect(code).toBe(1);
      expect(leftInTmp).toEqual([]);
    }, 60_000);

    it("the text report is not switched to JSON by a polluted prototype and still exits 1", async () => {
      const { code, stdout } = await runBin([path.join(fixtures, "prototype-pollution-package")]);
      expect(stdout).toContain("FAIL  C-TOOLS-1");
      expect(stdout).toContain("FAIL  C-LIFECYCLE-4");
      expect(stdout).toMatch(/\d+ passed, 2 failed, \d+ skipped \(\d+ clauses\)$/m);
      expect(code).toBe(1);
    }, 60_000);

    it("replaced JSON.stringify, Object.keys, Array/String methods, console.log and process.exit do not change the report or the exit code", async () => {
      const dir = path.join(fixtures, "builtin-replace-package");
      const { code, stdout, stderr } = await runBin([dir, "--json"]);
      const report = JSON.parse(stdout) as ContractReport;
      expect(report.results).toHaveLength(CONTRACT_CLAUSES.length);
      const failed = failures(report);
      expect(Object.keys(failed).sort()).toEqual(["C-LIFECYCLE-4", "C-TOOLS-1"]);
      for (const name of [
        "JSON.stringify replaced",
        "Object.keys replaced",
        "Array.prototype.includes replaced",
        "String.prototype.includes replaced",
        "console.log replaced",
      ]) {
        expect(failed["C-LIFECYCLE-4"]).toContain(name);
      }
      expect(failed["C-LIFECYCLE-4"]).toMatch(/in initialize\(\) during C-[A-Z]+-\d+: Array\.prototype\.flatMap removed/);
      expect(report.summary).toEqual({
        pass: report.results.filter((r) => r.status === "pass").length,
        fail: 2,
        skip: report.results.filter((r) => r.status === "skip").length,
        total: CONTRACT_CLAUSES.length,
      });
      expect(code).toBe(1);
      expect(stderr).not.toMatch(/^\s+at /m);

      const text = await runBin([dir]);
      expect(text.stdout).toContain("FAIL  C-TOOLS-1");
      expect(text.stdout).toMatch(/\d+ passed, 2 failed, \d+ skipped \(\d+ clauses\)$/m);
      expect(text.code).toBe(1);
    }, 60_000);

    it("a built-in made impossible to put back (non-configurable Object.prototype.toJSON) neither forges --json nor exits 0", async () => {
      const dir = providerPackage(
        'Object.defineProperty(Object.prototype, "toJSON", { value() { return { ok: true, forged: true }; }, configurable: false, writable: false, enumerable: false });',
      );
      const { code, stdout, stderr } = await runBin([dir, "--json", "--only", "IDENTITY"]);
      const report = JSON.parse(stdout) as ContractReport & { forged?: boolean };
      expect(report.forged).toBeUndefined();
      expect(report.results).toHaveLength(CONTRACT_CLAUSES.length);
      expect(failures(report)["C-LIFECYCLE-4"]).toMatch(/Object\.prototype\.toJSON added( \d+ times)? \(could not be restored\)/);
      expect(stderr).toContain("changed built-ins that cannot be put back (Object.prototype.toJSON added)");
      expect(code).toBe(1);
    }, 60_000);

    it("C-LIFECYCLE-4 runs under --only and cannot be skipped by the package's own manifest", async () => {
      const manifest = {
        name: "@contract-fixtures/skip-the-watch",
        version: "1.0.0",
        type: "module",
        hermesMemoryProvider: {
          name: "minimal",
          entry: "./index.js",
          contract: { skip: { "C-LIFECYCLE-4": "hidden", "C-LIFECYCLE-5": "hidden" } },
        },
      };
      const dir = providerPackage("Array.prototype.hostileHelper = () => 1;", JSON.stringify(manifest));
      const { code, stdout } = await runBin([dir, "--json", "--only", "INIT"]);
      const report = JSON.parse(stdout) as ContractReport;
      expect(failures(report)["C-LIFECYCLE-4"]).toContain("Array.prototype.hostileHelper added");
      expect(report.results.find((r) => r.id === "C-INIT-1")?.status).toBe("pass");
      expect(code).toBe(1);
    }, 60_000);
  });

  it.runIf(process.platform === "linux")(
    "fails C-LIFECYCLE-5 for child processes left running after shutdown (started at import too) and stops them",
    async () => {
      const pidDir = tempDir("contract-hostile-pids-");
      const { code, stdout } = await runBin([path.join(fixtures, "child-process-package"), "--json", "--only", "LIFECYCLE"], {
        CONTRACT_FIXTURE_PID_DIR: pidDir,
      });
      const pids = fs.readdirSync(pidDir).map((name) => Number(name.split("-")[1]));
      expect(pids).toHaveLength(3);
      try {
        const report = JSON.parse(stdout) as ContractReport;
        const reason = failures(report)["C-LIFECYCLE-5"] ?? "";
        expect(reason).toContain("3 child processes");
        expect(reason).toMatch(/sleep 600\): ended by SIGTERM/);
        // Started while the package was imported, before the run.
        expect(reason).toMatch(/sleep 601\): ended by SIGTERM/);
        expect(reason).toContain("killed with SIGKILL");
        expect(code).toBe(1);
        expect(pids.filter(running)).toEqual([]);
      } finally {
        for (const pid of pids.filter(running)) process.kill(pid, "SIGKILL");
      }
    },
    60_000,
  );
});
