import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { ESLint } from "eslint";
import * as prettier from "prettier";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const tracked = execFileSync("git", ["ls-files", "-z"], { cwd: root, encoding: "utf8" }).split("\0").filter(Boolean);

describe("code shape", () => {
  it("every file prettier covers is formatted (pnpm format fixes it)", async () => {
    const unformatted: string[] = [];
    for (const file of tracked) {
      const abs = `${root}${file}`;
      const info = await prettier.getFileInfo(abs, { ignorePath: `${root}.prettierignore` });
      if (info.ignored || info.inferredParser === null) continue;
      const options = await prettier.resolveConfig(abs);
      const source = readFileSync(abs, "utf8");
      if (!(await prettier.check(source, { ...options, filepath: abs }))) unformatted.push(file);
    }
    expect(unformatted).toEqual([]);
  }, 120_000);

  it("no shipped source file is over 800 lines and no function over 120 (ESLint max-lines rules)", async () => {
    const shipped = tracked.filter((f) => /^(packages|providers)\/[^/]+\/src\/.*\.ts$/.test(f));
    const eslint = new ESLint({ cwd: root });
    const results = await eslint.lintFiles(shipped);
    const oversized = results.flatMap((r) =>
      r.messages
        .filter((m) => m.ruleId === "max-lines" || m.ruleId === "max-lines-per-function")
        .map((m) => `${r.filePath.slice(root.length)}:${m.line} ${m.message}`),
    );
    expect(oversized).toEqual([]);
    // The rules are live: a long file in a shipped path is reported.
    const [probe] = await eslint.lintText(`${"export const x = 1;\n".repeat(801)}`, {
      filePath: `${root}packages/memory-core/src/probe.ts`,
    });
    expect(probe!.messages.some((m) => m.ruleId === "max-lines")).toBe(true);
  }, 180_000);
});
