import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeTempDir } from "../test-support/temp-tree.js";
import { formatEnvValue, parseEnv, readEnvFile, writeEnvValues } from "./env-file.js";

let tmp: ReturnType<typeof makeTempDir>;
let home: string;
beforeEach(() => {
  tmp = makeTempDir("hermes-env-");
  home = path.join(tmp.dir, "home");
});
afterEach(() => tmp.cleanup());
const envFile = () => path.join(home, ".env");

describe(".env", () => {
  it("reads nothing when missing", async () => {
    expect(await readEnvFile(home)).toEqual({});
  });

  it("says what is wrong when the home is a file or .env a directory (no permission advice)", async () => {
    fs.writeFileSync(home, "not a directory");
    await expect(readEnvFile(home)).rejects.toMatchObject({
      code: "STORAGE_FAILED",
      message: expect.stringContaining(`${home} is not a directory: point HERMES_HOME`),
    });
    fs.rmSync(home);
    fs.mkdirSync(envFile(), { recursive: true });
    await expect(readEnvFile(home)).rejects.toMatchObject({
      code: "STORAGE_FAILED",
      message: expect.stringMatching(/\.env is a directory: move it away/),
    });
  });

  it("parses comments, export, quotes and inline comments", () => {
    expect(
      parseEnv(
        `# comment\nexport A=1\nB = "two words"\nC='single # not comment'\nD=plain # comment\nE="esc \\"q\\" \\n"\n\nbad line\nA=override\n`,
      ),
    ).toEqual({
      A: "override",
      B: "two words",
      C: "single # not comment",
      D: "plain",
      E: 'esc "q" \n',
    });
  });

  it("writes with mode 0600, updates lines in place and keeps the rest", async () => {
    fs.mkdirSync(home, { recursive: true });
    fs.writeFileSync(envFile(), "# keys\nexport OPENAI_API_KEY=old\nOTHER=keep\n", { mode: 0o644 });
    await writeEnvValues(home, { OPENAI_API_KEY: "sk-new", NEW_KEY: 'has space & "quotes" $HOME' });
    expect(fs.statSync(envFile()).mode & 0o777).toBe(0o600);
    expect(fs.readFileSync(envFile(), "utf8")).toBe(
      "# keys\nexport OPENAI_API_KEY=sk-new\nOTHER=keep\nNEW_KEY='has space & \"quotes\" $HOME'\n",
    );
    expect(await readEnvFile(home)).toEqual({ OPENAI_API_KEY: "sk-new", OTHER: "keep", NEW_KEY: 'has space & "quotes" $HOME' });
  });

  it("creates the home and the file 0600", async () => {
    await writeEnvValues(home, { MY_KEY: "v" });
    expect(fs.statSync(envFile()).mode & 0o777).toBe(0o600);
    expect(fs.readFileSync(envFile(), "utf8")).toBe("MY_KEY=v\n");
  });

  it("strips CR/LF so a value cannot inject another variable", async () => {
    await writeEnvValues(home, { MY_KEY: "abc\r\nLD_PRELOAD=/evil.so" });
    expect(await readEnvFile(home)).toEqual({ MY_KEY: "abcLD_PRELOAD=/evil.so" });
    expect(fs.readFileSync(envFile(), "utf8").split("\n").filter(Boolean)).toHaveLength(1);
  });

  it.each(["PATH", "NODE_OPTIONS", "LD_PRELOAD", "HERMES_HOME", "lower_case", "1ABC", "A-B", ""])(
    "refuses the name %j and writes nothing",
    async (name) => {
      await expect(writeEnvValues(home, { GOOD: "x", [name]: "y" })).rejects.toMatchObject({ code: "INVALID_ENV_NAME" });
      expect(fs.existsSync(envFile())).toBe(false);
    },
  );

  it("reads CRLF and lone-CR files line by line", async () => {
    expect(parseEnv("A=1\r\nB='two'\r\n# c\r\nC=3\rD=4")).toEqual({ A: "1", B: "two", C: "3", D: "4" });
    fs.mkdirSync(home, { recursive: true });
    fs.writeFileSync(envFile(), "KEEP=x\r\nOLD=y\r\n");
    await writeEnvValues(home, { OLD: "z" });
    expect(await readEnvFile(home)).toEqual({ KEEP: "x", OLD: "z" });
  });

  // Values a shell would expand or split if quoted naively.
  const hostile: Record<string, string> = {
    V_BACKTICK: "a`id`b",
    V_DOLLAR: "cost $HOME ${HOME} $1",
    V_SUBST: "$(touch pwned)",
    V_SQUOTE: "it's",
    V_DQUOTE: 'say "hi"',
    V_BOTH: `it's "quoted" $(x) \`y\` \\`,
    V_BACKSLASH: "C:\\path\\n\\t\\",
    V_TRAILING_BS: "ends with \\",
    V_SPACES: "  padded value  ",
    V_HASH: "a #not-a-comment",
    V_HASH_START: "#start",
    V_UNICODE: "naïve 日本語 🚀 § ‽",
    V_BANG: "wow!! !$ !!",
    V_SEMI: "a; echo pwned; b && c | d > e",
    V_GLOB: "* ? [a]",
    V_EMPTY: "",
    V_TILDE: "~/x",
    V_EQUALS: "a=b==c",
  };

  it("writes values that parseEnv reads back byte for byte", async () => {
    await writeEnvValues(home, hostile);
    expect(await readEnvFile(home)).toEqual(hostile);
    for (const value of Object.values(hostile)) expect(parseEnv(`K=${formatEnvValue(value)}`).K).toBe(value);
  });

  const bash = spawnSync("bash", ["-c", "true"]).status === 0;
  it.skipIf(!bash)("writes values that `set -a; . ./.env` in bash reads back byte for byte, expanding nothing", async () => {
    await writeEnvValues(home, hostile);
    const names = Object.keys(hostile);
    const script = `set -a; . ./.env; printf '%s\\0' ${names.map((n) => `"$${n}"`).join(" ")}`;
    const result = spawnSync("bash", ["-c", script], {
      cwd: home,
      encoding: "utf8",
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: "/nonexistent-home" },
    });
    expect(result.stderr).toBe("");
    expect(result.status).toBe(0);
    const values = result.stdout.split("\0").slice(0, -1);
    expect(Object.fromEntries(names.map((n, i) => [n, values[i]]))).toEqual(hostile);
    expect(fs.existsSync(path.join(home, "pwned"))).toBe(false);
  });
});
