import { discoverMemoryProviders, loadMemoryProvider, type DiscoveryResult, type MemoryProvider } from "@hermes/memory-core";
import { createHostRoot, type HostRoot } from "./host-root.js";

/**
 * The kit reaches a provider package only the way a host does: core's discovery and loader, run
 * from a throwaway host project that depends on the package (see `createHostRoot`). Project
 * plugins stay off so only the package itself can be found.
 */
function hostOptions(host: HostRoot, hermesHome: string) {
  return { packageRoots: [host.root], hermesHome, cwd: host.root, enableProjectPlugins: false };
}

/** Core's `discoverMemoryProviders` as seen by a host project depending on the package. */
export async function discoverPackage(packageName: string, packageDir: string, hermesHome: string): Promise<DiscoveryResult> {
  const host = createHostRoot(packageName, packageDir);
  try {
    return await discoverMemoryProviders(hostOptions(host, hermesHome));
  } finally {
    host.dispose();
  }
}

/** Core's `loadMemoryProvider` from an existing host project (skills are not registered). */
export function loadFromHost(host: HostRoot, name: string, hermesHome: string): Promise<MemoryProvider> {
  return loadMemoryProvider(name, { ...hostOptions(host, hermesHome), registerSkills: false });
}

/** Core's `loadMemoryProvider` through a fresh host project depending on the package. */
export async function loadFromPackage(packageName: string, packageDir: string, name: string, hermesHome: string): Promise<MemoryProvider> {
  const host = createHostRoot(packageName, packageDir);
  try {
    return await loadFromHost(host, name, hermesHome);
  } finally {
    host.dispose();
  }
}
