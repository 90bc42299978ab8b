import { HermesMemoryError } from "../errors.js";
import { getHermesHome } from "../profile.js";
import type { ConfigField } from "../provider.js";
import { coerceConfigValue, effectiveDefaultOf, fieldApplies, isBlank } from "./coerce.js";
import { configFilePath, readConfig } from "./config-file.js";
import { normalizeConfigFields } from "./field-spelling.js";
import { getEnv } from "./secrets.js";

type Scalar = string | number | boolean;

/** `prefetch_limit` → `prefetchLimit`: the name of a field in the resolved config and in options. */
export type CamelCaseKey<S extends string> = S extends `${infer Head}_${infer Tail}` ? `${Head}${Capitalize<CamelCaseKey<Tail>>}` : S;

/**
 * The runtime type of one field: its `choices` as a union, else by `type` (`text`, `url` and
 * secrets → string). A field with neither keeps what YAML gave, so it is `string | number | boolean`:
 * declare `type` for a precise type.
 */
export type ConfigFieldValue<F> = F extends { readonly choices: ReadonlyArray<infer C> }
  ? C
  : F extends { readonly type: "integer" | "number" }
    ? number
    : F extends { readonly type: "boolean" }
      ? boolean
      : F extends { readonly type: "text" | "url" } | { readonly secret: true }
        ? string
        : string | number | boolean;

type Simplify<T> = { [K in keyof T]: T[K] } & {};

/**
 * The resolved config of a field list declared `as const satisfies readonly ConfigField[]`: one
 * camelCase property per field, always present when the field has a `default`, else optional.
 * A plain `ConfigField[]` (keys unknown to the compiler) gives `Record<string, unknown>`.
 */
export type ProviderConfigOf<Fs extends readonly ConfigField[]> = string extends Fs[number]["key"]
  ? Record<string, unknown>
  : Simplify<
      { -readonly [F in Fs[number] as F extends { readonly default: Scalar } ? CamelCaseKey<F["key"]> : never]: ConfigFieldValue<F> } & {
        -readonly [F in Fs[number] as F extends { readonly default: Scalar } ? never : CamelCaseKey<F["key"]>]?: ConfigFieldValue<F>;
      }
    >;

/** Explicit options for a field list: every camelCase property optional. */
export type ProviderConfigOptions<Fs extends readonly ConfigField[]> = string extends Fs[number]["key"]
  ? Record<string, unknown>
  : { -readonly [F in Fs[number] as CamelCaseKey<F["key"]>]?: ConfigFieldValue<F> | undefined };

/** Where a resolved value came from. */
export type ConfigValueSource = "option" | "config.yaml" | "env" | "default";

/** The inputs of `resolveProviderConfig`, in decreasing precedence: options, config.yaml, env, defaults. */
export interface ProviderConfigSources {
  /** Provider name: the config.yaml section `memory.<provider>`, used in messages. */
  provider: string;
  /**
   * Explicit options (e.g. constructor options), keyed by each field's camelCase twin (or its
   * snake_case key). `undefined` counts as absent; other keys are ignored. Win over everything.
   */
  options?: object;
  /** The `memory.<provider>` section of config.yaml (`config.memory.providerConfig(name)`). */
  section?: Record<string, unknown>;
  /** Path of the config.yaml the section came from, named in error messages. */
  configPath?: string;
  /**
   * How to read the variables named by `envVar`: a lookup function or a record. Default
   * `getEnv(name, hermesHome)` — the profile's `$HERMES_HOME/.env` over `process.env`.
   */
  env?: ((name: string) => string | undefined) | Readonly<Record<string, string | undefined>>;
  /** Profile home for the default `env` lookup (default: the active profile, `getHermesHome()`). */
  hermesHome?: string;
  /**
   * Keys in the config.yaml section that no field declares: `"warn"` (default) lists them in
   * `warnings` and ignores them — other tools (the Python agent, newer versions) may write keys this
   * version does not know; `"error"` throws `INVALID_CONFIG`.
   */
  unknownKeys?: "warn" | "error";
  /**
   * Throw `INVALID_CONFIG` when a `required` field whose `when` matches has no value (default
   * true). Pass false when the provider reports missing credentials itself (e.g. through
   * `isAvailable()`); such fields then stay `undefined`.
   */
  enforceRequired?: boolean;
}

