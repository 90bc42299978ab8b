import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseJson, runCli, tempDir } from "../test-support/cli-harness.js";

describe("hermes-memory memory show / off", { timeout: 60_000 }, () => {
  let root: string;
  let home: string;
  let cleanup: () => void;

  beforeEach(() => {
    ({ dir: root, cleanup } = tempDir("hermes-cli-show-"));
    home = path.join(root, "home");
    fs.mkdirSync(path.join(home, "memories"), { recursive: true });
    fs.writeFileSync(path.join(home, "memories", "MEMORY.md"), "Project uses pnpm.\n§\nDeploys happen on Tuesdays\nafter the standup.");
    fs.writeFileSync(path.join(home, "memories", "USER.md"), "Prefers short answers.");
    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  provider: alpha\n  user_char_limit: 100\n");
  });
  afterEach(() => cleanup());

  it("prints entries with usage against the configured limits", async () => {
    const result = await runCli(["--hermes-home", home, "memory", "show"], { cwd: root });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/MEMORY\.md \d+% — 66\/2200 chars, 2 entries/);
    expect(result.stdout).toContain("   1. Project uses pnpm.");
    expect(result.stdout).toContain("   2. Deploys happen on Tuesdays\n      after the standup.");
    expect(result.stdout).toMatch(/USER\.md 22% — 22\/100 chars, 1 entry/);

    const data = parseJson(await runCli(["--hermes-home", home, "memory", "show", "user", "--json"], { cwd: root }));
    expect(data.files).toEqual([
      expect.objectContaining({
        target: "user",
        entries: ["Prefers short answers."],
        usage: expect.objectContaining({ current: 22, limit: 100, entryCount: 1 }),
      }),
    ]);
  });

  it("rejects an unknown target with a remedy", async () => {
    const result = await runCli(["--hermes-home", home, "memory", "show", "notes"], { cwd: root });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      "hermes-memory: Unknown memory target 'notes'; use `memory` (MEMORY.md) or `user` (USER.md), or omit it for both.\n",
    );
  });

  it("memory off switches to built-in only and keeps the rest of config.yaml", async () => {
    const result = await runCli(["--hermes-home", home, "memory", "off", "--json"], { cwd: root });
    expect(result.code).toBe(0);
    expect(parseJson(result)).toMatchObject({ provider: "", previousProvider: "alpha" });
    const config = fs.readFileSync(path.join(home, "config.yaml"), "utf8");
    expect(config).toMatch(/provider: ""/);
    expect(config).toContain("user_char_limit: 100");
  });
});
