import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeTempDir } from "../test-support/temp-tree.js";
import { parseEnv, readEnvFile, writeEnvValues } from "./env-file.js";

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

  it("parses comments, export, quotes and inline comments", () => {
    expect(parseEnv(`# comment\nexport A=1\nB = "two words"\nC='single # not comment'\nD=plain # comment\nE="esc \\"q\\" \\n"\n\nbad line\nA=override\n`)).toEqual({
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
    await writeEnvValues(home, { OPENAI_API_KEY: "sk-new", NEW_KEY: "has space & \"quotes\" $HOME" });
    expect(fs.statSync(envFile()).mode & 0o777).toBe(0o600);
    expect(fs.readFileSync(envFile(), "utf8")).toBe('# keys\nexport OPENAI_API_KEY=sk-new\nOTHER=keep\nNEW_KEY=\'has space & "quotes" $HOME\'\n');
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

  it.each(["PATH", "NODE_OPTIONS", "LD_PRELOAD", "HERMES_HOME", "lower_case", "1ABC", "A-B", ""])("refuses the name %j and writes nothing", async (name) => {
    await expect(writeEnvValues(home, { GOOD: "x", [name]: "y" })).rejects.toMatchObject({ code: "INVALID_ENV_NAME" });
    expect(fs.existsSync(envFile())).toBe(false);
  });
});
