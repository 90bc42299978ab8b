import path from "node:path";
import { pathToFileURL } from "node:url";
import { boundedCall, formatSeconds } from "./bounded-call.js";
import { closestNames } from "./closest-names.js";
import { defaultBundledDir } from "./bundled-dir.js";
import { HermesMemoryError } from "./errors.js";
import { describeProviderError, readProviderName } from "./plugin-describe.js";
import { readConfig, type HermesConfig } from "./config/config-file.js";
import { describeSearchedLocations, discoverMemoryProviders } from "./discovery/discover.js";
import { installHintFor } from "./discovery/install-hint.js";
import { hostPackageRoot } from "./discovery/package-source.js";
import type { DiscoveredProvider, DiscoveryOptions, DiscoveryResult } from "./discovery/types.js";
import { silentLogger, type Logger } from "./logger.js";
import { getHermesHome, runWithProfile } from "./profile.js";
import type { MemoryProviderRegistrationContext, RegisterCli } from "./plugin-seam.js";
import { isMemoryProvider, isMemoryProviderClass, type MemoryProvider } from "./provider.js";
import { replaceProviderSkills, SKILL_NAME_PATTERN, type ProviderSkill } from "./skills.js";
import { allowCoreImportsFrom } from "./plugin-resolution.js";
import { PluginRegistrationCollector, rememberPluginRegistrations } from "./plugin-registrations.js";
import { registrationContext } from "./plugin-context.js";
import { isCoreMemoryProvider } from "./trivial-prompt.js";

/** Options of `loadMemoryProvider` / `loadProviderCli`. */
export interface LoadOptions extends DiscoveryOptions {
  /** Register the provider's skills; default: only when it is the configured `memory.provider`. */
  registerSkills?: boolean;
  /** Configuration already read (default: `readConfig(hermesHome)`). */
  config?: HermesConfig;
  logger?: Logger;
  /** A discovery result to reuse instead of discovering again. */
  discovery?: DiscoveryResult;
  /**
   * Upper bound, in ms, for importing a provider module (including its top-level await) and for
   * its `register(ctx)`. Default 10000. Past it the load fails with `PROVIDER_TIMEOUT`; the
   * import itself cannot be cancelled and stays pending in this process.
   */
  importTimeoutMs?: number;
}

/** Default bound for importing a provider module and running its `register(ctx)` (ms). */
export const DEFAULT_IMPORT_TIMEOUT_MS = 10_000;

function importTimeoutOf(options: LoadOptions): number {
  const ms = options.importTimeoutMs ?? DEFAULT_IMPORT_TIMEOUT_MS;
  if (typeof ms !== "number" || Number.isNaN(ms) || ms <= 0) {
    throw new HermesMemoryError({
      code: "INVALID_ARGUMENT",
      message: `importTimeoutMs must be positive (got ${String(ms)}); pass milliseconds or omit it for the ${DEFAULT_IMPORT_TIMEOUT_MS} ms default.`,
    });
  }
  return ms;
}

function timedOut(name: string, what: string, file: string, ms: number): HermesMemoryError {
  return new HermesMemoryError({
    code: "PROVIDER_TIMEOUT",
    message: `Memory provider '${name}': ${what} from ${file} did not finish within ${formatSeconds(ms)} (a top-level await or register() that never settles?). Fix the provider, or raise importTimeoutMs if it is only slow.`,
  });
}

interface Located {
  provider: DiscoveredProvider;
  hermesHome: string;
  config: HermesConfig;
  logger: Logger;
}

