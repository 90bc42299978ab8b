import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { discoverMemoryProviders } from "./discover.js";
import { parseHermesMemoryProviderField, parsePluginYaml } from "./manifest.js";
import { installPackage, makeTempDir, writeFiles } from "../test-support/temp-tree.js";

// Hostile files in the places discovery reads: discovery must return (quickly) and report a
// problem, never throw, hang on a FIFO or read an endless device into memory.

let tmp: { dir: string; cleanup: () => void };
let home: string;
let cwd: string;
const children: ChildProcess[] = [];

beforeEach(() => {
  tmp = makeTempDir("hermes-discovery-hostile-");
  home = path.join(tmp.dir, "home");
  cwd = path.join(tmp.dir, "work");
  fs.mkdirSync(home, { recursive: true });
  fs.mkdirSync(cwd, { recursive: true });
  writeFiles(cwd, { "package.json": { name: "host", private: true } });
});
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  tmp.cleanup();
});

const opts = (extra: Record<string, unknown> = {}) => ({ hermesHome: home, cwd, env: {}, packageRoots: [], ...extra });
const canMkfifo = process.platform !== "win32" && spawnSync("mkfifo", ["--help"]).error === undefined;

function mkfifo(file: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  expect(spawnSync("mkfifo", [file]).status).toBe(0);
}

/**
 * A reader blocked on a FIFO would wait forever (a synchronous one freezes the process, so no
 * test timeout could fire): a helper process opens the FIFO for writing after `ms` and closes it,
 * which releases such a reader with end-of-file. A fixed discovery never waits for it.
 */
function releaseFifoAfter(file: string, ms: number): void {
  children.push(spawn("sh", ["-c", `sleep ${ms / 1000}; : > "$1"`, "sh", file], { stdio: "ignore" }));
}

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - started };
}

describe("hostile plugin.yaml", () => {
  it("an alias bomb is an INVALID_MANIFEST problem, not a thrown ReferenceError", async () => {
    const bomb = ["a: &a [x, x, x, x, x, x, x, x, x]"];
    for (const [name, prev] of [
      ["b", "a"],
      ["c", "b"],
      ["d", "c"],
      ["e", "d"],
      ["f", "e"],
      ["g", "f"],
    ]) {
      bomb.push(`${name}: &${name} [${Array(9).fill(`*${prev}`).join(", ")}]`);
    }
    writeFiles(path.join(home, "plugins", "bomb"), { "plugin.yaml": `${bomb.join("\n")}\nname: bomb\n`, "index.js": "" });
    writeFiles(path.join(home, "plugins", "good"), { "plugin.yaml": "name: good\n", "index.js": "" });
    expect(parsePluginYaml(`${bomb.join("\n")}\n`)).toMatchObject({ ok: false });
    const result = await discoverMemoryProviders(opts());
    expect(result.providers.map((p) => p.name)).toEqual(["good"]);
    expect(result.problems).toMatchObject([{ code: "INVALID_MANIFEST", location: path.join(home, "plugins", "bomb", "plugin.yaml") }]);
    expect(result.problems[0]!.message).toMatch(/alias/i);
  });

  it.skipIf(!canMkfifo)("a FIFO named plugin.yaml is refused at once, without waiting for a writer", async () => {
    const fifo = path.join(home, "plugins", "fifo", "plugin.yaml");
    mkfifo(fifo);
    writeFiles(path.join(home, "plugins", "fifo"), { "index.js": "" });
    writeFiles(path.join(home, "plugins", "good"), { "plugin.yaml": "name: good\n", "index.js": "" });
    releaseFifoAfter(fifo, 3000);
    const { value: result, ms } = await timed(() => discoverMemoryProviders(opts()));
    expect(ms).toBeLessThan(2000);
    expect(result.providers.map((p) => p.name)).toEqual(["good"]);
    expect(result.problems).toMatchObject([{ code: "INVALID_MANIFEST", location: fifo }]);
    expect(result.problems[0]!.message).toContain("not a regular file");
  });

  it.skipIf(process.platform === "win32")("a plugin.yaml symlinked to /dev/zero is refused without reading it", async () => {
    writeFiles(path.join(home, "plugins", "zero"), { "index.js": "" });
    fs.symlinkSync("/dev/zero", path.join(home, "plugins", "zero", "plugin.yaml"));
    const { value: result, ms } = await timed(() => discoverMemoryProviders(opts()));
    expect(ms).toBeLessThan(500);
    expect(result.problems).toMatchObject([{ code: "INVALID_MANIFEST" }]);
    expect(result.problems[0]!.message).toContain("not a regular file");
  });

  it("a plugin.yaml over the size cap is refused before it is parsed", async () => {
    writeFiles(path.join(home, "plugins", "huge"), {
      "plugin.yaml": `name: huge\ndescription: ${"x".repeat(2 * 1024 * 1024)}\n`,
      "index.js": "",
    });
    const result = await discoverMemoryProviders(opts());
    expect(result.providers).toEqual([]);
    expect(result.problems).toMatchObject([{ code: "INVALID_MANIFEST" }]);
    expect(result.problems[0]!.message).toMatch(/larger than 1 MiB/);
    expect(result.problems[0]!.message.length).toBeLessThan(1000);
  });

  it("a long scalar plugin.yaml is described briefly in the problem, not quoted whole", async () => {
    writeFiles(path.join(home, "plugins", "scalar"), { "plugin.yaml": `${"y".repeat(100_000)}\n`, "index.js": "" });
    const result = await discoverMemoryProviders(opts());
    expect(result.problems).toMatchObject([{ code: "INVALID_MANIFEST" }]);
    expect(result.problems[0]!.message.length).toBeLessThan(1000);
  });
});

