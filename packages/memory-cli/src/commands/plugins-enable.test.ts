import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { childEnv, parseJson, runCli, tempDir, writeFiles, writeUserProvider } from "../test-support/cli-harness.js";

describe("hermes-memory plugins enable / disable", { timeout: 60_000 }, () => {
  let root: string;
  let home: string;
  let bundled: string;
  let cleanup: () => void;
  const yamlPath = () => path.join(home, "config.yaml");

  beforeEach(() => {
    ({ dir: root, cleanup } = tempDir("hermes-cli-enable-"));
    home = path.join(root, "home");
    bundled = path.join(root, "bundled");
    fs.mkdirSync(home);
  });
  afterEach(() => cleanup());

  const run = (args: string[], env = childEnv()) => runCli(["--hermes-home", home, ...args], { cwd: root, env });

  it("disable adds the provider to plugins.disabled (comments and other keys kept), idempotent; enable removes it", async () => {
    writeUserProvider(home, "notes");
    fs.writeFileSync(
      yamlPath(),
      "# my settings\nmemory:\n  provider: notes # chosen\n  memory_char_limit: 0x10\nplugins:\n  disabled: [other]\n",
    );
    const first = parseJson(await run(["--json", "plugins", "disable", "notes"]));
    expect(first).toMatchObject({ name: "notes", source: "user", disabled: true, changed: true, pluginsDisabled: ["other", "notes"] });
    const text = fs.readFileSync(yamlPath(), "utf8");
    expect(text).toContain("# my settings");
    expect(text).toContain("provider: notes # chosen");
    expect(text).toContain("memory_char_limit: 0x10");

    const again = await run(["--json", "plugins", "disable", "notes"]);
    expect(again.code).toBe(0);
    expect(parseJson(again)).toMatchObject({ changed: false, pluginsDisabled: ["other", "notes"] });
    expect(fs.readFileSync(yamlPath(), "utf8")).toBe(text);

    const listed = parseJson(await run(["--json", "plugins", "list"]));
    expect(listed.providers.find((p: { name: string }) => p.name === "notes").disabled).toBe(true);

    const enabled = await run(["plugins", "enable", "notes"]);
    expect(enabled.code).toBe(0);
    expect(enabled.stdout).toContain("Memory provider 'notes' is now enabled");
    expect(fs.readFileSync(yamlPath(), "utf8")).toMatch(/disabled: \[\s*other\s*\]/);
    expect(parseJson(await run(["--json", "plugins", "enable", "notes"]))).toMatchObject({ changed: false, disabled: false });
  });

  it("enable removes every name the provider is listed under (folder name too)", async () => {
    writeFiles(path.join(home, "plugins", "notes-folder"), {
      "plugin.yaml": "name: notes\n",
      "index.js": fs.readFileSync(path.join(writeUserProvider(home, "tmp"), "index.js"), "utf8").replaceAll('"tmp"', '"notes"'),
    });
    fs.rmSync(path.join(home, "plugins", "tmp"), { recursive: true });
    fs.writeFileSync(yamlPath(), "plugins:\n  disabled:\n    - notes-folder\n    - notes\n");
    const result = parseJson(await run(["--json", "plugins", "enable", "notes"]));
    expect(result).toMatchObject({ changed: true, pluginsDisabled: [] });
  });

  it("an unknown name is a typed error with the closest name", async () => {
    writeUserProvider(home, "notes");
    const result = await run(["--json", "plugins", "disable", "note"]);
    expect(result.code).not.toBe(0);
    const error = parseJson(result).error;
    expect(error.code).toBe("PROVIDER_NOT_FOUND");
    expect(error.message).toContain("Did you mean 'notes'?");
    expect(fs.existsSync(yamlPath())).toBe(false);
  });

  it("a bundled provider ignores plugins.disabled, and the CLI says so instead of writing it", async () => {
    writeUserProvider(bundled, "shipped");
    fs.renameSync(path.join(bundled, "plugins", "shipped"), path.join(bundled, "shipped"));
    const env = childEnv({ HERMES_MEMORY_BUNDLED_DIR: bundled });
    const result = await run(["--json", "plugins", "disable", "shipped"], env);
    expect(result.code).toBe(0);
    const report = parseJson(result);
    expect(report).toMatchObject({ source: "bundled", disabled: false, changed: false });
    expect(report.note).toContain("bundled providers ignore plugins.disabled");
    expect(fs.existsSync(yamlPath())).toBe(false);
  });

  it("refuses to edit a plugins.disabled that is not a list", async () => {
    writeUserProvider(home, "notes");
    fs.writeFileSync(yamlPath(), "plugins:\n  disabled: notes\n");
    const result = await run(["--json", "plugins", "disable", "notes"]);
    expect(result.code).not.toBe(0);
    expect(parseJson(result).error).toMatchObject({ code: "INVALID_CONFIG", message: expect.stringContaining("not a list") });
    expect(fs.readFileSync(yamlPath(), "utf8")).toBe("plugins:\n  disabled: notes\n");
  });
});
