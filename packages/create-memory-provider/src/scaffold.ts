import fs from "node:fs";
import fsp from "node:fs/promises";
import { builtinModules, createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describeError, HermesMemoryError, isValidProviderName, PROVIDER_NAME_PATTERN } from "@hermes/memory-core";

/** What the scaffolder needs to know; everything but `directory` has a default. */
export interface ScaffoldOptions {
  /** Target directory; must not exist or be empty. */
  directory: string;
  /** Provider name users select with `memory.provider` (default: derived from the directory name). */
  providerName?: string;
  /** npm package name (default: the directory name). */
  packageName?: string;
  description?: string;
}

export interface ScaffoldResult {
  directory: string;
  providerName: string;
  packageName: string;
  files: string[];
}

const TEMPLATE_DIR = fileURLToPath(new URL("../template/", import.meta.url));
const NPM_NAME = /^(?:@[a-z0-9-*~][a-z0-9-*._~]*\/)?[a-z0-9-~][a-z0-9-._~]*$/;
/** Names npm refuses for a new package: its blacklist and Node's core modules. */
const RESERVED_NPM_NAMES = new Set([
  "node_modules",
  "favicon.ico",
  ...builtinModules.filter((m) => !m.startsWith("_") && !m.includes(":")),
]);

/** Derive a provider name from a directory or package name: `@acme/hermes-memory-notes` → `notes`. */
export function deriveProviderName(source: string): string {
  const base = source.split("/").pop() ?? source;
  const name = base
    .toLowerCase()
    .replace(/^(hermes-memory-|memory-provider-|hermes-)/, "")
    .replace(/[^a-z0-9._-]+/g, "-")
    .replace(/^[^a-z0-9]+/, "")
    .slice(0, 64);
  return name || "my-provider";
}

/** Throws `INVALID_ARGUMENT` unless `name` is a valid provider name. */
export function validateProviderName(name: string): void {
  if (!isValidProviderName(name)) {
    throw new HermesMemoryError({
      code: "INVALID_ARGUMENT",
      message:
        name === "builtin"
          ? "The provider name 'builtin' is reserved for the built-in memory. Choose another --name."
          : `Invalid provider name '${name}': it must match ${PROVIDER_NAME_PATTERN} (lowercase letters, digits, '.', '_' or '-', starting with a letter or digit, at most 64 characters). Choose another --name.`,
    });
  }
}

function validatePackageName(name: string): void {
  if (RESERVED_NPM_NAMES.has(name)) {
    throw new HermesMemoryError({
      code: "INVALID_ARGUMENT",
      message: `The npm package name '${name}' is reserved (npm refuses it for a new package). Choose another directory name or pass --package-name.`,
    });
  }
  if (!NPM_NAME.test(name) || name.length > 214) {
    throw new HermesMemoryError({
      code: "INVALID_ARGUMENT",
      message: `Invalid npm package name '${name}'. Use lowercase letters, digits and '-', optionally scoped (@scope/name); pass --package-name.`,
    });
  }
}

/**
 * The description goes into JSON strings, a JSDoc comment and Markdown: one line without control
 * characters, quotes, backslashes or a comment terminator.
 */
function sanitizeDescription(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/["\\\u0000-\u001f\u007f\u2028\u2029]/g, " ").replace(/\*\//g, "* /");
}

/** Refuses a target that exists but is not a directory (a file, a dangling symlink) or is not empty. */
function checkTarget(directory: string): void {
  let isDirectory: boolean;
  try {
    isDirectory = fs.statSync(directory).isDirectory();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // ENOTDIR: a parent is a file; creating it below reports that.
    if (code === "ENOTDIR") return;
    if (code !== "ENOENT") {
      throw new HermesMemoryError({
        code: "STORAGE_FAILED",
        message: `Cannot inspect ${directory}: ${describeError(error)}. Choose another directory.`,
        cause: error,
      });
    }
    let linked = false;
    try {
      linked = fs.lstatSync(directory).isSymbolicLink();
    } catch {
      // Absent: it is created below.
    }
    if (linked) {
      throw new HermesMemoryError({
        code: "INVALID_ARGUMENT",
        message: `${directory} is a symbolic link to a path that does not exist; refusing to write through it. Choose a new directory name.`,
      });
    }
    return;
  }
  if (!isDirectory) {
    throw new HermesMemoryError({
      code: "INVALID_ARGUMENT",
      message: `${directory} exists and is not a directory; refusing to overwrite it. Choose a new directory name.`,
    });
  }
  if (fs.readdirSync(directory).length > 0) {
    throw new HermesMemoryError({
      code: "INVALID_ARGUMENT",
      message: `Directory ${directory} is not empty; refusing to overwrite it. Choose a new directory name.`,
    });
  }
}

/** `Notes-Store` → `NotesStoreMemoryProvider`. */
function className(providerName: string): string {
  const words = providerName.split(/[^a-z0-9]+/).filter(Boolean);
  const pascal = words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join("");
  return `${/^[0-9]/.test(pascal) ? "P" : ""}${pascal}MemoryProvider`;
}

/** Tool names must match `^[a-zA-Z0-9_-]{1,64}$`; keep room for the longest suffix, `_notes_remember`. */
function toolPrefix(providerName: string): string {
  return providerName.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, 64 - "_notes_remember".length);
}

