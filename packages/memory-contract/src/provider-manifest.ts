import fs from "node:fs";
import path from "node:path";
import { HermesMemoryError, isValidProviderName } from "@hermes/memory-core";
import type { ContractCapabilities } from "./contract-setup.js";

/** Kit-specific settings a package may put under `hermesMemoryProvider.contract`. */
export interface ManifestContractSettings {
  /** Overrides for the capabilities the CLI infers. */
  capabilities?: Partial<ContractCapabilities>;
  /** Clause ids to skip, with the reason. */
  skip?: Record<string, string>;
}

/** One provider declared by a package's `hermesMemoryProvider` field. */
export interface ProviderManifestEntry {
  name: string;
  /** Entry module relative to the package dir; absent: the package's main export. */
  entry?: string;
  contract?: ManifestContractSettings;
}

/** A provider package as read from disk (nothing imported). */
export interface ProviderPackage {
  /** Real path of the package directory. */
  dir: string;
  packageName: string;
  packageJson: Record<string, unknown>;
  /** Valid provider declarations. */
  providers: ProviderManifestEntry[];
  /** What is wrong with the `hermesMemoryProvider` field (empty when valid). */
  errors: string[];
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function parseEntry(value: unknown, at: string, errors: string[]): ProviderManifestEntry | undefined {
  if (typeof value === "string") {
    if (!isValidProviderName(value)) {
      errors.push(`${at} ${JSON.stringify(value)} is not a valid provider name (^[a-z0-9][a-z0-9._-]{0,63}$, not "builtin")`);
      return undefined;
    }
    return { name: value };
  }
  if (!isPlainObject(value)) {
    errors.push(`${at} must be a provider name or an object {name, entry?}`);
    return undefined;
  }
  if (!isValidProviderName(value.name)) {
    errors.push(`${at}.name ${JSON.stringify(value.name)} is not a valid provider name (^[a-z0-9][a-z0-9._-]{0,63}$, not "builtin")`);
    return undefined;
  }
  const entry: ProviderManifestEntry = { name: value.name };
  if (value.entry !== undefined) {
    if (typeof value.entry !== "string" || value.entry.trim() === "") errors.push(`${at}.entry must be a non-empty string`);
    else entry.entry = value.entry;
  }
  for (const key of ["cli", "configSchema", "description"] as const) {
    if (value[key] !== undefined && typeof value[key] !== "string") errors.push(`${at}.${key} must be a string`);
  }
  if (value.contract !== undefined) {
    if (!isPlainObject(value.contract)) errors.push(`${at}.contract must be an object`);
    else entry.contract = value.contract as ManifestContractSettings;
  }
  return entry;
}

/**
 * Read `<dir>/package.json` and its `hermesMemoryProvider` field. Throws `INVALID_MANIFEST` when
 * there is no readable package.json; problems with the field itself are returned in `errors`.
 */
export function readProviderPackage(dir: string): ProviderPackage {
  const realDir = fs.realpathSync(path.resolve(dir));
  const file = path.join(realDir, "package.json");
  let packageJson: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(fs.readFileSync(file, "utf8"));
    if (!isPlainObject(parsed)) throw new Error("not a JSON object");
    packageJson = parsed;
  } catch (error) {
    throw new HermesMemoryError({
      code: "INVALID_MANIFEST",
      message: `Cannot read ${file}: ${error instanceof Error ? error.message : String(error)}. Run the contract kit on a package directory that has a valid package.json.`,
      cause: error,
    });
  }
  const errors: string[] = [];
  const providers: ProviderManifestEntry[] = [];
  const field = packageJson.hermesMemoryProvider;
  if (field === undefined) {
    errors.push('package.json has no "hermesMemoryProvider" field');
  } else if (Array.isArray(field)) {
    if (field.length === 0) errors.push("hermesMemoryProvider is an empty list");
    field.forEach((item, i) => {
      const parsed = parseEntry(item, `hermesMemoryProvider[${i}]`, errors);
      if (parsed) providers.push(parsed);
    });
  } else {
    const parsed = parseEntry(field, "hermesMemoryProvider", errors);
    if (parsed) providers.push(parsed);
  }
  const names = providers.map((p) => p.name);
  for (const name of new Set(names)) {
    if (names.filter((n) => n === name).length > 1) errors.push(`provider ${JSON.stringify(name)} is declared more than once`);
  }
  if (typeof packageJson.name !== "string" || packageJson.name === "") errors.push('package.json has no "name"');
  return { dir: realDir, packageName: typeof packageJson.name === "string" ? packageJson.name : "", packageJson, providers, errors };
}

