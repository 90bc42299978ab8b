import path from "node:path";
import { BuiltinMemoryProvider } from "./builtin/builtin-provider.js";
import { checkpointRequiredWarning } from "./checkpoint.js";
import { readConfig } from "./config/config-file.js";
import { HermesMemoryError, describeError } from "./errors.js";
import { loadMemoryProvider } from "./loader.js";
import { silentLogger, type Logger } from "./logger.js";
import { MemoryManager } from "./manager.js";
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
  /** Providers shipped with the host (highest discovery precedence). */
  bundledDir?: string;
  /** Extra or replacement package roots for discovery (see `DiscoveryOptions.packageRoots`). */
  packageRoots?: string[];
  logger?: Logger;
  /** Use this provider instead of config `memory.provider` (`""`/`builtin`/`none` = built-in only). */
  provider?: string;
  externalPrefetchTimeoutMs?: number;
  /**
   * Throw instead of falling back to built-in memory when the configured provider cannot be used
   * (not found, disabled, failed to load, unavailable). Default `false`: warn and continue.
   */
  strict?: boolean;
}

const OWN_OPTIONS = new Set(["sessionId", "hermesHome", "bundledDir", "packageRoots", "logger", "provider", "externalPrefetchTimeoutMs", "strict"]);

/**
 * The one-call host integration: read `$HERMES_HOME/config.yaml`, discover and load
 * `memory.provider`, build a `MemoryManager` with the built-in memory plus that provider, run
 * `initializeAll`, and return the manager (call `shutdownAll()` when done).
 *
 * A blank / `builtin` / `none` / `default` provider means built-in memory only (nothing is
 * discovered or imported). A provider that is missing, disabled, fails to load or reports
 * `isAvailable() === false` is logged as a warning (with `unavailableReason()`) and the manager
 * continues with built-in memory only — unless `strict` is set, then it throws the typed error
 * (`PROVIDER_UNAVAILABLE` for an unavailable one). Warns at start when
 * `compression.checkpoint_required` is on and no provider implements checkpoint API v2.
 */
export async function openMemory(options: OpenMemoryOptions): Promise<MemoryManager> {
  if (typeof options?.sessionId !== "string") {
    throw new HermesMemoryError({ code: "INVALID_ARGUMENT", message: "openMemory() needs a sessionId (string); pass the id of the conversation the agent is running." });
  }
  const hermesHome = path.resolve(options.hermesHome ?? getHermesHome());
  const logger = options.logger ?? silentLogger;
  return runWithProfile(hermesHome, async () => {
    const config = await readConfig(hermesHome);
    const manager = new MemoryManager({
      logger,
      hermesHome,
      spillConfig: config.hooks.outputSpill,
      ...(options.externalPrefetchTimeoutMs !== undefined ? { externalPrefetchTimeoutMs: options.externalPrefetchTimeoutMs } : {}),
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

    const requested = (options.provider ?? config.memory.provider).trim();
    if (!isCoreMemoryProvider(requested)) {
      const external = await loadExternal(requested, options, hermesHome, config, logger);
      if (external) manager.addProvider(external);
    }

    const ctx: Partial<InitContext> = {};
    for (const [key, value] of Object.entries(options)) if (!OWN_OPTIONS.has(key) && value !== undefined) ctx[key] = value;
    ctx.hermesHome = hermesHome;
    await manager.initializeAll(options.sessionId, ctx);

    const warning = checkpointRequiredWarning(manager, { checkpointRequired: config.compression.checkpointRequired });
    if (warning) logger.warn(warning);
    return manager;
  });
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
    provider = await loadMemoryProvider(name, {
      hermesHome,
      config,
      logger,
      registerSkills: true,
      ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
      ...(options.bundledDir !== undefined ? { bundledDir: options.bundledDir } : {}),
      ...(options.packageRoots !== undefined ? { packageRoots: options.packageRoots } : {}),
    });
  } catch (error) {
    if (options.strict) throw error;
    logger.warn(`${describeError(error)} Continuing with built-in memory only.`);
    return null;
  }
  let available = false;
  let reason = "";
  try {
    available = provider.isAvailable() === true;
    if (!available) reason = provider.unavailableReason?.() ?? "";
  } catch (error) {
    reason = `isAvailable() failed: ${describeError(error)}`;
  }
  if (available) return provider;
  const message = `Memory provider '${name}' is not available${reason ? `: ${reason}` : ""}. Run \`hermes-memory memory setup ${name}\` or \`hermes-memory memory status\` to see what is missing.`;
  if (options.strict) throw new HermesMemoryError({ code: "PROVIDER_UNAVAILABLE", message });
  logger.warn(`${message} Continuing with built-in memory only.`);
  return null;
}