/**
 * The version range the generated package uses for a Hermes package: the version installed next to
 * this scaffolder (they are released together), exact for prereleases such as snapshots.
 */
function versionOf(pkg: string): string {
  const require = createRequire(import.meta.url);
  return (JSON.parse(fs.readFileSync(require.resolve(`${pkg}/package.json`), "utf8")) as { version: string }).version;
}

/** A dependency range: compatible releases from `version` on (a prerelease is pinned exactly). */
function caretRange(version: string): string {
  return version.includes("-") ? version : `^${version}`;
}

/**
 * The range a new provider gives core as a peer: from core's current version up to, not including,
 * its next major. Before 1.0.0 a caret range would stop at the next minor, and changesets releases
 * a new major of every package whose peer range a release leaves; a prerelease is pinned exactly.
 */
export function peerRange(version: string): string {
  if (version.includes("-")) return version;
  const major = Number(version.split(".")[0]);
  return major === 0 ? `>=${version} <1.0.0` : `^${version}`;
}

async function listTemplate(dir: string, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await fsp.readdir(path.join(dir, prefix), { withFileTypes: true })) {
    const rel = path.join(prefix, entry.name);
    if (entry.isDirectory()) out.push(...(await listTemplate(dir, rel)));
    else if (entry.name.endsWith(".tpl")) out.push(rel);
  }
  return out.sort();
}

/**
 * Write a standalone provider package into `options.directory`. Refuses to write into a non-empty
 * directory (nothing is overwritten) and validates the provider and package names first.
 */
export async function scaffoldProvider(options: ScaffoldOptions): Promise<ScaffoldResult> {
  const directory = path.resolve(options.directory);
  const packageName = options.packageName ?? path.basename(directory);
  const providerName = options.providerName ?? deriveProviderName(packageName);
  validateProviderName(providerName);
  validatePackageName(packageName);
  checkTarget(directory);
  const values: Record<string, string> = {
    providerName,
    packageName,
    description: sanitizeDescription(options.description ?? `A Hermes memory provider (${providerName}).`),
    className: className(providerName),
    toolPrefix: toolPrefix(providerName),
    coreRange: peerRange(versionOf("@hermes/memory-core")),
    contractRange: caretRange(versionOf("@hermes/memory-contract")),
    kitRange: caretRange(versionOf("@hermes/memory-provider-kit")),
  };
  const storageFailed = (target: string, error: unknown) =>
    new HermesMemoryError({
      code: "STORAGE_FAILED",
      message: `Cannot create ${target}: ${describeError(error)}. Choose a directory in a writable location.`,
      cause: error,
    });
  try {
    // The parents recursively, the target itself not: a recursive mkdir can loop forever where the
    // kernel refuses a new entry with ENOENT (e.g. under /proc).
    await fsp.mkdir(path.dirname(directory), { recursive: true });
    await fsp.mkdir(directory).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "EEXIST") throw error;
    });
  } catch (error) {
    throw storageFailed(directory, error);
  }
  const files: string[] = [];
  for (const rel of await listTemplate(TEMPLATE_DIR)) {
    const text = await fsp.readFile(path.join(TEMPLATE_DIR, rel), "utf8");
    const rendered = text.replace(/\{\{(\w+)\}\}/g, (match, key: string) => values[key] ?? match);
    // npm drops files named .gitignore from published tarballs, so the template ships it without the dot.
    const target = rel.replace(/\.tpl$/, "").replace(/^gitignore$/, ".gitignore");
    try {
      await fsp.mkdir(path.dirname(path.join(directory, target)), { recursive: true });
      await fsp.writeFile(path.join(directory, target), rendered, { flag: "wx" });
    } catch (error) {
      throw storageFailed(path.join(directory, target), error);
    }
    files.push(target);
  }
  return { directory, providerName, packageName, files };
}
