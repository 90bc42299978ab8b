import * as core from "@hermes/memory-core";
import type { MemoryProvider } from "@hermes/memory-core";

/** The part of a discovered provider the kit reads. */
export interface DiscoveredProviderView {
  name: string;
  source: string;
  dir: string;
  entry: string;
  packageName?: string | null;
}

/** The part of core's discovery result the kit reads. */
export interface DiscoveryResultView {
  providers: DiscoveredProviderView[];
  problems: Array<{ code: string; message: string; remedy?: string; name?: string; location?: string }>;
}

/** Options passed to core's discovery and loader. */
export interface CoreDiscoveryOptions {
  packageRoots: string[];
  hermesHome: string;
  cwd: string;
  enableProjectPlugins?: boolean;
  registerSkills?: boolean;
}

type Discover = (options: CoreDiscoveryOptions) => Promise<DiscoveryResultView>;
type Load = (name: string, options: CoreDiscoveryOptions) => Promise<MemoryProvider | { provider: MemoryProvider }>;

// Looked up at run time so the kit keeps working with a core that predates discovery/loading.
const exportsOfCore = core as Record<string, unknown>;

/** Core's `discoverMemoryProviders`, or undefined when the installed core does not have it. */
export function coreDiscover(): Discover | undefined {
  const fn = exportsOfCore.discoverMemoryProviders;
  return typeof fn === "function" ? (fn as Discover) : undefined;
}

/** Core's `loadMemoryProvider`, or undefined when the installed core does not have it. */
export function coreLoad(): ((name: string, options: CoreDiscoveryOptions) => Promise<MemoryProvider>) | undefined {
  const fn = exportsOfCore.loadMemoryProvider;
  if (typeof fn !== "function") return undefined;
  return async (name, options) => {
    const loaded = await (fn as Load)(name, options);
    return core.isMemoryProvider(loaded) ? loaded : loaded.provider;
  };
}
