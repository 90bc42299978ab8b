import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { childEnv, parseJson, runCli, tempDir, writeUserProvider } from "../test-support/cli-harness.js";

const SECRET = "tok_9f8e7d6c5b4a3210QRST";

describe("hermes-memory memory status", { timeout: 60_000 }, () => {
  let root: string;
  let home: string;
  let cleanup: () => void;

  beforeEach(() => {
    ({ dir: root, cleanup } = tempDir("hermes-cli-status-"));
    home = path.join(root, "home");
  });
  afterEach(() => cleanup());

  it("shows built-in only when no provider is configured", async () => {
    const result = await runCli(["--hermes-home", home, "memory", "status"], { cwd: root });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("Provider: (none — built-in only)");
    expect(result.stdout).toContain(path.join(home, "memories", "MEMORY.md"));
    const data = parseJson(await runCli(["--hermes-home", home, "memory", "status", "--json"], { cwd: root }));
    expect(data.provider).toBeNull();
    expect(data.builtin.memory).toMatchObject({ limit: 2200, current: 0 });
    expect(data.builtin.user).toMatchObject({ limit: 1375 });
  });

  it("warns about a config.yaml setting of the wrong type that leaves memory on its default", async () => {
    fs.mkdirSync(home, { recursive: true });
    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  provider: [sqlite]\n");
    const result = await runCli(["--hermes-home", home, "memory", "status"], { cwd: root });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("Provider: (none — built-in only)");
    expect(result.stderr).toContain('memory.provider must be a provider name (got ["sqlite"]); built-in memory only.');
  });

  it("masks secrets (last 4 characters), reports availability, stats and where data lives", async () => {
    writeUserProvider(home, "alpha", {
      searchable: true,
      schema: [
        { key: "api_key", description: "API key", secret: true, envVar: "ALPHA_API_KEY" },
        { key: "region", description: "Region", default: "us" },
      ],
    });
    const setup = await runCli(["--hermes-home", home, "memory", "setup", "alpha", "--set", `api_key=${SECRET}`, "--yes"], { cwd: root });
    expect(setup.code).toBe(0);

    const text = await runCli(["--hermes-home", home, "memory", "status"], { cwd: root });
    expect(text.code).toBe(0);
    expect(text.stdout).toContain("Provider: alpha");
    expect(text.stdout).toContain("installed ✓");
    expect(text.stdout).toContain("available ✓");
    expect(text.stdout).toContain("api_key: …QRST");
    expect(text.stdout).toContain("region: us");
    expect(text.stdout).toContain("Stats: 7 items (5 turns, 2 facts, 0 checkpoints), 2 sessions");
    expect(text.stdout).toContain(`Data: ${home}/alpha.data`);
    expect(text.stdout + text.stderr).not.toContain(SECRET.slice(0, -4));

    const json = await runCli(["--hermes-home", home, "memory", "status", "--json"], { cwd: root });
    expect(json.stdout).not.toContain(SECRET.slice(0, -4));
    const data = parseJson(json);
    expect(data.provider).toMatchObject({ name: "alpha", installed: true, available: true, searchable: true, source: "user" });
    expect(data.provider.settings).toEqual([
      expect.objectContaining({ key: "api_key", secret: true, set: true, value: "…QRST", envVar: "ALPHA_API_KEY" }),
      expect.objectContaining({ key: "region", secret: false, value: "us", origin: "stored" }),
    ]);
    expect(data.provider.stats).toMatchObject({ items: 7, sessions: 2 });
    // The secret itself lives only in .env.
    expect(fs.readFileSync(path.join(home, "config.yaml"), "utf8")).not.toContain(SECRET);
  });

  it("explains an unavailable provider and one that is not installed", async () => {
    writeUserProvider(home, "alpha", { available: false, reason: "install the alpha SDK" });
    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  provider: alpha\n");
    const unavailable = await runCli(["--hermes-home", home, "memory", "status"], { cwd: root });
    expect(unavailable.code).toBe(0);
    expect(unavailable.stdout).toContain("not available ✗  install the alpha SDK");

    // Not installed: the report still prints (and parses under --json), then the command fails
    // with what to do, so a script or an MCP setup check notices.
    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  provider: ghost\n");
    const missingJson = await runCli(["--hermes-home", home, "memory", "status", "--json"], { cwd: root });
    expect(missingJson.code).toBe(1);
    const missing = parseJson(missingJson);
    expect(missing.provider).toMatchObject({ name: "ghost", installed: false, available: false });
    expect(missing.provider.reason).toContain("hermes-memory memory off");
    expect(missing.provider.reason).toContain(`user ${path.join(home, "plugins")}`);
    // One document: the report and, in it, why the command failed.
    expect(missing.error).toMatchObject({ code: "PROVIDER_NOT_FOUND", message: expect.stringContaining("memory.provider is 'ghost'") });
    expect(missingJson.stderr).toBe("");
    // The CLI under test runs from this checkout, no installation: the hint names a project's install
    // (install-hints.test.ts runs installed copies).
    const missingText = await runCli(["--hermes-home", home, "memory", "status"], { cwd: root });
    expect(missingText.code).toBe(1);
    expect(missingText.stdout).toContain("NOT installed");
    expect(missingText.stderr).toMatch(
      /^hermes-memory: memory\.provider is 'ghost' in .*config\.yaml, but it is not installed \(searched .*\): install it with `npm install <package>` in your project or `hermes-memory plugins add <package>`, or run `hermes-memory memory off`\.\n$/,
    );
  });

  it("a guide-style provider (key checked with getEnv in isAvailable) is available after setup saved the key to .env; getStatusConfig lines are shown", async () => {
    const dir = path.join(home, "plugins", "guide");
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(
      path.join(dir, "index.js"),
      `import { MemoryProvider, getEnv } from "@hermes/memory-core";
class GuideProvider extends MemoryProvider {
  get name() { return "guide"; }
  isAvailable() { return Boolean(getEnv("GUIDE_API_KEY")); }
  unavailableReason() { return "GUIDE_API_KEY not set"; }
  initialize() {}
  getToolSchemas() { return []; }
  getConfigSchema() { return [{ key: "api_key", secret: true, required: true, envVar: "GUIDE_API_KEY" }, { key: "endpoint", default: "https://guide.example" }]; }
  getStatusConfig(config) { if (config.endpoint === "boom") throw new Error("status exploded"); return { endpoint: config.endpoint, key_last4: getEnv("GUIDE_API_KEY").slice(-4) }; }
}
export function register(ctx) { ctx.registerMemoryProvider(new GuideProvider()); }
`,
    );
    // Another profile is the process default: only --hermes-home's .env may count.
    const env = { HERMES_HOME: path.join(root, "other-profile") };
    const setup = await runCli(["--hermes-home", home, "memory", "setup", "guide", "--set", `api_key=${SECRET}`, "--yes"], {
      cwd: root,
      env: childEnv(env),
    });
    expect(setup.code).toBe(0);
    const text = await runCli(["--hermes-home", home, "memory", "status"], { cwd: root, env: childEnv(env) });
    expect(text.stdout).toContain("available ✓");
    expect(text.stdout).toContain("endpoint: https://guide.example");
    expect(text.stdout).toContain("key_last4: QRST");
    const data = parseJson(await runCli(["--hermes-home", home, "memory", "status", "--json"], { cwd: root, env: childEnv(env) }));
    expect(data.provider).toMatchObject({ available: true, statusConfig: { endpoint: "https://guide.example", key_last4: "QRST" } });

    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  provider: guide\n  guide:\n    endpoint: boom\n");
    const broken = parseJson(await runCli(["--hermes-home", home, "memory", "status", "--json"], { cwd: root, env: childEnv(env) }));
    expect(broken.provider.statusConfig).toEqual({ status_config_error: "status exploded" });
  });
});
