import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { childEnv, parseJson, runCli, tempDir, writeFiles, writePackageProvider, writeUserProvider } from "../test-support/cli-harness.js";

describe("hermes-memory plugins", { timeout: 60_000 }, () => {
  let root: string;
  let home: string;
  let project: string;
  let cleanup: () => void;

  beforeEach(() => {
    ({ dir: root, cleanup } = tempDir("hermes-cli-plugins-"));
    home = path.join(root, "home");
    project = path.join(root, "project");
    fs.mkdirSync(home);
    fs.mkdirSync(project);
  });
  afterEach(() => cleanup());

  function fixtures(): void {
    writeUserProvider(home, "alpha", { version: "1.2.3" });
    // The same name as a user plugin: the package copy is shadowed (first seen wins).
    writeUserProvider(home, "beta");
    writePackageProvider(project, "beta-memory", "beta", { version: "2.0.0" });
    writePackageProvider(project, "gamma-memory", "gamma", { available: false, reason: "set GAMMA_TOKEN" });
    // A broken manifest: reported as a problem with a remedy, discovery carries on.
    writeFiles(path.join(home, "plugins", "broken"), { "plugin.yaml": "name: Bad Name!\nversion: 1\n", "index.js": "export {};\n" });
  }

  it("lists providers, shadowed entries and problems as JSON", async () => {
    fixtures();
    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  provider: alpha\n");
    const result = await runCli(["--hermes-home", home, "plugins", "list", "--json"], { cwd: project });
    expect(result.code).toBe(0);
    const data = parseJson(result);
    expect(data.activeProvider).toBe("alpha");
    const byName = Object.fromEntries(data.providers.map((p: any) => [p.name, p]));
    expect(Object.keys(byName).sort()).toEqual(["alpha", "beta", "gamma"]);
    expect(byName.alpha).toMatchObject({ source: "user", version: "1.2.3", active: true, available: null });
    expect(byName.beta).toMatchObject({ source: "user", active: false });
    expect(byName.gamma).toMatchObject({ source: "package", packageName: "gamma-memory", version: "1.0.0" });
    expect(data.shadowed).toEqual([
      expect.objectContaining({
        name: "beta",
        source: "package",
        shadowedBy: expect.objectContaining({ source: "user" }),
        message: "package plugin beta is shadowed by user beta",
      }),
    ]);
    expect(data.problems.length).toBeGreaterThanOrEqual(1);
    expect(data.problems[0]).toEqual(expect.objectContaining({ source: "user", remedy: expect.any(String) }));
    expect(data.problems[0].location).toContain("broken");
  });

  it("prints a table with shadowing and problem remedies, and --check reports availability", async () => {
    fixtures();
    const result = await runCli(["--hermes-home", home, "plugins", "list", "--check"], { cwd: project });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/NAME\s+SOURCE\s+VERSION\s+AVAILABLE\s+ACTIVE\s+LOCATION/);
    expect(result.stdout).toMatch(/alpha\s+user\s+1\.2\.3\s+yes/);
    expect(result.stdout).toMatch(/gamma\s+package\s+1\.0\.0\s+no/);
    expect(result.stdout).toContain("gamma: set GAMMA_TOKEN");
    expect(result.stdout).toContain("package plugin beta is shadowed by user beta");
    expect(result.stdout).toContain("Problems:");
    expect(result.stdout).toMatch(/→ .+/);
    expect(result.stdout).toContain("Active provider: built-in only");
    // Piped output is never coloured.
    expect(result.stdout).not.toContain("\u001b[");
  });

  it("reports an active provider that is not installed", async () => {
    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  provider: ghost\n");
    const result = await runCli(["--hermes-home", home, "plugins", "list"], { cwd: project });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("memory.provider is 'ghost' but no such provider is installed");
  });

  it("installs a provider package into $HERMES_HOME with npm and removes it again", async () => {
    const pkgDir = path.join(root, "delta-src");
    writeFiles(pkgDir, {
      "package.json": { name: "delta-memory", version: "0.3.0", type: "module", main: "./index.js", hermesMemoryProvider: "delta" },
      "index.js": "export const placeholder = 'MemoryProvider';\n",
    });
    const env = childEnv({ npm_config_offline: "true", npm_config_cache: path.join(root, "npm-cache") });
    const added = await runCli(["--hermes-home", home, "plugins", "add", pkgDir, "--json"], { cwd: project, env });
    expect(added.stderr).toBe("");
    expect(added.code).toBe(0);
    const data = parseJson(added);
    expect(data.installed).toEqual([expect.objectContaining({ package: "delta-memory", version: "0.3.0", providers: ["delta"] })]);
    const manifest = JSON.parse(fs.readFileSync(path.join(home, "package.json"), "utf8"));
    expect(Object.keys(manifest.dependencies)).toEqual(["delta-memory"]);
    // The project was not touched.
    expect(fs.readdirSync(project)).toEqual([]);

    const listed = parseJson(await runCli(["--hermes-home", home, "plugins", "list", "--json"], { cwd: project }));
    expect(listed.providers).toEqual([expect.objectContaining({ name: "delta", source: "package", packageName: "delta-memory" })]);

    const removed = await runCli(["--hermes-home", home, "plugins", "remove", "delta"], { cwd: project, env });
    expect(removed.code).toBe(0);
    expect(removed.stdout).toContain("Removed delta-memory");
    const after = parseJson(await runCli(["--hermes-home", home, "plugins", "list", "--json"], { cwd: project }));
    expect(after.providers).toEqual([]);
  });

  it("refuses to remove what it did not install, with a remedy", async () => {
    writeUserProvider(home, "alpha");
    const result = await runCli(["--hermes-home", home, "plugins", "remove", "alpha"], { cwd: project });
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toContain("was not installed with `hermes-memory plugins add`");
    expect(result.stderr).toContain(path.join(home, "plugins", "alpha"));
  });

  it.each(["../../..", "/", "..", "../alpha", "a/b/c", "C:\\x", "https://evil.example/p"])(
    "refuses %s: not a provider or package name (no npm, no advice to delete a folder)",
    async (name) => {
      writeUserProvider(home, "alpha");
      const result = await runCli(["--hermes-home", home, "plugins", "remove", name], {
        cwd: project,
        env: childEnv({ PATH: "/nonexistent" }),
      });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain("is not a provider or npm package name");
      expect(result.stderr).not.toContain("deleting");
    },
  );

  it("for an unknown name that is no user plugin, does not suggest deleting a folder", async () => {
    const result = await runCli(["--hermes-home", home, "plugins", "remove", "nothing-here"], { cwd: project });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("was not installed with `hermes-memory plugins add`");
    expect(result.stderr).not.toContain("deleting");
  });
});
