/**
 * `memory setup` of a provider that cannot run yet (`isAvailable()` false: a native addon never
 * built, a key the provider checks itself) saves the configuration — the user may fix the install
 * afterwards — and then fails as `memory status` does for a provider that is not installed: the
 * provider's own reason and fix on stderr (in the one JSON document under `--json`), exit 1.
 */
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { childEnv, parseJson, runCli, tempDir, writeUserProvider } from "../test-support/cli-harness.js";
import { installSqliteWithoutAddon } from "../test-support/installed-cli.js";

let root: string;
let cleanup: () => void;
let home: string;
beforeEach(() => {
  ({ dir: root, cleanup } = tempDir("hermes-cli-setup-unavailable-"));
  home = path.join(root, "home");
});
afterEach(() => cleanup());

const config = () => fs.readFileSync(path.join(home, "config.yaml"), "utf8");
const noStack = (text: string) => expect(text).not.toMatch(/\n\s+at .+:\d+:\d+\)?\n/);
/** The fix better-sqlite3's missing addon names, as the kit words it. */
const NATIVE_FIX = [
  "@hermes/memory-sqlite needs better-sqlite3, whose native addon is not built",
  "npm install-scripts approve better-sqlite3",
  "npm rebuild better-sqlite3",
  "pnpm approve-builds",
];

describe("memory setup of a provider whose native addon is not built", { timeout: 60_000 }, () => {
  it("saves the configuration, then says on stderr that it cannot run yet and how to fix it (exit 1)", async () => {
    const project = path.join(root, "app");
    installSqliteWithoutAddon(project);
    const result = await runCli(["--hermes-home", home, "memory", "setup", "sqlite", "--yes"], { cwd: project });
    expect(result.code).toBe(1);
    // What was saved is reported as for any setup.
    expect(result.stdout).toContain("Memory provider: sqlite");
    expect(result.stdout).toContain(`Provider config saved to ${path.join(home, "config.yaml")} under memory.sqlite`);
    expect(config()).toMatch(/provider: sqlite/);
    expect(config()).toMatch(/prefetch_limit: 5/);
    const lines = result.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^hermes-memory: Memory provider 'sqlite' was set up .*but cannot run yet: /);
    for (const part of NATIVE_FIX) expect(lines[0]).toContain(part);
    expect(lines[0]).toContain("hermes-memory memory status");
    noStack(`${result.stdout}\n${result.stderr}`);

    // `memory status` agrees.
    const status = await runCli(["--hermes-home", home, "memory", "status"], { cwd: project });
    expect(status.stdout).toContain("not available");
  });

  it("--json: one document, what was saved with available false and the error (code PROVIDER_UNAVAILABLE), nothing on stderr", async () => {
    const project = path.join(root, "app");
    installSqliteWithoutAddon(project);
    const result = await runCli(["--hermes-home", home, "--json", "memory", "setup", "sqlite", "--yes"], { cwd: project });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe("");
    const data = parseJson(result);
    expect(data).toMatchObject({
      provider: "sqlite",
      configPath: path.join(home, "config.yaml"),
      available: false,
      error: { code: "PROVIDER_UNAVAILABLE" },
    });
    for (const part of NATIVE_FIX) expect(data.error.message).toContain(part);
    expect(config()).toMatch(/provider: sqlite/);
  });
});

describe("memory setup of a provider that checks its own key", { timeout: 60_000 }, () => {
  // The key is no setup field (so setup cannot ask for it): the provider reads it with getEnv().
  const body = `isAvailable() { return Boolean(getEnv("WEATHER_TOKEN")); }
  unavailableReason() { return this.isAvailable() ? "" : "WEATHER_TOKEN is not set: add it to $HERMES_HOME/.env or export it"; }`;

  beforeEach(() => {
    writeUserProvider(home, "weather", { schema: [{ key: "city", description: "City", default: "Oslo" }], body });
    const index = path.join(home, "plugins", "weather", "index.js");
    fs.writeFileSync(index, `import { getEnv } from "@hermes/memory-core";\n${fs.readFileSync(index, "utf8")}`);
  });

  it("without it: saved, exit 1 with the provider's reason; with it: exit 0 and nothing on stderr", async () => {
    const without = await runCli(["--hermes-home", home, "memory", "setup", "weather", "--yes"], {
      cwd: root,
      env: childEnv({ WEATHER_TOKEN: undefined }),
    });
    expect(without.code).toBe(1);
    expect(without.stderr).toMatch(
      /^hermes-memory: Memory provider 'weather' was set up .*but cannot run yet: WEATHER_TOKEN is not set: add it to \$HERMES_HOME\/\.env or export it\./,
    );
    expect(config()).toMatch(/provider: weather/);
    expect(config()).toMatch(/city: Oslo/);

    const withKey = await runCli(["--hermes-home", home, "--json", "memory", "setup", "weather", "--yes"], {
      cwd: root,
      env: childEnv({ WEATHER_TOKEN: "t-123" }),
    });
    expect(withKey.stderr).toBe("");
    expect(withKey.code).toBe(0);
    expect(parseJson(withKey)).toMatchObject({ provider: "weather", available: true });
    expect(parseJson(withKey).error).toBeUndefined();
  });
});
