import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CORE_URL, childEnv, runCli, tempDir, writeFiles } from "./test-support/cli-harness.js";
import { GUIDE_PROVIDER_SOURCE, guideHostScript } from "./test-support/guide-provider.js";

const KEY = "sk-guide-0123456789WXYZ";

describe("the guide's example provider as a folder plugin", { timeout: 60_000 }, () => {
  let root: string;
  let home: string;
  let cleanup: () => void;

  beforeEach(() => {
    ({ dir: root, cleanup } = tempDir("hermes-cli-guide-"));
    home = path.join(root, "home");
    writeFiles(path.join(home, "plugins", "my-provider"), { "index.js": GUIDE_PROVIDER_SOURCE });
  });
  afterEach(() => cleanup());

  function session(
    mode: "write" | "read",
    sessionId: string,
    env: NodeJS.ProcessEnv = childEnv(),
  ): { providers: string[]; recalled: string } {
    const script = path.join(root, "host.mjs");
    fs.writeFileSync(script, guideHostScript(CORE_URL));
    // stderr is kept (a failure's message carries it) rather than passed through to the test run.
    const out = execFileSync(process.execPath, [script, mode, home, sessionId], {
      cwd: root,
      env,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
    return JSON.parse(out.trim().split("\n").pop()!) as { providers: string[]; recalled: string };
  }

  it("is set up with `memory setup` (key only in .env), sees the key, and recalls across two processes", async () => {
    const setup = await runCli(["--hermes-home", home, "memory", "setup", "my-provider", "--set", `api_key=${KEY}`, "--yes"], {
      cwd: root,
    });
    expect(setup.stderr).toBe("");
    expect(setup.code).toBe(0);
    expect(fs.readFileSync(path.join(home, ".env"), "utf8")).toContain(`MY_API_KEY=${KEY}`);
    expect(fs.readFileSync(path.join(home, "config.yaml"), "utf8")).not.toContain(KEY);

    const status = await runCli(["--hermes-home", home, "memory", "status"], { cwd: root });
    expect(status.stdout).toContain("available ✓");

    // The key is in no process environment: only the profile's .env has it.
    expect(session("write", "s1").providers).toEqual(["builtin", "my-provider"]);
    expect(fs.readFileSync(path.join(home, "my-provider", "key-seen"), "utf8")).toBe("WXYZ");
    const second = session("read", "s2");
    expect(second.providers).toEqual(["builtin", "my-provider"]);
    expect(second.recalled).toContain("genmaicha from Kyoto");
  });

  it(".env wins over an exported key of the same name", async () => {
    const setup = await runCli(["--hermes-home", home, "memory", "setup", "my-provider", "--set", `api_key=${KEY}`, "--yes"], {
      cwd: root,
    });
    expect(setup.code).toBe(0);
    session("write", "s1", childEnv({ MY_API_KEY: "sk-from-shell-AAAA" }));
    expect(fs.readFileSync(path.join(home, "my-provider", "key-seen"), "utf8")).toBe("WXYZ");
  });

  it("active but without its key it is unavailable (strict openMemory says why)", () => {
    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  provider: my-provider\n");
    expect(() => session("write", "s1")).toThrow(/MY_API_KEY is not set/);
  });
});
