import fs from "node:fs";
import { describeError } from "../errors.js";
import { stripBom } from "../fs.js";
import { MAX_PACKAGE_JSON_BYTES, manifestReadReason, readManifestFile } from "./bounded-read.js";
import { ManifestCache, type ManifestCacheCounters } from "./manifest-cache.js";

const DEPENDENCY_FIELDS = ["dependencies", "optionalDependencies", "devDependencies"] as const;

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

/** npm package names: `name` or `@scope/name`, never a path that could climb out of node_modules. */
export const PACKAGE_NAME_PATTERN = /^(?:@[a-z0-9~-][a-z0-9._~-]*\/)?[a-z0-9~-][a-z0-9._~-]*$/i;

function dependencyNames(pkg: Record<string, unknown>): string[] {
  const names = new Set<string>();
  for (const field of DEPENDENCY_FIELDS) {
    const deps = pkg[field];
    if (typeof deps !== "object" || deps === null || Array.isArray(deps)) continue;
    for (const name of Object.keys(deps)) if (PACKAGE_NAME_PATTERN.test(name)) names.add(name);
  }
  return [...names];
}

/** A package root's package.json: its direct dependencies' names, missing, or why it cannot be read. */
export type RootManifestRead = { names: string[] } | { missing: true } | { error: string };

/**
 * The dependency names of each package root's package.json, reused while the file's identity holds.
 * A process uses a few roots; any name list a readable package.json can hold is remembered.
 */
const rootManifests = new ManifestCache<string[]>({
  maxFiles: 64,
  maxTextBytes: 16 * 1024 * 1024,
  maxEntryTextBytes: MAX_PACKAGE_JSON_BYTES,
});

/**
 * The names of a package root's direct dependencies (dependencies, optionalDependencies,
 * devDependencies; names that are paths left out). Read with the bounded reader; while the file
 * keeps the identity it had when last read, the names from that read are reused.
 */
export async function readRootDependencies(file: string): Promise<RootManifestRead> {
  const readStartedAt = Date.now();
  let stat: fs.Stats | undefined;
  try {
    stat = fs.statSync(file, { throwIfNoEntry: false });
  } catch {
    // The read below says what is wrong.
  }
  if (stat?.isFile()) {
    const cached = rootManifests.lookup(file, stat);
    if (cached !== undefined) return { names: cached };
  }
  const read = await readJson(file);
  if (read.missing) return { missing: true };
  if (!read.value) return { error: read.error ?? "unknown error" };
  const names = dependencyNames(read.value);
  // Each name's characters plus a pointer's worth for its slot in the list.
  const bytes = names.reduce((sum, name) => sum + name.length + 8, 0);
  if (stat !== undefined) rootManifests.remember(file, stat, readStartedAt, names, bytes);
  return { names };
}

/** Hits and misses of the package root manifest cache, for tests. */
export function rootManifestCacheCounters(): ManifestCacheCounters {
  return rootManifests.counters();
}
