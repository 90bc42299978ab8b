#!/usr/bin/env node
// Runs every vitest project once and ends with a plain "N passed, N failed, N skipped" line,
// which CI recognises (vitest's own summary is not). Extra arguments go to vitest.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

const out = mkdtempSync(path.join(tmpdir(), "hermes-tests-"));
const report = path.join(out, "vitest.json");
const result = spawnSync(
  "pnpm",
  ["exec", "vitest", "run", "--reporter=default", "--reporter=json", `--outputFile.json=${report}`, ...process.argv.slice(2)],
  { stdio: "inherit" },
);
let line = "0 passed, 1 failed, 0 skipped";
if (existsSync(report)) {
  const r = JSON.parse(readFileSync(report, "utf8"));
  const skipped = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
  // A suite that failed to load counts as a failure even if it declared no tests.
  const failedSuites = (r.testResults ?? []).filter((t) => t.status === "failed" && (t.assertionResults ?? []).length === 0).length;
  line = `${r.numPassedTests} passed, ${r.numFailedTests + failedSuites} failed, ${skipped} skipped`;
}
rmSync(out, { recursive: true, force: true });
console.log(`vitest: ${line}`);
process.exit(result.status ?? 1);
