import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HAS_SCRIPT, childEnv, parseJson, runCli, startCli, tempDir, writeUserProvider } from "../test-support/cli-harness.js";

const SECRET = "sk-live-0123456789abcdefWXYZ";

/** A provider with a select, a secret, a required text field and a typed default. */
const SCHEMA = [
  { key: "region", description: "Region", choices: ["us", "eu", "ap"], default: "us" },
  { key: "api_key", description: "API key", secret: true, required: true, envVar: "ALPHA_API_KEY", url: "https://alpha.example/keys" },
  { key: "endpoint", description: "Endpoint URL", default: "https://api.alpha.example" },
  { key: "batch_size", description: "Batch size", type: "integer", default: 32 },
];

describe("hermes-memory memory setup", { timeout: 60_000 }, () => {
  let root: string;
  let home: string;
  let cleanup: () => void;

  beforeEach(() => {
    ({ dir: root, cleanup } = tempDir("hermes-cli-setup-"));
    home = path.join(root, "home");
    writeUserProvider(home, "alpha", { schema: SCHEMA });
  });
  afterEach(() => cleanup());

  const config = () => fs.readFileSync(path.join(home, "config.yaml"), "utf8");
  const envFile = () => path.join(home, ".env");

  it("--set and --yes write non-secrets to config.yaml and secrets only to .env (0600)", async () => {
    const result = await runCli(
      ["--hermes-home", home, "memory", "setup", "alpha", "--set", "region=eu", "--set", `api_key=${SECRET}`, "--yes"],
      { cwd: root },
    );
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("Memory provider: alpha");
    expect(result.stdout).toContain(`Secrets saved to ${envFile()} (mode 0600): ALPHA_API_KEY`);
    expect(result.stdout).not.toContain(SECRET);
    expect(config()).toMatch(/provider: alpha/);
    expect(config()).toMatch(/region: eu/);
    expect(config()).toMatch(/endpoint: https:\/\/api\.alpha\.example/);
    expect(config()).not.toContain(SECRET);
    expect(fs.readFileSync(envFile(), "utf8")).toContain(`ALPHA_API_KEY=${SECRET}`);
    expect(fs.statSync(envFile()).mode & 0o777).toBe(0o600);
  });

  it("--json prints what was written where, without secret values", async () => {
    const result = await runCli(["--hermes-home", home, "--json", "memory", "setup", "alpha", "--set", `api_key=${SECRET}`, "--yes"], {
      cwd: root,
    });
    expect(result.code).toBe(0);
    const data = parseJson(result);
    expect(data).toMatchObject({ provider: "alpha", envKeys: ["ALPHA_API_KEY"], savedBy: "config.yaml", envPath: envFile() });
    expect(data.savedValues).toEqual({ region: "us", endpoint: "https://api.alpha.example", batch_size: 32 });
    expect(result.stdout).not.toContain(SECRET);
  });

  it("--yes without a required secret fails in one line listing the missing field and writes nothing", async () => {
    const result = await runCli(["--hermes-home", home, "memory", "setup", "alpha", "--yes"], { cwd: root });
    expect(result.code).toBe(1);
    const lines = result.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^hermes-memory: .*missing required field api_key/);
    expect(lines[0]).toContain("--set api_key=");
    expect(fs.existsSync(path.join(home, "config.yaml"))).toBe(false);
    expect(fs.existsSync(envFile())).toBe(false);
  });

  it("rejects a bad value and an unknown provider with a remedy (exit 1)", async () => {
    const bad = await runCli(
      ["--hermes-home", home, "memory", "setup", "alpha", "--set", "batch_size=many", "--set", `api_key=${SECRET}`],
      { cwd: root },
    );
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("'batch_size' must be an integer");
    const missing = await runCli(["--hermes-home", home, "memory", "setup", "nosuch", "--yes"], { cwd: root });
    expect(missing.code).toBe(1);
    expect(missing.stderr.trim().split("\n")).toHaveLength(1);
    expect(missing.stderr).toContain("Memory provider 'nosuch' not found");
  });

  it("prompts for each field in order: select, masked secret, defaults", async () => {
    const cli = startCli(["--hermes-home", home, "memory", "setup", "alpha"], { cwd: root });
    await cli.waitFor("Region");
    cli.type("j\r"); // us → eu
    await cli.waitFor("Get yours at https://alpha.example/keys");
    await cli.waitFor("API key (required)");
    cli.type(`${SECRET}\r`);
    await cli.waitFor("Endpoint URL [https://api.alpha.example]");
    cli.type("\r"); // keep the default
    await cli.waitFor("Batch size [32]");
    cli.type("x\r"); // not a number: asked again
    await cli.waitFor("batch_size must be an integer");
    cli.type("\u007f64\r"); // backspace, then a valid value
    const result = await cli.done();
    expect(result.code).toBe(0);
    expect(cli.output()).toContain("Memory provider: alpha");
    expect(cli.output()).not.toContain(SECRET);
    expect(config()).toMatch(/region: eu/);
    expect(config()).toMatch(/batch_size: 64/);
    expect(config()).toMatch(/endpoint: https:\/\/api\.alpha\.example/);
    expect(fs.readFileSync(envFile(), "utf8")).toContain(`ALPHA_API_KEY=${SECRET}`);
  });

  it("shows only the last 4 characters of a stored secret and keeps it on a blank answer", async () => {
    await runCli(["--hermes-home", home, "memory", "setup", "alpha", "--set", `api_key=${SECRET}`, "--yes"], { cwd: root });
    const cli = startCli(["--hermes-home", home, "memory", "setup", "alpha"], { cwd: root });
    await cli.waitFor("Region");
    cli.type("\r");
    await cli.waitFor("API key (required) (current: …WXYZ, blank to keep)");
    cli.type("\r");
    await cli.waitFor("Endpoint URL");
    cli.type("\r");
    await cli.waitFor("Batch size");
    cli.type("\r");
    const result = await cli.done();
    expect(result.code).toBe(0);
    expect(cli.output()).not.toContain(SECRET.slice(0, -4));
    expect(fs.readFileSync(envFile(), "utf8")).toContain(`ALPHA_API_KEY=${SECRET}`);
  });

  it("the picker offers discovered providers plus built-in only", async () => {
    fs.mkdirSync(home, { recursive: true });
    fs.writeFileSync(path.join(home, "config.yaml"), "# my settings\nmemory:\n  provider: alpha\n");
    const cli = startCli(["--hermes-home", home, "memory", "setup"], { cwd: root });
    await cli.waitFor("Memory provider setup");
    expect(cli.output()).toContain("alpha");
    expect(cli.output()).toContain("Built-in only (MEMORY.md / USER.md)");
    cli.type("j\r"); // from the active alpha down to built-in
    const result = await cli.done();
    expect(result.code).toBe(0);
    expect(cli.output()).toContain("Memory provider: built-in only");
    expect(config()).toContain("# my settings");
    expect(config()).toMatch(/provider: ""/);
  });

  it("a closed stdin cancels without writing anything", async () => {
    const cli = startCli(["--hermes-home", home, "memory", "setup", "alpha"], { cwd: root });
    await cli.waitFor("Region");
    cli.closeInput();
    const result = await cli.done();
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("Cancelled. No changes saved.");
    expect(fs.existsSync(path.join(home, "config.yaml"))).toBe(false);
  });
});

