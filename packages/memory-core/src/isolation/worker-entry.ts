/**
 * The worker thread of a worker-hosted provider: loads the provider with core's own
 * `loadMemoryProvider` (same discovery, same options), then runs each call the host sends and
 * answers with its outcome and, when it changed, the snapshot of the synchronous members.
 */
import { parentPort, workerData } from "node:worker_threads";
import { loadMemoryProvider } from "../loader.js";
import type { Logger } from "../logger.js";
import { runWithProfile } from "../profile.js";
import { MemoryProvider } from "../provider.js";
import { listSkills } from "../skills.js";
import { pluginRegistrationsOf } from "../plugin-registrations.js";
import { FORWARDED_HOOKS, OPTIONAL_METHODS } from "./methods.js";
import { serializeError, type CallMessage, type ProviderSnapshot, type Settled, type WorkerMessage, type WorkerStart } from "./protocol.js";

const start = workerData as WorkerStart;
const port = parentPort!;

function post(message: WorkerMessage): void {
  port.postMessage(message);
}

function text(message: unknown, details: unknown[]): string {
  const parts = [String(message), ...details.map((d) => (d instanceof Error ? serializeError(d).message : safeString(d)))];
  return parts.join(" ");
}

function safeString(value: unknown): string {
  try {
    return typeof value === "string" ? value : (JSON.stringify(value) ?? String(value));
  } catch {
    return String(value);
  }
}

/** Logs of the provider and of the loader go to the host's logger. */
const logger: Logger = {
  debug: (m, ...d) => post({ type: "log", level: "debug", message: text(m, d) }),
  info: (m, ...d) => post({ type: "log", level: "info", message: text(m, d) }),
  warn: (m, ...d) => post({ type: "log", level: "warn", message: text(m, d) }),
  error: (m, ...d) => post({ type: "log", level: "error", message: text(m, d) }),
};

/** A member's value as it will cross the thread; a value that cannot (a function inside) is an error, not a dead worker. */
function read<T>(fn: () => T): Settled<T> {
  try {
    return { ok: true, value: structuredClone(fn()) };
  } catch (error) {
    return { ok: false, error: serializeError(error) };
  }
}

function snapshotOf(provider: MemoryProvider): ProviderSnapshot {
  const p = provider as MemoryProvider & { capabilities?: () => unknown };
  return {
    name: provider.name,
    preCompressCheckpointApiVersion: provider.preCompressCheckpointApiVersion === 2 ? 2 : 1,
    isAvailable: read(() => provider.isAvailable() === true),
    unavailableReason: read(() => String(provider.unavailableReason() ?? "")),
    getToolSchemas: read(() => provider.getToolSchemas()),
    getConfigSchema: read(() => provider.getConfigSchema()),
    recallStatus: read(() => provider.recallStatus()),
    backupPaths: read(() => provider.backupPaths()),
    ...(typeof p.capabilities === "function" ? { capabilities: read(() => p.capabilities!()) } : {}),
  };
}

/** The hooks the provider overrides and the optional methods it has: only these cross the thread. */
function methodsOf(provider: MemoryProvider): string[] {
  const record = provider as unknown as Record<string, unknown>;
  const base = MemoryProvider.prototype as unknown as Record<string, unknown>;
  const hooks = FORWARDED_HOOKS.filter((m) => typeof record[m] === "function" && record[m] !== base[m]);
  return [...hooks, ...OPTIONAL_METHODS.filter((m) => typeof record[m] === "function")];
}

/** The module's other registrations, named: their functions cannot leave this thread. */
function registrationNames(provider: MemoryProvider): string[] {
  const r = pluginRegistrationsOf(provider);
  return [
    ...r.hooks.map((h) => `hook ${h.name}`),
    ...r.tools.map((t) => `tool ${t.name}`),
    ...r.commands.map((c) => `command ${c.name}`),
    ...r.other.map((o) => o.method),
  ];
}

async function main(): Promise<void> {
  let provider: MemoryProvider;
  try {
    provider = await loadMemoryProvider(start.name, {
      hermesHome: start.hermesHome,
      logger,
      ...(start.cwd !== undefined ? { cwd: start.cwd } : {}),
      ...(start.bundledDir !== undefined ? { bundledDir: start.bundledDir } : {}),
      ...(start.packageRoots !== undefined ? { packageRoots: start.packageRoots } : {}),
      ...(start.hostDir !== undefined ? { hostDir: start.hostDir } : {}),
      ...(start.importTimeoutMs !== undefined ? { importTimeoutMs: start.importTimeoutMs } : {}),
      ...(start.registerSkills !== undefined ? { registerSkills: start.registerSkills } : {}),
      ...(start.enableProjectPlugins !== undefined ? { enableProjectPlugins: start.enableProjectPlugins } : {}),
      ...(start.discovery !== undefined ? { discovery: start.discovery } : {}),
    });
  } catch (error) {
    post({ type: "load-failed", error: serializeError(error) });
    return;
  }
  let last = snapshotOf(provider);
  let lastJson = safeJson(last);
  // The skill registry is per thread: the host records what the loader registered here.
  post({
    type: "ready",
    methods: methodsOf(provider),
    snapshot: last,
    skills: listSkills(start.hermesHome),
    registrations: registrationNames(provider),
  });
  const allowed = new Set(methodsOf(provider));
  port.on("message", (message: CallMessage) => {
    void runWithProfile(start.hermesHome, async () => {
      let outcome: Settled<unknown>;
      try {
        if (!allowed.has(message.method)) throw new Error(`the provider has no method ${message.method}()`);
        const fn = (provider as unknown as Record<string, (...args: unknown[]) => unknown>)[message.method]!;
        outcome = { ok: true, value: await fn.apply(provider, message.args) };
      } catch (error) {
        outcome = { ok: false, error: serializeError(error) };
      }
      last = snapshotOf(provider);
      const json = safeJson(last);
      const changed = json !== lastJson;
      lastJson = json;
      try {
        post({ type: "result", id: message.id, outcome, ...(changed ? { snapshot: last } : {}) });
      } catch (error) {
        // A result that cannot be cloned (a function, a class instance with private state) is a provider bug.
        const failure = new Error(`${message.method}() returned a value that cannot cross the thread: ${serializeError(error).message}`);
        post({ type: "result", id: message.id, outcome: { ok: false, error: serializeError(failure) }, snapshot: last });
      }
    });
  });
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch {
    return String(Math.random());
  }
}

void main();
