/**
 * Load a provider inline or in a worker thread, as chosen for it. Precedence: the caller's choice
 * (`openMemory({ isolation })`) > config.yaml `memory.isolation.<name>` > the provider's manifest
 * (`isolation` in plugin.yaml or `hermesMemoryProvider`) > inline.
 */
import type { HermesConfig } from "../config/config-file.js";
import { discoverMemoryProviders } from "../discovery/discover.js";
import { loadMemoryProvider, type LoadOptions } from "../loader.js";
import type { MemoryProvider } from "../provider.js";
import type { IsolationMode } from "./protocol.js";
import { startWorkerHostedProvider } from "./worker-hosted-provider.js";

/** The choice and bounds `loadIsolated` needs beside the loader's options. */
export interface IsolationChoice {
  /** The caller's choice; wins over config.yaml and the manifest. */
  isolation?: IsolationMode;
  /** Bound of each worker call but prefetch (ms). */
  hookTimeoutMs?: number;
  /** Bound of a worker prefetch (ms). */
  prefetchTimeoutMs?: number;
}

/**
 * Load provider `name` (the loader's rules and errors) and host it as chosen: inline, or behind a
 * `WorkerHostedProvider`. Discovery runs once and is reused by the loader or the worker.
 */
export async function loadIsolated(
  name: string,
  options: LoadOptions & { hermesHome: string; config: HermesConfig },
  choice: IsolationChoice,
): Promise<MemoryProvider> {
  let mode = choice.isolation ?? options.config.memory.isolation[name];
  const discovery = options.discovery ?? (await discoverMemoryProviders(options));
  if (mode === undefined) {
    mode = discovery.providers.find((p) => p.name === name)?.isolation ?? "inline";
  }
  if (mode === "inline") return loadMemoryProvider(name, { ...options, discovery });
  const { logger, config: _config, discovery: _discovery, env: _env, ...plain } = options;
  return startWorkerHostedProvider(name, {
    ...plain,
    discovery,
    ...(logger !== undefined ? { logger } : {}),
    ...(choice.hookTimeoutMs !== undefined ? { hookTimeoutMs: choice.hookTimeoutMs } : {}),
    ...(choice.prefetchTimeoutMs !== undefined ? { prefetchTimeoutMs: choice.prefetchTimeoutMs } : {}),
  });
}
