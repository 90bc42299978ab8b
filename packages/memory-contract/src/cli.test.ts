import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ContractReport } from "./contract-report.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const bin = path.resolve(here, "..", "dist", "bin.js");
const fixtures = path.join(here, "__fixtures__");

function runBin(args: string[], cwd = here): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { cwd, timeout: 60_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

const temps: string[] = [];
afterEach(() => {
  for (const dir of temps.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe("hermes-memory-contract CLI (built dist/bin.js)", () => {
  beforeAll(() => {
    if (!fs.existsSync(bin)) throw new Error(`${bin} is missing: run pnpm --filter @hermes/memory-contract build first`);
  });

  it("starts with a node shebang", () => {
    expect(fs.readFileSync(bin, "utf8").startsWith("#!/usr/bin/env node\n")).toBe(true);
  });

  it("--version prints the package version and exits 0", async () => {
    const { version } = JSON.parse(fs.readFileSync(path.resolve(here, "..", "package.json"), "utf8")) as { version: string };
    expect(await runBin(["--version"])).toEqual({ code: 0, stdout: `${version}\n`, stderr: "" });
  });

  it("passes a correct provider package dir and exits 0 (--json)", async () => {
    const { code, stdout, stderr } = await runBin([path.join(fixtures, "minimal-package"), "--json"]);
    expect(stderr).toBe("");
    const report = JSON.parse(stdout) as ContractReport;
    expect(report.results.filter((r) => r.status === "fail")).toEqual([]);
    expect(code).toBe(0);
    expect(report.provider).toBe("minimal");
    expect(report.results.filter((r) => r.group === "MANIFEST").map((r) => r.status)).toEqual(["pass", "pass", "pass", "pass"]);
    // Capabilities are inferred: userScoping is never inferred, so its clause is skipped with the reason.
    expect(report.results.find((r) => r.id === "C-ISOLATION-2")).toMatchObject({ status: "skip" });
    expect(report.results.find((r) => r.id === "C-CHECKPOINT-2")?.status).toBe("pass");
  });

  it("prints a grouped report and exits 1 when a clause fails", async () => {
    const { code, stdout } = await runBin([path.join(fixtures, "bad-tool-package")]);
    expect(code).toBe(1);
    expect(stdout).toContain("Memory provider contract: minimal");
    expect(stdout).toMatch(/^TOOLS$/m);
    expect(stdout).toContain("FAIL  C-TOOLS-1");
    expect(stdout).toContain('why:  tool name "minimal search!" does not match');
    expect(stdout).toContain("hint: Return bare {name, description");
    // hermesMemoryProvider.contract.skip from package.json is honoured.
    expect(stdout).toContain("SKIP  C-LIFECYCLE-3");
    expect(stdout).toMatch(/\d+ passed, 1 failed, \d+ skipped/);
  });

  it("reports a leaked timer and still exits instead of hanging on it", async () => {
    const { code, stdout } = await runBin([path.join(fixtures, "timer-leak-package"), "--json", "--only", "LIFECYCLE"]);
    const report = JSON.parse(stdout) as ContractReport;
    expect(report.results.filter((r) => r.status === "fail").map((r) => r.id)).toEqual(["C-LIFECYCLE-3"]);
    expect(report.results.find((r) => r.id === "C-LIFECYCLE-3")?.reason).toContain("Timeout ×1");
    expect(code).toBe(1);
  });

  it("resolves a package name from node_modules in a fresh directory", async () => {
    const project = fs.mkdtempSync(path.join(os.tmpdir(), "contract-cli-"));
    temps.push(project);
    fs.writeFileSync(path.join(project, "package.json"), JSON.stringify({ name: "consumer", private: true }));
    const link = path.join(project, "node_modules", "@contract-fixtures", "minimal-provider");
    fs.mkdirSync(path.dirname(link), { recursive: true });
    fs.symlinkSync(path.join(fixtures, "minimal-package"), link, "dir");
    const { code, stdout } = await runBin(["@contract-fixtures/minimal-provider", "--json", "--only", "MANIFEST", "IDENTITY"], project);
    const report = JSON.parse(stdout) as ContractReport;
    expect(report.results.filter((r) => r.group === "IDENTITY").map((r) => r.status)).toEqual(["pass", "pass", "pass"]);
    expect(code).toBe(0);
  });

  it("exits 2 with a remedy when the package cannot be found", async () => {
    const { code, stderr } = await runBin(["@contract-fixtures/not-installed"], os.tmpdir());
    expect(code).toBe(2);
    expect(stderr).toContain("npm install @contract-fixtures/not-installed");
  });
});