function exportTarget(target: unknown): string | undefined {
  if (typeof target === "string") return target;
  if (Array.isArray(target)) {
    for (const t of target) {
      const found = exportTarget(t);
      if (found) return found;
    }
  }
  if (isPlainObject(target)) {
    for (const [key, value] of Object.entries(target)) {
      if (key !== "node" && key !== "import" && key !== "default") continue;
      const found = exportTarget(value);
      if (found) return found;
    }
  }
  return undefined;
}

/** The module a provider entry points at, relative to the package: `entry`, else the main export. */
export function manifestEntryPath(pkg: ProviderPackage, provider: ProviderManifestEntry): string {
  if (provider.entry) return provider.entry;
  const exportsField = pkg.packageJson.exports;
  if (exportsField !== undefined && exportsField !== null) {
    const root = isPlainObject(exportsField) && Object.keys(exportsField).some((k) => k.startsWith(".")) ? exportsField["."] : exportsField;
    const found = exportTarget(root);
    if (found) return found;
  }
  const main = pkg.packageJson.main;
  return typeof main === "string" && main.trim() !== "" ? main : "index.js";
}

/** Resolve the entry to an absolute file inside the package, or say why it is not one. */
export function resolveManifestEntry(pkg: ProviderPackage, provider: ProviderManifestEntry): { file?: string; problem?: string } {
  const relative = manifestEntryPath(pkg, provider);
  const candidate = path.resolve(pkg.dir, relative);
  let real: string;
  try {
    real = fs.realpathSync(candidate);
  } catch {
    return { problem: `entry ${JSON.stringify(relative)} does not exist (${candidate}); build the package first` };
  }
  const rel = path.relative(pkg.dir, real);
  if (rel.startsWith("..") || path.isAbsolute(rel)) return { problem: `entry ${JSON.stringify(relative)} resolves outside the package (${real})` };
  if (!fs.statSync(real).isFile()) return { problem: `entry ${JSON.stringify(relative)} is not a file` };
  return { file: real };
}

/** Pick the provider to test: the one named `name`, or the only one declared. */
export function selectManifestProvider(pkg: ProviderPackage, name?: string): ProviderManifestEntry {
  if (name) {
    const found = pkg.providers.find((p) => p.name === name);
    if (found) return found;
    throw new HermesMemoryError({
      code: "PROVIDER_NOT_FOUND",
      message: `Package ${pkg.packageName || pkg.dir} declares no provider named '${name}' (declared: ${pkg.providers.map((p) => p.name).join(", ") || "none"}). Pass one of the declared names with --provider.`,
    });
  }
  const first = pkg.providers[0];
  if (!first) {
    throw new HermesMemoryError({
      code: "INVALID_MANIFEST",
      message: `Package ${pkg.packageName || pkg.dir} declares no valid memory provider: ${pkg.errors.join("; ")}. Add "hermesMemoryProvider": "<name>" to its package.json.`,
    });
  }
  if (pkg.providers.length > 1) {
    throw new HermesMemoryError({
      code: "INVALID_ARGUMENT",
      message: `Package ${pkg.packageName} declares several providers (${pkg.providers.map((p) => p.name).join(", ")}); choose one with --provider <name>.`,
    });
  }
  return first;
}
