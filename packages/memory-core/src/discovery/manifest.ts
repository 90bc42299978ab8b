import fsp from "node:fs/promises";
import path from "node:path";
import { parseDocument } from "yaml";
import { BUILTIN_PROVIDER_NAME, PROVIDER_NAME_PATTERN } from "../provider.js";
import { describeError } from "../errors.js";
import { normalizeNewlines, stripBom } from "../fs.js";

/** Fields read from a provider folder's `plugin.yaml`. Unknown fields are ignored. */
export interface PluginYaml {
  name?: string;
  version: string | null;
  description: string;
  hooks: string[];
  entry?: string;
  /** `isolation: worker` offers to run the provider in a worker thread (see `IsolationMode`). */
  isolation?: "inline" | "worker";
}

/** One provider declared by a package.json `hermesMemoryProvider` field. */
export interface PackageProviderManifest {
  name: string;
  entry?: string;
  cli?: string;
  description?: string;
  hooks?: string[];
  /** `"worker"` offers to run the provider in a worker thread (config and `openMemory` may override it). */
  isolation?: "inline" | "worker";
}

/** Result of parsing a manifest: the value, or the reasons it was refused. */
export type ManifestParse<T> = { ok: true; value: T } | { ok: false; errors: string[] };

/** Why a provider name is refused, or `null` when it is acceptable. */
export function providerNameError(name: unknown): string | null {
  if (typeof name !== "string") return `the name must be a string, got ${describeType(name)}`;
  if (name === BUILTIN_PROVIDER_NAME) return `'${BUILTIN_PROVIDER_NAME}' is reserved for the built-in memory`;
  if (!PROVIDER_NAME_PATTERN.test(name)) {
    return `${quoteBrief(name)} does not match ${PROVIDER_NAME_PATTERN.source} (lower-case letters, digits, '.', '_', '-'; at most 64 characters)`;
  }
  return null;
}

/** Longest excerpt of a manifest value quoted in a problem message. */
const QUOTE_CHARS = 80;

/** `'value'`, cut to `QUOTE_CHARS` characters so a huge manifest value cannot bloat a message. */
function quoteBrief(text: string): string {
  return text.length > QUOTE_CHARS ? `'${text.slice(0, QUOTE_CHARS)}…' (${text.length} characters)` : `'${text}'`;
}

function describeType(value: unknown): string {
  if (value === undefined) return "nothing (the field is missing)";
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  if (typeof value === "string") {
    const json = JSON.stringify(value);
    return json.length > QUOTE_CHARS + 2 ? `string ${json.slice(0, QUOTE_CHARS + 1)}…" (${value.length} characters)` : `string ${json}`;
  }
  return `${typeof value} ${String(value)}`;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function readStringList(value: unknown, field: string, errors: string[]): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || !value.every((v) => typeof v === "string")) {
    errors.push(`'${field}' must be a list of strings, got ${describeType(value)}`);
    return [];
  }
  return value as string[];
}

/** Most aliases `plugin.yaml` may resolve (the same cap as config.yaml). */
const MAX_PLUGIN_YAML_ALIASES = 100;

