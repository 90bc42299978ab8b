/**
 * The repository's dependency rules as a pure checker (the test feeds it the real tree and
 * synthetic violations):
 * - a provider (`providers/*`) never imports another provider package: shared provider code lives
 *   in core (or a shared toolkit package), never in a sibling provider;
 * - `@hermes/memory-core` imports no other workspace package: everything else depends on core,
 *   so core depending back would make a cycle. Its tests alone may import `@hermes/test-support`,
 *   which imports no workspace package itself (so no cycle can form through it);
 * - no deep import into another workspace package (`@hermes/x/src/...`, `.../dist/...`, or any
 *   subpath its package.json `exports` does not declare): packages meet at their public surface;
 * - no relative import climbs out of its own package directory;
 * - a published package's shipped code never imports a private workspace package (such as the
 *   Pinecone fake): a consumer could not install it; its tests and test support may;
 * - comments state rules instead of pointing at documents outside the repository.
 */
import path from "node:path";

export type RuleId =
  | "provider-imports-provider"
  | "core-imports-workspace"
  | "deep-import"
  | "relative-escape"
  | "published-imports-private"
  | "outside-document";

export interface Violation {
  rule: RuleId;
  /** Repository-relative path, `/`-separated. */
  file: string;
  line: number;
  detail: string;
}

/** A workspace package as the rules see it. */
export interface WorkspacePackage {
  name: string;
  /** Repository-relative directory, `/`-separated (e.g. `providers/sqlite`). */
  dir: string;
  /** Subpaths declared in `exports` (`"."`, `"./vitest"`, patterns with `*`). */
  exportSubpaths: string[];
  /** `"private": true` in package.json: never published. */
  private?: boolean;
}

/** The subpaths a package.json `exports` field declares (`["."]` for a string or condition map). */
export function exportSubpaths(exportsField: unknown): string[] {
  if (exportsField === undefined || exportsField === null) return ["."];
  if (typeof exportsField === "string" || Array.isArray(exportsField)) return ["."];
  const keys = Object.keys(exportsField as Record<string, unknown>);
  return keys.some((k) => k.startsWith(".")) ? keys : ["."];
}

