import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DEMO_CONVERSATION } from "../demo-conversation.js";
import { CLI_DIR, parseJson, runCli, tempDir } from "../test-support/cli-harness.js";

describe("hermes-memory demo", { timeout: 60_000 }, () => {
  let root: string;
  let cleanup: () => void;

  beforeEach(() => {
    // Run from an empty folder; discovery starts at --cwd CLI_DIR, a project whose package.json
    // lists @hermes/memory-sqlite (the CLI's dev dependency), as a user's project would.
    ({ dir: root, cleanup } = tempDir("hermes-cli-demo-"));
  });
  afterEach(() => cleanup());

  it("replays two sessions with sqlite and recalls session-one facts after a restart", async () => {
    const result = await runCli(["--cwd", CLI_DIR, "demo", "--no-color"], { cwd: root });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("Activated sqlite");
    for (const q of DEMO_CONVERSATION.questions) expect(result.stdout).toContain(`Q: ${q.question}`);
    expect(result.stdout).toContain("Anneliese");
    expect(result.stdout).toContain("6543");
    expect(result.stdout).toMatch(/prefetchAll in [\d.]+ ms/);
    expect(result.stdout).toContain("3/3 facts from session one recalled after a restart, with sqlite.");
    const home = /^Home: (\S+)/m.exec(result.stdout)?.[1];
    expect(home).toBeDefined();
    expect(fs.existsSync(home!)).toBe(false);
  });

  it("--json with --hermes-home keeps the home and reports recall per question", async () => {
    const home = path.join(root, "home");
    const result = await runCli(["--hermes-home", home, "--cwd", CLI_DIR, "demo", "--json"], { cwd: root });
    expect(result.code).toBe(0);
    const data = parseJson(result);
    expect(data).toMatchObject({ hermesHome: home, kept: true, provider: "sqlite", recallMode: "prefetch", recalledCount: 3 });
    expect(data.sessions.map((s: any) => s.id)).toEqual(["demo-session-1", "demo-session-2"]);
    expect(data.questions).toHaveLength(3);
    for (const q of data.questions) {
      expect(q.found).toBe(true);
      expect(q.ms).toBeGreaterThanOrEqual(0);
    }
    expect(data.questions[0].recalled).toContain("Anneliese");
    expect(fs.readFileSync(path.join(home, "config.yaml"), "utf8")).toMatch(/provider: sqlite/);
    // The same home now answers `memory status` with the provider's stats.
    const status = parseJson(await runCli(["--hermes-home", home, "--cwd", CLI_DIR, "memory", "status", "--json"], { cwd: root }));
    expect(status.provider).toMatchObject({ name: "sqlite", available: true });
    expect(status.provider.stats.items).toBeGreaterThan(0);
  });

  it("runs with built-in memory only and still recalls the notes saved in session one", async () => {
    const result = await runCli(["demo", "--provider", "builtin", "--json"], { cwd: root });
    expect(result.code).toBe(0);
    const data = parseJson(result);
    expect(data).toMatchObject({ provider: "", recallMode: "system-prompt", recalledCount: 3, kept: false });
    expect(fs.existsSync(data.hermesHome)).toBe(false);
  });

  it("explains how to install a provider that is missing and falls back to built-in memory", async () => {
    const result = await runCli(["demo", "--provider", "nosuch", "--no-color"], { cwd: root });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("nosuch is not installed");
    expect(result.stdout).toContain("Running with built-in memory");
    expect(result.stdout).toContain("with built-in memory.");
  });
});