/** Parse `plugin.yaml` text. Never throws; YAML errors and wrong field types become `errors`. */
export function parsePluginYaml(text: string): ManifestParse<PluginYaml> {
  let data: unknown;
  try {
    const doc = parseDocument(normalizeNewlines(stripBom(text)), { prettyErrors: false });
    if (doc.errors.length > 0) {
      return { ok: false, errors: doc.errors.map((e) => `invalid YAML: ${e.message.split("\n")[0]}`) };
    }
    // An alias bomb ("billion laughs") makes toJS() throw instead of expanding it.
    data = doc.toJS({ maxAliasCount: MAX_PLUGIN_YAML_ALIASES });
  } catch (error) {
    const reason =
      error instanceof ReferenceError ? `more than ${MAX_PLUGIN_YAML_ALIASES} resolved aliases (an alias bomb?)` : describeError(error);
    return { ok: false, errors: [`invalid YAML: ${reason}`] };
  }
  if (data === null || data === undefined) return { ok: true, value: { version: null, description: "", hooks: [] } };
  if (!isPlainObject(data)) return { ok: false, errors: [`plugin.yaml must be a mapping, got ${describeType(data)}`] };
  const errors: string[] = [];
  const result: PluginYaml = { version: null, description: "", hooks: [] };
  if (data.name !== undefined) {
    const nameError = providerNameError(data.name);
    if (nameError) errors.push(`'name': ${nameError}`);
    else result.name = data.name as string;
  }
  if (data.version !== undefined && data.version !== null) {
    if (typeof data.version === "string" || typeof data.version === "number") result.version = String(data.version);
    else errors.push(`'version' must be a string, got ${describeType(data.version)}`);
  }
  if (data.description !== undefined && data.description !== null) {
    if (typeof data.description === "string") result.description = data.description.trim();
    else errors.push(`'description' must be a string, got ${describeType(data.description)}`);
  }
  result.hooks = readStringList(data.hooks, "hooks", errors);
  if (data.entry !== undefined && data.entry !== null) {
    if (typeof data.entry === "string" && data.entry.trim() !== "") result.entry = data.entry.trim();
    else errors.push(`'entry' must be a non-empty string, got ${describeType(data.entry)}`);
  }
  const isolation = readIsolation(data.isolation, "isolation", errors);
  if (isolation) result.isolation = isolation;
  return errors.length > 0 ? { ok: false, errors } : { ok: true, value: result };
}

/** The manifest's `isolation` field: absent, `inline` or `worker`; anything else is an error. */
function readIsolation(value: unknown, field: string, errors: string[]): "inline" | "worker" | undefined {
  if (value === undefined || value === null) return undefined;
  if (value === "inline" || value === "worker") return value;
  errors.push(`'${field}' must be "inline" or "worker", got ${describeType(value)}`);
  return undefined;
}

function parseProviderObject(value: unknown, label: string, errors: string[]): PackageProviderManifest | null {
  if (typeof value === "string") {
    const nameError = providerNameError(value);
    if (nameError) {
      errors.push(`${label}: ${nameError}`);
      return null;
    }
    return { name: value };
  }
  if (!isPlainObject(value)) {
    errors.push(`${label} must be a provider name or an object {name, entry?, cli?, description?}, got ${describeType(value)}`);
    return null;
  }
  const local: string[] = [];
  const nameError = providerNameError(value.name);
  if (nameError) local.push(`${label}.name: ${nameError}`);
  // Only a string name is ever used (a bad one is refused above); never String() a JSON object.
  const out: PackageProviderManifest = { name: typeof value.name === "string" ? value.name : "" };
  for (const key of ["entry", "cli", "description"] as const) {
    const v = value[key];
    if (v === undefined || v === null) continue;
    if (typeof v !== "string" || (key !== "description" && v.trim() === "")) {
      local.push(`${label}.${key} must be a non-empty string, got ${describeType(v)}`);
      continue;
    }
    out[key] = key === "description" ? v.trim() : v.trim();
  }
  if (value.hooks !== undefined) out.hooks = readStringList(value.hooks, `${label}.hooks`, local);
  const isolation = readIsolation(value.isolation, `${label}.isolation`, local);
  if (isolation) out.isolation = isolation;
  errors.push(...local);
  return local.length > 0 ? null : out;
}

/**
 * Parse a package.json `hermesMemoryProvider` value: a provider name, an object, or an array of
 * objects. Valid entries are returned even when others are invalid; each invalid entry adds errors.
 */
