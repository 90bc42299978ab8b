/**
 * Every publishable package ships only what it needs and resolves cleanly for consumers:
 * publint, "are the types wrong" (ESM-only profile) and the `npm pack --dry-run` file list.
 * Runs against the built `dist` (`pnpm test` builds first).
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { readWorkspaceManifests } from "./workspace-manifests.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const bin = (name: string) => path.join(root, "node_modules/.bin", name);

interface Manifest {
  name: string;
  private?: boolean;
  files?: string[];
  bin?: Record<string, string>;
}

const packages = ["packages", "providers"]
  .flatMap((group) => fs.readdirSync(path.join(root, group)).map((name) => path.join(root, group, name)))
  .filter((dir) => fs.existsSync(path.join(dir, "package.json")))
  .map((dir) => ({ dir, manifest: JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as Manifest }))
  .filter(({ manifest }) => !manifest.private);

function packList(dir: string): string[] {
  const r = spawnSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: dir, encoding: "utf8" });
  expect(r.status, r.stderr).toBe(0);
  const [info] = JSON.parse(r.stdout) as Array<{ files: Array<{ path: string }> }>;
  return info!.files.map((f) => f.path);
}

// A URL that points nowhere real must never be published: reserved example/test domains,
// loopback, and template-style placeholders.
const PLACEHOLDER_URL =
  /(^|[./@])(example\.(invalid|com|org|net)|[^/]*\.(invalid|test|example|localhost)|localhost)([/:]|$)|your[-_]?(org|name|user|repo)|\bTODO\b|<[^>]*>|\{\{[^}]*\}\}/i;

/** Every URL-valued field of a manifest that npm shows or links to. */
export function manifestUrls(manifest: Record<string, unknown>): Array<[string, string]> {
  const urls: Array<[string, string]> = [];
  const add = (field: string, value: unknown) => {
    if (typeof value === "string") urls.push([field, value]);
    else if (typeof value === "object" && value !== null && typeof (value as { url?: unknown }).url === "string")
      urls.push([`${field}.url`, (value as { url: string }).url]);
  };
  add("repository", manifest.repository);
  add("homepage", manifest.homepage);
  add("bugs", manifest.bugs);
  if (Array.isArray(manifest.funding)) manifest.funding.forEach((f, i) => add(`funding[${i}]`, f));
  else add("funding", manifest.funding);
  return urls;
}

/** The placeholder URLs of a manifest, as `field: url`. */
export function placeholderUrls(manifest: Record<string, unknown>): string[] {
  return manifestUrls(manifest)
    .filter(([, url]) => PLACEHOLDER_URL.test(url))
    .map(([field, url]) => `${field}: ${url}`);
}

const allManifests = readWorkspaceManifests(root)
  .map(({ file }) => file)
  .concat(path.join(root, "package.json"), path.join(root, "packages/create-memory-provider/template/package.json.tpl"))
  .filter((file) => fs.existsSync(file));

describe("no placeholder URLs in any package.json (or the scaffolder's template)", () => {
  it("recognises placeholders and accepts real URLs", () => {
    expect(placeholderUrls({ repository: { type: "git", url: "git+https://example.invalid/hermes-memory.git" } })).toHaveLength(1);
    expect(placeholderUrls({ homepage: "https://github.com/<owner>/<repo>" })).toHaveLength(1);
    expect(placeholderUrls({ bugs: { url: "https://your-org.github.io/x" } })).toHaveLength(1);
    expect(placeholderUrls({ repository: "git+https://{{repositoryUrl}}" })).toHaveLength(1);
    expect(
      placeholderUrls({ repository: { url: "git+https://github.com/acme/hermes-memory.git" }, homepage: "https://acme.dev/memory" }),
    ).toEqual([]);
  });

  it.each(allManifests.map((file) => [path.relative(root, file), file]))("%s", (_name, file) => {
    // The template has {{...}} placeholders in other fields; only its URL fields matter here.
    const text = fs.readFileSync(file, "utf8").replace(/"\{\{(\w+)\}\}"/g, '"$1"');
    expect(placeholderUrls(JSON.parse(text) as Record<string, unknown>)).toEqual([]);
  });
});

describe.each(packages)("$manifest.name", ({ dir, manifest }) => {
  it("packs dist, README and nothing from tests, fixtures or test support", () => {
    const files = packList(dir);
    expect(files).toContain("README.md");
    expect(files).toContain("package.json");
    expect(files).toContain("dist/index.js");
    expect(files).toContain("dist/index.d.ts");
    for (const binPath of Object.values(manifest.bin ?? {})) expect(files).toContain(path.normalize(binPath));
    // The scaffolder's template/ is shipped on purpose (it holds the generated package's own test).
    const offending = files.filter((f) => !f.startsWith("template/") && /\.test\.|__fixtures__|test-support|\.tsbuildinfo$|^src\//.test(f));
    expect(offending).toEqual([]);
    // npm pack and publint spawn processes; on a loaded machine they take seconds, not milliseconds.
  }, 60_000);

  it("passes publint", () => {
    const r = spawnSync(bin("publint"), ["--strict"], { cwd: dir, encoding: "utf8" });
    expect(r.status, r.stdout + r.stderr).toBe(0);
  }, 60_000);

  it("has correct types for ESM consumers (attw)", () => {
    const r = spawnSync(bin("attw"), ["--pack", ".", "--profile", "esm-only", "--format", "ascii"], { cwd: dir, encoding: "utf8" });
    expect(r.status, r.stdout + r.stderr).toBe(0);
  }, 60_000);
});
