/**
 * Load a provider inline or in a worker thread, as chosen for it. Precedence: the caller's choice
 * (`openMemory({ isolation })`) > config.yaml `memory.isolation.<name>` > the provider's manifest
 * (`isolation` in plugin.yaml or `hermesMemoryProvider`) > inline.
 */
import path from "node:path";
import type { HermesConfig } from "../config/config-file.js";
import { MAX_PACKAGE_JSON_BYTES, MAX_PLUGIN_YAML_BYTES, readManifestFile } from "../discovery/bounded-read.js";
import { discoverMemoryProviders } from "../discovery/discover.js";
import { parseHermesMemoryProviderField, parsePluginYaml } from "../discovery/manifest.js";
import type { DiscoveredProvider } from "../discovery/types.js";
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

/** The manifest's `isolation` offer of a discovered provider; `undefined` when it makes none or cannot be read. */
export async function manifestIsolation(found: DiscoveredProvider): Promise<IsolationMode | undefined> {
  if (found.source === "package") {
    const read = await readManifestFile(path.join(found.dir, "package.json"), MAX_PACKAGE_JSON_BYTES);
    if (!("text" in read)) return undefined;
    try {
      const pkg = JSON.parse(read.text) as { hermesMemoryProvider?: unknown };
      return parseHermesMemoryProviderField(pkg.hermesMemoryProvider).providers.find((p) => p.name === found.name)?.isolation;
    } catch {
      return undefined;
    }
  }
  const read = await readManifestFile(path.join(found.dir, "plugin.yaml"), MAX_PLUGIN_YAML_BYTES);
  if (!("text" in read)) return undefined;
  const parsed = parsePluginYaml(read.text);
  return parsed.ok ? parsed.value.isolation : undefined;
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
    const found = discovery.providers.find((p) => p.name === name);
    mode = (found ? await manifestIsolation(found) : undefined) ?? "inline";
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
