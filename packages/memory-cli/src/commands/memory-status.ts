import path from "node:path";
import {
  BuiltinMemoryStore,
  boundedCall,
  closestNames,
  configFilePath,
  describeError,
  describeSearchedLocations,
  discoverMemoryProviders,
  envFilePath,
  HermesMemoryError,
  installCommandHint,
  isCoreMemoryProvider,
  isProviderDisabled,
  isSearchableMemory,
  loadMemoryProvider,
  planSetup,
  readConfig,
  readEnvFile,
  runWithProfile,
  type MemoryProvider,
  type MemoryStats,
  type MemoryUsage,
} from "@hermes/memory-core";
import { discoveryScope, type CliContext } from "../cli-context.js";
import { CliUsageError, ReportedFailure } from "../cli-usage-error.js";
import { maskSecret } from "../output/mask-secret.js";
import { providerAvailability } from "../provider-availability.js";

/** One setting as `memory status` shows it (secrets masked: last 4 characters at most). */
export interface StatusSetting {
  key: string;
  description: string;
  secret: boolean;
  required: boolean;
  set: boolean;
  /** Display value: masked for secrets, the stored value or the default otherwise. */
  value: string;
  /** `stored`, `default`, or `missing`. */
  origin: "stored" | "default" | "missing";
  envVar?: string;
}

/** The JSON document of `memory status --json`. */
export interface MemoryStatusReport {
  /** Why the command fails (exit 1): the configured provider is not installed. Absent otherwise. */
  error?: { code: string; message: string };
  hermesHome: string;
  configPath: string;
  envPath: string;
  builtin: {
    memoryEnabled: boolean;
    userProfileEnabled: boolean;
    memory: MemoryUsage & { path: string };
    user: MemoryUsage & { path: string };
  };
  provider: null | {
    name: string;
    installed: boolean;
    source?: string;
    location?: string;
    version?: string | null;
    disabled: boolean;
    loaded: boolean;
    loadError?: string;
    available: boolean;
    reason?: string;
    settings: StatusSetting[];
    /**
     * What the provider's optional `getStatusConfig()` reported (values as strings); a throw is
     * reported under `status_config_error`. Absent when the provider has no such hook.
     */
    statusConfig?: Record<string, string>;
    searchable: boolean;
    stats?: MemoryStats;
    statsError?: string;
    dataLocation: string[];
  };
}

async function builtinUsage(
  ctx: CliContext,
  memoryCharLimit: number,
  userCharLimit: number,
): Promise<MemoryStatusReport["builtin"]["memory"][]> {
  const store = new BuiltinMemoryStore({ dir: path.join(ctx.hermesHome, "memories"), memoryCharLimit, userCharLimit });
  return Promise.all(
    (["memory", "user"] as const).map(async (target) => ({ ...(await store.usage(target)), path: store.filePath(target) })),
  );
}

function settingsOf(
  provider: MemoryProvider,
  config: Awaited<ReturnType<typeof readConfig>>,
  env: Record<string, string>,
): StatusSetting[] {
  return planSetup(provider, { config, env }).fields.map((f) => {
    const origin: StatusSetting["origin"] = f.isSet ? "stored" : f.effectiveDefault !== undefined ? "default" : "missing";
    const raw = f.isSet ? f.currentValue : f.effectiveDefault;
    const value = f.secret ? (f.isSet ? maskSecret(String(f.currentValue)) : "") : raw === undefined || raw === null ? "" : String(raw);
    return {
      key: f.key,
      description: f.description ?? "",
      secret: f.secret === true,
      required: f.required === true,
      set: f.isSet,
      value,
      origin: f.secret && !f.isSet ? "missing" : origin,
      ...(f.envVar ? { envVar: f.envVar } : {}),
    };
  });
}

/**
 * Stats come from an inspection-only initialise (no background work by contract), then the
 * provider is shut down again; runs in the home's profile scope. Each call is bounded by
 * `ctx.timeouts.hookMs`, so a provider that never settles cannot hang the command.
 */
async function inspectStats(
  ctx: CliContext,
  provider: MemoryProvider & { stats(): unknown },
): Promise<{ stats?: MemoryStats; error?: string }> {
  const call = async <T>(hook: string, fn: () => T | PromiseLike<T>): Promise<Awaited<T>> => {
    const outcome = await boundedCall(fn, ctx.timeouts.hookMs);
    if (outcome.status === "ok") return outcome.value;
    if (outcome.status === "error") throw outcome.error;
    const message = `Memory provider '${provider.name}' ${hook} timed out after ${outcome.timeoutMs / 1000}s`;
    ctx.out.warn(`${message}; skipped (set HERMES_MEMORY_HOOK_TIMEOUT_MS to wait longer).`);
    throw new Error(message);
  };
  return runWithProfile(ctx.hermesHome, async () => {
    try {
      await call("initializeForInspection", () =>
        provider.initializeForInspection("hermes-memory-status", { hermesHome: ctx.hermesHome, platform: "cli", cwd: ctx.cwd }),
      );
      return { stats: (await call("stats", () => provider.stats())) as MemoryStats };
    } catch (error) {
      return { error: describeError(error) };
    } finally {
      try {
        await call("shutdown", () => provider.shutdown());
      } catch {
        // status is read-only; a failing shutdown changes nothing for the user
      }
    }
  });
}

