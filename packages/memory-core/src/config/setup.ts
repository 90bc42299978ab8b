import { HermesMemoryError, describeError } from "../errors.js";
import { overridesSaveConfig, type ConfigField, type MemoryProvider } from "../provider.js";
import { configFilePath, setDocumentValue, updateConfig, type HermesConfig, readConfig } from "./config-file.js";
import { envFilePath, readEnvFile, writeEnvValues } from "./env-file.js";
import { coerceConfigValue, effectiveDefaultOf, fieldApplies, isBlank } from "./coerce.js";
import { normalizeConfigFields } from "./field-spelling.js";
import { runWithProfile } from "../profile.js";

/** How long `applySetup` waits for a provider's `postSetup` (an OAuth sign-in may take a while). */
export const DEFAULT_POST_SETUP_TIMEOUT_MS = 5 * 60_000;

/** A field of the setup form with what is known about it right now. */
export interface SetupField extends ConfigField {
  /** Stored value: `memory.<name>.<key>` for plain fields, the `.env` value for secrets (mask it before showing). */
  currentValue?: unknown;
  /** True when a value is already stored (config.yaml or .env). */
  isSet: boolean;
  /** The default after `defaultFrom` is applied. */
  effectiveDefault?: unknown;
  /** Where a secret (or an env-backed field) is stored; generated as `<PROVIDER>_<KEY>` for secrets without one. */
  envVar?: string;
}

/** The fields to ask for, in schema order, with `when` already applied. */
export interface SetupPlan {
  provider: string;
  fields: SetupField[];
}

/** What `applySetup` wrote where. */
export interface SetupResult {
  provider: string;
  configPath: string;
  /** `.env` path when secrets (or env-backed fields) were written, else `null`. */
  envPath: string | null;
  /** Variables written to `.env` (names only, never values). */
  envKeys: string[];
  /** Who stored the non-secret values: the provider's own `saveConfig`, or config.yaml `memory.<name>`. */
  savedBy: "provider" | "config.yaml";
  /** The non-secret values saved (the full form: answers, then stored values, then defaults). */
  savedValues: Record<string, unknown>;
  /** True when the provider has a `postSetup` step and it completed. */
  postSetupRan: boolean;
}

/** What `planSetup` knows: current config, `.env` values and answers given so far. */
export interface SetupState {
  config?: HermesConfig;
  /** `.env` values (`readEnvFile`); merge `process.env` in yourself if exported keys should count. */
  env?: Record<string, string>;
  /** Answers given so far (an interactive setup re-plans after each one, since `when` may depend on it). */
  answers?: Record<string, unknown>;
}

/**
 * The `.env` variable for a secret field that declares no `envVar`: `<PROVIDER>_<KEY>` upper-cased,
 * other characters replaced by `_` (so the secret is stored instead of silently dropped).
 */
export function defaultEnvVarName(providerName: string, key: string): string {
  const name = `${providerName}_${key}`.toUpperCase().replace(/[^A-Z0-9_]/g, "_");
  return /^[0-9]/.test(name) ? `_${name}` : name;
}

/**
 * A provider's declared fields in their canonical spelling (`env_var` → `envVar`, `default_from` →
 * `defaultFrom`), without entries that are not fields. Throws `INVALID_PROVIDER` when
 * `getConfigSchema()` throws, returns no array, or a field has a key neither spelling reads.
 */
export function readConfigSchema(provider: MemoryProvider): ConfigField[] {
  let schema: unknown;
  try {
    schema = provider.getConfigSchema();
  } catch (error) {
    throw new HermesMemoryError({
      code: "INVALID_PROVIDER",
      message: `Memory provider '${provider.name}' failed in getConfigSchema(): ${describeError(error)}. Report this to the provider's author.`,
      cause: error,
    });
  }
  if (!Array.isArray(schema)) {
    throw new HermesMemoryError({
      code: "INVALID_PROVIDER",
      message: `Memory provider '${provider.name}' returned ${typeof schema} from getConfigSchema(); it must return an array of fields ([] when there is nothing to configure).`,
    });
  }
  const fields = schema.filter(
    (f): f is ConfigField =>
      typeof f === "object" && f !== null && typeof (f as ConfigField).key === "string" && (f as ConfigField).key !== "",
  );
  return normalizeConfigFields(fields, provider.name);
}

function envVarOf(providerName: string, field: ConfigField): string | undefined {
  if (typeof field.envVar === "string" && field.envVar.trim() !== "") return field.envVar.trim();
  return field.secret ? defaultEnvVarName(providerName, field.key) : undefined;
}

/**
 * Work out the setup form for a provider: its schema fields in order, without those whose `when`
 * does not match, each with its stored value, whether it is set, the default after `defaultFrom`,
 * and the `.env` variable of secrets. `when` and `defaultFrom` see, for earlier fields, the answer
 * given, else the stored value, else the default. Fields marked `advanced` are left out unless
 * `answers` names them (so `--set batch_size=512` is validated and saved like any other answer).
 * Reads nothing from disk and changes nothing.
 */
