import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CORE_URL, childEnv, parseJson, runCli, tempDir, writeUserProvider } from "../test-support/cli-harness.js";

const run = promisify(execFile);

// The provider records the folder it was loaded from, so the host can say which copy it got.
const REPORTS_FOLDER = { body: `where = new URL(".", import.meta.url).pathname;` };

describe("the CLI and a host pick the same provider for a name", { timeout: 60_000 }, () => {
  let root: string;
  let home: string;
  let bundled: string;
  let cleanup: () => void;

  beforeEach(() => {
    ({ dir: root, cleanup } = tempDir("hermes-cli-bundled-"));
    home = path.join(root, "home");
    bundled = path.join(root, "bundled");
    fs.mkdirSync(home);
    // "notes" both in the bundled folder and in $HERMES_HOME/plugins: bundled wins, first seen.
    writeUserProvider(home, "notes", REPORTS_FOLDER);
    writeUserProvider(bundled, "notes", REPORTS_FOLDER);
    fs.renameSync(path.join(bundled, "plugins", "notes"), path.join(bundled, "notes"));
    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  provider: notes\n");
  });
  afterEach(() => cleanup());

  it("HERMES_MEMORY_BUNDLED_DIR is the bundled folder of `plugins list`, `memory status` and openMemory()", async () => {
    const env = childEnv({ HERMES_MEMORY_BUNDLED_DIR: bundled });
    const listed = parseJson(await runCli(["--hermes-home", home, "plugins", "list", "--json"], { cwd: root, env }));
    const cliFolder = listed.providers.find((p: { name: string }) => p.name === "notes").location;
    const status = parseJson(await runCli(["--hermes-home", home, "memory", "status", "--json"], { cwd: root, env }));

    const host = `
      const { openMemory } = await import(${JSON.stringify(CORE_URL)});
      const memory = await openMemory({ sessionId: "s", hermesHome: ${JSON.stringify(home)}, strict: true });
      process.stdout.write(memory.getProvider("notes").where);
      await memory.shutdownAll();`;
    const { stdout: hostFolder } = await run(process.execPath, ["--input-type=module", "-e", host], { cwd: root, env });

    expect(cliFolder).toBe(path.join(bundled, "notes"));
    expect(status.provider.location).toBe(cliFolder);
    expect(path.resolve(hostFolder)).toBe(cliFolder);
  });
});
