import fsp from "node:fs/promises";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describeError } from "../errors.js";
import { stripBom } from "../fs.js";
import {
  MANIFEST_OPEN_FLAGS,
  MAX_PACKAGE_JSON_BYTES,
  manifestReadReason,
  notRegularFile,
  readManifestFile,
  tooLarge,
} from "./bounded-read.js";
import { packageMainExport, parseHermesMemoryProviderField, resolveInsideDir } from "./manifest.js";
import { npmInstallCommand } from "./npm-command.js";
import type { DiscoveredProvider, DiscoveryProblem } from "./types.js";

/** The package.json field that marks a package as a memory provider. */
export const MANIFEST_FIELD = "hermesMemoryProvider";
const DEPENDENCY_FIELDS = ["dependencies", "optionalDependencies", "devDependencies"] as const;

export interface PackageScan {
  providers: DiscoveredProvider[];
  problems: DiscoveryProblem[];
}

async function readJson(file: string): Promise<{ value?: Record<string, unknown>; missing?: boolean; error?: string }> {
  // Bounded and non-blocking: a FIFO or /dev/zero posing as package.json cannot hang discovery.
  const read = await readManifestFile(file, MAX_PACKAGE_JSON_BYTES);
  if ("missing" in read) return { missing: true };
  if (!("text" in read)) return { error: manifestReadReason(read) };
  const text = read.text;
  try {
    const value: unknown = JSON.parse(stripBom(text));
    if (typeof value !== "object" || value === null || Array.isArray(value)) return { error: "package.json is not a JSON object" };
    return { value: value as Record<string, unknown> };
  } catch (error) {
    return { error: `invalid JSON: ${describeError(error)}` };
  }
}

/** The nearest directory at or above `start` that holds a package.json, or `null`. */
export async function findNearestPackageRoot(start: string): Promise<string | null> {
  let dir = path.resolve(start);
  for (;;) {
    try {
      if ((await fsp.stat(path.join(dir, "package.json"))).isFile()) return dir;
    } catch {
      // keep climbing
    }
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
    real = await fsp.realpath(from);
  } catch {
    real = path.resolve(from);
  }
  const parts = real.split(path.sep);
  const index = parts.indexOf("node_modules");
  if (index < 1) return null;
  const nodeModules = parts.slice(0, index + 1).join(path.sep);
  const holder = path.dirname(nodeModules);
  try {
    if ((await fsp.stat(path.join(holder, "package.json"))).isFile()) return holder;
  } catch {
    // no package.json beside it: a global prefix
  }
  return nodeModules;
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
  try {
    if ((await fsp.stat(path.join(options.hermesHome, "package.json"))).isFile()) roots.push(path.resolve(options.hermesHome));
  } catch {
    // no user-level installs
  }
  const host = await hostPackageRoot(options.hostDir ?? CORE_PACKAGE_DIR);
  if (host) roots.push(host);
  return dedupeByRealPath(roots);
}

