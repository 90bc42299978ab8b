import fs from "node:fs";
import path from "node:path";
import { HermesMemoryError, MANIFEST_FIELD, parseHermesMemoryProviderField, type PackageProviderManifest } from "@hermes/memory-core";
import type { ContractCapabilities } from "./contract-setup.js";
import { ownValue } from "./intrinsics.js";

/** Kit-specific settings a package may put under `hermesMemoryProvider.contract` (core ignores the key). */
export interface ManifestContractSettings {
  /** Overrides for the capabilities the CLI infers. */
  capabilities?: Partial<ContractCapabilities>;
  /** Clause ids to skip, with the reason. */
  skip?: Record<string, string>;
}

/** A provider package as read from disk (nothing imported). */
export interface ProviderPackage {
  /** Real path of the package directory. */
  dir: string;
  packageName: string;
  packageJson: Record<string, unknown>;
  /** Valid provider declarations, as core's manifest parser reads them. */
  providers: PackageProviderManifest[];
  /** What is wrong with the `hermesMemoryProvider` field (empty when valid). */
  errors: string[];
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function rawEntries(pkg: Pick<ProviderPackage, "packageJson">): unknown[] {
  const field = pkg.packageJson[MANIFEST_FIELD];
  return Array.isArray(field) ? field : [field];
}

/**
 * Read `<dir>/package.json` and validate its `hermesMemoryProvider` field with core's manifest
 * parser, so the kit accepts exactly what discovery accepts. Throws `INVALID_MANIFEST` when there
 * is no readable package.json; problems with the field itself are returned in `errors`.
 */
export function readProviderPackage(dir: string): ProviderPackage {
  const realDir = fs.realpathSync(path.resolve(dir));
  const file = path.join(realDir, "package.json");
  let packageJson: Record<string, unknown>;
  try {
    // A leading byte-order mark is accepted, as core's discovery accepts it.
    const text = fs.readFileSync(file, "utf8");
    const parsed: unknown = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
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
  let providers: PackageProviderManifest[] = [];
  if (packageJson[MANIFEST_FIELD] === undefined) {
    errors.push(`package.json has no "${MANIFEST_FIELD}" field`);
  } else {
    const parsed = parseHermesMemoryProviderField(packageJson[MANIFEST_FIELD]);
    providers = parsed.providers;
    errors.push(...parsed.errors);
  }
  // Discovery keeps the first of two same-named declarations; the kit asks for one of each.
  const names = providers.map((p) => p.name);
  for (const name of new Set(names)) {
    if (names.filter((n) => n === name).length > 1) errors.push(`provider ${JSON.stringify(name)} is declared more than once`);
  }
  for (const raw of rawEntries({ packageJson })) {
    if (isPlainObject(raw) && raw.contract !== undefined && !isPlainObject(raw.contract)) {
      errors.push(`${MANIFEST_FIELD} ${JSON.stringify(raw.name)}: contract must be an object`);
    }
  }
  if (typeof packageJson.name !== "string" || packageJson.name === "") errors.push('package.json has no "name"');
  return { dir: realDir, packageName: typeof packageJson.name === "string" ? packageJson.name : "", packageJson, providers, errors };
}

/** The kit settings (`contract`) declared beside the provider named `name`, if any. */
export function contractSettings(pkg: ProviderPackage, name: string): ManifestContractSettings | undefined {
  // Own properties only: the package's code may have run (and changed Object.prototype) by now.
  const raw = rawEntries(pkg).find((e) => isPlainObject(e) && ownValue(e, "name") === name);
  const contract = ownValue(raw, "contract");
  return isPlainObject(contract) ? (contract as ManifestContractSettings) : undefined;
}

/** Pick the provider to test: the one named `name`, or the only one declared. */
export function selectManifestProvider(pkg: ProviderPackage, name?: string): PackageProviderManifest {
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
