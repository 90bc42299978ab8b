import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runWithProfile } from "../profile.js";
import { makeTempDir } from "../test-support/temp-tree.js";
import { writeEnvValues } from "./env-file.js";
import { getEnv, getEnvView } from "./secrets.js";

const NAME = "HERMES_SECRETS_TEST_KEY";
let tmp: ReturnType<typeof makeTempDir>;
let a: string;
let b: string;

beforeEach(() => {
  tmp = makeTempDir("hermes-secrets-");
  a = path.join(tmp.dir, "a");
  b = path.join(tmp.dir, "b");
  delete process.env[NAME];
});
afterEach(() => {
  delete process.env[NAME];
  tmp.cleanup();
});

describe("getEnv", () => {
  it("sees what writeEnvValues just saved in the active profile's .env, without touching process.env", async () => {
    expect(runWithProfile(a, () => getEnv(NAME))).toBeUndefined();
    await writeEnvValues(a, { [NAME]: "from-dotenv" });
    expect(runWithProfile(a, () => getEnv(NAME))).toBe("from-dotenv");
    expect(process.env[NAME]).toBeUndefined();
    // An update is seen too (the cache is keyed by mtime, size and inode).
    await writeEnvValues(a, { [NAME]: "rotated-key" });
    expect(runWithProfile(a, () => getEnv(NAME))).toBe("rotated-key");
  });

  it(".env wins over process.env; process.env is the fallback; blank counts as unset", async () => {
    process.env[NAME] = "from-process";
    expect(runWithProfile(a, () => getEnv(NAME))).toBe("from-process");
    await writeEnvValues(a, { [NAME]: "from-dotenv" });
    expect(runWithProfile(a, () => getEnv(NAME))).toBe("from-dotenv");
    expect(runWithProfile(a, () => getEnvView()[NAME])).toBe("from-dotenv");
    await writeEnvValues(a, { [NAME]: "" });
    expect(runWithProfile(a, () => getEnv(NAME))).toBe("from-process");
  });

  it("two profiles running concurrently in one process each see their own .env", async () => {
    await writeEnvValues(a, { [NAME]: "key-a" });
    await writeEnvValues(b, { [NAME]: "key-b" });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const seen = (home: string) =>
      runWithProfile(home, async () => {
        const before = getEnv(NAME);
        await gate;
        return [before, getEnv(NAME)];
      });
    const both = Promise.all([seen(a), seen(b)]);
    release();
    expect(await both).toEqual([
      ["key-a", "key-a"],
      ["key-b", "key-b"],
    ]);
    expect(getEnv(NAME, b)).toBe("key-b");
  });

  it("a missing or unreadable .env is empty", () => {
    fs.mkdirSync(path.join(a, ".env"), { recursive: true });
    expect(getEnv(NAME, a)).toBeUndefined();
  });
});
