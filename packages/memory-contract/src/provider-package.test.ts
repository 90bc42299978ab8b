import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { contractSettings, readProviderPackage, selectManifestProvider } from "./provider-package.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function pkgDir(packageJson: Record<string, unknown>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "contract-manifest-"));
  dirs.push(dir);
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify(packageJson));
  return dir;
}

describe("readProviderPackage", () => {
  it("reads string and object manifests through core's parser, and the kit's contract settings beside them", () => {
    const a = readProviderPackage(pkgDir({ name: "a", hermesMemoryProvider: "alpha" }));
    expect(a.providers).toEqual([{ name: "alpha" }]);
    expect(a.errors).toEqual([]);
    const b = readProviderPackage(
      pkgDir({ name: "b", hermesMemoryProvider: { name: "beta", entry: "./x.js", contract: { capabilities: { userScoping: true } } } }),
    );
    expect(b.providers).toEqual([{ name: "beta", entry: "./x.js" }]);
    expect(contractSettings(b, "beta")).toEqual({ capabilities: { userScoping: true } });
    expect(contractSettings(b, "other")).toBeUndefined();
  });

  it("reports missing, invalid, reserved and duplicate manifests", () => {
    expect(readProviderPackage(pkgDir({ name: "c" })).errors).toEqual(['package.json has no "hermesMemoryProvider" field']);
    expect(readProviderPackage(pkgDir({ name: "d", hermesMemoryProvider: "builtin" })).errors[0]).toContain(
      "reserved for the built-in memory",
    );
    expect(readProviderPackage(pkgDir({ name: "d2", hermesMemoryProvider: "Not Valid" })).errors[0]).toContain("does not match");
    expect(readProviderPackage(pkgDir({ name: "e", hermesMemoryProvider: [{ name: "x" }, { name: "x" }] })).errors).toEqual([
      'provider "x" is declared more than once',
    ]);
    expect(readProviderPackage(pkgDir({ name: "f", hermesMemoryProvider: { name: "f", contract: "yes" } })).errors).toEqual([
      'hermesMemoryProvider "f": contract must be an object',
    ]);
    expect(() => readProviderPackage(os.tmpdir() + "/does-not-exist-contract")).toThrow();
  });

  it("selects the provider by name or refuses ambiguity", () => {
    const many = readProviderPackage(pkgDir({ name: "m", hermesMemoryProvider: [{ name: "one" }, { name: "two" }] }));
    expect(selectManifestProvider(many, "two").name).toBe("two");
    expect(() => selectManifestProvider(many)).toThrow(/--provider/);
    expect(() => selectManifestProvider(many, "three")).toThrow(/declares no provider named 'three'/);
  });
});
