import path from "node:path";
import { BuiltinMemoryProvider } from "./builtin/builtin-provider.js";
import { checkpointRequiredWarning } from "./checkpoint.js";
import { parseConfig, readConfig, type HermesConfig } from "./config/config-file.js";
import { envFileOnlyHint } from "./config/env-file-hint.js";
import { HermesMemoryError } from "./errors.js";
import { describeProviderError as describeError } from "./plugin-describe.js";
import { loadIsolated } from "./isolation/load-isolated.js";
import type { IsolationMode } from "./isolation/protocol.js";
import { silentLogger, type Logger } from "./logger.js";
import { DEFAULT_HOOK_TIMEOUT_MS, MemoryManager } from "./manager.js";
import { boundedCall } from "./bounded-call.js";
import { getHermesHome, runWithProfile } from "./profile.js";
import type { InitContext, MemoryProvider } from "./provider.js";
import { isCoreMemoryProvider } from "./trivial-prompt.js";

/** Options of `openMemory`: the session, where to look, and the `InitContext` for providers. */
export interface OpenMemoryOptions extends Partial<InitContext> {
  sessionId: string;
  /** Profile home; default: the active profile (`getHermesHome()`). */
  hermesHome?: string;
  /** Workspace: project plugins, the default package root, and `InitContext.cwd`. Default `process.cwd()`. */
  cwd?: string;
  /** Providers shipped with the host (highest discovery precedence); default `defaultBundledDir()` (`HERMES_MEMORY_BUNDLED_DIR`). */
  bundledDir?: string;
  /** Extra or replacement package roots for discovery (see `DiscoveryOptions.packageRoots`). */
  packageRoots?: string[];
  /** Where the host is installed, for discovery (see `DiscoveryOptions.hostDir`; default: this copy of core). */
  hostDir?: string;
  logger?: Logger;
  /** Use this provider instead of config `memory.provider` (`""`/`builtin`/`none` = built-in only). */
  provider?: string;
  /** See `MemoryManagerOptions.externalPrefetchTimeoutMs` (default 8000). */
  externalPrefetchTimeoutMs?: number;
  /** See `MemoryManagerOptions.hookTimeoutMs`: bound for `initialize()`, tool calls, `shutdown()`… (default 15000). */
  hookTimeoutMs?: number;
  /** See `MemoryManagerOptions.drainTimeoutMs` (default 5000). */
  drainTimeoutMs?: number;
  /** See `MemoryManagerOptions.blockingWarnMs`: warn once per provider hook that blocks the event loop longer (default 200). */
  blockingWarnMs?: number;
  /** See `MemoryManagerOptions.maxQueuedTasks`: the most background tasks waiting to start (default 50000). */
  maxQueuedTasks?: number;
  /** See `LoadOptions.importTimeoutMs`: bound for importing the provider module and its `register(ctx)` (default 10000). */
  importTimeoutMs?: number;
  /** See `MemoryManagerOptions.externalEnabled`: `false` withholds the external tools and prompt block. */
  externalEnabled?: boolean;
  /**
   * Throw instead of falling back to built-in memory when the configuration or the configured
   * provider cannot be used (invalid config.yaml, provider not found, disabled, failed or timed out
   * loading, unavailable, `getToolSchemas()` or `initialize()` threw or timed out). Default
   * `false`: warn and continue with built-in memory only.
   */
  strict?: boolean;
  /**
   * Run the provider in a worker thread (`"worker"`) or on this event loop (`"inline"`); wins over
   * config.yaml `memory.isolation.<name>` and the provider's manifest. Default: their choice, else inline.
   */
  isolation?: IsolationMode;
}

const OWN_OPTIONS = new Set([
  "sessionId",
  "hermesHome",
  "bundledDir",
  "packageRoots",
  "hostDir",
  "logger",
  "provider",
  "externalPrefetchTimeoutMs",
  "hookTimeoutMs",
  "drainTimeoutMs",
  "blockingWarnMs",
  "maxQueuedTasks",
  "importTimeoutMs",
  "externalEnabled",
  "strict",
  "isolation",
]);