describe("hermes-memory memory setup when saving fails", { timeout: 60_000 }, () => {
  it("repeats the typed answers as a ready --set command (never the secret)", async () => {
    const { dir: root, cleanup } = tempDir("hermes-cli-setup-fail-");
    try {
      const home = path.join(root, "home");
      writeUserProvider(home, "alpha", { schema: SCHEMA, body: "saveConfig() { throw new Error('disk full'); }" });
      const cli = startCli(["--hermes-home", home, "memory", "setup", "alpha"], { cwd: root });
      await cli.waitFor("Region");
      cli.type("kk\r"); // wraps around: us → ap → eu
      await cli.waitFor("API key");
      cli.type(`${SECRET}\r`);
      await cli.waitFor("Endpoint URL");
      cli.type("https://eu.alpha.example\r");
      await cli.waitFor("Batch size");
      cli.type("\r");
      const result = await cli.done();
      expect(result.code).toBe(1);
      expect(result.stderr).toContain("disk full");
      expect(result.stderr).toContain(
        "hermes-memory memory setup alpha --set region=eu --set endpoint=https://eu.alpha.example --set batch_size=32",
      );
      expect(result.stderr).toContain("add --set for the secret api_key");
      expect(result.stderr).not.toContain(SECRET);
    } finally {
      cleanup();
    }
  });
});

describe.skipIf(!HAS_SCRIPT)("hermes-memory memory setup on a terminal", { timeout: 60_000 }, () => {
  it("drives the picker and the fields through a pseudo-terminal", async () => {
    const { dir: root, cleanup } = tempDir("hermes-cli-setup-tty-");
    try {
      const home = path.join(root, "home");
      writeUserProvider(home, "alpha", { schema: SCHEMA });
      const cli = startCli(["--hermes-home", home, "memory", "setup"], { cwd: root, terminal: true });
      await cli.waitFor("Built-in only (MEMORY.md / USER.md)");
      cli.type("\r"); // the only installed provider is preselected
      await cli.waitFor("Region");
      cli.type("\u001b[B\r"); // arrow down: eu
      await cli.waitFor("API key (required)");
      cli.type(`${SECRET}\r`);
      await cli.waitFor("Endpoint URL");
      cli.type("\r");
      await cli.waitFor("Batch size");
      cli.type("\r");
      await cli.waitFor("Memory provider: alpha");
      const result = await cli.done();
      expect(result.code).toBe(0);
      expect(cli.output()).not.toContain(SECRET);
      const config = fs.readFileSync(path.join(home, "config.yaml"), "utf8");
      expect(config).toMatch(/provider: alpha/);
      expect(config).toMatch(/region: eu/);
      expect(fs.readFileSync(path.join(home, ".env"), "utf8")).toContain(`ALPHA_API_KEY=${SECRET}`);
    } finally {
      cleanup();
    }
  });
});

