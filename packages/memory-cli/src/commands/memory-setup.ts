import * as prompts from "@clack/prompts";
import {
  HermesMemoryError,
  applySetup,
  configFilePath,
  describeError,
  discoverMemoryProviders,
  installCommandHint,
  isCoreMemoryProvider,
  loadMemoryProvider,
  planSetup,
  coerceConfigValue,
  readConfig,
  readEnvFile,
  setActiveProvider,
  type MemoryProvider,
  type SetupField,
  type SetupResult,
} from "@hermes/memory-core";
import type { Writable } from "node:stream";
import { discoveryScope, type CliContext } from "../cli-context.js";
import { CliUsageError, ReportedFailure } from "../cli-usage-error.js";
import { maskSecret } from "../output/mask-secret.js";
import { providerAvailability, type ProviderAvailability } from "../provider-availability.js";

/** Options of `memory setup`. */
export interface SetupCommandOptions {
  /** `--set key=value`, repeatable. */
  set?: string[];
  /** `--yes`: accept defaults, never prompt. */
  yes?: boolean;
}

/** The picker's value for "no external provider". */
const BUILTIN_CHOICE = "\u0000builtin";

/** Thrown when the user cancels a prompt (Ctrl-C, Escape, or stdin closed). */
class SetupCancelled extends CliUsageError {
  constructor() {
    super("Cancelled. No changes saved. For a non-interactive setup pass --yes and/or --set key=value.", "CANCELLED");
  }
}

/** Collects repeatable `--set key=value` options for commander. */
export function collectSet(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** Parse `--set key=value` pairs; the value may contain `=`. */
export function parseSetPairs(pairs: string[]): Record<string, string> {
  const answers: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf("=");
    const key = eq > 0 ? pair.slice(0, eq).trim() : "";
    if (key === "") throw new CliUsageError(`--set expects key=value, got '${pair}'; e.g. --set path=/data/memory.db.`);
    answers[key] = pair.slice(eq + 1);
  }
  return answers;
}

/** Prompt plumbing: where prompts read and draw, and the signal that cancels them when stdin ends. */
interface PromptIo {
  input: NodeJS.ReadableStream & CliContext["io"]["stdin"];
  output: Writable;
  signal: AbortSignal;
}

function promptIo(ctx: CliContext): { io: PromptIo; done: () => void } {
  const controller = new AbortController();
  // A closed stdin (pipe ended, </dev/null) must cancel instead of leaving a prompt waiting forever.
  const onEnd = () => controller.abort();
  ctx.io.stdin.once("end", onEnd);
  return {
    io: { input: ctx.io.stdin, output: ctx.json ? ctx.io.stderr : ctx.io.stdout, signal: controller.signal },
    done: () => {
      ctx.io.stdin.off("end", onEnd);
      // Let the process exit although stdin was read from.
      (ctx.io.stdin as { pause?: () => void }).pause?.();
      (ctx.io.stdin as { unref?: () => void }).unref?.();
    },
  };
}

function checkCancel<T>(value: T | symbol): Exclude<T, symbol> {
  if (prompts.isCancel(value)) throw new SetupCancelled();
  return value as Exclude<T, symbol>;
}

/**
 * `hermes-memory memory setup [provider]`. Without a name: a picker of discovered providers plus
 * "Built-in only". With a name: the provider's setup fields, prompted in order (selects for
 * choices, masked secrets, defaults shown), or taken from `--set`/`--yes` without prompting. Ends
 * by saying what was written where. Secrets only ever reach `$HERMES_HOME/.env` (0600).
 */