async function notFound(name: string, discovery: DiscoveryResult, options: LoadOptions): Promise<HermesMemoryError> {
  const found = discovery.providers.map((p) => p.name).sort();
  const refused = discovery.problems.filter((p) => p.name === name);
  const refusedText =
    refused.length > 0
      ? ` A provider named '${name}' was found but refused: ${refused.map((p) => `${p.message} — ${p.remedy}`).join("; ")}.`
      : "";
  const close = closestNames(name, found);
  const meant = close.length > 0 ? ` Did you mean ${close.map((n) => `'${n}'`).join(" or ")}?` : "";
  // Explicit package roots replace the host's installation: it was not searched, so not named.
  const hostRoot = options.packageRoots ? null : await hostPackageRoot(options.hostDir).catch(() => null);
  const install = await installHintFor(hostRoot, "<package>", {
    ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
    ...(options.env ? { env: options.env } : {}),
  });
  return new HermesMemoryError({
    code: "PROVIDER_NOT_FOUND",
    message: `Memory provider '${name}' not found.${meant} (Searched ${describeSearchedLocations(discovery.searched)}; found: ${found.join(", ") || "none"}).${refusedText} Install it with ${install}, or put it in ${path.join("$HERMES_HOME", "plugins", name)}/.`,
  });
}

/** True when config `plugins.disabled` names this provider (by provider, folder or package name). */
export function isProviderDisabled(provider: DiscoveredProvider, config: HermesConfig): boolean {
  // Bundled providers ship with the host and are chosen with memory.provider only.
  if (provider.source === "bundled") return false;
  const aliases = new Set([provider.name, path.basename(provider.dir), ...(provider.packageName ? [provider.packageName] : [])]);
  return config.plugins.disabled.some((entry) => aliases.has(entry));
}

async function locate(name: string, options: LoadOptions): Promise<Located> {
  const trimmed = name.trim();
  if (isCoreMemoryProvider(trimmed)) {
    throw new HermesMemoryError({
      code: "INVALID_ARGUMENT",
      message: `'${name}' means the built-in memory (MEMORY.md / USER.md), which is always active and is not loaded as a plugin. Use openMemory() or set memory.provider to an installed provider.`,
    });
  }
  const hermesHome = path.resolve(options.hermesHome ?? getHermesHome());
  const logger = options.logger ?? silentLogger;
  const bundledDir = options.bundledDir ?? defaultBundledDir(options.env ?? process.env);
  const discovery =
    options.discovery ?? (await discoverMemoryProviders({ ...options, hermesHome, ...(bundledDir !== undefined ? { bundledDir } : {}) }));
  const provider = discovery.providers.find((p) => p.name === trimmed);
  if (!provider) throw await notFound(trimmed, discovery, options);
  const config = options.config ?? (await readConfig(hermesHome));
  if (isProviderDisabled(provider, config)) {
    throw new HermesMemoryError({
      code: "PROVIDER_DISABLED",
      message: `Memory provider '${trimmed}' (${provider.source}, ${provider.dir}) is disabled via plugins.disabled in ${path.join(hermesHome, "config.yaml")}; remove it from plugins.disabled or change memory.provider.`,
    });
  }
  return { provider, hermesHome, config, logger };
}

// A module whose top-level await never settles would hang the host forever; the import is
// bounded (it stays pending in the module map, so a CLI must exit explicitly).
async function importModule(file: string, name: string, what: string, timeoutMs: number): Promise<Record<string, unknown>> {
  const outcome = await boundedCall(() => import(pathToFileURL(file).href) as Promise<Record<string, unknown>>, timeoutMs);
  if (outcome.status === "ok") return outcome.value;
  if (outcome.status === "timeout") throw timedOut(name, `importing ${what}`, file, timeoutMs);
  const error = outcome.error;
  throw new HermesMemoryError({
    code: "PROVIDER_LOAD_FAILED",
    message: `Failed to load ${what} of memory provider '${name}' from ${file}: ${describeProviderError(error)}. Fix the error, reinstall the provider, or check that its dependencies are installed.`,
    cause: error,
  });
}

/**
 * Construct an exported provider class. `null` when `value` is not one, or is the abstract base
 * re-exported by a module (it constructs fine in JS but has no name); a constructor that throws is
 * recorded in `failures` (for the error message) and yields `null`.
 */
