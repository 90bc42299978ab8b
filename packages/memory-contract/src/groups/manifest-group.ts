import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describeError, isMemoryProvider } from "@hermes/memory-core";
import { fail, pass, skip, type ContractContext } from "../clause-runner.js";
import { coreDiscover } from "../core-discovery.js";
import { createHostRoot } from "../host-root.js";
import { collectModuleRegistration } from "../provider-module.js";
import {
  manifestEntryPath,
  readProviderPackage,
  resolveManifestEntry,
  type ProviderManifestEntry,
  type ProviderPackage,
} from "../provider-manifest.js";

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
  fs.writeFileSync(file, `globalThis[Symbol.for("@hermes/memory-contract.discovery-tripwire")] = (globalThis[Symbol.for("@hermes/memory-contract.discovery-tripwire")] ?? 0) + 1;\n`);
  return { dir, dispose: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** MANIFEST: the package.json manifest, its entry, register(ctx) and discovery. */
export async function runManifestGroup(ctx: ContractContext): Promise<void> {
  const packageDir = ctx.setup.packageDir;
  let pkg: ProviderPackage | undefined;
  let declared: ProviderManifestEntry | undefined;
  let entryFile: string | undefined;

  await ctx.clause("C-MANIFEST-1", async () => {
    pkg = readProviderPackage(packageDir!);
    if (pkg.errors.length > 0) return fail(pkg.errors.join("; "));
    declared = pkg.providers.find((p) => p.name === ctx.setup.name);
    if (!declared) {
      return fail(`the manifest declares ${pkg.providers.map((p) => JSON.stringify(p.name)).join(", ")}, not setup.name ${JSON.stringify(ctx.setup.name)}`);
    }
    return pass();
  });

  await ctx.clause("C-MANIFEST-2", async () => {
    if (!pkg || !declared) return skip("the manifest is not valid (see C-MANIFEST-1)");
    const resolved = resolveManifestEntry(pkg, declared);
    if (resolved.problem) return fail(resolved.problem);
    entryFile = resolved.file;
    return pass();
  });

  await ctx.clause("C-MANIFEST-3", async () => {
    if (!pkg || !declared || !entryFile) return skip("no resolvable entry (see C-MANIFEST-1/2)");
    const home = ctx.sandbox.newHermesHome("manifest-register");
    const { registered, via, registerError } = await collectModuleRegistration(entryFile, declared.name, home);
    if (registerError !== undefined) return fail(`register(ctx) threw: ${describeError(registerError)}`);
    if (via === "none") return fail("the entry exports neither register(ctx) nor a default provider instance or class");
    if (registered.length !== 1) return fail(`register(ctx) registered ${registered.length} providers, expected exactly one`);
    const provider = registered[0];
    if (!isMemoryProvider(provider)) return fail("register(ctx) registered something that is not a MemoryProvider");
    if (provider.name !== declared.name) {
      return fail(`the registered provider is named ${JSON.stringify(provider.name)}, the manifest says ${JSON.stringify(declared.name)}`);
    }
    return pass(via === "register" ? undefined : `no register(ctx); the loader's fallback (${via}) was used`);
  });

  await ctx.clause("C-MANIFEST-4", async () => {
    if (!pkg || !declared) return skip("the manifest is not valid (see C-MANIFEST-1)");
    const discover = coreDiscover();
    if (!discover) return skip("the installed @hermes/memory-core has no discoverMemoryProviders()");
    const discoverFrom = async (dir: string) => {
      const host = createHostRoot(pkg!.packageName, dir);
      try {
        const result = await discover({
          packageRoots: [host.root],
          hermesHome: ctx.sandbox.newHermesHome("manifest-discovery"),
          cwd: host.root,
          enableProjectPlugins: false,
        });
        return { result, found: result.providers.find((p) => p.name === declared!.name) };
      } finally {
        host.dispose();
      }
    };
    const { result, found } = await discoverFrom(pkg.dir);
    if (!found) {
      const problems = result.problems.map((p) => `${p.code}: ${p.message}`).join("; ");
      return fail(`discovery did not list ${JSON.stringify(declared.name)}${problems ? ` (problems: ${problems})` : ""}`);
    }
    if (found.source !== "package") return fail(`discovery listed it from source ${JSON.stringify(found.source)}, expected "package"`);
    // Same manifest, but the entry is a tripwire: if listing evaluated it, the counter moves.
    const tripwire = createTripwirePackage(pkg, manifestEntryPath(pkg, declared));
    try {
      const before = tripwireCount();
      const second = await discoverFrom(tripwire.dir);
      if (tripwireCount() !== before) return fail("discovering the package imported its entry module");
      if (!second.found) return fail("discovery needed more than package.json and the entry file to list the provider");
    } finally {
      tripwire.dispose();
    }
    return pass();
  });
}
