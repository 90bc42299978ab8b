/**
 * A native module installed without its install script (the addon never built) fails as one
 * typed error naming the fix — on real module files: a copy of better-sqlite3 without its build
 * folder, and an addon file Node cannot load.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HermesMemoryError } from "@hermes/memory-core";
import { createNativeModuleLoader, isNativeAddonFailure, NATIVE_MODULE_MISSING } from "./native-module.js";
import { createSqliteDriverLoader, openSqliteStore, type SqliteStoreSpec } from "./sqlite-store.js";

let dir: string;
beforeEach(() => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "kit-native-")));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A package folder in `dir` that resolves modules from `dir/node_modules`, as a provider does. */
const from = () => pathToFileURL(path.join(dir, "provider.js"));

/** better-sqlite3 as `npm install --ignore-scripts` leaves it: everything but the built addon. */
function betterSqliteWithoutBuild(): void {
  const real = path.dirname(createRequire(import.meta.url).resolve("better-sqlite3/package.json"));
  const target = path.join(dir, "node_modules", "better-sqlite3");
  fs.mkdirSync(target, { recursive: true });
  fs.cpSync(path.join(real, "lib"), path.join(target, "lib"), { recursive: true });
  fs.copyFileSync(path.join(real, "package.json"), path.join(target, "package.json"));
  // Its own dependency that finds the addon, linked as npm would have placed it.
  const bindings = path.dirname(createRequire(path.join(real, "package.json")).resolve("bindings/package.json"));
  fs.symlinkSync(bindings, path.join(dir, "node_modules", "bindings"), "dir");
}

const expectFix = (error: unknown, module: string, packageName: string) => {
  expect(HermesMemoryError.hasCode(error, NATIVE_MODULE_MISSING)).toBe(true);
  const message = (error as Error).message;
  expect(message).toContain(`${packageName} needs ${module}, whose native addon is not built`);
  expect(message).toContain(`\`npm install-scripts approve ${module}\` then \`npm rebuild ${module}\``);
  expect(message).toContain(`\`npm install -g --allow-scripts=${module} ${packageName}\``);
  expect(message).toContain(`\`pnpm approve-builds\` then \`pnpm rebuild ${module}\``);
};

describe("better-sqlite3 without its built addon", () => {
  it("the driver loader reports NATIVE_MODULE_MISSING with the fix, where a bare require succeeds", () => {
    betterSqliteWithoutBuild();
    // The module itself loads: the addon is reached only when a database opens.
    expect(typeof createRequire(from())("better-sqlite3")).toBe("function");
    const loader = createSqliteDriverLoader(from(), "@acme/notes");
    expect(loader.load()).toBeUndefined();
    expectFix(loader.error(), "better-sqlite3", "@acme/notes");
    expect(String((loader.error() as Error).message)).toContain("(Could not locate the bindings file). Its install script did not run");
  });

  it("opening a store throws that error as it is, with the loader's error or with a driver imported directly", () => {
    betterSqliteWithoutBuild();
    const loader = createSqliteDriverLoader(from(), "@acme/notes");
    const spec = (driver: SqliteStoreSpec["driver"], driverError?: unknown): SqliteStoreSpec => ({
      driver,
      ...(driverError !== undefined ? { driverError } : {}),
      unavailable: "better-sqlite3 could not be loaded",
      label: "notes database",
      packageName: "@acme/notes",
      schemaVersion: 1,
      migrate: () => {},
    });
    const file = path.join(dir, "home", "notes.sqlite");
    let error: unknown;
    try {
      openSqliteStore(file, spec(loader.load(), loader.error()));
    } catch (e) {
      error = e;
    }
    expectFix(error, "better-sqlite3", "@acme/notes");
    error = undefined;
    try {
      openSqliteStore(file, spec(createRequire(from())("better-sqlite3")));
    } catch (e) {
      error = e;
    }
    expectFix(error, "better-sqlite3", "@acme/notes");
  });
});

describe("createNativeModuleLoader", () => {
  it("an addon file Node cannot load (built for another platform) is NATIVE_MODULE_MISSING too", () => {
    fs.mkdirSync(path.join(dir, "node_modules", "fake-addon"), { recursive: true });
    fs.writeFileSync(path.join(dir, "node_modules", "fake-addon", "addon.node"), "not an ELF file");
    fs.writeFileSync(path.join(dir, "node_modules", "fake-addon", "index.js"), 'module.exports = require("./addon.node");\n');
    const loader = createNativeModuleLoader<unknown>(from(), "fake-addon", "@acme/vectors");
    expect(() => loader.require()).toThrow(/@acme\/vectors needs fake-addon/);
    expectFix(loader.error(), "fake-addon", "@acme/vectors");
    expect(isNativeAddonFailure((loader.error() as Error).cause)).toBe(true);
  });

  it("any other failure is kept as thrown, and the outcome is remembered", () => {
    fs.mkdirSync(path.join(dir, "node_modules", "broken"), { recursive: true });
    fs.writeFileSync(
      path.join(dir, "node_modules", "broken", "index.js"),
      'globalThis.__brokenLoads = (globalThis.__brokenLoads ?? 0) + 1;\nthrow new Error("broken on purpose");\n',
    );
    const loader = createNativeModuleLoader<unknown>(from(), "broken", "@acme/vectors");
    expect(loader.load()).toBeUndefined();
    expect(loader.load()).toBeUndefined();
    expect(() => loader.require()).toThrow("broken on purpose");
    expect(HermesMemoryError.isInstance(loader.error())).toBe(false);
    expect((globalThis as { __brokenLoads?: number }).__brokenLoads).toBe(1);
    expect(createNativeModuleLoader<unknown>(from(), "not-installed-anywhere", "@acme/vectors").load()).toBeUndefined();
  });

  it("a module that loads is returned once probed", () => {
    fs.mkdirSync(path.join(dir, "node_modules", "fine"), { recursive: true });
    fs.writeFileSync(path.join(dir, "node_modules", "fine", "index.js"), "module.exports = { answer: 42 };\n");
    const probed: unknown[] = [];
    const loader = createNativeModuleLoader<{ answer: number }>(from(), "fine", "@acme/vectors", (m) => probed.push(m.answer));
    expect(loader.require().answer).toBe(42);
    expect(loader.load()!.answer).toBe(42);
    expect(probed).toEqual([42]);
    expect(loader.error()).toBeUndefined();
  });
});