function displayStatusValue(value: unknown): string {
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** The provider's own status lines (`getStatusConfig`), or `status_config_error` when it throws. */
async function providerStatusConfig(
  provider: MemoryProvider,
  providerConfig: Record<string, unknown>,
): Promise<Record<string, string> | undefined> {
  const hook = (provider as { getStatusConfig?: unknown }).getStatusConfig;
  if (typeof hook !== "function") return undefined;
  try {
    const values: unknown = await (hook as (c: Record<string, unknown>) => unknown).call(provider, { ...providerConfig });
    if (typeof values !== "object" || values === null || Array.isArray(values))
      return { status_config_error: `getStatusConfig() returned ${Array.isArray(values) ? "an array" : typeof values}, not an object` };
    return Object.fromEntries(Object.entries(values).map(([k, v]) => [k, displayStatusValue(v)]));
  } catch (error) {
    return { status_config_error: describeError(error) };
  }
}

/** Gather everything `memory status` shows. Never throws for a missing or broken provider. */
export async function collectStatus(ctx: CliContext): Promise<MemoryStatusReport> {
  const [config, env] = await Promise.all([readConfig(ctx.hermesHome), readEnvFile(ctx.hermesHome)]);
  // Settings of the wrong type run on their defaults: say which, before what they lead to.
  for (const warning of config.warnings) ctx.out.warn(warning);
  const [memory, user] = await builtinUsage(ctx, config.memory.memoryCharLimit, config.memory.userCharLimit);
  const report: MemoryStatusReport = {
    hermesHome: ctx.hermesHome,
    configPath: configFilePath(ctx.hermesHome),
    envPath: envFilePath(ctx.hermesHome),
    builtin: {
      memoryEnabled: config.memory.memoryEnabled,
      userProfileEnabled: config.memory.userProfileEnabled,
      memory: memory!,
      user: user!,
    },
    provider: null,
  };
  const name = config.memory.provider;
  if (isCoreMemoryProvider(name)) return report;

  const discovery = await discoverMemoryProviders(discoveryScope(ctx));
  const found = discovery.providers.find((p) => p.name === name);
  const entry: NonNullable<MemoryStatusReport["provider"]> = {
    name,
    installed: found !== undefined,
    disabled: found ? isProviderDisabled(found, config) : false,
    loaded: false,
    available: false,
    settings: [],
    searchable: false,
    dataLocation: [],
  };
  report.provider = entry;
  if (!found) {
    const [meant] = closestNames(
      name,
      discovery.providers.map((p) => p.name),
    );
    entry.reason = meant
      ? `not installed; did you mean '${meant}'? Run \`hermes-memory memory setup ${meant}\` to use it, or \`hermes-memory memory off\``
      : `not installed (searched ${describeSearchedLocations(discovery.searched)}): install it with ${await installCommandHint("<package>", { cwd: ctx.cwd, env: ctx.io.env })}, or run \`hermes-memory memory off\``;
    return report;
  }
  Object.assign(entry, { source: found.source, location: found.dir, version: found.version });
  let provider: MemoryProvider;
  try {
    provider = await loadMemoryProvider(name, {
      hermesHome: ctx.hermesHome,
      cwd: ctx.cwd,
      config,
      discovery,
      registerSkills: false,
      importTimeoutMs: ctx.timeouts.importMs,
    });
    entry.loaded = true;
  } catch (error) {
    if (HermesMemoryError.hasCode(error, "PROVIDER_TIMEOUT")) ctx.out.warn(describeError(error));
    entry.loadError = describeError(error);
    entry.reason = entry.loadError;
    return report;
  }
  const availability = providerAvailability(provider, { hermesHome: ctx.hermesHome, env: ctx.io.env });
  entry.available = availability.available;
  if (!availability.available) entry.reason = availability.reason;
  try {
    entry.settings = settingsOf(provider, config, env);
  } catch (error) {
    entry.reason = `${entry.reason ? `${entry.reason}; ` : ""}${describeError(error)}`;
  }
  const statusConfig = await providerStatusConfig(provider, config.memory.providerConfig(name));
  if (statusConfig) entry.statusConfig = statusConfig;
  try {
    entry.dataLocation.push(...provider.backupPaths());
  } catch {
    // optional hook
  }
  if (isSearchableMemory(provider)) {
    entry.searchable = true;
    if (entry.available) {
      const { stats, error } = await inspectStats(ctx, provider);
      if (stats) {
        entry.stats = stats;
        if (typeof stats.location === "string" && stats.location && !entry.dataLocation.includes(stats.location))
          entry.dataLocation.unshift(stats.location);
      }
      if (error) entry.statsError = error;
    }
  }
  if (entry.dataLocation.length === 0) entry.dataLocation.push(`${ctx.hermesHome} (provider-managed)`);
  return report;
}

function usageLine(u: MemoryUsage & { path: string }): string {
  return `${u.percent}% — ${u.current}/${u.limit} chars, ${u.entryCount} entr${u.entryCount === 1 ? "y" : "ies"} (${u.path})`;
}

/**
 * `hermes-memory memory status`. Exits 1 after the report when the configured provider is not
 * installed where discovery looks: every host would run on built-in memory only, and a script or
 * an MCP setup check must be able to tell.
 */
export async function statusCommand(ctx: CliContext): Promise<void> {
  const report = await collectStatus(ctx);
  const missing = report.provider && !report.provider.installed ? report.provider : null;
  // Under --json the failure is part of the one document printed, so a script parses one answer.
  const failure = missing
    ? {
        code: "PROVIDER_NOT_FOUND",
        message: `memory.provider is '${missing.name}' in ${report.configPath}, but it is ${missing.reason ?? "not installed"}.`,
      }
    : null;
  if (failure && ctx.json) report.error = failure;
  const { out } = ctx;
  const c = out.colors;
  const ok = (flag: boolean, yes: string, no: string) => (flag ? c.green(`${yes} ✓`) : c.red(`${no} ✗`));
  out.result(report, () => {
    out.line(c.bold("Memory status"));
    out.line("─".repeat(40));
    out.line(`Hermes home: ${report.hermesHome}`);
    out.line("Built-in (MEMORY.md / USER.md):");
    out.line(`  Memory injection: ${report.builtin.memoryEnabled ? "enabled" : "disabled"}  ${usageLine(report.builtin.memory)}`);
    out.line(`  User profile:     ${report.builtin.userProfileEnabled ? "enabled" : "disabled"}  ${usageLine(report.builtin.user)}`);
    const p = report.provider;
    if (!p) {
      out.line("Provider: (none — built-in only)");
      out.line(c.dim("Set one up with `hermes-memory memory setup`."));
      return;
    }
    out.line(`Provider: ${c.bold(p.name)}`);
    out.line(
      `  Plugin: ${ok(p.installed, "installed", "NOT installed")}${p.installed ? `  ${p.source} ${p.location}${p.version ? ` (v${p.version})` : ""}` : ""}`,
    );
    if (p.disabled) out.line(`  ${c.red("Disabled via plugins.disabled in config.yaml")}`);
    out.line(`  Status: ${ok(p.available, "available", "not available")}${p.reason ? `  ${p.reason}` : ""}`);
    if (p.settings.length > 0) {
      out.line("  Config:");
      for (const s of p.settings) {
        const shown =
          s.origin === "missing"
            ? c.red(s.required ? "missing (required)" : "not set")
            : s.origin === "default"
              ? `${s.value} ${c.dim("(default)")}`
              : s.value;
        out.line(`    ${s.key}: ${shown}${s.envVar ? c.dim(`  [${s.envVar}${s.secret ? ` in ${report.envPath}` : ""}]`) : ""}`);
      }
      if (p.settings.some((s) => s.secret))
        out.line(c.dim(`  Providers read secrets with getEnv(): ${report.envPath} first, then the process environment.`));
    }
    if (p.statusConfig) {
      out.line(`  ${p.name}:`);
      for (const [key, value] of Object.entries(p.statusConfig))
        out.line(`    ${key}: ${key === "status_config_error" ? c.red(value) : value}`);
    }
    if (p.stats && p.stats.items === 0) {
      out.line(`  Stats: nothing stored yet; ${p.name} saves memories from the agent's next session on.`);
    } else if (p.stats) {
      const byKind = Object.entries(p.stats.byKind ?? {})
        .map(([k, v]) => `${v} ${k}${v === 1 ? "" : "s"}`)
        .join(", ");
      out.line(
        `  Stats: ${p.stats.items} item${p.stats.items === 1 ? "" : "s"}${byKind ? ` (${byKind})` : ""}${p.stats.sessions !== undefined ? `, ${p.stats.sessions} session${p.stats.sessions === 1 ? "" : "s"}` : ""}${p.stats.sizeBytes !== undefined ? `, ${p.stats.sizeBytes} bytes` : ""}`,
      );
    } else if (p.statsError) {
      // Inspection never creates storage, so a provider with no data yet may have nothing to count.
      out.line(`  Stats: ${c.yellow("unavailable")} ${p.statsError}`);
    }
    out.line(`  Data: ${p.dataLocation.join(", ")}`);
  });
  if (failure) throw ctx.json ? new ReportedFailure(failure.message, failure.code) : new CliUsageError(failure.message, failure.code);
}