export async function setupCommand(ctx: CliContext, providerName: string | undefined, options: SetupCommandOptions): Promise<void> {
  const sets = parseSetPairs(options.set ?? []);
  const interactive = options.yes !== true && Object.keys(sets).length === 0;
  if (providerName !== undefined && isCoreMemoryProvider(providerName)) {
    await chooseBuiltin(ctx);
    return;
  }
  if (providerName === undefined && !interactive) {
    throw new CliUsageError(
      "Name the provider to set up without prompting, e.g. `hermes-memory memory setup sqlite --yes`; `hermes-memory plugins list` shows what is installed.",
    );
  }
  const session = interactive ? promptIo(ctx) : null;
  try {
    let name = providerName;
    if (name === undefined) {
      name = await pickProvider(ctx, session!.io);
      if (name === BUILTIN_CHOICE) {
        await chooseBuiltin(ctx);
        return;
      }
    }
    const provider = await loadMemoryProvider(name, { ...discoveryScope(ctx), registerSkills: false });
    const answers = interactive ? await promptFields(ctx, provider, session!.io) : sets;
    let result: SetupResult;
    try {
      // A key exported in the shell counts as set: providers read secrets with getEnv(), which
      // falls back to the process environment when the profile's .env has no value.
      result = await applySetup(provider, answers, {
        hermesHome: ctx.hermesHome,
        acceptDefaults: interactive || options.yes === true,
        env: ctx.io.env,
      });
    } catch (error) {
      throw withAnswers(error, provider, answers, interactive);
    }
    report(ctx, provider, result, providerAvailability(provider, { hermesHome: ctx.hermesHome, env: ctx.io.env }));
  } finally {
    session?.done();
  }
}

/** Built-in only: `memory.provider = ""`. */
async function chooseBuiltin(ctx: CliContext): Promise<void> {
  const previous = (await readConfig(ctx.hermesHome)).memory.provider;
  await setActiveProvider(ctx.hermesHome, "");
  const configPath = configFilePath(ctx.hermesHome);
  const { out } = ctx;
  out.result({ provider: "", previousProvider: previous || null, configPath }, () => {
    out.line(`${out.colors.green("✓")} Memory provider: built-in only (MEMORY.md / USER.md)`);
    out.line(`  Saved to ${configPath}`);
  });
}

function setupHint(provider: MemoryProvider): string {
  let fields: unknown[] = [];
  try {
    const schema = provider.getConfigSchema();
    fields = Array.isArray(schema) ? schema : [];
  } catch (error) {
    return `config schema failed: ${describeError(error)}`;
  }
  const secrets = fields.filter((f) => (f as { secret?: boolean }).secret === true).length;
  const plain = fields.length - secrets;
  if (fields.length === 0) return "no setup needed";
  if (secrets > 0 && plain > 0) return "API key / local";
  if (secrets > 0) return "requires API key";
  return "local";
}

async function pickProvider(ctx: CliContext, io: PromptIo): Promise<string> {
  const [discovery, config] = await Promise.all([discoverMemoryProviders(discoveryScope(ctx)), readConfig(ctx.hermesHome)]);
  const options: Array<{ value: string; label: string; hint?: string; disabled?: boolean }> = [];
  for (const found of discovery.providers) {
    try {
      const provider = await loadMemoryProvider(found.name, {
        hermesHome: ctx.hermesHome,
        cwd: ctx.cwd,
        config,
        discovery,
        registerSkills: false,
      });
      const description = found.description ? ` — ${found.description}` : "";
      options.push({ value: found.name, label: `${found.name}${description}`, hint: setupHint(provider) });
    } catch (error) {
      options.push({ value: found.name, label: found.name, hint: `cannot load: ${describeError(error)}`, disabled: true });
    }
  }
  options.push({ value: BUILTIN_CHOICE, label: "Built-in only (MEMORY.md / USER.md)", hint: "no external provider" });
  // Enter keeps what is configured; without a usable configured provider it sets up the first one
  // installed (someone running setup wants one), and built-in only when none is.
  const usable = options.filter((o) => !o.disabled && o.value !== BUILTIN_CHOICE);
  const current = usable.find((o) => o.value === config.memory.provider);
  if (current) current.hint = current.hint ? `${current.hint}, active` : "active";
  const initialValue = (current ?? usable[0])?.value ?? BUILTIN_CHOICE;
  if (discovery.providers.length === 0) {
    const install = await installCommandHint("@hermes/memory-sqlite", { cwd: ctx.cwd, env: ctx.io.env });
    prompts.log.info(`No memory provider plugins found. Install one with ${install}.`, { output: io.output });
  }
  const choice = await prompts.select({ message: "Memory provider setup", options, initialValue, ...io });
  return checkCancel(choice);
}

