import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { CLI_DIR, HAS_SCRIPT, runCli, startCli, tempDir, terminalScreen } from "../test-support/cli-harness.js";

describe.skipIf(!HAS_SCRIPT)("a provider command's progress bar on a terminal", { timeout: 120_000 }, () => {
  it("`sqlite import` shows percent and an estimate, then leaves only its result", async () => {
    const { dir: root, cleanup } = tempDir("hermes-cli-progress-");
    try {
      const home = path.join(root, "home");
      expect((await runCli(["--hermes-home", home, "memory", "setup", "sqlite", "--yes"], { cwd: CLI_DIR })).code).toBe(0);
      const file = path.join(root, "facts.jsonl");
      const lines = Array.from({ length: 3000 }, (_, i) =>
        JSON.stringify({ kind: "fact", content: `Fact number ${i}: the lighthouse keeper logs ship ${i}.` }),
      );
      fs.writeFileSync(file, `${lines.join("\n")}\n`);

      const cli = startCli(["--hermes-home", home, "sqlite", "import", file], { cwd: CLI_DIR, terminal: true });
      await cli.waitFor("Imported 3000 item(s)");
      expect((await cli.done()).code).toBe(0);
      const raw = cli.rawOutput();
      expect(raw).toMatch(/Importing \[[█░]+\] +\d+% {2}[\d,]+\/3,000 {2}ETA /);
      const screen = terminalScreen(raw);
      expect(screen.cursorVisible).toBe(true);
      expect(screen.lines.filter((l) => l !== "")).toEqual(["Imported 3000 item(s), skipped 0 already present, 0 invalid."]);
    } finally {
      cleanup();
    }
  });
});
