import fsp from "node:fs/promises";
import path from "node:path";
import { describeError } from "../errors.js";
import { stripBom } from "../fs.js";
import { MANIFEST_OPEN_FLAGS, MAX_PLUGIN_YAML_BYTES, readManifestFile } from "./bounded-read.js";
import { isFile, parsePluginYaml, providerNameError, resolveInsideDir } from "./manifest.js";
import type { DiscoveredProvider, DiscoveryProblem, ProviderSource } from "./types.js";

/** How much of an entry file the no-manifest heuristic reads (same window as the Python agent). */
export const HEURISTIC_WINDOW_CHARS = 8192;
const HEURISTIC_MARKERS = ["MemoryProvider", "registerMemoryProvider"];
const DEFAULT_ENTRIES = ["index.js", "index.mjs"];

/** What one provider-folder root contributed. */
export interface DirectoryScan {
  providers: DiscoveredProvider[];
  problems: DiscoveryProblem[];
}

/**
 * True when the first `HEURISTIC_WINDOW_CHARS` characters of `file` mention `MemoryProvider` or
 * `registerMemoryProvider`: how a folder without `plugin.yaml` shows it is a memory provider.
 */
export async function entryLooksLikeMemoryProvider(file: string): Promise<boolean> {
  let handle: fsp.FileHandle | undefined;
  try {
    handle = await fsp.open(file, MANIFEST_OPEN_FLAGS);
    // A UTF-8 character is at most 4 bytes, so this many bytes always cover the character window.
    const buffer = Buffer.alloc(HEURISTIC_WINDOW_CHARS * 4);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    const head = stripBom(buffer.subarray(0, bytesRead).toString("utf8")).slice(0, HEURISTIC_WINDOW_CHARS);
    return HEURISTIC_MARKERS.some((m) => head.includes(m));
  } catch {
    return false;
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

function problem(source: ProviderSource, location: string, code: string, message: string, remedy: string, name?: string): DiscoveryProblem {
  return name === undefined ? { source, location, code, message, remedy } : { source, location, code, message, remedy, name };
}

/** The first default entry file present in `dir`, refusing one that is a symlink out of `dir`. */
async function defaultEntry(dir: string): Promise<{ entry: string | null; outside?: string; candidate?: string }> {
  for (const candidate of DEFAULT_ENTRIES) {
    if (!(await isFile(path.join(dir, candidate)))) continue;
    const resolved = await resolveInsideDir(dir, candidate);
    if (resolved.ok) return { entry: path.join(dir, candidate) };
    return { entry: null, outside: resolved.reason, candidate };
  }
  return { entry: null };
}

function outsideProblem(source: ProviderSource, dir: string, name: string, reason: string): DiscoveryProblem {
  return problem(
    source,
    dir,
    "ENTRY_OUTSIDE_PACKAGE",
    `Memory provider '${name}' in ${dir}: entry ${reason}`,
    `Replace the symlink with the provider's files inside ${dir}.`,
    name,
  );
}

/**
 * The text of `plugin.yaml` in `dir` (null when there is none), or the problem that makes the folder
 * unusable. Never blocks on a FIFO nor reads a device or a huge file into memory (`readManifestFile`).
 */
async function readManifest(
  dir: string,
  manifestPath: string,
  source: ProviderSource,
): Promise<{ text: string | null } | { problem: DiscoveryProblem }> {
  const manifestRead = await readManifestFile(manifestPath, MAX_PLUGIN_YAML_BYTES);
  if ("error" in manifestRead) {
    return {
      problem: problem(
        source,
        dir,
        "UNREADABLE_DIRECTORY",
        `Skipping unreadable plugin directory ${dir}: ${describeError(manifestRead.error)}`,
        `Fix the permissions of ${dir} (it must be readable by this user) or remove it.`,
      ),
    };
  }
  if ("refused" in manifestRead) {
    return {
      problem: problem(
        source,
        manifestPath,
        "INVALID_MANIFEST",
        `Invalid plugin.yaml in ${dir}: ${manifestRead.refused}`,
        `Replace ${manifestPath} with a regular YAML file under ${MAX_PLUGIN_YAML_BYTES / (1024 * 1024)} MiB (name, version, description, hooks, entry), or remove it.`,
      ),
    };
  }
  return { text: "text" in manifestRead ? manifestRead.text : null };
}

/**
 * The provider's `cli.js`, beside its entry, contained exactly like the entry: a symlink leaving the
 * folder is refused (reported; the provider stays usable without its commands).
 */
async function locateCli(
  dir: string,
  entry: string,
  name: string,
  source: ProviderSource,
): Promise<{ cli: string | null; problem?: DiscoveryProblem }> {
  const cliRelative = path.relative(dir, path.join(path.dirname(entry), "cli.js"));
  if (!(await isFile(path.join(dir, cliRelative)))) return { cli: null };
  const resolved = await resolveInsideDir(dir, cliRelative);
  if (resolved.ok) return { cli: resolved.path };
  return {
    cli: null,
    problem: problem(
      source,
      dir,
      resolved.code,
      `Memory provider '${name}' in ${dir}: cli.js ${resolved.reason}; the provider is usable without its commands`,
      `Replace the symlink with the provider's cli.js inside ${dir}.`,
      name,
    ),
  };
}

async function scanOne(
  dir: string,
  dirName: string,
  source: ProviderSource,
): Promise<{ provider?: DiscoveredProvider; problem?: DiscoveryProblem }> {
  const manifestPath = path.join(dir, "plugin.yaml");
  const manifestRead = await readManifest(dir, manifestPath, source);
  if ("problem" in manifestRead) return { problem: manifestRead.problem };
  const manifestText = manifestRead.text;

  let name = dirName;
  let version: string | null = null;
  let description = "";
  let hooks: string[] = [];
  let isolation: "inline" | "worker" | undefined;
  let entry: string | null = null;

  if (manifestText !== null) {
    const parsed = parsePluginYaml(manifestText);
    if (!parsed.ok) {
      return {
        problem: problem(
          source,
          manifestPath,
          "INVALID_MANIFEST",
          `Invalid plugin.yaml in ${dir}: ${parsed.errors.join("; ")}`,
          `Fix ${manifestPath}: it must be a YAML mapping with name (string), version (string), description (string), hooks (list of strings) and optional entry (relative path).`,
        ),
      };
    }
    const manifest = parsed.value;
    if (manifest.name !== undefined) name = manifest.name;
    version = manifest.version;
    description = manifest.description;
    hooks = manifest.hooks;
    isolation = manifest.isolation;
    if (manifest.entry !== undefined) {
      const resolved = await resolveInsideDir(dir, manifest.entry);
      if (!resolved.ok) {
        return {
          problem: problem(
            source,
            manifestPath,
            resolved.code,
            `Memory provider '${name}' in ${dir}: entry ${resolved.reason}`,
            resolved.code === "MISSING_ENTRY"
              ? `Build the provider or correct 'entry' in ${manifestPath}.`
              : `Set 'entry' in ${manifestPath} to a relative path inside ${dir}.`,
            name,
          ),
        };
      }
      entry = resolved.path;
    } else {
      const located = await defaultEntry(dir);
      if (located.outside) return { problem: outsideProblem(source, dir, name, located.outside) };
      entry = located.entry;
      if (entry === null) {
        // Python plugins share $HERMES_HOME/plugins with us; they are not ours to report.
        if (await isFile(path.join(dir, "__init__.py"))) return {};
        return {
          problem: problem(
            source,
            dir,
            "MISSING_ENTRY",
            `Memory provider '${name}' in ${dir} has a plugin.yaml but no entry module (looked for index.js, index.mjs)`,
            `Add index.js (or set 'entry' in ${manifestPath}) exporting register(ctx).`,
            name,
          ),
        };
      }
    }
  } else {
    const located = await defaultEntry(dir);
    entry = located.entry;
    // Without a manifest only the source text says it is a memory provider; other plugins are not ours.
    if (located.outside)
      return (await entryLooksLikeMemoryProvider(path.join(dir, located.candidate!)))
        ? { problem: outsideProblem(source, dir, name, located.outside) }
        : {};
    if (entry === null || !(await entryLooksLikeMemoryProvider(entry))) return {};
  }

  const nameError = providerNameError(name);
  if (nameError) {
    return {
      problem: problem(
        source,
        dir,
        "INVALID_NAME",
        `Memory provider folder ${dir} has an invalid name: ${nameError}`,
        `Rename the folder (or set 'name' in plugin.yaml) to lower-case letters, digits, '.', '_' or '-', not 'builtin'.`,
      ),
    };
  }
  const { cli, problem: cliProblem } = await locateCli(dir, entry, name, source);
  return {
    provider: { name, source, dir, entry, version, description, hooks, cli, packageName: null, ...(isolation ? { isolation } : {}) },
    ...(cliProblem ? { problem: cliProblem } : {}),
  };
}

/**
 * Scan one folder of provider folders (`bundledDir`, `$HERMES_HOME/plugins`,
 * `<cwd>/.hermes/plugins`), one level deep, children in name order. Reads files only — never
 * imports — and never throws: unreadable or invalid folders become problems. A missing root is
 * simply empty.
 */
export async function scanDirectorySource(root: string, source: ProviderSource): Promise<DirectoryScan> {
  const result: DirectoryScan = { providers: [], problems: [] };
  let entries: import("node:fs").Dirent[];
  try {
    entries = await fsp.readdir(root, { withFileTypes: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "ENOENT" && code !== "ENOTDIR") {
      result.problems.push(
        problem(
          source,
          root,
          "UNREADABLE_DIRECTORY",
          `Cannot read plugin directory ${root}: ${describeError(error)}`,
          `Fix the permissions of ${root} or remove it.`,
        ),
      );
    }
    return result;
  }
  let realRoot: string;
  try {
    realRoot = await fsp.realpath(root);
  } catch {
    realRoot = root;
  }
  const names = entries
    .map((e) => e.name)
    .filter((n) => !n.startsWith("_") && !n.startsWith("."))
    .sort();
  for (const dirName of names) {
    const child = path.join(realRoot, dirName);
    let dir: string;
    try {
      if (!(await fsp.stat(child)).isDirectory()) continue;
      dir = await fsp.realpath(child);
    } catch (error) {
      result.problems.push(
        problem(
          source,
          child,
          "UNREADABLE_DIRECTORY",
          `Skipping unreadable plugin directory ${child}: ${describeError(error)}`,
          `Fix the permissions of ${child} or remove it.`,
        ),
      );
      continue;
    }
    const { provider, problem: found } = await scanOne(dir, dirName, source);
    if (provider) result.providers.push(provider);
    if (found) result.problems.push(found);
  }
  return result;
}
