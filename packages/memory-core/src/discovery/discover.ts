import fs from "node:fs";
import path from "node:path";
import { defaultBundledDir } from "../bundled-dir.js";
import { getHermesHome } from "../profile.js";
import { projectPluginsEnabled } from "../config/environment.js";
import { scanDirectorySource } from "./directory-source.js";
import { defaultPackageRoots, scanPackageRoots } from "./package-source.js";
import type { DiscoveredProvider, DiscoveryOptions, DiscoveryProblem, DiscoveryResult, ProviderSource, SearchedLocation } from "./types.js";

/** Options with every default applied. */
export interface ResolvedDiscoveryOptions {
  hermesHome: string;
  cwd: string;
  bundledDir: string | null;
  userDir: string;
  projectDir: string;
  projectEnabled: boolean;
  packageRoots: string[];
}

function realOrResolved(p: string): string {
  try {
    return fs.realpathSync.native(p);
  } catch {
    return path.resolve(p);
  }
}

/**
 * Apply discovery defaults (home, cwd, bundled folder, project opt-in, package roots). The bundled
 * folder defaults to `HERMES_MEMORY_BUNDLED_DIR`, so every caller — a host, the loader, the CLI —
 * finds the same provider for a name.
 */
export async function resolveDiscoveryOptions(options: DiscoveryOptions = {}): Promise<ResolvedDiscoveryOptions> {
  const hermesHome = path.resolve(options.hermesHome ?? getHermesHome());
  const cwd = path.resolve(options.cwd ?? process.cwd());
  return {
    hermesHome,
    cwd,
    bundledDir: options.bundledDir ? path.resolve(options.bundledDir) : (defaultBundledDir(options.env ?? process.env) ?? null),
    userDir: path.join(hermesHome, "plugins"),
    projectDir: path.join(cwd, ".hermes", "plugins"),
    projectEnabled: options.enableProjectPlugins ?? projectPluginsEnabled(options.env ?? process.env),
    packageRoots: options.packageRoots
      ? options.packageRoots.map((r) => path.resolve(r))
      : await defaultPackageRoots({ cwd, hermesHome, ...(options.hostDir !== undefined ? { hostDir: options.hostDir } : {}) }),
  };
}

/**
 * Find every memory provider available to a host, reading files only (nothing is imported, so a
 * broken or hostile provider cannot run code here). Sources, first seen wins:
 * bundled (`bundledDir`) > user (`$HERMES_HOME/plugins/<name>/`) > project
 * (`<cwd>/.hermes/plugins/<name>/`, only with `HERMES_ENABLE_PROJECT_PLUGINS`) > package (direct
 * dependencies of the package roots carrying `hermesMemoryProvider`: the project at or above
 * `cwd`, then `$HERMES_HOME`, then the installation the host runs from, a global prefix included;
 * see `defaultPackageRoots`). Never throws: invalid
 * manifests, bad names, entries outside their package and unreadable folders are reported in
 * `problems` and the rest of discovery carries on.
 */
export async function discoverMemoryProviders(options: DiscoveryOptions = {}): Promise<DiscoveryResult> {
  const resolved = await resolveDiscoveryOptions(options);
  const searched: SearchedLocation[] = [];
  const found: DiscoveredProvider[] = [];
  const problems: DiscoveryProblem[] = [];
  const scannedDirs = new Set<string>();

  const scanDir = async (dir: string | null, source: ProviderSource, enabled: boolean) => {
    if (dir === null) return;
    searched.push({ source, location: dir, enabled });
    if (!enabled) return;
    // The same folder reached twice (e.g. cwd is the home's parent) must not report every provider as shadowed.
    const real = realOrResolved(dir);
    if (scannedDirs.has(real)) return;
    scannedDirs.add(real);
    const scan = await scanDirectorySource(dir, source);
    found.push(...scan.providers);
    problems.push(...scan.problems);
  };

  await scanDir(resolved.bundledDir, "bundled", true);
  await scanDir(resolved.userDir, "user", true);
  await scanDir(resolved.projectDir, "project", resolved.projectEnabled);
  for (const root of resolved.packageRoots) searched.push({ source: "package", location: root, enabled: true });
  const packages = await scanPackageRoots(resolved.packageRoots, options.env ?? process.env);
  found.push(...packages.providers);
  problems.push(...packages.problems);

  // First seen wins, so a folder in a working tree can never shadow a shipped provider.
  const byName = new Map<string, DiscoveredProvider>();
  const providers: DiscoveredProvider[] = [];
  const shadowed: DiscoveryResult["shadowed"] = [];
  for (const provider of found) {
    const winner = byName.get(provider.name);
    // The same package reached from two roots (a project installed globally too) shadows nothing.
    if (winner && winner.source === provider.source && winner.dir === provider.dir && winner.entry === provider.entry) continue;
    if (winner) {
      shadowed.push({ provider, shadowedBy: winner });
      continue;
    }
    byName.set(provider.name, provider);
    providers.push(provider);
  }
  return { providers, shadowed, problems, searched };
}

/** Names of every discovered provider, sorted. Imports nothing; safe for menus and completions. */
export async function listMemoryProviderNames(options: DiscoveryOptions = {}): Promise<string[]> {
  const { providers } = await discoverMemoryProviders(options);
  return providers.map((p) => p.name).sort();
}

/** The provider `memory.provider: <name>` would load (the highest-precedence one), or `null`. */
export async function findMemoryProvider(name: string, options: DiscoveryOptions = {}): Promise<DiscoveredProvider | null> {
  const { providers } = await discoverMemoryProviders(options);
  return providers.find((p) => p.name === name) ?? null;
}

/** One line per searched location, for "not found" messages: `bundled <dir>, user <dir>, …`. */
export function describeSearchedLocations(searched: SearchedLocation[]): string {
  const parts: string[] = [];
  const packageRoots: string[] = [];
  for (const s of searched) {
    if (s.source === "package") packageRoots.push(s.location);
    else parts.push(s.enabled ? `${s.source} ${s.location}` : `${s.source} ${s.location} (disabled; set HERMES_ENABLE_PROJECT_PLUGINS=1)`);
  }
  parts.push(packageRoots.length > 0 ? `package roots ${packageRoots.join(", ")}` : "no package roots");
  return parts.join(", ");
}
