import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeTempDir } from "../test-support/temp-tree.js";
import { parseConfig, readConfig, setActiveProvider } from "./config-file.js";
import { MAX_ENV_FILE_BYTES, parseEnv, readEnvFile, writeEnvValues } from "./env-file.js";

let tmp: ReturnType<typeof makeTempDir>;
let home: string;
beforeEach(() => {
  tmp = makeTempDir("hermes-hostile-");
  home = tmp.dir;
});
afterEach(() => tmp.cleanup());
const configFile = () => path.join(home, "config.yaml");
const envFile = () => path.join(home, ".env");

/** Bytes that are not UTF-8 (a Latin-1 "é"), as an editor with another encoding saves them. */
const latin1 = (before: string, after: string): Buffer => Buffer.concat([Buffer.from(before), Buffer.from([0xe9]), Buffer.from(after)]);

describe("config.yaml that is not UTF-8", () => {
  it("readConfig refuses it with INVALID_CONFIG instead of reading U+FFFD", async () => {
    fs.writeFileSync(configFile(), latin1("# caf", "\nmemory:\n  provider: sqlite\n"));
    await expect(readConfig(home)).rejects.toMatchObject({
      code: "INVALID_CONFIG",
      message: expect.stringMatching(/not valid UTF-8.*config\.yaml|config\.yaml.*not valid UTF-8/),
    });
  });

  it("an edit refuses it and leaves the bytes untouched (no lossy rewrite)", async () => {
    const bytes = latin1("# caf", "\nmemory:\n  provider: sqlite\n");
    fs.writeFileSync(configFile(), bytes);
    await expect(setActiveProvider(home, "vector")).rejects.toMatchObject({
      code: "INVALID_CONFIG",
      message: expect.stringContaining("UTF-8"),
    });
    expect(fs.readFileSync(configFile()).equals(bytes)).toBe(true);
  });
});

describe("config.yaml that cannot be read or written", () => {
  it("an edit of a directory in place of config.yaml is a typed error, not a raw EISDIR", async () => {
    fs.mkdirSync(configFile());
    const error = await setActiveProvider(home, "vector").catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "INVALID_CONFIG", message: expect.stringContaining(configFile()) });
    // Refused before any read (a directory, like a FIFO, is not a regular file), not a raw EISDIR.
    expect((error as Error).message).toMatch(/is not a regular file \(a FIFO, device, socket or directory\)/);
  });

  it("an edit through a symlink loop is a typed error", async () => {
    fs.symlinkSync(configFile(), configFile());
    await expect(setActiveProvider(home, "vector")).rejects.toMatchObject({
      code: "INVALID_CONFIG",
      message: expect.stringContaining("ELOOP"),
    });
  });
});

describe("YAML merge keys (read by the Python agent's PyYAML)", () => {
  it("are applied, not kept as a literal '<<' key", () => {
    const config = parseConfig(
      "base: &base\n  path: /data/mem.db\n  limit: 5\nmemory:\n  provider: sqlite\n  sqlite:\n    <<: *base\n    limit: 7\n",
    );
    expect(config.memory.providerConfig("sqlite")).toEqual({ path: "/data/mem.db", limit: 7 });
  });

  it("still count against the alias limit", () => {
    const lines = ["a0: &a0 {x: 1}"];
    for (let i = 1; i < 12; i++)
      lines.push(`a${i}: &a${i} {<<: *a${i - 1}, ${Array.from({ length: 12 }, (_, j) => `k${j}: *a${i - 1}`).join(", ")}}`);
    expect(() => parseConfig(lines.join("\n"))).toThrow(expect.objectContaining({ code: "INVALID_CONFIG" }) as Error);
  });
});

describe(".env that is not UTF-8", () => {
  it("writeEnvValues refuses it and leaves the bytes untouched", async () => {
    const bytes = latin1("GREETING=caf", "\nOTHER=1\n");
    fs.writeFileSync(envFile(), bytes);
    await expect(writeEnvValues(home, { NEW_KEY: "v" })).rejects.toMatchObject({
      code: "INVALID_CONFIG",
      message: expect.stringContaining("UTF-8"),
    });
    expect(fs.readFileSync(envFile()).equals(bytes)).toBe(true);
  });
});

describe(".env that cannot be read", () => {
  it("writeEnvValues on a directory in place of .env is a typed error", async () => {
    fs.mkdirSync(envFile());
    await expect(writeEnvValues(home, { NEW_KEY: "v" })).rejects.toMatchObject({
      code: "STORAGE_FAILED",
      message: expect.stringContaining("is not a regular file"),
    });
  });
});

