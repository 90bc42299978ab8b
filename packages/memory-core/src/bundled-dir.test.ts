import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BUNDLED_DIR_ENV, defaultBundledDir } from "./bundled-dir.js";
import { discoverMemoryProviders } from "./discovery/discover.js";
import { loadMemoryProvider } from "./loader.js";
import { makeTempDir, providerSource, writeFiles } from "./test-support/temp-tree.js";

let tmp: ReturnType<typeof makeTempDir>;
let home: string;
let cwd: string;
let bundled: string;
let elsewhere: string;

// Each copy of "notes" says which folder it was loaded from.
const copy = (dir: string) =>
  writeFiles(path.join(dir, "notes"), {
    "plugin.yaml": "name: notes\n",
    "index.js": providerSource("notes", { body: `where = ${JSON.stringify(dir)};` }),
  });

beforeEach(() => {
  tmp = makeTempDir("hermes-bundled-dir-");
  home = path.join(tmp.dir, "home");
  cwd = path.join(tmp.dir, "work");
  bundled = path.join(tmp.dir, "bundled");
  elsewhere = path.join(tmp.dir, "elsewhere");
  writeFiles(cwd, { "package.json": { name: "host" } });
  copy(path.join(home, "plugins"));
  copy(bundled);
  copy(elsewhere);
});
afterEach(() => tmp.cleanup());

const whereOf = (provider: unknown) => (provider as { where: string }).where;

describe("the default bundled folder", () => {
  it("is HERMES_MEMORY_BUNDLED_DIR, resolved; unset or blank means none", () => {
    expect(defaultBundledDir({ [BUNDLED_DIR_ENV]: ` ${bundled} ` })).toBe(bundled);
    expect(defaultBundledDir({ [BUNDLED_DIR_ENV]: "  " })).toBeUndefined();
    expect(defaultBundledDir({})).toBeUndefined();
  });

  it("loadMemoryProvider takes a name from it before $HERMES_HOME/plugins; an explicit bundledDir wins", async () => {
    const env = { [BUNDLED_DIR_ENV]: bundled };
    expect(whereOf(await loadMemoryProvider("notes", { hermesHome: home, cwd, env }))).toBe(bundled);
    expect(whereOf(await loadMemoryProvider("notes", { hermesHome: home, cwd, env, bundledDir: elsewhere }))).toBe(elsewhere);
    expect(whereOf(await loadMemoryProvider("notes", { hermesHome: home, cwd, env: {} }))).toBe(path.join(home, "plugins"));
  });

  it("discoverMemoryProviders applies it too, so a host that discovers by itself finds the same folder", async () => {
    const found = await discoverMemoryProviders({ hermesHome: home, cwd, env: { [BUNDLED_DIR_ENV]: bundled } });
    expect(found.providers.find((p) => p.name === "notes")).toMatchObject({ source: "bundled", dir: path.join(bundled, "notes") });
    const without = await discoverMemoryProviders({ hermesHome: home, cwd, env: {} });
    expect(without.providers.find((p) => p.name === "notes")?.dir).toBe(path.join(home, "plugins", "notes"));
  });
});