describe.skipIf(!HAS_SCRIPT)("the setup picker's preselected entry", { timeout: 60_000 }, () => {
  let root: string;
  let home: string;
  let cleanup: () => void;

  beforeEach(() => {
    ({ dir: root, cleanup } = tempDir("hermes-cli-setup-pick-"));
    home = path.join(root, "home");
    writeUserProvider(home, "alpha");
    writeUserProvider(home, "beta");
  });
  afterEach(() => cleanup());

  /** Open the picker, press Enter on what it preselected, and return the provider set up. */
  async function enterOnPicker(): Promise<string> {
    const cli = startCli(["--hermes-home", home, "memory", "setup"], { cwd: root, terminal: true });
    await cli.waitFor("Built-in only (MEMORY.md / USER.md)");
    cli.type("\r");
    await cli.waitFor(/Memory provider: (built-in only|\w+)/);
    expect((await cli.done()).code).toBe(0);
    return /Memory provider: (built-in only|\w+)/.exec(cli.output())![1]!;
  }

  it("is the first installed provider when none is configured, not built-in only", async () => {
    expect(await enterOnPicker()).toBe("alpha");
  });

  it("is the configured provider when there is one", async () => {
    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  provider: beta\n");
    expect(await enterOnPicker()).toBe("beta");
  });

  it("is the first installed provider when the configured one is not installed", async () => {
    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  provider: ghost\n");
    expect(await enterOnPicker()).toBe("alpha");
  });
});

describe("memory setup: conditional required secrets and postSetup", { timeout: 60_000 }, () => {
  let root: string;
  let home: string;
  let cleanup: () => void;
  const CLOUD_SCHEMA = [
    { key: "store", description: "Where data lives", choices: ["local", "cloud"], default: "local" },
    { key: "cloud_key", description: "Cloud API key", secret: true, required: true, envVar: "CLOUDY_API_KEY", when: { store: "cloud" } },
  ];

  beforeEach(() => {
    ({ dir: root, cleanup } = tempDir("hermes-cli-setup-when-"));
    home = path.join(root, "home");
  });
  afterEach(() => cleanup());

  it("--set store=cloud --yes fails without the key the `when` makes required; local needs none; an exported key counts", async () => {
    writeUserProvider(home, "cloudy", { schema: CLOUD_SCHEMA });
    const failed = await runCli(["--hermes-home", home, "memory", "setup", "cloudy", "--set", "store=cloud", "--yes"], { cwd: root });
    expect(failed.code).not.toBe(0);
    expect(failed.stderr).toContain("cloud_key");
    expect(failed.stderr).toContain("CLOUDY_API_KEY");
    expect(fs.existsSync(path.join(home, "config.yaml"))).toBe(false);

    const local = await runCli(["--hermes-home", home, "memory", "setup", "cloudy", "--set", "store=local", "--yes"], { cwd: root });
    expect(local.code).toBe(0);

    const exported = await runCli(["--hermes-home", home, "memory", "setup", "cloudy", "--set", "store=cloud", "--yes"], {
      cwd: root,
      env: childEnv({ CLOUDY_API_KEY: "sk-exported" }),
    });
    expect(exported.stderr).toBe("");
    expect(exported.code).toBe(0);
    expect(fs.existsSync(path.join(home, ".env"))).toBe(false);
  });

  it("runs the provider's postSetup after saving, seeing the new secret; a failure is reported with exit 1", async () => {
    const body = `postSetup(home, values) {
    if (values.store === "local") throw new Error("sign-in refused");
    fs.writeFileSync(home + "/post-setup.json", JSON.stringify({ values, key: getEnv("CLOUDY_API_KEY") ?? null, scoped: getHermesHome() }));
  }`;
    writeUserProvider(home, "cloudy", { schema: CLOUD_SCHEMA, body });
    // The fixture module needs fs and the env accessor.
    const index = path.join(home, "plugins", "cloudy", "index.js");
    fs.writeFileSync(
      index,
      `import fs from "node:fs";\nimport { getEnv, getHermesHome } from "@hermes/memory-core";\n${fs.readFileSync(index, "utf8")}`,
    );
    const ok = await runCli(
      ["--hermes-home", home, "memory", "setup", "cloudy", "--set", "store=cloud", "--set", "cloud_key=sk-post", "--yes"],
      { cwd: root, env: childEnv({ HERMES_HOME: path.join(root, "elsewhere") }) },
    );
    expect(ok.stderr).toBe("");
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain("post-setup step completed");
    expect(JSON.parse(fs.readFileSync(path.join(home, "post-setup.json"), "utf8"))).toEqual({
      values: { store: "cloud" },
      key: "sk-post",
      scoped: home,
    });

    const failed = await runCli(["--hermes-home", home, "memory", "setup", "cloudy", "--set", "store=local", "--yes"], { cwd: root });
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain("sign-in refused");
    expect(failed.stderr).toContain("settings were saved");
  });
});
