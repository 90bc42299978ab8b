import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { discoverMemoryProviders } from "./discover.js";
import { dependencyManifestCacheCounters } from "./dependency-manifest.js";
import { ManifestCache, MAX_CACHED_FILES, MAX_CACHED_TEXT_BYTES, MAX_CACHED_TEXT_ENTRY_BYTES, RACY_WINDOW_MS } from "./manifest-cache.js";
import { rootManifestCacheCounters } from "./root-manifest.js";
import { installPackage, makeTempDir, writeFiles } from "../test-support/temp-tree.js";
import { waitFor } from "../test-support/recording-provider.js";

// A repeated discovery reuses what it read from manifests whose identity (device, inode, size,
// mtime, ctime) is unchanged, and must still see every change: rewritten in place with the same
// size, renamed over, deleted, added, turned into a FIFO or a huge file, a symlink re-pointed.
// The cache only trusts files older than RACY_WINDOW_MS, so the projects are built first and the
// tests start once every file has aged past it.

const LAYOUTS = ["npm", "pnpm"] as const;
type Layout = (typeof LAYOUTS)[number];
const SCENARIOS = [
  "unchanged",
  "rewrite",
  "rename",
  "delete",
  "add",
  "becomes-provider",
  "fifo",
  "huge",
  "reinstall",
  "root-change",
] as const;
type Scenario = (typeof SCENARIOS)[number];

let tmp: { dir: string; cleanup: () => void };
let home: string;
const children: ChildProcess[] = [];
const canMkfifo = process.platform !== "win32" && spawnSync("mkfifo", ["--help"]).error === undefined;

const projectDir = (layout: Layout, scenario: Scenario) => path.join(tmp.dir, `${layout}-${scenario}`);
const discover = (cwd: string) => discoverMemoryProviders({ hermesHome: home, cwd, env: {}, packageRoots: [cwd] });
const names = async (cwd: string) => (await discover(cwd)).providers.map((p) => p.name).sort();
/** A manifest whose JSON text has the same length for every 4-letter `tag`. */
const memA = (tag: string, extra: Record<string, unknown> = {}) => ({
  name: "mem-a",
  hermesMemoryProvider: { name: "alpha", description: `alpha ${tag}` },
  main: "index.js",
  ...extra,
});
/** mem-a's package.json as `installPackage` writes it. */
const memAText = (tag: string) => JSON.stringify({ version: "1.0.0", ...memA(tag) }, null, 2);
const rootManifest = (deps: string[]) => ({ name: "host", private: true, dependencies: Object.fromEntries(deps.map((d) => [d, "1"])) });
const PLAIN = ["plain-1", "plain-2", "plain-3", "plain-4", "plain-5"];

/** The package.json discovery reads for `name` (through pnpm's symlink). */
const manifestOf = (cwd: string, name: string) => path.join(cwd, "node_modules", name, "package.json");
/** The mtime npm gives every file it installs (whole seconds, so it can be set back exactly). */
const NPM_MTIME = new Date("1985-10-26T08:15:00Z");

function buildProject(cwd: string, layout: Layout): void {
  writeFiles(cwd, { "package.json": rootManifest(["mem-a", "mem-b", ...PLAIN]) });
  installPackage(cwd, layout, memA("aaaa"), { "index.js": "" });
  installPackage(cwd, layout, { name: "mem-b", hermesMemoryProvider: "beta", main: "index.js" }, { "index.js": "" });
  installPackage(cwd, layout, { name: "mem-c", hermesMemoryProvider: "gamma", main: "index.js" }, { "index.js": "" });
  for (const name of PLAIN) installPackage(cwd, layout, { name, main: "index.js", description: "not a provider" }, { "index.js": "" });
  for (const name of ["mem-a", "mem-b", "mem-c", ...PLAIN]) fs.utimesSync(manifestOf(cwd, name), NPM_MTIME, NPM_MTIME);
}

function newestChange(dir: string): number {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const stat = fs.lstatSync(path.join(entry.parentPath, entry.name));
    newest = Math.max(newest, stat.ctimeMs, stat.mtimeMs);
  }
  return newest;
}

beforeAll(async () => {
  tmp = makeTempDir("hermes-discovery-cache-");
  home = path.join(tmp.dir, "home");
  fs.mkdirSync(home);
  for (const layout of LAYOUTS) for (const scenario of SCENARIOS) buildProject(projectDir(layout, scenario), layout);
  const built = newestChange(tmp.dir);
  await waitFor(() => Date.now() > built + RACY_WINDOW_MS + 100, RACY_WINDOW_MS + 10_000);
}, 60_000);
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
});
afterAll(() => tmp.cleanup());

/**
 * Discover three times on the aged tree: the first read of a manifest takes no identity, the second
 * is remembered, the third must reuse every manifest.
 */
