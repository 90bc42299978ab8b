import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describeError } from "../errors.js";
import { stripBom } from "../fs.js";
import {
  dependencySearchDirs,
  MANIFEST_FIELD,
  readDependencyManifest,
  readManifestAt,
  type DependencyManifest,
} from "./dependency-manifest.js";
import { PACKAGE_NAME_PATTERN, readRootDependencies } from "./root-manifest.js";
import { packageMainExport, parseHermesMemoryProviderField, resolveInsideDir } from "./manifest.js";
import { npmInstallCommand } from "./npm-command.js";
import type { DiscoveredProvider, DiscoveryProblem } from "./types.js";

export { MANIFEST_FIELD };

export interface PackageScan {
  providers: DiscoveredProvider[];
  problems: DiscoveryProblem[];
}

/**
 * True when `file` is a regular file. Synchronous: finding the package roots takes a few stats per
 * discovery, each far cheaper than a round trip through the thread pool.
 */
function isFileNow(file: string): boolean {
  try {
    return fs.statSync(file, { throwIfNoEntry: false })?.isFile() ?? false;
  } catch {
    return false;
  }
}

/** The nearest directory at or above `start` that holds a package.json, or `null`. */
export async function findNearestPackageRoot(start: string): Promise<string | null> {
  let dir = path.resolve(start);
  for (;;) {
    if (isFileNow(path.join(dir, "package.json"))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}

/** This copy of core's package folder (`dist/discovery/` or `src/discovery/` is two levels down). */
const CORE_PACKAGE_DIR = fileURLToPath(new URL("../../", import.meta.url));

/**
 * The package root of the installation `from` belongs to (default: this copy of core, which a host
 * installs beside itself): the outermost `node_modules` folder on `from`'s real path stands for
 * that installation. When the folder holding it has a package.json (a project, npx's cache, pnpm's
 * global folder), that folder is the root and its direct dependencies count; when it has none
 * (npm's global prefix, `<prefix>/lib/node_modules`), the `node_modules` folder itself is the root
 * and every package installed in it counts. `null` when `from` is in no `node_modules` (a
 * development checkout).
 */
export async function hostPackageRoot(from: string = CORE_PACKAGE_DIR): Promise<string | null> {
  let real: string;
  try {
    real = fs.realpathSync.native(from);
  } catch {
    real = path.resolve(from);
  }
  const parts = real.split(path.sep);
  const index = parts.indexOf("node_modules");
  if (index < 1) return null;
  const nodeModules = parts.slice(0, index + 1).join(path.sep);
  const holder = path.dirname(nodeModules);
  // No package.json beside it: a global prefix.
  return isFileNow(path.join(holder, "package.json")) ? holder : nodeModules;
}

/**
 * The package roots discovery uses when `packageRoots` is not given, in precedence order: the
 * nearest package.json at or above `cwd` (the project), then `hermesHome` when it has a
 * package.json (user-level installs made with `hermes-memory plugins add`), then the installation
 * the host runs from (`hostPackageRoot(hostDir)`; a global install's prefix included). Duplicates
 * (same real path) are dropped.
 */
export async function defaultPackageRoots(options: { cwd: string; hermesHome: string; hostDir?: string }): Promise<string[]> {
  const roots: string[] = [];
  const project = await findNearestPackageRoot(options.cwd);
  if (project) roots.push(project);
  if (isFileNow(path.join(options.hermesHome, "package.json"))) roots.push(path.resolve(options.hermesHome));
  const host = await hostPackageRoot(options.hostDir ?? CORE_PACKAGE_DIR);
  if (host) roots.push(host);
  return dedupeByRealPath(roots);
}

/** Each root once, by real path. A handful of synchronous realpath(3) calls: no thread-pool round trips. */
function dedupeByRealPath(roots: string[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const root of roots) {
    let real: string;
    try {
      real = fs.realpathSync.native(root);
    } catch {
      real = path.resolve(root);
    }
    if (seen.has(real)) continue;
    seen.add(real);
    out.push(real);
  }
  return out;
}

/**
 * `root`: the package root the dependency was found from; `removeFrom`: where the package is listed
 * or installed. Both go into the remedy of a broken manifest.
 */
async function scanDependency(
  found: DependencyManifest,
  dependency: string,
  root: string,
  removeFrom: string,
  env: NodeJS.ProcessEnv,
): Promise<PackageScan> {
  let pkg: Record<string, unknown> | undefined;
  let error = found.error;
  if (found.text !== undefined) {
    try {
      const value: unknown = JSON.parse(stripBom(found.text));
      if (typeof value === "object" && value !== null && !Array.isArray(value)) pkg = value as Record<string, unknown>;
      else error = "package.json is not a JSON object";
    } catch (e) {
      error = `invalid JSON: ${describeError(e)}`;
    }
  }
  if (!pkg) {
    return {
      providers: [],
      problems: [
        {
          source: "package",
          location: found.file,
          code: "INVALID_MANIFEST",
          message: `Cannot read the package.json of dependency ${dependency} (${found.file}): ${error ?? "unknown error"}`,
          remedy: `Reinstall ${dependency} (\`${npmInstallCommand(root, dependency, { env })}\`), or remove it from ${removeFrom}.`,
        },
      ],
    };
  }
  if (!(MANIFEST_FIELD in pkg)) return { providers: [], problems: [] };
  // Only provider packages pay for a realpath. Everything is resolved against the real package
  // folder (the folder holding package.json, symlinks resolved), never against where a symlinked
  // package.json points: that file may live anywhere.
  let manifestPath = found.file;
  try {
    manifestPath = path.join(fs.realpathSync.native(path.dirname(found.file)), "package.json");
  } catch {
    // keep the symlinked path
  }
  return providersOfPackage(manifestPath, dependency, pkg);
}

async function providersOfPackage(manifestPath: string, dependency: string, pkg: Record<string, unknown>): Promise<PackageScan> {
  const result: PackageScan = { providers: [], problems: [] };
  const pkgDir = path.dirname(manifestPath);
  const packageName = typeof pkg.name === "string" ? pkg.name : dependency;
  const { providers, errors } = parseHermesMemoryProviderField(pkg[MANIFEST_FIELD]);
  if (errors.length > 0) {
    result.problems.push({
      source: "package",
      location: manifestPath,
      code: errors.some((e) => e.includes(".name:") || e.startsWith("hermesMemoryProvider:")) ? "INVALID_NAME" : "INVALID_MANIFEST",
      message: `Invalid "${MANIFEST_FIELD}" in ${packageName} (${manifestPath}): ${errors.join("; ")}`,
      remedy: `Ask the author of ${packageName} to fix its package.json: "${MANIFEST_FIELD}" must be a provider name, an object {name, entry?, cli?, description?} or a list of them; names match ^[a-z0-9][a-z0-9._-]{0,63}$ and are not 'builtin'.`,
    });
  }
  for (const manifest of providers) {
    const entryRelative = manifest.entry ?? packageMainExport(pkg);
    const entry = await resolveInsideDir(pkgDir, entryRelative);
    if (!entry.ok) {
      result.problems.push({
        source: "package",
        location: manifestPath,
        code: entry.code,
        message: `Memory provider '${manifest.name}' in ${packageName}: entry ${entry.reason}`,
        remedy:
          entry.code === "MISSING_ENTRY"
            ? `Reinstall ${packageName} (its files may not be built or published), or fix "${MANIFEST_FIELD}.entry".`
            : `The entry must be a relative path inside the package; ask the author of ${packageName} to fix "${MANIFEST_FIELD}.entry".`,
        name: manifest.name,
      });
      continue;
    }
    let cli: string | null = null;
    if (manifest.cli !== undefined) {
      const resolved = await resolveInsideDir(pkgDir, manifest.cli);
      if (resolved.ok) cli = resolved.path;
      else {
        result.problems.push({
          source: "package",
          location: manifestPath,
          code: resolved.code,
          message: `Memory provider '${manifest.name}' in ${packageName}: cli ${resolved.reason}; the provider is usable without it`,
          remedy: `Reinstall ${packageName}, or ask its author to fix "${MANIFEST_FIELD}.cli".`,
          name: manifest.name,
        });
      }
    }
    result.providers.push({
      name: manifest.name,
      source: "package",
      dir: pkgDir,
      entry: entry.path,
      version: typeof pkg.version === "string" ? pkg.version : null,
      description: manifest.description ?? (typeof pkg.description === "string" ? pkg.description.trim() : ""),
      hooks: manifest.hooks ?? [],
      cli,
      packageName,
      ...(manifest.isolation !== undefined ? { isolation: manifest.isolation } : {}),
    });
  }
  return result;
}

/**
 * Find package providers: the direct dependencies (dependencies, optionalDependencies,
 * devDependencies) of each root whose package.json has `hermesMemoryProvider`; a root that is
 * itself a `node_modules` folder (a global prefix's) contributes every package installed in it.
 * Reads only package.json files — no tree scans, no imports — and never throws. `env` decides the
 * install command a problem's remedy names (npm's global prefix).
 */
export async function scanPackageRoots(roots: string[], env: NodeJS.ProcessEnv = process.env): Promise<PackageScan> {
  const result: PackageScan = { providers: [], problems: [] };
  for (const root of dedupeByRealPath(roots)) {
    if (path.basename(root) === "node_modules") {
      const scan = await scanInstalledPackages(root, env);
      result.providers.push(...scan.providers);
      result.problems.push(...scan.problems);
      continue;
    }
    const rootManifest = path.join(root, "package.json");
    const read = await readRootDependencies(rootManifest);
    if (!("names" in read)) {
      const missing = "missing" in read;
      result.problems.push({
        source: "package",
        location: rootManifest,
        code: "INVALID_MANIFEST",
        message: missing ? `Package root ${root} has no package.json` : `Cannot read package root manifest ${rootManifest}: ${read.error}`,
        remedy: missing
          ? `Pass a directory that holds a package.json as a package root.`
          : `Fix ${rootManifest} (it must be a JSON object).`,
      });
      continue;
    }
    const pending: Array<Promise<PackageScan>> = [];
    const searchDirs = dependencySearchDirs(root);
    for (const dependency of read.names) {
      const found = readDependencyManifest(searchDirs, dependency);
      if (found === null) continue;
      // Most dependencies are not providers: skip the JSON parse unless the field name appears.
      if (!found.mentionsField) continue;
      // Provider packages need a few file-system checks each; run them concurrently, keep the order.
      pending.push(scanDependency(found, dependency, root, rootManifest, env));
    }
    for (const scan of await Promise.all(pending)) {
      result.providers.push(...scan.providers);
      result.problems.push(...scan.problems);
    }
  }
  return result;
}

/** The packages installed directly in a `node_modules` folder (`name`, `@scope/name`), sorted. */
async function installedPackageNames(dir: string): Promise<string[]> {
  const names: string[] = [];
  for (const entry of await fsp.readdir(dir, { withFileTypes: true })) {
    // `.bin`, `.package-lock.json`, `.pnpm` and the like are npm's and pnpm's own.
    if (entry.name.startsWith(".")) continue;
    if (!entry.name.startsWith("@")) names.push(entry.name);
    else if (entry.isDirectory()) for (const child of await fsp.readdir(path.join(dir, entry.name))) names.push(`${entry.name}/${child}`);
  }
  return names.filter((name) => PACKAGE_NAME_PATTERN.test(name)).sort();
}

/** Providers among the packages installed directly in `dir`, a `node_modules` folder. */
async function scanInstalledPackages(dir: string, env: NodeJS.ProcessEnv): Promise<PackageScan> {
  let names: string[];
  try {
    names = await installedPackageNames(dir);
  } catch (error) {
    const problem: DiscoveryProblem = {
      source: "package",
      location: dir,
      code: "UNREADABLE_DIRECTORY",
      message: `Cannot list the packages installed in ${dir}: ${describeError(error)}`,
      remedy: `Make ${dir} readable (and its scope folders), or pass packageRoots without it.`,
    };
    return { providers: [], problems: [problem] };
  }
  const pending: Array<Promise<PackageScan>> = [];
  for (const name of names) {
    const found = readManifestAt(path.join(dir, name, "package.json"));
    if (found?.mentionsField) pending.push(scanDependency(found, name, dir, dir, env));
  }
  const result: PackageScan = { providers: [], problems: [] };
  for (const scan of await Promise.all(pending)) {
    result.providers.push(...scan.providers);
    result.problems.push(...scan.problems);
  }
  return result;
}