/** What `resolveProviderConfig` returns. */
export interface ResolvedProviderConfig<T> {
  /** The typed runtime config (camelCase keys). */
  config: T;
  /** Where each present value came from, by field key. */
  sources: Record<string, ConfigValueSource>;
  /** Ignored unknown keys and ignored secrets found in config.yaml; log them. */
  warnings: string[];
}

/** `prefetch_limit` → `prefetchLimit`. */
export function configOptionName(key: string): string {
  return key.replace(/_([a-zA-Z0-9])/g, (_, c: string) => c.toUpperCase());
}

function hasOwn(record: object, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(record, key);
}

function envLookup(sources: ProviderConfigSources): (name: string) => string | undefined {
  const env = sources.env;
  if (typeof env === "function") return env;
  if (env !== undefined) return (name) => (hasOwn(env, name) ? env[name] : undefined);
  const home = sources.hermesHome ?? getHermesHome();
  return (name) => getEnv(name, home);
}

function describeOrigin(
  sources: ProviderConfigSources,
  field: ConfigField,
  origin: ConfigValueSource,
  optionName: string,
): { from: string; fix: string } {
  const yamlKey = `memory.${sources.provider}.${field.key}`;
  const where = sources.configPath ?? "config.yaml";
  if (origin === "option")
    return {
      from: `the option \`${optionName}\``,
      fix: `Pass a valid \`${optionName}\` or leave it out to use config.yaml or the default.`,
    };
  if (origin === "env") {
    return {
      from: `the environment variable ${field.envVar}`,
      fix: `Fix or unset ${field.envVar} (in $HERMES_HOME/.env or the process environment).`,
    };
  }
  if (origin === "default")
    return { from: "the declared default", fix: `Fix the default of '${field.key}' in the provider's config schema.` };
  return {
    from: `${yamlKey} in ${where}`,
    fix: `Fix or remove ${field.key} under memory.${sources.provider} in ${where} (removing it uses the default), or run \`hermes-memory memory setup ${sources.provider}\`.`,
  };
}

function invalid(message: string): HermesMemoryError {
  return new HermesMemoryError({ code: "INVALID_CONFIG", message });
}

/**
 * Resolve a provider's runtime config from its declared fields. For each field, in order, the
 * first non-blank value of: the explicit option (camelCase twin of the key), the config.yaml
 * section (`memory.<provider>.<key>`; never for secrets), the variable named by `envVar`, then the
 * default (`defaultFrom` evaluated against the fields resolved before it, else `default`).
 * Every value — including defaults — goes through the same coercion and validation as setup
 * (`type`, `minimum`/`maximum`, `choices`). `when` decides whether a `required` field must have a
 * value; a field whose `when` does not match still gets its value or default.
 *
 * Fields may use the original's spellings `env_var` and `default_from`; a field key neither
 * spelling reads throws `INVALID_PROVIDER` (see `normalizeConfigField`).
 * Throws `INVALID_CONFIG` naming the key, the bad value, where it came from and how to fix it.
 * Unknown config.yaml keys and secrets written to config.yaml are ignored and reported in
 * `warnings` (unknown keys throw with `unknownKeys: "error"`).
 */
