import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const fixtureDir = path.join(path.dirname(fileURLToPath(import.meta.url)), "__fixtures__", "vitest-adapter");
const vitestBin = path.join(path.dirname(createRequire(import.meta.url).resolve("vitest/package.json")), "vitest.mjs");
const out = fs.mkdtempSync(path.join(os.tmpdir(), "contract-adapter-"));
afterAll(() => fs.rmSync(out, { recursive: true, force: true }));

interface JsonReport {
  testResults: Array<{ assertionResults: Array<{ title: string; status: string; failureMessages: string[] }> }>;
}

describe("describeMemoryProviderContract in a real vitest run", () => {
  it("turns a failing clause into a failing test carrying the reason and the hint", async () => {
    const report = path.join(out, "report.json");
    await new Promise<void>((resolve) => {
      execFile(
        process.execPath,
        [vitestBin, "run", "--config", path.join(fixtureDir, "vitest.config.mjs"), "--reporter=json", `--outputFile=${report}`],
        { cwd: fixtureDir, timeout: 90_000, env: { ...process.env, CONTRACT_ADAPTER_CACHE_DIR: path.join(out, "cache") } },
        () => resolve(),
      );
    });
    const parsed = JSON.parse(fs.readFileSync(report, "utf8")) as JsonReport;
    const tests = parsed.testResults.flatMap((f) => f.assertionResults);
    const failed = tests.filter((t) => t.status === "failed");
    expect(failed.map((t) => t.title)).toEqual(["C-HOOKS-1 syncTurn returns within the limit even when called 200 times in a burst"]);
    expect(failed[0]?.failureMessages.join("\n")).toMatch(
      /C-HOOKS-1 failed: \d+ of \d+ syncTurn calls took longer than 10 ms[\s\S]*Hint: Queue the write/,
    );
    const skipped = tests.filter((t) => t.status !== "passed" && t.status !== "failed").map((t) => t.title);
    expect(skipped).toContain(
      "C-LIFECYCLE-3 after shutdown no handles keep the process alive (skipped: skipped by setup.skip: not needed for this adapter check)",
    );
    expect(skipped.filter((t) => t.startsWith("C-MANIFEST-"))).toHaveLength(4);
    expect(tests.filter((t) => t.status === "passed").length).toBeGreaterThan(25);
    // A nested vitest run: seconds on a loaded machine, bounded by execFile's own timeout.
  }, 100_000);
});
