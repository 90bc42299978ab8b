import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const readme = readFileSync(`${root}README.md`, "utf8");
const ciRun = readFileSync(`${root}.ci/run`, "utf8");

function quickStartCommands(): string[] {
  const section = readme.split("## Quick start")[1]?.split("\n## ")[0] ?? "";
  return [...section.matchAll(/```bash\n([^\n]+)\n```/g)].map((m) => m[1]!.trim());
}

describe("README quick start", () => {
  it("opens with exactly two commands: the demo, then the tests", () => {
    const commands = quickStartCommands();
    expect(commands).toHaveLength(2);
    expect(commands[0]).toMatch(/pnpm demo$/);
    expect(commands[1]).toMatch(/pnpm test$/);
  });

  it(".ci/run runs the README test command verbatim", () => {
    const testCommand = quickStartCommands()[1]!;
    // The command may have its output captured (`2>&1 | tee …`) but must otherwise be verbatim.
    const lines = ciRun.split("\n").map((l) => l.trim());
    expect(lines.some((l) => l === testCommand || l.startsWith(`${testCommand} 2>&1 | tee `))).toBe(true);
  });

  it("pins the pnpm version the commands install", () => {
    const pkg = JSON.parse(readFileSync(`${root}package.json`, "utf8"));
    const version = String(pkg.packageManager).replace("pnpm@", "");
    for (const command of quickStartCommands()) expect(command).toContain(`pnpm@${version}`);
  });
});
