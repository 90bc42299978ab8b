import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readProviderPackage, resolveManifestEntry, selectManifestProvider } from "./provider-manifest.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function pkgDir(packageJson: Record<string, unknown>, files: Record<string, string> = {}): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "contract-manifest-"));
  dirs.push(dir);
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify(packageJson));
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

describe("readProviderPackage", () => {
  it("reads string and object manifests with contract settings", () => {
    const a = readProviderPackage(pkgDir({ name: "a", hermesMemoryProvider: "alpha" }));
    expect(a.providers).toEqual([{ name: "alpha" }]);
    expect(a.errors).toEqual([]);
    const b = readProviderPackage(
      pkgDir({ name: "b", hermesMemoryProvider: { name: "beta", entry: "./x.js", contract: { capabilities: { userScoping: true } } } }),
    );
    expect(b.providers[0]).toEqual({ name: "beta", entry: "./x.js", contract: { capabilities: { userScoping: true } } });
  });

  it("reports missing, invalid and reserved manifests", () => {
    expect(readProviderPackage(pkgDir({ name: "c" })).errors).toEqual(['package.json has no "hermesMemoryProvider" field']);
    expect(readProviderPackage(pkgDir({ name: "d", hermesMemoryProvider: "builtin" })).errors[0]).toContain("not a valid provider name");
    expect(readProviderPackage(pkgDir({ name: "e", hermesMemoryProvider: [{ name: "x" }, { name: "x" }] })).errors).toEqual([
      'provider "x" is declared more than once',
    ]);
    expect(() => readProviderPackage(os.tmpdir() + "/does-not-exist-contract")).toThrow();
  });

  it("resolves the entry inside the package and refuses one outside", () => {
    const inside = readProviderPackage(pkgDir({ name: "f", exports: { ".": { import: "./dist/index.js" } }, hermesMemoryProvider: "f" }, { "dist/index.js": "" }));
    expect(resolveManifestEntry(inside, inside.providers[0]!).file).toBe(path.join(inside.dir, "dist", "index.js"));
    const missing = readProviderPackage(pkgDir({ name: "g", hermesMemoryProvider: { name: "g", entry: "./dist/none.js" } }));
    expect(resolveManifestEntry(missing, missing.providers[0]!).problem).toContain("does not exist");
    const outside = readProviderPackage(pkgDir({ name: "h", hermesMemoryProvider: { name: "h", entry: "../../etc/hostname" } }));
    expect(resolveManifestEntry(outside, outside.providers[0]!).problem).toMatch(/outside the package|does not exist/);
  });

  it("selects the provider by name or refuses ambiguity", () => {
    const many = readProviderPackage(pkgDir({ name: "m", hermesMemoryProvider: [{ name: "one" }, { name: "two" }] }));
    expect(selectManifestProvider(many, "two").name).toBe("two");
    expect(() => selectManifestProvider(many)).toThrow(/--provider/);
    expect(() => selectManifestProvider(many, "three")).toThrow(/declares no provider named 'three'/);
  });
});
