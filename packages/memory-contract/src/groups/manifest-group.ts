import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describeError, type DiscoveredProvider, type PackageProviderManifest } from "@hermes/memory-core";
import { fail, pass, skip, type ContractContext } from "../clause-runner.js";
import { discoverPackage, loadFromPackage } from "../core-discovery.js";
import { readProviderPackage, type ProviderPackage } from "../provider-package.js";

const TRIPWIRE = Symbol.for("@hermes/memory-contract.discovery-tripwire");

function tripwireCount(): number {
  return ((globalThis as Record<symbol, unknown>)[TRIPWIRE] as number | undefined) ?? 0;
}

/** A copy of the package holding only package.json and an entry that counts its evaluations. */
function createTripwirePackage(pkg: ProviderPackage, entry: string): { dir: string; dispose(): void } {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "hermes-contract-tripwire-")));
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify(pkg.packageJson));
  const file = path.resolve(dir, entry);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  // Valid as ESM and CommonJS, so it fires whatever the entry's module type.
  fs.writeFileSync(
    file,
    `globalThis[Symbol.for("@hermes/memory-contract.discovery-tripwire")] = (globalThis[Symbol.for("@hermes/memory-contract.discovery-tripwire")] ?? 0) + 1;\n`,
  );
  return { dir, dispose: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** MANIFEST: the package.json manifest, its entry, loading and discovery, all through core. */
export async function runManifestGroup(ctx: ContractContext): Promise<void> {
  const packageDir = ctx.setup.packageDir;
  let pkg: ProviderPackage | undefined;
  let declared: PackageProviderManifest | undefined;
  let discovered: DiscoveredProvider | undefined;

  await ctx.clause("C-MANIFEST-1", async () => {
    pkg = readProviderPackage(packageDir!);
    if (pkg.errors.length > 0) return fail(pkg.errors.join("; "));
    declared = pkg.providers.find((p) => p.name === ctx.setup.name);
    if (!declared) {
      return fail(
        `the manifest declares ${pkg.providers.map((p) => JSON.stringify(p.name)).join(", ")}, not setup.name ${JSON.stringify(ctx.setup.name)}`,
      );
    }
    return pass();
  });

  await ctx.clause("C-MANIFEST-2", async () => {
    if (!pkg || !declared) return skip("the manifest is not valid (see C-MANIFEST-1)");
    const name = declared.name;
    const result = await discoverPackage(pkg.packageName, pkg.dir, ctx.sandbox.newHermesHome("manifest-entry"));
    discovered = result.providers.find((p) => p.name === name);
    if (discovered) return pass();
    const refused = result.problems.filter((p) => p.name === name || p.location.startsWith(pkg!.dir));
    return fail(
      refused.length > 0
        ? refused.map((p) => `${p.code}: ${p.message}`).join("; ")
        : `core's discovery did not list ${JSON.stringify(name)} from a host project depending on ${pkg.packageName}`,
    );
  });

  await ctx.clause("C-MANIFEST-3", async () => {
    if (!pkg || !declared || !discovered) return skip("no resolvable entry (see C-MANIFEST-1/2)");
    let provider;
    try {
      provider = await loadFromPackage(pkg.packageName, pkg.dir, declared.name, ctx.sandbox.newHermesHome("manifest-register"));
    } catch (error) {
      return fail(`core's loadMemoryProvider refused it: ${describeError(error)}`);
    }
    if (provider.name !== declared.name) {
      return fail(`the loaded provider is named ${JSON.stringify(provider.name)}, the manifest says ${JSON.stringify(declared.name)}`);
    }
    return pass();
  });

  await ctx.clause("C-MANIFEST-4", async () => {
    if (!pkg || !declared) return skip("the manifest is not valid (see C-MANIFEST-1)");
    if (!discovered) return fail("core's discovery did not list the provider (see C-MANIFEST-2)");
    if (discovered.source !== "package")
      return fail(`discovery listed it from source ${JSON.stringify(discovered.source)}, expected "package"`);
    // Same manifest, but the entry is a tripwire: if listing evaluated it, the counter moves.
    const tripwire = createTripwirePackage(pkg, path.relative(pkg.dir, discovered.entry));
    try {
      const before = tripwireCount();
      const second = await discoverPackage(pkg.packageName, tripwire.dir, ctx.sandbox.newHermesHome("manifest-discovery"));
      if (tripwireCount() !== before) return fail("discovering the package imported its entry module");
      if (!second.providers.some((p) => p.name === declared!.name)) {
        return fail("discovery needed more than package.json and the entry file to list the provider");
      }
    } finally {
      tripwire.dispose();
    }
    return pass();
  });
}