function instantiate(value: unknown, failures: string[]): MemoryProvider | null {
  let ctor: (new () => MemoryProvider) | null;
  try {
    ctor = isMemoryProviderClass(value) ? value : null;
  } catch {
    return null; // a Proxy export whose traps throw is no provider class
  }
  if (!ctor) return null;
  let instance: MemoryProvider;
  try {
    instance = new ctor();
  } catch (error) {
    failures.push(`constructing the exported class ${safeClassName(ctor)} threw: ${describeProviderError(error)}`);
    return null;
  }
  const name = readProviderName(instance);
  return name !== null && name !== "" ? instance : null;
}

function safeClassName(ctor: unknown): string {
  try {
    const name: unknown = (ctor as { name?: unknown }).name;
    return typeof name === "string" && name !== "" ? name : "(anonymous)";
  } catch {
    return "(anonymous)";
  }
}

/** `isMemoryProvider` that treats a value whose property access throws (a Proxy) as no provider. */
function safeIsMemoryProvider(value: unknown): value is MemoryProvider {
  try {
    return isMemoryProvider(value);
  } catch {
    return false;
  }
}

/**
 * Import one discovered provider (by file URL, nothing else) and return its instance. Tries, in
 * order: the module's `register(ctx)`; a default export that is a provider instance or class; the
 * first exported provider class. A `register` that throws after `registerMemoryProvider` keeps
 * the registered instance (logged). Typed errors: `PROVIDER_NOT_FOUND` (lists what was searched
 * and found), `PROVIDER_DISABLED` (config `plugins.disabled`; bundled providers are exempt),
 * `PROVIDER_LOAD_FAILED` (import failed or no provider exported; `cause` is set),
 * `PROVIDER_NAME_MISMATCH` (registered name differs from the discovered one). Does not call
 * `isAvailable()` or `initialize()`. Without `bundledDir`, the bundled folder is
 * `defaultBundledDir(options.env)` (`HERMES_MEMORY_BUNDLED_DIR`), the rule the CLI uses too. The
 * module's other registrations are kept beside the instance: `pluginRegistrationsOf(provider)`.
 */