describe("hostile package.json", () => {
  const host = (deps: Record<string, string>) => writeFiles(cwd, { "package.json": { name: "host", private: true, dependencies: deps } });

  it("a provider name that is an object with a non-callable toString is a problem, not a thrown TypeError", async () => {
    installPackage(cwd, "npm", { name: "weird", hermesMemoryProvider: { name: { toString: 1 } } }, { "index.js": "" });
    installPackage(cwd, "npm", { name: "fine", hermesMemoryProvider: "fine" }, { "index.js": "" });
    host({ weird: "1", fine: "1" });
    expect(parseHermesMemoryProviderField({ name: { toString: 1 } }).errors).toHaveLength(1);
    const result = await discoverMemoryProviders(opts({ packageRoots: [cwd] }));
    expect(result.providers.map((p) => p.name)).toEqual(["fine"]);
    expect(result.problems).toMatchObject([{ code: "INVALID_NAME" }]);
  });

  it("a missing provider name is reported as missing", () => {
    expect(parseHermesMemoryProviderField({ entry: "./i.js" }).errors).toEqual([
      "hermesMemoryProvider.name: the name must be a string, got nothing (the field is missing)",
    ]);
  });

  it.skipIf(!canMkfifo)("a dependency whose package.json is a FIFO is reported at once; discovery does not block the process", async () => {
    installPackage(cwd, "npm", { name: "fine", hermesMemoryProvider: "fine" }, { "index.js": "" });
    const fifo = path.join(cwd, "node_modules", "fifo-pkg", "package.json");
    mkfifo(fifo);
    host({ "fifo-pkg": "1", fine: "1" });
    releaseFifoAfter(fifo, 3000);
    const { value: result, ms } = await timed(() => discoverMemoryProviders(opts({ packageRoots: [cwd] })));
    expect(ms).toBeLessThan(2000);
    expect(result.providers.map((p) => p.name)).toEqual(["fine"]);
    expect(result.problems).toMatchObject([{ code: "INVALID_MANIFEST", location: fifo }]);
    expect(result.problems[0]!.message).toContain("not a regular file");
  });

  it.skipIf(!canMkfifo)("a package root whose package.json is a FIFO is reported at once", async () => {
    const root = path.join(tmp.dir, "fifo-root");
    mkfifo(path.join(root, "package.json"));
    releaseFifoAfter(path.join(root, "package.json"), 3000);
    const { value: result, ms } = await timed(() => discoverMemoryProviders(opts({ packageRoots: [root] })));
    expect(ms).toBeLessThan(2000);
    expect(result.problems).toMatchObject([{ code: "INVALID_MANIFEST", location: path.join(root, "package.json") }]);
    expect(result.problems[0]!.message).toContain("not a regular file");
  });

  it("a dependency package.json over the size cap is refused, not read whole", async () => {
    installPackage(
      cwd,
      "npm",
      { name: "huge", hermesMemoryProvider: "huge", description: "x".repeat(5 * 1024 * 1024) },
      { "index.js": "" },
    );
    installPackage(cwd, "npm", { name: "fine", hermesMemoryProvider: "fine" }, { "index.js": "" });
    host({ huge: "1", fine: "1" });
    const result = await discoverMemoryProviders(opts({ packageRoots: [cwd] }));
    expect(result.providers.map((p) => p.name)).toEqual(["fine"]);
    expect(result.problems).toMatchObject([{ code: "INVALID_MANIFEST" }]);
    expect(result.problems[0]!.message).toMatch(/larger than 4 MiB/);
  });
});