export function resolveProviderConfig<const Fs extends readonly ConfigField[]>(
  declared: Fs,
  sources: ProviderConfigSources,
): ResolvedProviderConfig<ProviderConfigOf<Fs>> {
  const fields = normalizeConfigFields(declared, sources.provider);
  const options = (sources.options ?? {}) as Record<string, unknown>;
  const section = sources.section ?? {};
  const env = envLookup(sources);
  const byKey: Record<string, unknown> = {};
  const config: Record<string, unknown> = {};
  const origins: Record<string, ConfigValueSource> = {};
  const warnings: string[] = [];
  const where = sources.configPath ?? "config.yaml";

  const known = new Set(fields.map((f) => f.key));
  const unknown = Object.keys(section).filter((k) => !known.has(k));
  if (unknown.length > 0) {
    const hint = (k: string) => {
      const snake = k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
      return known.has(snake) && snake !== k ? ` (did you mean ${snake}?)` : "";
    };
    const list = unknown.map((k) => `${k}${hint(k)}`).join(", ");
    const message = `memory.${sources.provider} in ${where} has ${unknown.length === 1 ? "a key" : "keys"} this provider does not know: ${list}. Known keys: ${[...known].join(", ") || "(none)"}.`;
    if (sources.unknownKeys === "error") throw invalid(`${message} Remove or rename ${unknown.length === 1 ? "it" : "them"}.`);
    warnings.push(`${message} ${unknown.length === 1 ? "It is" : "They are"} ignored.`);
  }

  const missing: ConfigField[] = [];
  for (const field of fields) {
    const optionName = configOptionName(field.key);
    let raw: unknown;
    let origin: ConfigValueSource | undefined;
    const camel = hasOwn(options, optionName) ? options[optionName] : undefined;
    const option = !isBlank(camel) ? camel : hasOwn(options, field.key) ? options[field.key] : undefined;
    if (!isBlank(option)) {
      raw = option;
      origin = "option";
    } else if (!field.secret && !isBlank(section[field.key])) {
      raw = section[field.key];
      origin = "config.yaml";
    } else {
      if (field.secret && !isBlank(section[field.key])) {
        warnings.push(
          `memory.${sources.provider}.${field.key} in ${where} is ignored: secrets are read only from the environment. Move it to $HERMES_HOME/.env${field.envVar ? ` as ${field.envVar}` : ""} (\`hermes-memory memory setup ${sources.provider}\` does this) and delete it from config.yaml.`,
        );
      }
      const fromEnv = field.envVar ? env(field.envVar) : undefined;
      if (!isBlank(fromEnv)) {
        raw = fromEnv;
        origin = "env";
      } else {
        const fallback = effectiveDefaultOf(field, byKey);
        if (!isBlank(fallback)) {
          raw = fallback;
          origin = "default";
        }
      }
    }
    if (origin === undefined) {
      if (field.required && sources.enforceRequired !== false && fieldApplies(field, byKey)) missing.push(field);
      continue;
    }
    const coerced = coerceConfigValue(field, raw);
    if (!coerced.ok) {
      const { from, fix } = describeOrigin(sources, field, origin, optionName);
      const shown = field.secret ? "(the secret value is not shown)" : JSON.stringify(raw);
      throw invalid(`memory.${sources.provider}.${field.key} ${coerced.problem} (got ${shown} from ${from}). ${fix}`);
    }
    byKey[field.key] = coerced.value;
    config[optionName] = coerced.value;
    origins[field.key] = origin;
  }
  if (missing.length > 0) {
    const list = missing
      .map((f) =>
        f.secret || f.envVar
          ? `${f.key} (set ${f.envVar ?? "its variable"} in $HERMES_HOME/.env)`
          : `${f.key} (set memory.${sources.provider}.${f.key} in ${where})`,
      )
      .join(", ");
    throw invalid(
      `Memory provider '${sources.provider}' is missing required ${missing.length === 1 ? "setting" : "settings"} ${list}. Run \`hermes-memory memory setup ${sources.provider}\` to provide ${missing.length === 1 ? "it" : "them"}.`,
    );
  }
  return { config: config as ProviderConfigOf<Fs>, sources: origins, warnings };
}

/**
 * `resolveProviderConfig` with the sources read for a profile: the `memory.<provider>` section of
 * `$HERMES_HOME/config.yaml` through `readConfig` (throws `INVALID_CONFIG` for invalid YAML) and
 * env through `getEnv` (profile `.env` over `process.env`) unless `env` is given.
 */
export async function loadProviderConfig<const Fs extends readonly ConfigField[]>(
  fields: Fs,
  sources: Omit<ProviderConfigSources, "section" | "configPath"> & { hermesHome?: string },
): Promise<ResolvedProviderConfig<ProviderConfigOf<Fs>>> {
  const hermesHome = sources.hermesHome ?? getHermesHome();
  const config = await readConfig(hermesHome);
  return resolveProviderConfig(fields, {
    ...sources,
    hermesHome,
    section: config.memory.providerConfig(sources.provider),
    configPath: configFilePath(hermesHome),
  });
}