export function planSetup(provider: MemoryProvider, current: SetupState = {}): SetupPlan {
  const stored = current.config?.memory.providerConfig(provider.name) ?? {};
  const env = current.env ?? {};
  const answers = current.answers ?? {};
  const values: Record<string, unknown> = { ...stored };
  const fields: SetupField[] = [];
  for (const field of readConfigSchema(provider)) {
    if (!fieldApplies(field, values)) continue;
    // Advanced fields are not asked; they join the form only when an answer names them.
    if (field.advanced === true && isBlank(answers[field.key])) continue;
    const effectiveDefault = effectiveDefaultOf(field, values);
    const envVar = envVarOf(provider.name, field);
    let currentValue: unknown;
    if (field.secret) currentValue = envVar !== undefined ? env[envVar] : undefined;
    else currentValue = !isBlank(stored[field.key]) ? stored[field.key] : envVar !== undefined ? env[envVar] : undefined;
    const isSet = !isBlank(currentValue);
    const planned: SetupField = { ...field, isSet };
    if (isSet) planned.currentValue = currentValue;
    if (effectiveDefault !== undefined) planned.effectiveDefault = effectiveDefault;
    if (envVar !== undefined) planned.envVar = envVar;
    fields.push(planned);
    if (!field.secret) {
      const answer = answers[field.key];
      values[field.key] = !isBlank(answer) ? answer : isSet ? currentValue : effectiveDefault;
    }
  }
  return { provider: provider.name, fields };
}

function coerce(field: ConfigField, value: unknown): { value?: unknown; error?: string } {
  const coerced = coerceConfigValue(field, value);
  return coerced.ok ? { value: coerced.value } : { error: `'${field.key}' ${coerced.problem}, got ${JSON.stringify(value)}` };
}

/**
 * Save setup answers for a provider and make it the active one. Secrets go only to
 * `$HERMES_HOME/.env` (mode 0600) under the field's `envVar`, or `<PROVIDER>_<KEY>` when it has
 * none; non-secret values go to `provider.saveConfig(values, hermesHome)` when the provider
 * overrides it, else to config.yaml `memory.<name>` (comments kept); then `memory.provider = name`.
 * Blank answers keep stored values; with `acceptDefaults`, defaults satisfy required fields; a
 * secret already in `.env` (or in `options.env`) satisfies a required secret.
 * Validates everything before writing anything: unknown keys and bad values throw
 * `INVALID_ARGUMENT`, missing required fields throw `SETUP_INCOMPLETE` (listing them).
 */