async function warm(cwd: string): Promise<void> {
  expect(await names(cwd)).toEqual(["alpha", "beta"]);
  expect(await names(cwd)).toEqual(["alpha", "beta"]);
  const before = dependencyManifestCacheCounters().hits + rootManifestCacheCounters().hits;
  expect(await names(cwd)).toEqual(["alpha", "beta"]);
  expect(dependencyManifestCacheCounters().hits + rootManifestCacheCounters().hits - before).toBe(2 + PLAIN.length + 1);
}

describe.each(LAYOUTS)("a repeated discovery (%s layout)", (layout) => {
  it("reuses every unchanged manifest (one stat each) from the third call on, and returns the same result", async () => {
    const cwd = projectDir(layout, "unchanged");
    const first = await discover(cwd);
    expect(dependencyManifestCacheCounters().entries).toBeGreaterThanOrEqual(2 + PLAIN.length);
    expect(await discover(cwd)).toEqual(first);
    const misses = dependencyManifestCacheCounters().misses;
    const hits = dependencyManifestCacheCounters().hits;
    const second = await discover(cwd);
    expect(second).toEqual(first);
    expect(dependencyManifestCacheCounters().hits - hits).toBe(2 + PLAIN.length);
    expect(dependencyManifestCacheCounters().misses).toBe(misses);
  });

  it("sees a manifest rewritten in place with the same size, inode and mtime", async () => {
    const cwd = projectDir(layout, "rewrite");
    await warm(cwd);
    const file = manifestOf(cwd, "mem-a");
    const before = fs.statSync(file);
    fs.writeFileSync(file, memAText("bbbb"));
    // Installers pin mtime: put it back, so only ctime tells the change.
    fs.utimesSync(file, NPM_MTIME, NPM_MTIME);
    const after = fs.statSync(file);
    expect([after.ino, after.size, after.mtimeMs]).toEqual([before.ino, before.size, before.mtimeMs]);
    const { providers } = await discover(cwd);
    expect(providers.find((p) => p.name === "alpha")!.description).toBe("alpha bbbb");
  });

  it("sees a manifest renamed over the old one", async () => {
    const cwd = projectDir(layout, "rename");
    await warm(cwd);
    const file = manifestOf(cwd, "mem-a");
    fs.writeFileSync(`${file}.tmp`, memAText("cccc"));
    fs.renameSync(`${file}.tmp`, file);
    const { providers } = await discover(cwd);
    expect(providers.find((p) => p.name === "alpha")!.description).toBe("alpha cccc");
  });

  it("forgets a deleted manifest and an uninstalled package", async () => {
    const cwd = projectDir(layout, "delete");
    await warm(cwd);
    fs.rmSync(manifestOf(cwd, "mem-a"));
    expect(await names(cwd)).toEqual(["beta"]);
    fs.rmSync(path.join(cwd, "node_modules", "mem-b"), { recursive: true });
    const result = await discover(cwd);
    expect(result.providers).toEqual([]);
    expect(result.problems).toEqual([]);
  });

  it("finds a dependency added to the project and installed", async () => {
    const cwd = projectDir(layout, "add");
    await warm(cwd);
    installPackage(cwd, layout, { name: "mem-d", hermesMemoryProvider: "delta", main: "index.js" }, { "index.js": "" });
    writeFiles(cwd, { "package.json": rootManifest(["mem-a", "mem-b", ...PLAIN, "mem-d"]) });
    expect(await names(cwd)).toEqual(["alpha", "beta", "delta"]);
  });

  it("finds a dependency whose manifest starts declaring a provider", async () => {
    const cwd = projectDir(layout, "becomes-provider");
    await warm(cwd);
    writeFiles(fs.realpathSync(path.join(cwd, "node_modules", "plain-3")), {
      "package.json": { name: "plain-3", main: "index.js", hermesMemoryProvider: "late" },
    });
    expect(await names(cwd)).toEqual(["alpha", "beta", "late"]);
  });

  it.skipIf(!canMkfifo)("refuses a manifest replaced by a FIFO at once, without blocking", async () => {
    const cwd = projectDir(layout, "fifo");
    await warm(cwd);
    const file = manifestOf(cwd, "mem-a");
    fs.rmSync(file);
    expect(spawnSync("mkfifo", [file]).status).toBe(0);
    // A reader blocked on the FIFO would wait forever: a writer opens it later and releases it.
    children.push(spawn("sh", ["-c", `sleep 3; : > "$1"`, "sh", file], { stdio: "ignore" }));
    const started = performance.now();
    const result = await discover(cwd);
    expect(performance.now() - started).toBeLessThan(2000);
    expect(result.providers.map((p) => p.name)).toEqual(["beta"]);
    expect(result.problems).toMatchObject([{ code: "INVALID_MANIFEST", location: file }]);
    expect(result.problems[0]!.message).toContain("not a regular file");
  });

  it("refuses a manifest rewritten past the size cap, without reading it whole", async () => {
    const cwd = projectDir(layout, "huge");
    await warm(cwd);
    fs.writeFileSync(manifestOf(cwd, "mem-a"), JSON.stringify(memA("aaaa", { description: "x".repeat(5 * 1024 * 1024) })));
    const result = await discover(cwd);
    expect(result.providers.map((p) => p.name)).toEqual(["beta"]);
    expect(result.problems).toMatchObject([{ code: "INVALID_MANIFEST" }]);
    expect(result.problems[0]!.message).toMatch(/larger than 4 MiB/);
  });

  it("sees a package reinstalled at another version (npm renames a new folder in, pnpm re-points its symlink)", async () => {
    const cwd = projectDir(layout, "reinstall");
    await warm(cwd);
    const staging = path.join(tmp.dir, `${layout}-staging`);
    const fresh = installPackage(staging, layout, memA("dddd", { version: "2.0.0" }), { "index.js": "" });
    const link = path.join(cwd, "node_modules", "mem-a");
    if (layout === "npm") {
      fs.rmSync(link, { recursive: true });
      fs.renameSync(fresh, link);
    } else {
      fs.rmSync(link);
      fs.symlinkSync(fresh, link, "dir");
    }
    const alpha = (await discover(cwd)).providers.find((p) => p.name === "alpha")!;
    expect([alpha.version, alpha.description]).toEqual(["2.0.0", "alpha dddd"]);
  });

  it("follows the project's package.json when its dependencies change (same size)", async () => {
    const cwd = projectDir(layout, "root-change");
    await warm(cwd);
    writeFiles(cwd, { "package.json": rootManifest(["mem-a", "mem-c", ...PLAIN]) });
    expect(await names(cwd)).toEqual(["alpha", "gamma"]);
  });
});