export async function loadMemoryProvider(name: string, options: LoadOptions = {}): Promise<MemoryProvider> {
  const timeoutMs = importTimeoutOf(options);
  const { provider: found, hermesHome, config, logger } = await locate(name, options);
  const registerSkills = options.registerSkills ?? config.memory.provider === found.name;

  return runWithProfile(hermesHome, async () => {
    if (found.source !== "package") await allowCoreImportsFrom(found.dir);
    const module = await importModule(found.entry, found.name, "the entry", timeoutMs);
    let registered: MemoryProvider | null = null;
    let registerError: unknown;
    const skills: ProviderSkill[] = [];
    const collector = new PluginRegistrationCollector(found.name, logger);
    const methods = {
      registerMemoryProvider(provider: MemoryProvider): void {
        if (!safeIsMemoryProvider(provider)) {
          throw new HermesMemoryError({
            code: "INVALID_PROVIDER",
            message: `register(ctx) of memory provider '${found.name}' passed something that is not a MemoryProvider to registerMemoryProvider(); pass an instance of a class extending MemoryProvider from @hermes/memory-core.`,
          });
        }
        registered = provider;
      },
      registerSkill(skillName: string, skillPath: string, description = ""): void {
        if (!registerSkills) {
          logger.debug(`Memory provider '${found.name}' skill '${skillName}' not registered (provider is not active)`);
          return;
        }
        if (typeof skillName !== "string" || !SKILL_NAME_PATTERN.test(skillName) || typeof skillPath !== "string" || skillPath === "") {
          logger.warn(
            `Memory provider '${found.name}' registered an invalid skill (${JSON.stringify(skillName)}); ignored. Skill names use letters, digits, '.', '_', '-'.`,
          );
          return;
        }
        skills.push({
          name: `${found.name}:${skillName}`,
          path: path.resolve(found.dir, skillPath),
          description: String(description ?? ""),
        });
      },
    };
    const ctx = registrationContext({ providerName: found.name, hermesHome, logger, ...methods }, collector);

    if (typeof module.register === "function") {
      const outcome = await boundedCall(() => (module.register as (c: MemoryProviderRegistrationContext) => unknown)(ctx), timeoutMs);
      if (outcome.status === "timeout" && !registered) throw timedOut(found.name, "register(ctx)", found.entry, timeoutMs);
      if (outcome.status === "error") {
        const error = outcome.error;
        registerError = error;
        if (registered) {
          logger.warn(
            `Memory provider '${found.name}' raised after registering (${describeProviderError(error)}) — using the registered provider; later registrations were skipped`,
          );
        } else {
          logger.debug(`Memory provider '${found.name}' register(ctx) failed before registering: ${describeProviderError(error)}`);
        }
      }
    }
    let provider: MemoryProvider | null = registered;
    const constructFailures: string[] = [];
    if (!provider) {
      const fallback = module.default;
      provider = safeIsMemoryProvider(fallback) ? fallback : instantiate(fallback, constructFailures);
    }
    if (!provider) {
      for (const key of Object.keys(module)) {
        provider = instantiate(module[key], constructFailures);
        if (provider) break;
      }
    }
    if (!provider) {
      const why =
        registerError !== undefined
          ? `register(ctx) threw before registering a provider: ${describeProviderError(registerError)}`
          : constructFailures.length > 0
            ? constructFailures.join("; ")
            : "it exports no register(ctx), no default provider instance or class, and no MemoryProvider subclass";
      throw new HermesMemoryError({
        code: "PROVIDER_LOAD_FAILED",
        message: `Memory provider '${found.name}' loaded from ${found.entry} but no provider instance was found: ${why}. Export register(ctx) calling ctx.registerMemoryProvider(new YourProvider()).`,
        cause: registerError,
      });
    }
    let providerName: unknown;
    try {
      providerName = provider.name;
    } catch (error) {
      throw new HermesMemoryError({
        code: "INVALID_PROVIDER",
        message: `Memory provider '${found.name}' loaded from ${found.entry} has a name getter that throws (${describeProviderError(error)}). Declare the name as a plain string property: readonly name = "${found.name}".`,
      });
    }
    if (providerName !== found.name) {
      const shown =
        typeof providerName === "string"
          ? `'${providerName.slice(0, 100)}'`
          : `not a string (${providerName === null ? "null" : typeof providerName})`;
      throw new HermesMemoryError({
        code: "PROVIDER_NAME_MISMATCH",
        message: `Memory provider loaded from ${found.entry} is named ${shown}, but it was discovered as '${found.name}' (${found.source === "package" ? `"hermesMemoryProvider" in ${found.packageName ?? found.dir}/package.json` : `plugin.yaml or folder name in ${found.dir}`}). Make the provider's name equal the manifest name.`,
      });
    }
    if (registerSkills) replaceProviderSkills(hermesHome, found.name, skills);
    rememberPluginRegistrations(provider, collector.result());
    logger.debug(`Memory provider '${found.name}' loaded from ${found.source} ${found.entry}`);
    return provider;
  });
}

/**
 * Import only the CLI module of a provider (never its entry, so it is safe while a command line is
 * being built) and return its `registerCli` export; `null` when the provider has no CLI module or
 * the module exports no `registerCli` function. Throws `PROVIDER_NOT_FOUND`, `PROVIDER_DISABLED`
 * or `PROVIDER_LOAD_FAILED` like `loadMemoryProvider`.
 */
export async function loadProviderCli(name: string, options: LoadOptions = {}): Promise<RegisterCli | null> {
  const { provider, hermesHome, logger } = await locate(name, options);
  if (!provider.cli) return null;
  const cliFile = provider.cli;
  if (provider.source !== "package") await allowCoreImportsFrom(provider.dir);
  const timeoutMs = importTimeoutOf(options);
  const module = await runWithProfile(hermesHome, () => importModule(cliFile, provider.name, "the CLI module", timeoutMs));
  if (typeof module.registerCli !== "function") {
    logger.warn(
      `Memory provider '${provider.name}' CLI module ${cliFile} does not export a registerCli function; no provider commands added.`,
    );
    return null;
  }
  return module.registerCli as RegisterCli;
}