/**
 * The one-call host integration: read `$HERMES_HOME/config.yaml`, discover and load
 * `memory.provider`, build a `MemoryManager` with the built-in memory plus that provider, run
 * `initializeAll`, and return the manager (call `shutdownAll()` when done).
 *
 * A blank / `builtin` / `none` / `default` provider means built-in memory only (nothing is
 * discovered or imported). Without `strict`, nothing about the external provider or config.yaml
 * makes this reject: a provider that is missing, disabled, fails or times out loading, reports
 * `isAvailable() === false`, throws from `getToolSchemas()`, or whose `initialize()` throws or does
 * not settle within `hookTimeoutMs` is logged as a warning naming the provider and the hook, and
 * the manager continues with built-in memory only; an invalid or hostile config.yaml
 * (`INVALID_CONFIG`) is logged and built-in memory runs with default settings. With `strict`, the
 * typed error is thrown instead (`INVALID_CONFIG`, `PROVIDER_TIMEOUT`, `PROVIDER_UNAVAILABLE`, …).
 * Warns at start when `compression.checkpoint_required` is on and no provider implements
 * checkpoint API v2.
 */
export async function openMemory(options: OpenMemoryOptions): Promise<MemoryManager> {
  if (typeof options?.sessionId !== "string") {
    throw new HermesMemoryError({
      code: "INVALID_ARGUMENT",
      message: "openMemory() needs a sessionId (string); pass the id of the conversation the agent is running.",
    });
  }
  const hermesHome = path.resolve(options.hermesHome ?? getHermesHome());
  const logger = options.logger ?? silentLogger;
  return runWithProfile(hermesHome, async () => {
    let config: HermesConfig;
    let configUsable = true;
    try {
      config = await readConfig(hermesHome);
    } catch (error) {
      if (options.strict) throw error;
      logger.warn(`${describeError(error)} Continuing with built-in memory only, default settings.`);
      config = parseConfig("");
      configUsable = false;
    }
    // Known settings of the wrong type run on their defaults; the user hears which and why.
    for (const warning of config.warnings) logger.warn(warning);
    const manager = new MemoryManager({
      logger,
      hermesHome,
      spillConfig: config.hooks.outputSpill,
      ...(options.externalPrefetchTimeoutMs !== undefined ? { externalPrefetchTimeoutMs: options.externalPrefetchTimeoutMs } : {}),
      ...(options.hookTimeoutMs !== undefined ? { hookTimeoutMs: options.hookTimeoutMs } : {}),
      ...(options.drainTimeoutMs !== undefined ? { drainTimeoutMs: options.drainTimeoutMs } : {}),
      ...(options.blockingWarnMs !== undefined ? { blockingWarnMs: options.blockingWarnMs } : {}),
      ...(options.maxQueuedTasks !== undefined ? { maxQueuedTasks: options.maxQueuedTasks } : {}),
      ...(options.externalEnabled !== undefined ? { externalEnabled: options.externalEnabled } : {}),
    });
    manager.addProvider(
      new BuiltinMemoryProvider({
        memoryCharLimit: config.memory.memoryCharLimit,
        userCharLimit: config.memory.userCharLimit,
        memoryEnabled: config.memory.memoryEnabled,
        userProfileEnabled: config.memory.userProfileEnabled,
        logger,
      }),
    );

    // An unreadable config.yaml does not name a provider we could trust; only an explicit one runs.
    const requested = (options.provider ?? (configUsable ? config.memory.provider : "")).trim();
    let external: MemoryProvider | null = null;
    if (!isCoreMemoryProvider(requested)) {
      external = await loadExternal(requested, options, hermesHome, config, logger);
      if (external) {
        try {
          manager.addProvider(external);
        } catch (error) {
          // addProvider reads getToolSchemas() first and leaves the manager unchanged when it throws.
          const message = `Memory provider '${requested}' getToolSchemas() failed: ${describeError(error)}. Fix the provider or run \`hermes-memory memory status\`.`;
          if (options.strict) throw new HermesMemoryError({ code: "PROVIDER_UNAVAILABLE", message, cause: error });
          logger.warn(`${message} Continuing with built-in memory only.`);
          external = null;
        }
      }
    }

    const ctx: Partial<InitContext> = {};
    for (const [key, value] of Object.entries(options)) if (!OWN_OPTIONS.has(key) && value !== undefined) ctx[key] = value;
    ctx.hermesHome = hermesHome;
    const failures = await manager.initializeAll(options.sessionId, ctx);

    // A provider that could not initialise is not usable: drop it so its tools are not offered.
    // It is known by the name it was loaded under (the loader checked its name equals `requested`);
    // its own `name` getter is provider code and is not read again.
    const failed = external ? failures.find((f) => f.name === requested) : undefined;
    if (external && failed) {
      const timeout = failed.outcome === "timeout";
      const message = timeout
        ? `Memory provider '${failed.name}' initialize timed out (${failed.reason}). Check its service/network, raise hookTimeoutMs, or run \`hermes-memory memory status\`.`
        : `Memory provider '${failed.name}' initialize failed: ${failed.reason}. Run \`hermes-memory memory status\` to see what is missing.`;
      manager.removeProvider(failed.name);
      if (!timeout) await releaseFailed(external, requested, options.hookTimeoutMs ?? DEFAULT_HOOK_TIMEOUT_MS, logger);
      if (options.strict) {
        await manager.shutdownAll();
        throw new HermesMemoryError({ code: timeout ? "PROVIDER_TIMEOUT" : "PROVIDER_UNAVAILABLE", message });
      }
      logger.warn(`${message} Continuing with built-in memory only.`);
    }

    let warning: string | null = null;
    try {
      warning = checkpointRequiredWarning(manager, { checkpointRequired: config.compression.checkpointRequired });
    } catch (error) {
      logger.debug(`Checkpoint capability check failed: ${describeError(error)}`);
    }
    if (warning) logger.warn(warning);
    return manager;
  });
}

