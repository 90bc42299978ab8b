import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { HermesMemoryError, isSearchableMemory, type MemoryProvider } from "@hermes/memory-core";
import type { ContractCapabilities, MemoryProviderContractSetup } from "./contract-setup.js";
import { loadFromHost } from "./core-discovery.js";
import { createHostRoot } from "./host-root.js";
import { contractSettings, readProviderPackage, selectManifestProvider } from "./provider-package.js";

function findUp(start: string, relative: string): string | undefined {
  let dir = path.resolve(start);
  for (;;) {
    const candidate = path.join(dir, relative);
    if (fs.existsSync(candidate)) return candidate;
    const parent = path.dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

/**
 * The package directory the CLI should test: `target` when it is a directory, else a package name
 * resolved from `cwd`'s `node_modules` (walking up), and without a target the nearest package.json
 * at or above `cwd`. Throws `PROVIDER_NOT_FOUND` with what to do when nothing matches.
 */
export function resolvePackageDir(target: string | undefined, cwd: string): string {
  if (!target) {
    const pkg = findUp(cwd, "package.json");
    if (!pkg) {
      throw new HermesMemoryError({
        code: "PROVIDER_NOT_FOUND",
        message: `No package.json at or above ${cwd}. Run hermes-memory-contract inside a provider package, or pass its directory or package name.`,
      });
    }
    return path.dirname(pkg);
  }
  const asPath = path.resolve(cwd, target);
  if (fs.existsSync(asPath) && fs.statSync(asPath).isDirectory()) return asPath;
  const installed = findUp(cwd, path.join("node_modules", ...target.split("/"), "package.json"));
  if (installed) return path.dirname(installed);
  throw new HermesMemoryError({
    code: "PROVIDER_NOT_FOUND",
    message: `'${target}' is neither a directory nor a package installed in node_modules at or above ${cwd}. Install it (npm install ${target}) or pass the package directory.`,
  });
}

/** True when `provider` overrides the base `MemoryProvider` implementation of `method`. */
export function overridesHook(provider: MemoryProvider, method: Extract<keyof MemoryProvider, string>): boolean {
  let proto: object | null = Object.getPrototypeOf(provider) as object | null;
  let base: object | undefined;
  while (proto && proto !== Object.prototype) {
    base = proto;
    proto = Object.getPrototypeOf(proto) as object | null;
  }
  const own = (provider as unknown as Record<string, unknown>)[method];
  return typeof own === "function" && (base === undefined || own !== (base as Record<string, unknown>)[method]);
}

/**
 * Capabilities read off an uninitialised instance: tools = schemas non-empty, checkpoint = API v2,
 * search = `isSearchableMemory`, recall/sessionSwitch/mirrorsBuiltinWrites = the hook is
 * overridden, userScoping = false (declare it in the manifest's `contract.capabilities`).
 */
export function inferCapabilities(provider: MemoryProvider): ContractCapabilities {
  let tools = false;
  try {
    tools = provider.getToolSchemas().length > 0;
  } catch {
    // A throwing getToolSchemas is reported by the TOOLS clauses; declare tools so they run.
    tools = true;
  }
  return {
    tools,
    recall: overridesHook(provider, "prefetch"),
    checkpoint: provider.preCompressCheckpointApiVersion === 2,
    search: isSearchableMemory(provider),
    sessionSwitch: overridesHook(provider, "onSessionSwitch"),
    mirrorsBuiltinWrites: overridesHook(provider, "onMemoryWrite"),
    userScoping: false,
  };
}

/** A setup built from a package, plus the clean-up of its temp host project. */
export interface PackageContractSetup {
  setup: MemoryProviderContractSetup;
  dispose(): void;
}

/**
 * Build a contract setup for the provider package in `packageDir`: read its manifest, load the
 * provider with core's `loadMemoryProvider` through a temp host project that depends on the
 * package, infer capabilities, then apply `hermesMemoryProvider.contract`.
 */
export async function createSetupFromPackage(packageDir: string, options: { providerName?: string } = {}): Promise<PackageContractSetup> {
  const pkg = readProviderPackage(packageDir);
  const declared = selectManifestProvider(pkg, options.providerName);
  const settings = contractSettings(pkg, declared.name);
  const host = createHostRoot(pkg.packageName || declared.name, pkg.dir);
  const createProvider = ({ hermesHome }: { hermesHome: string }): Promise<MemoryProvider> => loadFromHost(host, declared.name, hermesHome);
  const probeHome = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-contract-probe-"));
  let inferred: ContractCapabilities;
  try {
    inferred = inferCapabilities(await createProvider({ hermesHome: probeHome }));
  } catch {
    // Loading fails again inside the run, where the MANIFEST/IDENTITY clauses report why.
    inferred = { tools: false, recall: false, checkpoint: false, search: false, sessionSwitch: false, mirrorsBuiltinWrites: false };
  } finally {
    fs.rmSync(probeHome, { recursive: true, force: true });
  }
  const setup: MemoryProviderContractSetup = {
    name: declared.name,
    createProvider,
    capabilities: { ...inferred, ...settings?.capabilities },
    packageDir: pkg.dir,
    ...(settings?.skip ? { skip: settings.skip } : {}),
  };
  return { setup, dispose: host.dispose };
}