export async function applySetup(
  provider: MemoryProvider,
  answers: Record<string, unknown>,
  options: {
    hermesHome: string;
    acceptDefaults?: boolean;
    /**
     * Extra environment in which a secret counts as already set (e.g. `process.env` when the host
     * exports keys in the shell); `.env` values win. Default: only `$HERMES_HOME/.env`.
     */
    env?: Record<string, string | undefined>;
    /** Bound of the provider's `postSetup` step (default `DEFAULT_POST_SETUP_TIMEOUT_MS`). */
    postSetupTimeoutMs?: number;
  },
): Promise<SetupResult> {
  const { hermesHome } = options;
  const [config, envFile] = await Promise.all([readConfig(hermesHome), readEnvFile(hermesHome)]);
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(options.env ?? {})) if (typeof value === "string") env[key] = value;
  Object.assign(env, envFile);
  const schema = readConfigSchema(provider);
  const known = new Set(schema.map((f) => f.key));
  const unknown = Object.keys(answers).filter((k) => !known.has(k));
  if (unknown.length > 0) {
    throw new HermesMemoryError({
      code: "INVALID_ARGUMENT",
      message: `Memory provider '${provider.name}' has no setting named ${unknown.map((k) => `'${k}'`).join(", ")}. Known settings: ${[...known].join(", ") || "(none)"}. Nothing was written.`,
    });
  }
  const plan = planSetup(provider, { config, env, answers });
  const errors: string[] = [];
  const missing: SetupField[] = [];
  const envValues: Record<string, string> = {};
  const savedValues: Record<string, unknown> = {};
  for (const field of plan.fields) {
    const answer = answers[field.key];
    let value: unknown;
    if (!isBlank(answer)) {
      const coerced = coerce(field, answer);
      if (coerced.error !== undefined) {
        errors.push(coerced.error);
        continue;
      }
      value = coerced.value;
    }
    if (field.secret) {
      if (value !== undefined) envValues[field.envVar!] = String(value);
      else if (field.required && !field.isSet && !(options.acceptDefaults && !isBlank(field.effectiveDefault))) missing.push(field);
      else if (!field.isSet && options.acceptDefaults && !isBlank(field.effectiveDefault))
        envValues[field.envVar!] = String(field.effectiveDefault);
      continue;
    }
    const satisfied = value !== undefined || field.isSet || (options.acceptDefaults === true && !isBlank(field.effectiveDefault));
    if (field.required && !satisfied) {
      missing.push(field);
      continue;
    }
    // The full form: answer, else what is stored, else the default, so saveConfig never sees holes.
    const saved =
      value !== undefined ? value : field.isSet && field.currentValue !== undefined ? field.currentValue : field.effectiveDefault;
    if (saved !== undefined) savedValues[field.key] = saved;
    if (value !== undefined && field.envVar !== undefined) envValues[field.envVar] = String(value);
  }
  if (errors.length > 0) {
    throw new HermesMemoryError({
      code: "INVALID_ARGUMENT",
      message: `Invalid setup values for '${provider.name}': ${errors.join("; ")}. Nothing was written.`,
    });
  }
  if (missing.length > 0) {
    const list = missing
      .map((f) => `${f.key}${f.description ? ` (${f.description})` : ""}${f.secret ? ` [secret, stored as ${f.envVar}]` : ""}`)
      .join(", ");
    throw new HermesMemoryError({
      code: "SETUP_INCOMPLETE",
      message: `Setup of memory provider '${provider.name}' is incomplete: missing required ${missing.length === 1 ? "field" : "fields"} ${list}. Provide ${missing.length === 1 ? "it" : "them"} (e.g. \`hermes-memory memory setup ${provider.name} --set ${missing[0]!.key}=...\`) and retry. Nothing was written.`,
    });
  }

  const envKeys = Object.keys(envValues);
  // Validate env names before anything else is written, so a bad envVar leaves no half-done setup.
  if (envKeys.length > 0) await writeEnvValues(hermesHome, envValues);
  const savedBy = overridesSaveConfig(provider) ? "provider" : "config.yaml";
  if (savedBy === "provider" && Object.keys(savedValues).length > 0) {
    try {
      await provider.saveConfig({ ...savedValues }, hermesHome);
    } catch (error) {
      throw new HermesMemoryError({
        code: "STORAGE_FAILED",
        message: `Memory provider '${provider.name}' failed to save its configuration: ${describeError(error)}. ${envKeys.length > 0 ? `Secrets were already written to ${envFilePath(hermesHome)}; ` : ""}memory.provider was not changed. Fix the cause and run setup again.`,
        cause: error,
      });
    }
  }
  await updateConfig(hermesHome, (doc) => {
    if (savedBy === "config.yaml") {
      for (const [key, value] of Object.entries(savedValues)) setDocumentValue(doc, ["memory", provider.name, key], value);
    }
    setDocumentValue(doc, ["memory", "provider"], provider.name);
  });
  const postSetupRan = await runPostSetup(provider, hermesHome, savedValues, options.postSetupTimeoutMs ?? DEFAULT_POST_SETUP_TIMEOUT_MS);
  return {
    provider: provider.name,
    configPath: configFilePath(hermesHome),
    envPath: envKeys.length > 0 ? envFilePath(hermesHome) : null,
    envKeys,
    savedBy,
    savedValues,
    postSetupRan,
  };
}

/**
 * Run the provider's optional `postSetup` after everything was saved, in the profile's scope (so
 * `getEnv()` sees the `.env` just written), bounded by `timeoutMs`. Throws `POST_SETUP_FAILED`.
 */
async function runPostSetup(
  provider: MemoryProvider,
  hermesHome: string,
  values: Record<string, unknown>,
  timeoutMs: number,
): Promise<boolean> {
  const step = (provider as { postSetup?: unknown }).postSetup;
  if (typeof step !== "function") return false;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = Symbol("timeout");
  const failed = (why: string, cause?: unknown) =>
    new HermesMemoryError({
      code: "POST_SETUP_FAILED",
      message: `The post-setup step of memory provider '${provider.name}' ${why}. Its settings were saved and it is the active provider; fix the cause and run \`hermes-memory memory setup ${provider.name}\` again (or \`hermes-memory memory off\`).`,
      ...(cause !== undefined ? { cause } : {}),
    });
  try {
    const outcome = await Promise.race([
      runWithProfile(hermesHome, async () =>
        (step as (home: string, v: Record<string, unknown>) => unknown).call(provider, hermesHome, { ...values }),
      ),
      new Promise<typeof timedOut>((resolve) => {
        timer = setTimeout(() => resolve(timedOut), timeoutMs);
      }),
    ]);
    if (outcome === timedOut) throw failed(`did not finish within ${timeoutMs} ms`);
    return true;
  } catch (error) {
    if (HermesMemoryError.hasCode(error, "POST_SETUP_FAILED")) throw error;
    throw failed(`failed: ${describeError(error)}`, error);
  } finally {
    clearTimeout(timer);
  }
}