describe("files changed within the racy window", () => {
  it("are read again on every call until they are older than the window, so a same-size rewrite in the same clock tick is seen", async () => {
    const cwd = path.join(tmp.dir, "fresh");
    buildProject(cwd, "npm");
    const before = dependencyManifestCacheCounters().hits + rootManifestCacheCounters().hits;
    expect(await names(cwd)).toEqual(["alpha", "beta"]);
    expect(await names(cwd)).toEqual(["alpha", "beta"]);
    fs.writeFileSync(manifestOf(cwd, "mem-a"), memAText("eeee"));
    const { providers } = await discover(cwd);
    expect(providers.find((p) => p.name === "alpha")!.description).toBe("alpha eeee");
    expect(await names(cwd)).toEqual(["alpha", "beta"]);
    expect(dependencyManifestCacheCounters().hits + rootManifestCacheCounters().hits).toBe(before);
  });
});

describe("ManifestCache bounds", () => {
  const agedStat = () => fs.statSync(path.join(projectDir("npm", "unchanged"), "package.json"));

  it("keeps at most MAX_CACHED_FILES files, forgetting the oldest first", () => {
    const cache = new ManifestCache<number>();
    const stat = agedStat();
    for (let i = 0; i < MAX_CACHED_FILES + 10; i++) cache.remember(`/f/${i}`, stat, Date.now(), i);
    expect(cache.counters().entries).toBe(MAX_CACHED_FILES);
    expect(cache.has("/f/0")).toBe(false);
    expect(cache.lookup(`/f/${MAX_CACHED_FILES + 9}`, stat)).toBe(MAX_CACHED_FILES + 9);
  });

  it("keeps at most MAX_CACHED_TEXT_BYTES of text and never a text over MAX_CACHED_TEXT_ENTRY_BYTES", () => {
    const cache = new ManifestCache<string>();
    const stat = agedStat();
    const count = MAX_CACHED_TEXT_BYTES / MAX_CACHED_TEXT_ENTRY_BYTES + 10;
    for (let i = 0; i < count; i++) cache.remember(`/t/${i}`, stat, Date.now(), "text", MAX_CACHED_TEXT_ENTRY_BYTES);
    expect(cache.counters().textBytes).toBeLessThanOrEqual(MAX_CACHED_TEXT_BYTES);
    expect(cache.has("/t/0")).toBe(false);
    expect(cache.has(`/t/${count - 1}`)).toBe(true);
    cache.remember("/big", stat, Date.now(), "big", MAX_CACHED_TEXT_ENTRY_BYTES + 1);
    expect(cache.has("/big")).toBe(false);
  });

  it("does not remember a file changed within RACY_WINDOW_MS of its read", () => {
    const cache = new ManifestCache<number>();
    const stat = agedStat();
    cache.remember("/racy", stat, Math.max(stat.ctimeMs, stat.mtimeMs) + RACY_WINDOW_MS - 1, 1);
    expect(cache.has("/racy")).toBe(false);
    cache.remember("/settled", stat, Math.max(stat.ctimeMs, stat.mtimeMs) + RACY_WINDOW_MS + 1, 1);
    expect(cache.lookup("/settled", stat)).toBe(1);
  });
});
