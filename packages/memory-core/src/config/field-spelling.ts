import { HermesMemoryError, describeError } from "../errors.js";
import { closestNames } from "../closest-names.js";
import type { ConfigField } from "../provider.js";

/** The keys a config field is read by, in their canonical camelCase spelling. */
const CANONICAL_KEYS = [
  "key",
  "description",
  "secret",
  "required",
  "envVar",
  "url",
  "default",
  "choices",
  "type",
  "minimum",
  "maximum",
  "when",
  "defaultFrom",
  "advanced",
] as const;

/** Spellings of the original (Python) schema that mean a canonical key. */
export const CONFIG_FIELD_ALIASES: Readonly<Record<string, (typeof CANONICAL_KEYS)[number]>> = Object.freeze({
  env_var: "envVar",
  default_from: "defaultFrom",
});

/** Keys of the original schema that only tune its dashboard: accepted and unused. */
const INFORMATIONAL_KEYS = new Set(["step"]);

const KNOWN = new Set<string>([...CANONICAL_KEYS, ...Object.keys(CONFIG_FIELD_ALIASES), ...INFORMATIONAL_KEYS]);

function refused(provider: string, field: string, problem: string): HermesMemoryError {
  return new HermesMemoryError({
    code: "INVALID_PROVIDER",
    message: `Memory provider '${provider}' declares config field '${field}' ${problem} Fix its getConfigSchema() (or report it to the provider's author); nothing was read or saved with this schema.`,
  });
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function checkShapes(provider: string, field: ConfigField): void {
  if (field.envVar !== undefined && typeof field.envVar !== "string") {
    throw refused(provider, field.key, `with envVar ${JSON.stringify(field.envVar)}, which is not a variable name (a string).`);
  }
  if (field.when !== undefined && !isPlainObject(field.when)) {
    throw refused(provider, field.key, `with a \`when\` that is not a mapping of field keys to values (e.g. { mode: "cloud" }).`);
  }
  const from = field.defaultFrom as unknown;
  if (from !== undefined && !(isPlainObject(from) && typeof from.field === "string" && isPlainObject(from.map))) {
    throw refused(provider, field.key, `with a defaultFrom that is not { field: "<earlier key>", map: { <value>: <default> } }.`);
  }
}

/**
 * One declared field in its canonical spelling. The original's snake_case keys (`env_var`,
 * `default_from`) are honoured as their camelCase twins, and its dashboard-only `step` is
 * accepted; a key read by neither spelling, or both spellings with different values, is refused
 * with `INVALID_PROVIDER` naming the field and the key — a schema read wrongly would store a
 * secret under a variable the provider never reads, or apply a default it did not declare.
 */
export function normalizeConfigField(field: ConfigField, provider: string): ConfigField {
  const out: Record<string, unknown> = {};
  const given = field as unknown as Record<string, unknown>;
  for (const key of Object.keys(given)) {
    if (!KNOWN.has(key)) {
      const close = closestNames(key, [...CANONICAL_KEYS, ...Object.keys(CONFIG_FIELD_ALIASES)]);
      const meant = close.length > 0 ? ` Did you mean ${close.map((k) => `'${k}'`).join(" or ")}?` : "";
      throw refused(
        provider,
        String(field.key),
        `with the key '${key}', which this version does not read.${meant} Known keys: ${CANONICAL_KEYS.join(", ")} (env_var and default_from are accepted for envVar and defaultFrom).`,
      );
    }
    if (INFORMATIONAL_KEYS.has(key)) continue;
    const canonical = CONFIG_FIELD_ALIASES[key] ?? key;
    const value = given[key];
    if (value === undefined) continue;
    if (Object.prototype.hasOwnProperty.call(out, canonical) && JSON.stringify(out[canonical]) !== JSON.stringify(value)) {
      const alias = Object.keys(CONFIG_FIELD_ALIASES).find((a) => CONFIG_FIELD_ALIASES[a] === canonical);
      throw refused(provider, String(field.key), `with both ${canonical} and ${alias} and different values; give one of them.`);
    }
    out[canonical] = value;
  }
  const normalized = out as unknown as ConfigField;
  checkShapes(provider, normalized);
  return normalized;
}

/**
 * `normalizeConfigField` over a schema; entries that are not objects are passed through unchanged.
 * A field whose keys cannot even be read (a throwing getter or Proxy) is refused the same way.
 */
export function normalizeConfigFields<F extends ConfigField>(fields: readonly F[], provider: string): F[] {
  return fields.map((f, index) => {
    if (!isPlainObject(f)) return f;
    try {
      return normalizeConfigField(f, provider) as F;
    } catch (error) {
      if (HermesMemoryError.isInstance(error)) throw error;
      throw refused(provider, `#${index + 1}`, `that cannot be read (${describeError(error)}); declare fields as plain objects.`);
    }
  });
}