const SPECIFIER_PATTERNS = [
  // import x from "y"; export { x } from "y"; import type { x } from "y" (possibly multi-line)
  /\b(?:import|export)\s+(?:type\s+)?[^'";]*?\bfrom\s*["']([^"']+)["']/g,
  // import "y" (side effect)
  /\bimport\s*["']([^"']+)["']/g,
  // import("y"), require("y"), vi.mock("y"), import.meta.resolve("y")
  /(?:\bimport|\brequire|\bvi\.(?:do)?[mM]ock|\bimport\.meta\.resolve)\s*\(\s*["']([^"']+)["']\s*[,)]/g,
];

/** Every module specifier in `text` with its 1-based line. */
export function importSpecifiers(text: string): Array<{ specifier: string; line: number }> {
  const found = new Map<number, { specifier: string; line: number }>();
  for (const pattern of SPECIFIER_PATTERNS) {
    for (const m of text.matchAll(pattern)) {
      const index = m.index! + m[0].lastIndexOf(m[1]!);
      if (found.has(index)) continue;
      found.set(index, { specifier: m[1]!, line: text.slice(0, index).split("\n").length });
    }
  }
  return [...found.entries()].sort((a, b) => a[0] - b[0]).map(([, v]) => v);
}

/** `@scope/name/sub` → `["@scope/name", "./sub"]`; `name` → `["name", "."]`. */
export function splitBareSpecifier(specifier: string): [string, string] {
  const parts = specifier.split("/");
  const count = specifier.startsWith("@") ? 2 : 1;
  const name = parts.slice(0, count).join("/");
  const rest = parts.slice(count).join("/");
  return [name, rest === "" ? "." : `./${rest}`];
}

function subpathDeclared(subpath: string, declared: string[]): boolean {
  return declared.some((d) => {
    if (!d.includes("*")) return d === subpath;
    const [prefix, suffix] = d.split("*") as [string, string];
    return subpath.startsWith(prefix) && subpath.endsWith(suffix) && subpath.length >= prefix.length + suffix.length;
  });
}

function packageOf(file: string, packages: WorkspacePackage[]): WorkspacePackage | undefined {
  return packages.find((p) => file.startsWith(`${p.dir}/`));
}

const isProvider = (p: WorkspacePackage) => p.dir.startsWith("providers/");
/** Tests, test support and fixtures are not shipped (the package's `files` and tsconfig exclude them). */
const isTestOnly = (file: string) => /\.test\.[cm]?[jt]s(\.tpl)?$|(^|\/)(test-support|__fixtures__)\//.test(file);
const CORE_DIR = "packages/memory-core";
/** Test support every suite may share, core's included: it must therefore import no workspace package. */
const TEST_SUPPORT_DIR = "tooling/test-support";

/** Violations of the import rules in one source file (`file` is repository-relative). */
export function checkImports(file: string, text: string, packages: WorkspacePackage[]): Violation[] {
  const own = packageOf(file, packages);
  if (!own) return [];
  const out: Violation[] = [];
  for (const { specifier, line } of importSpecifiers(text)) {
    if (specifier.startsWith(".")) {
      const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier));
      if (!target.startsWith(`${own.dir}/`) && target !== own.dir) {
        out.push({ rule: "relative-escape", file, line, detail: `"${specifier}" resolves to ${target}, outside ${own.dir}` });
      }
      continue;
    }
    const [name, subpath] = splitBareSpecifier(specifier);
    const target = packages.find((p) => p.name === name);
    if (!target || target === own) continue;
    if (isProvider(own) && isProvider(target)) {
      out.push({
        rule: "provider-imports-provider",
        file,
        line,
        detail: `provider ${own.name} imports provider ${target.name} ("${specifier}")`,
      });
    }
    if (!own.private && target.private && !isTestOnly(file)) {
      out.push({
        rule: "published-imports-private",
        file,
        line,
        detail: `published ${own.name} imports private ${target.name} ("${specifier}") outside its tests`,
      });
    }
    if (own.dir === TEST_SUPPORT_DIR || (own.dir === CORE_DIR && !(target.dir === TEST_SUPPORT_DIR && isTestOnly(file)))) {
      out.push({
        rule: "core-imports-workspace",
        file,
        line,
        detail: `${own.name} imports workspace package ${target.name} ("${specifier}")`,
      });
    }
    if (/(^|\/)(src|dist)(\/|$)/.test(subpath) || !subpathDeclared(subpath, target.exportSubpaths)) {
      out.push({
        rule: "deep-import",
        file,
        line,
        detail: `"${specifier}" reaches into ${target.name} (${subpath}); its exports declare ${target.exportSubpaths.join(", ")}`,
      });
    }
  }
  return out;
}

/** The comments of a TypeScript/JavaScript source, with the line each starts on. */
export function comments(text: string): Array<{ text: string; line: number }> {
  const out: Array<{ text: string; line: number }> = [];
  // Strings and template literals are skipped so "// inside a string" is not a comment.
  const token = /\/\/[^\n]*|\/\*[\s\S]*?\*\/|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|`(?:\\.|[^`\\])*`/g;
  for (const m of text.matchAll(token)) {
    if (m[0].startsWith("//") || m[0].startsWith("/*")) out.push({ text: m[0], line: text.slice(0, m.index).split("\n").length });
  }
  return out;
}

const OUTSIDE_DOCUMENT = /\b(REFERENCE|DESIGN)(\s*§|\.md\b)/;

/** Comments that cite a section of a document kept outside the repository. */
export function checkComments(file: string, text: string): Violation[] {
  return comments(text).flatMap((c) => {
    const m = OUTSIDE_DOCUMENT.exec(c.text);
    if (!m) return [];
    const line = c.line + c.text.slice(0, m.index).split("\n").length - 1;
    return [{ rule: "outside-document" as const, file, line, detail: `comment cites "${m[0]}"; state the rule itself` }];
  });
}