export function parseHermesMemoryProviderField(value: unknown): { providers: PackageProviderManifest[]; errors: string[] } {
  const errors: string[] = [];
  const providers: PackageProviderManifest[] = [];
  if (Array.isArray(value)) {
    if (value.length === 0) errors.push("hermesMemoryProvider is an empty list");
    value.forEach((item, i) => {
      const parsed = parseProviderObject(item, `hermesMemoryProvider[${i}]`, errors);
      if (parsed) providers.push(parsed);
    });
  } else {
    const parsed = parseProviderObject(value, "hermesMemoryProvider", errors);
    if (parsed) providers.push(parsed);
  }
  return { providers, errors };
}

const EXPORT_CONDITIONS = new Set(["node", "import", "default"]);

function resolveExportTarget(target: unknown): string | null {
  if (typeof target === "string") return target;
  if (Array.isArray(target)) {
    for (const t of target) {
      const r = resolveExportTarget(t);
      if (r) return r;
    }
    return null;
  }
  if (isPlainObject(target)) {
    // Node picks the first key, in object order, that is one of the active conditions.
    for (const [key, value] of Object.entries(target)) {
      if (!EXPORT_CONDITIONS.has(key)) continue;
      const r = resolveExportTarget(value);
      if (r) return r;
    }
  }
  return null;
}

/**
 * The module an `import "<pkg>"` from Node would load, relative to the package directory:
 * `exports["."]` (conditions node/import/default), else `main`, else `index.js`. Reads only the
 * given package.json object.
 */
export function packageMainExport(pkg: Record<string, unknown>): string {
  const exportsField = pkg.exports;
  if (exportsField !== undefined && exportsField !== null) {
    let root: unknown = exportsField;
    if (isPlainObject(exportsField) && Object.keys(exportsField).some((k) => k.startsWith("."))) root = exportsField["."];
    const target = resolveExportTarget(root);
    if (target) return target;
  }
  if (typeof pkg.main === "string" && pkg.main.trim() !== "") return pkg.main.trim();
  return "index.js";
}

/** Outcome of placing a manifest path inside its package/folder. */
export type ContainedPath = { ok: true; path: string } | { ok: false; code: "ENTRY_OUTSIDE_PACKAGE" | "MISSING_ENTRY"; reason: string };

function isInside(base: string, candidate: string): boolean {
  const rel = path.relative(base, candidate);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

/**
 * Resolve a manifest-relative path (`entry`, `cli`, …) inside `baseDir`. Refuses absolute paths,
 * paths that climb out with `..`, and symlinks whose target lies outside `baseDir`; reports a
 * missing file. `baseDir` must already be a real (symlink-free) path.
 */
export async function resolveInsideDir(baseDir: string, relative: string): Promise<ContainedPath> {
  if (path.isAbsolute(relative) || /^[a-zA-Z]:[\\/]/.test(relative) || relative.startsWith("\\")) {
    return { ok: false, code: "ENTRY_OUTSIDE_PACKAGE", reason: `'${relative}' is an absolute path` };
  }
  const candidate = path.resolve(baseDir, relative);
  if (!isInside(baseDir, candidate)) {
    return { ok: false, code: "ENTRY_OUTSIDE_PACKAGE", reason: `'${relative}' points outside ${baseDir}` };
  }
  let real: string;
  try {
    real = await fsp.realpath(candidate);
  } catch {
    return { ok: false, code: "MISSING_ENTRY", reason: `'${relative}' does not exist (looked for ${candidate})` };
  }
  if (!isInside(baseDir, real)) {
    return { ok: false, code: "ENTRY_OUTSIDE_PACKAGE", reason: `'${relative}' is a symlink to ${real}, outside ${baseDir}` };
  }
  try {
    if (!(await fsp.stat(real)).isFile()) return { ok: false, code: "MISSING_ENTRY", reason: `'${relative}' is not a file` };
  } catch {
    return { ok: false, code: "MISSING_ENTRY", reason: `'${relative}' cannot be read` };
  }
  return { ok: true, path: real };
}

/** True when a file exists and is a regular file (symlinks followed). */
export async function isFile(file: string): Promise<boolean> {
  try {
    return (await fsp.stat(file)).isFile();
  } catch {
    return false;
  }
}