function fieldLabel(field: SetupField): string {
  const label = field.description?.trim() || field.key;
  return field.required ? `${label} (required)` : label;
}

function displayValue(value: unknown): string {
  return value === undefined || value === null ? "" : String(value);
}

/**
 * Inline validation so a bad value is re-asked instead of failing after every answer was typed:
 * core's `coerceConfigValue`, the same check `applySetup` and the runtime resolver apply.
 */
function validateValue(field: SetupField, raw: string, blankAllowed: boolean): string | undefined {
  const value = raw.trim();
  if (value === "") return blankAllowed ? undefined : `${field.key} is required`;
  const coerced = coerceConfigValue(field, value);
  return coerced.ok ? undefined : `${field.key} ${coerced.problem}`;
}

async function promptFields(ctx: CliContext, provider: MemoryProvider, io: PromptIo): Promise<Record<string, unknown>> {
  const [config, env] = await Promise.all([readConfig(ctx.hermesHome), readEnvFile(ctx.hermesHome)]);
  const answers: Record<string, unknown> = {};
  const asked = new Set<string>();
  prompts.intro(`Configuring ${provider.name}`, { output: io.output });
  // Re-plan after every answer: a later field's `when`/`defaultFrom` may depend on it.
  for (;;) {
    const plan = planSetup(provider, { config, env, answers });
    const field = plan.fields.find((f) => !asked.has(f.key));
    if (!field) break;
    asked.add(field.key);
    const value = await promptField(field, io);
    if (value !== undefined && !(typeof value === "string" && value.trim() === "")) answers[field.key] = value;
  }
  if (asked.size === 0) prompts.log.info(`${provider.name} needs no settings.`, { output: io.output });
  return answers;
}

async function promptField(field: SetupField, io: PromptIo): Promise<unknown> {
  const label = fieldLabel(field);
  const fallback = field.isSet ? field.currentValue : field.effectiveDefault;
  const hasFallback = fallback !== undefined && fallback !== null && String(fallback).trim() !== "";
  if (field.secret) {
    if (!field.isSet && field.url) prompts.log.info(`Get yours at ${field.url}`, { output: io.output });
    const message = field.isSet ? `${label} (current: ${maskSecret(displayValue(field.currentValue))}, blank to keep)` : label;
    const value = await prompts.password({
      message,
      validate: (v) => validateValue(field, v ?? "", !field.required || hasFallback),
      ...io,
    });
    return checkCancel(value);
  }
  if (Array.isArray(field.choices) && field.choices.length > 0) {
    const initial = field.choices.find((c) => String(c) === displayValue(fallback)) ?? field.choices[0];
    const value = await prompts.select({
      message: label,
      options: field.choices.map((c) => ({
        value: c,
        label: String(c),
        ...(String(c) === displayValue(field.effectiveDefault) ? { hint: "default" } : {}),
      })),
      initialValue: initial,
      ...io,
    });
    return checkCancel(value);
  }
  if (field.type === "boolean") {
    const initial = hasFallback ? /^(true|yes|on|1)$/i.test(String(fallback)) : false;
    const value = await prompts.confirm({ message: label, initialValue: initial, ...io });
    return checkCancel(value);
  }
  const shown = hasFallback ? displayValue(fallback) : "";
  const value = await prompts.text({
    message: shown ? `${label} [${shown}]` : label,
    placeholder: shown,
    defaultValue: shown,
    validate: (v) => validateValue(field, v ?? "", !field.required || hasFallback),
    ...io,
  });
  return checkCancel(value);
}

