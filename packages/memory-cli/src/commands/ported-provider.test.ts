import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { childEnv, parseJson, runCli, tempDir, writeUserProvider } from "../test-support/cli-harness.js";

// A provider ported from the original: its schema uses the snake_case keys, and it reads its
// token from process.env (as a Python provider reads os.environ), not through getEnv.
const PORTED_SCHEMA = [
  { key: "api_key", description: "Porty token", secret: true, required: true, env_var: "PORTY_TOKEN" },
  { key: "region", description: "Region", choices: ["us", "eu"], default: "us" },
  {
    key: "endpoint",
    description: "Endpoint",
    default_from: { field: "region", map: { us: "https://us.porty.example", eu: "https://eu.porty.example" } },
    default: "https://porty.example",
    step: 1,
  },
];
const READS_PROCESS_ENV = {
  body: `isAvailable() { return Boolean(process.env.PORTY_TOKEN); }`,
};

describe("a provider ported with the original's config keys", { timeout: 60_000 }, () => {
  let root: string;
  let home: string;
  let cleanup: () => void;

  beforeEach(() => {
    ({ dir: root, cleanup } = tempDir("hermes-cli-ported-"));
    home = path.join(root, "home");
    fs.mkdirSync(home);
  });
  afterEach(() => cleanup());

  it("setup saves the secret under env_var and applies default_from; status shows the same variable", async () => {
    writeUserProvider(home, "porty", { schema: PORTED_SCHEMA });
    const env = childEnv({ PORTY_TOKEN: undefined });
    const setup = await runCli(
      ["--hermes-home", home, "--json", "memory", "setup", "porty", "--set", "api_key=tok-12345678", "--set", "region=eu", "--yes"],
      { cwd: root, env },
    );
    expect(setup.code, setup.stderr).toBe(0);
    const dotenv = fs.readFileSync(path.join(home, ".env"), "utf8");
    expect(dotenv).toContain("PORTY_TOKEN=");
    expect(dotenv).not.toContain("PORTY_API_KEY");
    const yaml = fs.readFileSync(path.join(home, "config.yaml"), "utf8");
    expect(yaml).toContain("endpoint: https://eu.porty.example");

    const status = parseJson(await runCli(["--hermes-home", home, "memory", "status", "--json"], { cwd: root, env }));
    const apiKey = status.provider.settings.find((s: { key: string }) => s.key === "api_key");
    expect(apiKey).toMatchObject({ envVar: "PORTY_TOKEN", set: true });
    expect(status.provider.available).toBe(true);
  });

  it("refuses a field key it cannot honour, naming the field and the key, and writes nothing", async () => {
    writeUserProvider(home, "porty", { schema: [{ key: "api_key", secret: true, env_key: "PORTY_TOKEN" }] });
    const setup = await runCli(["--hermes-home", home, "--json", "memory", "setup", "porty", "--set", "api_key=tok-12345678", "--yes"], {
      cwd: root,
      env: childEnv(),
    });
    expect(setup.code).not.toBe(0);
    const error = parseJson(setup).error;
    expect(error.code).toBe("INVALID_PROVIDER");
    expect(error.message).toContain("'api_key'");
    expect(error.message).toContain("'env_key'");
    expect(fs.existsSync(path.join(home, ".env"))).toBe(false);
  });

  it("status tells a provider reading process.env that its key is only in .env, and names getEnv", async () => {
    writeUserProvider(home, "porty", { schema: PORTED_SCHEMA, ...READS_PROCESS_ENV });
    fs.writeFileSync(path.join(home, ".env"), "PORTY_TOKEN=tok-12345678\n");
    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  provider: porty\n");
    const status = parseJson(
      await runCli(["--hermes-home", home, "memory", "status", "--json"], { cwd: root, env: childEnv({ PORTY_TOKEN: undefined }) }),
    );
    expect(status.provider.available).toBe(false);
    expect(status.provider.reason).toContain("PORTY_TOKEN");
    expect(status.provider.reason).toContain("getEnv");
    expect(status.provider.reason).toContain("@hermes/memory-core");
  });
});