async function dedupeByRealPath(roots: string[]): Promise<string[]> {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const root of roots) {
    let real: string;
    try {
      real = await fsp.realpath(root);
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
 * A dependency's package.json as found from a root: where it is and its text (or why not). `text`
 * is left out for manifests that cannot declare a provider (the field name does not appear).
 */
interface DependencyManifest {
  file: string;
  text?: string;
  error?: string;
  /** False when the manifest does not mention the field, so it cannot declare a provider. */
  mentionsField: boolean;
}

const FIELD_NEEDLE = Buffer.from(`"${MANIFEST_FIELD}"`);
// Reused read buffer: most package.json files are a few KB; larger ones are read whole.
const READ_BUFFER = Buffer.allocUnsafe(64 * 1024);

/**
 * Read one manifest with open/read/close into a shared buffer and look for the field name in the
 * raw bytes: for thousands of small files this skips an fstat, an allocation and a UTF-8 decode
 * per file (about 40 % faster than `readFileSync(file, "utf8")`). The open is non-blocking, so a
 * FIFO never blocks the (synchronous) read; a file that fills the buffer or reads empty is checked
 * with fstat, so a device (a symlink to /dev/zero), a FIFO or a file over
 * `MAX_PACKAGE_JSON_BYTES` is refused (thrown, and reported by the caller) instead of read forever.
 */
function readManifestText(file: string): { text?: string; mentionsField: boolean } {
  const fd = fs.openSync(file, MANIFEST_OPEN_FLAGS);
  try {
    const checkRegular = (): void => {
      const stat = fs.fstatSync(fd);
      if (!stat.isFile()) throw new Error(notRegularFile(file));
      if (stat.size > MAX_PACKAGE_JSON_BYTES) throw new Error(tooLarge(file, MAX_PACKAGE_JSON_BYTES));
    };
    let length: number;
    try {
      length = fs.readSync(fd, READ_BUFFER, 0, READ_BUFFER.length, 0);
    } catch (error) {
      checkRegular(); // ESPIPE / EAGAIN / EISDIR: say what the file is rather than the errno
      throw error;
    }
    if (length === 0 || length === READ_BUFFER.length) checkRegular();
    if (length === READ_BUFFER.length) {
      const text = readRestSync(fd, file).toString("utf8");
      return { text, mentionsField: text.includes(`"${MANIFEST_FIELD}"`) };
    }
    const bytes = READ_BUFFER.subarray(0, length);
    if (bytes.indexOf(FIELD_NEEDLE) === -1) return { mentionsField: false };
    return { text: bytes.toString("utf8"), mentionsField: true };
  } finally {
    fs.closeSync(fd);
  }
}

/** The whole file from offset 0, at most `MAX_PACKAGE_JSON_BYTES` (it may have grown since fstat). */
function readRestSync(fd: number, file: string): Buffer {
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const want = Math.min(MAX_PACKAGE_JSON_BYTES + 1 - total, 1024 * 1024);
    if (want <= 0) break;
    const buffer = Buffer.allocUnsafe(want);
    const bytesRead = fs.readSync(fd, buffer, 0, want, total);
    if (bytesRead === 0) break;
    chunks.push(buffer.subarray(0, bytesRead));
    total += bytesRead;
  }
  if (total > MAX_PACKAGE_JSON_BYTES) throw new Error(tooLarge(file, MAX_PACKAGE_JSON_BYTES));
  return Buffer.concat(chunks, total);
}

/**
 * Read the package.json of `dependency` as Node would find the package from `root`:
 * `<dir>/node_modules/<dependency>` for `root` and each ancestor, nearest first. That covers npm's
 * flat and hoisted layouts and pnpm's symlinks (`node_modules/<pkg>` → `.pnpm/…`); it never looks
 * at NODE_PATH or the global folders, and never scans a tree. Returns `null` when not installed.
 */
export function readDependencyManifest(root: string, dependency: string): DependencyManifest | null {
  let dir = root;
  for (;;) {
    if (path.basename(dir) !== "node_modules") {
      const found = readManifestAt(path.join(dir, "node_modules", dependency, "package.json"));
      if (found) return found;
    }
    const parent = path.dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}

/** One package.json read as `readManifestText` reads it; `null` when there is no such file. */
function readManifestAt(file: string): DependencyManifest | null {
  try {
    // One synchronous read per dependency: for thousands of tiny files this is an order of
    // magnitude faster than promise-based reads queued on the libuv thread pool.
    return { file, ...readManifestText(file) };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return null;
    return { file, error: describeError(error), mentionsField: true };
  }
}

/** npm package names: `name` or `@scope/name`, never a path that could climb out of node_modules. */
const PACKAGE_NAME_PATTERN = /^(?:@[a-z0-9~-][a-z0-9._~-]*\/)?[a-z0-9~-][a-z0-9._~-]*$/i;

function dependencyNames(pkg: Record<string, unknown>): string[] {
  const names = new Set<string>();
  for (const field of DEPENDENCY_FIELDS) {
    const deps = pkg[field];
    if (typeof deps !== "object" || deps === null || Array.isArray(deps)) continue;
    for (const name of Object.keys(deps)) if (PACKAGE_NAME_PATTERN.test(name)) names.add(name);
  }
  return [...names];
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
    manifestPath = path.join(await fsp.realpath(path.dirname(found.file)), "package.json");
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
  for (const root of await dedupeByRealPath(roots)) {
    if (path.basename(root) === "node_modules") {
      const scan = await scanInstalledPackages(root, env);
      result.providers.push(...scan.providers);
      result.problems.push(...scan.problems);
      continue;
    }
    const rootManifest = path.join(root, "package.json");
    const read = await readJson(rootManifest);
    if (!read.value) {
      result.problems.push({
        source: "package",
        location: rootManifest,
        code: "INVALID_MANIFEST",
        message: read.missing
          ? `Package root ${root} has no package.json`
          : `Cannot read package root manifest ${rootManifest}: ${read.error}`,
        remedy: read.missing
          ? `Pass a directory that holds a package.json as a package root.`
          : `Fix ${rootManifest} (it must be a JSON object).`,
      });
      continue;
    }
    const pending: Array<Promise<PackageScan>> = [];
    for (const dependency of dependencyNames(read.value)) {
      const found = readDependencyManifest(root, dependency);
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