/**
 * When saving fails after the user answered, repeat the non-secret answers as a ready command so
 * nothing typed is lost (secret answers are never echoed).
 */
function withAnswers(error: unknown, provider: MemoryProvider, answers: Record<string, unknown>, interactive: boolean): unknown {
  if (!interactive || !HermesMemoryError.isInstance(error)) return error;
  const secretKeys = new Set(
    (() => {
      try {
        return provider
          .getConfigSchema()
          .filter((f) => f.secret)
          .map((f) => f.key);
      } catch {
        return [] as string[];
      }
    })(),
  );
  const plain = Object.entries(answers).filter(([k]) => !secretKeys.has(k));
  const omitted = Object.keys(answers).filter((k) => secretKeys.has(k));
  if (plain.length === 0 && omitted.length === 0) return error;
  const quote = (v: string) => (/^[\w./:@=,+-]+$/.test(v) ? v : `'${v.replace(/'/g, "'\\''")}'`);
  const command =
    `hermes-memory memory setup ${provider.name} ${plain.map(([k, v]) => `--set ${quote(`${k}=${String(v)}`)}`).join(" ")}`.trim();
  const secrets = omitted.length > 0 ? ` (add --set for the secret${omitted.length > 1 ? "s" : ""} ${omitted.join(", ")})` : "";
  return new HermesMemoryError({
    code: error.code,
    message: `${error.message} Your answers, to retry without retyping: ${command}${secrets}`,
    cause: error,
  });
}

/**
 * Why a setup that was saved still fails: the provider cannot run yet (a native addon not built, a
 * key it checks itself). The configuration stays, since the fix usually happens outside (a rebuild,
 * an export), and the command exits 1 as `memory status` does for a provider that is not installed.
 */
function cannotRunYet(provider: MemoryProvider, result: SetupResult, reason: string): { code: string; message: string } {
  const why = reason.trim().replace(/\.$/, "");
  return {
    code: "PROVIDER_UNAVAILABLE",
    message: `Memory provider '${provider.name}' was set up (saved to ${result.configPath}) but cannot run yet: ${why}. Until it can, hosts run on built-in memory only; once fixed, \`hermes-memory memory status\` shows it available without running setup again (or run \`hermes-memory memory off\`).`,
  };
}

function report(ctx: CliContext, provider: MemoryProvider, result: SetupResult, availability: ProviderAvailability): void {
  const { out } = ctx;
  const c = out.colors;
  const failure = availability.available ? null : cannotRunYet(provider, result, availability.reason);
  // Under --json the failure is part of the one document printed.
  out.result({ ...result, available: availability.available, ...(failure ? { error: failure } : {}) }, () => {
    out.line(`${c.green("✓")} Memory provider: ${result.provider}`);
    out.line(`  Activation saved to ${result.configPath} (memory.provider)`);
    const keys = Object.keys(result.savedValues);
    if (keys.length > 0) {
      out.line(
        result.savedBy === "provider"
          ? `  Provider config saved by ${provider.name}'s saveConfig(): ${keys.join(", ")}`
          : `  Provider config saved to ${result.configPath} under memory.${provider.name}: ${keys.join(", ")}`,
      );
    }
    if (result.envPath) out.line(`  Secrets saved to ${result.envPath} (mode 0600): ${result.envKeys.join(", ")}`);
    if (result.postSetupRan) out.line(`  ${provider.name}'s post-setup step completed`);
    if (failure) out.line(`  ${c.yellow("!")} ${provider.name} cannot run yet: why and how to fix it follow on stderr.`);
    else out.line("  Start a new session to activate. Check it with `hermes-memory memory status`.");
  });
  if (failure) throw ctx.json ? new ReportedFailure(failure.message, failure.code) : new CliUsageError(failure.message, failure.code);
}
