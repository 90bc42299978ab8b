/**
 * The README is the package's reference: it names every export of both entry points, and its first
 * example runs against the built package and prints what the README says it prints.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const packageDir = fileURLToPath(new URL("..", import.meta.url));
const readme = fs.readFileSync(path.join(packageDir, "README.md"), "utf8");

/** Every name `src/<entry>.ts` exports, types included. */
function exportedNames(entry: "index" | "sqlite"): string[] {
  const index = fs.readFileSync(path.join(packageDir, `src/${entry}.ts`), "utf8");
  return [...index.matchAll(/export\s*\{([^}]*)\}/g)].flatMap((m) =>
    m[1]!
      .split(",")
      .map((part) => part.trim().replace(/^type\s+/, ""))
      .filter((name) => name !== ""),
  );
}

describe("README.md", () => {
  it("names every export of both entries in code, each in its entry's part", () => {
    const [authoringPart, sqlitePart] = readme.split("## API: the SQLite search engine");
    for (const [entry, part] of [
      ["index", authoringPart!],
      ["sqlite", sqlitePart!],
    ] as const) {
      const names = exportedNames(entry);
      expect(names.length).toBeGreaterThan(30);
      const code = [...part.matchAll(/```[\s\S]*?```|`[^`]+`/g)].map((m) => m[0]).join("\n");
      const missing = names.filter((name) => !new RegExp(`\\b${name}\\b`).test(code));
      expect(missing).toEqual([]);
    }
  });

  it("says which parts need better-sqlite3, an optional peer", () => {
    expect(readme).toMatch(/optional\s+peer/i);
    expect(readme).toContain("### SQLite store (needs better-sqlite3)");
    expect(readme).toContain("### Layered ranker (needs better-sqlite3)");
  });

  it("has a first example that runs and prints the output shown", () => {
    const [, example] = /## Example[\s\S]*?```js\n([\s\S]*?)```/.exec(readme) ?? [];
    const [, shown] = /\nOutput:\n\n```text\n([\s\S]*?)```/.exec(readme) ?? [];
    expect(example).toBeDefined();
    expect(shown).toBeDefined();
    // Inside the package directory, `@hermes/memory-provider-kit` resolves to the package itself.
    const file = path.join(packageDir, `.readme-example-${process.pid}.mjs`);
    fs.writeFileSync(file, example!);
    try {
      const r = spawnSync(process.execPath, [file], { cwd: packageDir, encoding: "utf8" });
      expect(r.stderr).toBe("");
      expect(r.stdout).toBe(shown);
    } finally {
      fs.rmSync(file, { force: true });
    }
  }, 30_000);
});