describe(".env over MAX_ENV_FILE_BYTES", () => {
  it("readEnvFile and writeEnvValues refuse it with STORAGE_FAILED and leave it as it was", async () => {
    const text = `KEY=1\n# ${"x".repeat(MAX_ENV_FILE_BYTES)}\n`;
    fs.writeFileSync(envFile(), text);
    await expect(readEnvFile(home)).rejects.toMatchObject({
      code: "STORAGE_FAILED",
      message: expect.stringContaining("is larger than 1 MiB"),
    });
    await expect(writeEnvValues(home, { NEW_KEY: "v" })).rejects.toMatchObject({
      code: "STORAGE_FAILED",
      message: expect.stringContaining("is larger than 1 MiB"),
    });
    expect(fs.readFileSync(envFile(), "utf8")).toBe(text);
  });
});

describe("a FIFO in place of a shared file is refused at once, never waited on", () => {
  // Without a writer, a blocking open of a FIFO never returns (and keeps the process from exiting).
  const fifo = (file: string) => execFileSync("mkfifo", [file]);

  it("config.yaml: readConfig and an edit are INVALID_CONFIG", async () => {
    fifo(configFile());
    await expect(readConfig(home)).rejects.toMatchObject({ code: "INVALID_CONFIG", message: expect.stringMatching(/not a regular file/) });
    await expect(setActiveProvider(home, "vector")).rejects.toMatchObject({ code: "INVALID_CONFIG" });
  });

  it(".env: reading and writing are STORAGE_FAILED", async () => {
    fifo(envFile());
    await expect(readEnvFile(home)).rejects.toMatchObject({ code: "STORAGE_FAILED", message: expect.stringMatching(/not a regular file/) });
    await expect(writeEnvValues(home, { NEW_KEY: "v" })).rejects.toMatchObject({ code: "STORAGE_FAILED" });
  });
});

describe(".env multi-line quoted values (python-dotenv format)", () => {
  const pem = "-----BEGIN KEY-----\nB=inside\n-----END KEY-----";

  it("parseEnv reads a quoted value spanning lines as one value", () => {
    expect(parseEnv(`CERT='${pem}'\nC=1\n`)).toEqual({ CERT: pem, C: "1" });
    expect(parseEnv(`CERT="line1\nline2" # note\nC=1\n`)).toEqual({ CERT: "line1\nline2", C: "1" });
  });

  it("an unclosed quote still reads as one line, and rewriting it keeps the lines below", async () => {
    expect(parseEnv(`A="open\nB=2\n`)).toEqual({ A: '"open', B: "2" });
    fs.writeFileSync(envFile(), `A='typo\nB='two' more\nC=3\n`);
    expect(await readEnvFile(home)).toMatchObject({ A: "'typo", C: "3" });
    await writeEnvValues(home, { A: "fixed" });
    expect(fs.readFileSync(envFile(), "utf8")).toBe(`A=fixed\nB='two' more\nC=3\n`);
  });

  it("writing another key never edits the inside of a multi-line value", async () => {
    const original = `CERT='${pem}'\nC=1\n`;
    fs.writeFileSync(envFile(), original);
    await writeEnvValues(home, { B: "changed" });
    expect(fs.readFileSync(envFile(), "utf8")).toBe(`${original}B=changed\n`);
    expect(await readEnvFile(home)).toEqual({ CERT: pem, C: "1", B: "changed" });
  });

  it("replacing a multi-line value replaces all its lines (no stray tail left behind)", async () => {
    fs.writeFileSync(envFile(), `# head\nCERT="line1\nline2"\nC=1\n`);
    await writeEnvValues(home, { CERT: "one" });
    expect(fs.readFileSync(envFile(), "utf8")).toBe("# head\nCERT=one\nC=1\n");
  });
});

describe(".env inline comments", () => {
  it("are kept when the value on that line is replaced", async () => {
    fs.writeFileSync(envFile(), "# keys\nA=old  # rotated monthly\nexport B='x y' # team key\nC=plain\n");
    await writeEnvValues(home, { A: "new", B: "z w", C: "c" });
    expect(fs.readFileSync(envFile(), "utf8")).toBe("# keys\nA=new # rotated monthly\nexport B='z w' # team key\nC=c\n");
    expect(await readEnvFile(home)).toEqual({ A: "new", B: "z w", C: "c" });
  });
});