/** Give a provider whose initialize() threw a bounded chance to release what it opened. */
async function releaseFailed(provider: MemoryProvider, name: string, timeoutMs: number, logger: Logger): Promise<void> {
  const outcome = await boundedCall(() => provider.shutdown(), timeoutMs);
  if (outcome.status !== "ok")
    logger.debug(
      `Memory provider '${name}' shutdown after a failed initialize: ${outcome.status === "timeout" ? "timed out" : describeError(outcome.error)}`,
    );
}

async function loadExternal(
  name: string,
  options: OpenMemoryOptions,
  hermesHome: string,
  config: Awaited<ReturnType<typeof readConfig>>,
  logger: Logger,
): Promise<MemoryProvider | null> {
  let provider: MemoryProvider;
  try {
    const choice = {
      isolation: options.isolation,
      hookTimeoutMs: options.hookTimeoutMs,
      prefetchTimeoutMs: options.externalPrefetchTimeoutMs,
    };
    provider = await loadIsolated(
      name,
      {
        hermesHome,
        config,
        logger,
        registerSkills: true,
        ...(options.importTimeoutMs !== undefined ? { importTimeoutMs: options.importTimeoutMs } : {}),
        ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
        ...(options.bundledDir !== undefined ? { bundledDir: options.bundledDir } : {}),
        ...(options.packageRoots !== undefined ? { packageRoots: options.packageRoots } : {}),
        ...(options.hostDir !== undefined ? { hostDir: options.hostDir } : {}),
      },
      choice,
    );
  } catch (error) {
    if (options.strict) throw error;
    logger.warn(`${describeError(error)} Continuing with built-in memory only.`);
    return null;
  }
  let available = false;
  let reason = "";
  try {
    available = provider.isAvailable() === true;
    if (!available) {
      const why: unknown = provider.unavailableReason?.();
      reason = typeof why === "string" ? why : "";
    }
  } catch (error) {
    reason = `isAvailable() failed: ${describeError(error)}`;
  }
  if (available) return provider;
  const message = `Memory provider '${name}' is not available${reason ? `: ${reason}` : ""}.${envFileOnlyHint(provider, hermesHome)} Run \`hermes-memory memory setup ${name}\` or \`hermes-memory memory status\` to see what is missing.`;
  if (options.strict) throw new HermesMemoryError({ code: "PROVIDER_UNAVAILABLE", message });
  logger.warn(`${message} Continuing with built-in memory only.`);
  return null;
}
