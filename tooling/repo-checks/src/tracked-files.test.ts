/**
 * The repository tracks no symbolic link: a link committed from one machine (a cache pointed at
 * another checkout) points nowhere, or at itself, in a fresh clone, and breaks whatever follows it.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../../", import.meta.url));

/** Paths git tracks with the symbolic-link mode (120000), from `git ls-files --stage` output. */
export function trackedLinks(stage: string): string[] {
  return stage
    .split("\n")
    .filter((line) => line.startsWith("120000 "))
    .map((line) => line.slice(line.indexOf("\t") + 1));
}

describe("tracked files", () => {
  it("recognises a tracked symbolic link in git's stage listing", () => {
    const stage = "100644 aaaa 0\tREADME.md\n120000 bbbb 0\tbench-results/.cache\n";
    expect(trackedLinks(stage)).toEqual(["bench-results/.cache"]);
  });

  it("the repository tracks no symbolic link", () => {
    const run = spawnSync("git", ["ls-files", "--stage"], { cwd: root, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
    expect(run.status, run.stderr).toBe(0);
    expect(trackedLinks(run.stdout)).toEqual([]);
  });
});
