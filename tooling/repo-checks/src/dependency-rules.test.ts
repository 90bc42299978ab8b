/**
 * The dependency rules (see `dependency-rules.ts`) hold for every workspace package's sources, and
 * each rule is shown to fire on a synthetic violation so a broken checker cannot pass silently.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  checkComments,
  checkImports,
  comments,
  exportSubpaths,
  importSpecifiers,
  splitBareSpecifier,
  type Violation,
  type WorkspacePackage,
} from "./dependency-rules.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));

function workspacePackages(): WorkspacePackage[] {
  return ["packages", "providers", "tooling"]
    .flatMap((group) => fs.readdirSync(path.join(root, group)).map((name) => `${group}/${name}`))
    .filter((dir) => fs.existsSync(path.join(root, dir, "package.json")))
    .map((dir) => {
      const manifest = JSON.parse(fs.readFileSync(path.join(root, dir, "package.json"), "utf8")) as {
        name: string;
        exports?: unknown;
        private?: boolean;
      };
      return { name: manifest.name, dir, exportSubpaths: exportSubpaths(manifest.exports), private: manifest.private === true };
    });
}

// Sources, and the scaffolder's templates of sources (`index.ts.tpl`).
const SOURCE = /\.(ts|mts|cts|js|mjs|cjs)(\.tpl)?$/;

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const entry of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      if (entry.name === "node_modules" || entry.name === "dist") continue;
      const child = `${rel}/${entry.name}`;
      if (entry.isDirectory()) walk(child);
      else if (SOURCE.test(entry.name)) out.push(child);
    }
  };
  // src/ of every package, plus the scaffolder's template (it becomes a provider's src).
  for (const sub of ["src", "template"]) if (fs.existsSync(path.join(root, dir, sub))) walk(`${dir}/${sub}`);
  return out;
}

const format = (vs: Violation[]) => vs.map((v) => `${v.file}:${v.line} [${v.rule}] ${v.detail}`).join("\n");

const FIXTURE_PACKAGES: WorkspacePackage[] = [
  { name: "@hermes/memory-core", dir: "packages/memory-core", exportSubpaths: ["."] },
  { name: "@hermes/memory-contract", dir: "packages/memory-contract", exportSubpaths: [".", "./vitest", "./package.json"] },
  { name: "@hermes/memory-sqlite", dir: "providers/sqlite", exportSubpaths: ["."] },
  { name: "@hermes/memory-vector", dir: "providers/vector", exportSubpaths: ["."] },
  { name: "@hermes/bench", dir: "tooling/bench", exportSubpaths: ["."], private: true },
  { name: "@hermes/pinecone-fake", dir: "tooling/pinecone-fake", exportSubpaths: ["."], private: true },
  { name: "@hermes/test-support", dir: "tooling/test-support", exportSubpaths: ["."], private: true },
  { name: "@hermes/patterns", dir: "packages/patterns", exportSubpaths: [".", "./features/*.js"] },
];

const rulesOf = (file: string, text: string) => checkImports(file, text, FIXTURE_PACKAGES).map((v) => v.rule);

describe("dependency rules on the real repository", () => {
  const packages = workspacePackages();
  const files = packages.flatMap((p) => sourceFiles(p.dir));

  it("scans every workspace package", () => {
    expect(packages.map((p) => p.dir)).toEqual(
      expect.arrayContaining(["packages/memory-core", "providers/sqlite", "providers/vector", "tooling/bench"]),
    );
    expect(files.length).toBeGreaterThan(200);
    expect(files).toContain("packages/create-memory-provider/template/src/index.ts.tpl");
  });

  it("has no provider importing a provider, no core importing the workspace, no deep imports, no relative escapes, no shipped code importing a private package", () => {
    // This file's synthetic violations (string fixtures below) are the point, not a breach.
    const violations = files
      .filter((f) => f !== "tooling/repo-checks/src/dependency-rules.test.ts")
      .flatMap((f) => checkImports(f, fs.readFileSync(path.join(root, f), "utf8"), packages));
    expect(format(violations)).toBe("");
  });

  it("ARCHITECTURE.md names every workspace package, and the README links it", () => {
    const architecture = fs.readFileSync(path.join(root, "ARCHITECTURE.md"), "utf8");
    const missing = packages.map((p) => p.dir).filter((dir) => dir !== "tooling/tsconfig" && !architecture.includes(dir));
    expect(missing).toEqual([]);
    expect(fs.readFileSync(path.join(root, "README.md"), "utf8")).toContain("](ARCHITECTURE.md)");
  });

  it("has no comment citing a document outside the repository (tests included)", () => {
    const violations = files.flatMap((f) => checkComments(f, fs.readFileSync(path.join(root, f), "utf8")));
    expect(format(violations)).toBe("");
  });
});

describe("the checker", () => {
  it("finds static, type-only, re-export, side-effect, dynamic and mocked specifiers", () => {
    const text = [
      'import fs from "node:fs";',
      'import type { A } from "./a.js";',
      "import {",
      "  b,",
      "  c,",
      '} from "../b.js";',
      'export { d } from "@hermes/memory-core";',
      'export * from "./e.js";',
      'import "./side-effect.js";',
      'const m = await import("@hermes/memory-sqlite");',
      'vi.mock("../mocked.js", () => ({}));',
      'const r = require("./cjs.cjs");',
      'const p = path.resolve("..", "not-a-module");',
    ].join("\n");
    expect(importSpecifiers(text)).toEqual([
      { specifier: "node:fs", line: 1 },
      { specifier: "./a.js", line: 2 },
      { specifier: "../b.js", line: 6 },
      { specifier: "@hermes/memory-core", line: 7 },
      { specifier: "./e.js", line: 8 },
      { specifier: "./side-effect.js", line: 9 },
      { specifier: "@hermes/memory-sqlite", line: 10 },
      { specifier: "../mocked.js", line: 11 },
      { specifier: "./cjs.cjs", line: 12 },
    ]);
    expect(splitBareSpecifier("@hermes/memory-contract/vitest")).toEqual(["@hermes/memory-contract", "./vitest"]);
    expect(splitBareSpecifier("yaml")).toEqual(["yaml", "."]);
    expect(exportSubpaths({ ".": "./dist/index.js", "./vitest": "./dist/vitest.js" })).toEqual([".", "./vitest"]);
    expect(exportSubpaths({ import: "./dist/index.js" })).toEqual(["."]);
    expect(exportSubpaths(undefined)).toEqual(["."]);
  });

  it("flags a provider importing another provider, statically or dynamically", () => {
    expect(rulesOf("providers/vector/src/fts.ts", 'import { SqliteMemoryProvider } from "@hermes/memory-sqlite";')).toEqual([
      "provider-imports-provider",
    ]);
    expect(rulesOf("providers/sqlite/src/x.ts", 'const v = await import("@hermes/memory-vector");')).toEqual(["provider-imports-provider"]);
    // Core and the provider's own package are fine; tooling may use any provider.
    expect(
      rulesOf("providers/sqlite/src/x.ts", 'import { buildFtsQuery } from "@hermes/memory-core";\nimport "@hermes/memory-sqlite";'),
    ).toEqual([]);
    expect(rulesOf("tooling/bench/src/x.ts", 'import "@hermes/memory-sqlite";\nimport "@hermes/memory-vector";')).toEqual([]);
  });

  it("flags core importing any other workspace package", () => {
    expect(rulesOf("packages/memory-core/src/x.ts", 'import { run } from "@hermes/memory-contract";')).toEqual(["core-imports-workspace"]);
    expect(
      rulesOf("packages/memory-core/src/x.test.ts", 'const { SqliteMemoryProvider } = await import("@hermes/memory-sqlite");'),
    ).toEqual(["core-imports-workspace"]);
    // Test support is shared with core's tests only because it imports no workspace package itself.
    expect(rulesOf("packages/memory-core/src/x.test.ts", 'import { seededRandom } from "@hermes/test-support";')).toEqual([]);
    expect(rulesOf("packages/memory-core/src/x.ts", 'import { seededRandom } from "@hermes/test-support";')).toEqual([
      "published-imports-private",
      "core-imports-workspace",
    ]);
    expect(rulesOf("tooling/test-support/src/x.ts", 'import { fenceRecall } from "@hermes/memory-core";')).toEqual([
      "core-imports-workspace",
    ]);
    expect(rulesOf("packages/memory-core/src/x.ts", 'import { parse } from "yaml";\nimport "@hermes/memory-core";')).toEqual([]);
  });

  it("lets a published package use a private tooling package only from its tests and test support", () => {
    const fake = 'import { PineconeFake } from "@hermes/pinecone-fake";';
    expect(rulesOf("providers/vector/src/contract.test.ts", fake)).toEqual([]);
    expect(rulesOf("providers/vector/src/test-support/harness.ts", fake)).toEqual([]);
    expect(rulesOf("tooling/chaos/src/pinecone-outage.chaos.test.ts", fake)).toEqual([]);
    expect(rulesOf("tooling/bench/src/x.ts", fake)).toEqual([]);
    expect(rulesOf("providers/vector/src/pinecone-vector-store.ts", fake)).toEqual(["published-imports-private"]);
    expect(rulesOf("packages/memory-contract/src/x.ts", 'const b = await import("@hermes/bench");')).toEqual(["published-imports-private"]);
    expect(rulesOf("providers/vector/src/x.test.ts", 'import "@hermes/pinecone-fake/src/filter.js";')).toEqual(["deep-import"]);
  });

  it("flags deep imports into another package's src/ or dist/ and undeclared subpaths, not declared ones", () => {
    expect(rulesOf("tooling/bench/src/x.ts", 'import { buildFtsQuery } from "@hermes/memory-core/src/fts-query.js";')).toEqual([
      "deep-import",
    ]);
    expect(rulesOf("tooling/bench/src/x.ts", 'import { VectorStore } from "@hermes/memory-vector/dist/store.js";')).toEqual([
      "deep-import",
    ]);
    expect(rulesOf("tooling/bench/src/x.ts", 'import x from "@hermes/memory-contract/package-setup";')).toEqual(["deep-import"]);
    expect(
      rulesOf("tooling/bench/src/x.ts", 'import "@hermes/memory-contract/vitest";\nimport "@hermes/memory-contract/package.json";'),
    ).toEqual([]);
    expect(rulesOf("tooling/bench/src/x.ts", 'import "@hermes/patterns/features/a.js";')).toEqual([]);
    expect(rulesOf("tooling/bench/src/x.ts", 'import "@hermes/patterns/features/a.ts";')).toEqual(["deep-import"]);
  });

  it("flags relative paths that leave the package, including into another package's dist/", () => {
    expect(rulesOf("providers/sqlite/src/store.ts", 'import { x } from "../../vector/src/store.js";')).toEqual(["relative-escape"]);
    expect(rulesOf("tooling/bench/src/targets.ts", 'const m = await import("../../../providers/vector/dist/index.js");')).toEqual([
      "relative-escape",
    ]);
    expect(rulesOf("packages/memory-core/src/a/b.ts", 'import "../../../memory-cli/src/x.js";')).toEqual(["relative-escape"]);
    // Staying inside, however deep, is fine; so is reaching the package root.
    expect(rulesOf("packages/memory-core/src/a/b.ts", 'import "../../package.json";\nimport "./c.js";\nimport "../fs.js";')).toEqual([]);
  });

  it("reads comments only, and flags citations of outside documents", () => {
    const text = [
      "/**",
      " * Spill oversized results (REFERENCE §7).",
      " */",
      'const s = "DESIGN §2 in a string is data, not a comment";',
      "// see DESIGN.md for why",
      "// REFERENCE.md",
      "// a rule stated plainly: entries are separated by a line holding only §",
    ].join("\n");
    expect(comments(text).map((c) => c.line)).toEqual([1, 5, 6, 7]);
    expect(checkComments("packages/x/src/a.ts", text).map((v) => [v.line, v.detail])).toEqual([
      [2, 'comment cites "REFERENCE §"; state the rule itself'],
      [5, 'comment cites "DESIGN.md"; state the rule itself'],
      [6, 'comment cites "REFERENCE.md"; state the rule itself'],
    ]);
  });
});
