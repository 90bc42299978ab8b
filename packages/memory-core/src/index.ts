/**
 * @hermes/memory-core — the public surface, listed in one place. Everything exported here is part
 * of the contract: changing it is a breaking change, and `exports.test.ts` lists every name so a
 * change is deliberate. Anything not listed here is internal, even when its module exports it.
 *
 * The first half is what a provider author needs (the contract, the plugin seam, the helpers a
 * provider may call); the second half is for hosts (the manager, built-in memory, discovery,
 * loading, configuration, setup and `openMemory`). One entry point serves both.
 */

// === for provider authors =====================================================================

// --- errors ------------------------------------------------------------------------------------
export {
  HermesMemoryError,
  UnsupportedToolError,
  CheckpointUnavailableError,
  describeError,
  describeValue,
  errorDocument,
  type ErrorDocument,
  type HermesMemoryErrorCode,
  type HermesMemoryErrorOptions,
} from "./errors.js";
export { closestNames } from "./closest-names.js";

// --- the provider contract ---------------------------------------------------------------------
export {
  MemoryProvider,
  isMemoryProvider,
  isMemoryProviderClass,
  isSearchableMemory,
  searchCapabilities,
  isValidProviderName,
  allowsAutomaticWrites,
  PROVIDER_NAME_PATTERN,
  BUILTIN_PROVIDER_NAME,
  MEMORY_FILTER_TOOL_PROPERTIES,
  type MaybePromise,
  type JsonSchema,
  type ToolSchema,
  type ContentPart,
  type ChatMessage,
  type AgentContext,
  type InitContext,
  type ConfigField,
  type RecallStatus,
  type TurnAuthor,
  type PrefetchOptions,
  type SyncTurnOptions,
  type TurnStartOptions,
  type SessionSwitchOptions,
  type PreCompressOptions,
  type MemoryWriteAction,
  type MemoryWriteTarget,
  type MemoryWriteMetadata,
  type DelegationOptions,
  type ToolCallOptions,
  type MemoryKind,
  type MemoryItem,
  type MemoryHit,
  type MemorySearchOptions,
  type MemoryFilter,
  type MetadataFilter,
  type MetadataOperators,
  type MetadataScalar,
  type TimeRange,
  type ForgetScope,
  type MemoryUpdate,
  type SearchCapabilities,
  type MemoryStats,
  type SearchableMemory,
} from "./provider.js";

// --- the plugin seam: register(ctx) and registerCli(command, context) -------------------------
export {
  type MemoryProviderRegistrationContext,
  type ProviderCliContext,
  type ProviderCliIo,
  type ProviderCliProgress,
  type RegisterCli,
} from "./plugin-seam.js";

// --- settings and secrets, profiles, files, logging --------------------------------------------
export { getEnv, getEnvView, readEnvFileSync } from "./config/secrets.js";
export { defaultEnvVarName } from "./config/setup.js";
export { getHermesHome, runWithProfile, bindProfile, defaultHermesHome, expandHome } from "./profile.js";
export {
  atomicWriteFile,
  atomicJsonWrite,
  readJsonOrEmpty,
  readTextOrEmpty,
  withFileLock,
  fileLockMode,
  normalizeNewlines,
  type AtomicWriteOptions,
  type AtomicJsonWriteOptions,
  type FileLockOptions,
  type FileLockMode,
} from "./fs.js";
export { silentLogger, consoleLogger, type Logger } from "./logger.js";

// === for hosts ================================================================================

// --- the manager and the helpers around a turn -------------------------------------------------
export {
  MemoryManager,
  DEFAULT_EXTERNAL_PREFETCH_TIMEOUT_MS,
  DEFAULT_DRAIN_TIMEOUT_MS,
  DEFAULT_HOOK_TIMEOUT_MS,
  DEFAULT_BLOCKING_WARN_MS,
  DEFAULT_MAX_QUEUED_TASKS,
  type MemoryManagerOptions,
  type BackgroundQueueState,
  type DrainState,
  type ProviderHookReport,
} from "./manager.js";
export { boundedCall, detachedCallCount, type BoundedOutcome, type BoundedCallOptions } from "./bounded-call.js";
export { readBoundedFile, readBoundedFileSync, type BoundedRead } from "./discovery/bounded-read.js";
export { scrubSecrets, redactSecrets } from "./scrub.js";
export { spillIfOversized, type SpillConfig, type SpillOptions } from "./spill.js";
export { isTrivialPrompt, isCoreMemoryProvider } from "./trivial-prompt.js";
export { fenceRecall } from "./recall.js";
export { escapeRecalledJson, escapeRecalledText, escapeToolResult } from "./recall-escape.js";
export { preCompress, type CheckpointManager } from "./checkpoint.js";
export { RESERVED_CORE_TOOL_NAMES } from "./tool-schema.js";

// --- built-in memory (MEMORY.md / USER.md) -----------------------------------------------------
export { BuiltinMemoryProvider, type BuiltinMemoryOptions } from "./builtin/builtin-provider.js";
export {
  BuiltinMemoryStore,
  MEMORY_ENTRY_DELIMITER,
  DEFAULT_MEMORY_CHAR_LIMIT,
  DEFAULT_USER_CHAR_LIMIT,
  BUILTIN_MEMORY_FILES,
  MAX_BATCH_OPERATIONS,
  parseMemoryEntries,
  serializeMemoryEntries,
  type BuiltinMemoryTarget,
  type BuiltinMemoryStoreOptions,
  type MemoryToolResult,
  type MemoryOperation,
  type MemoryUsage,
} from "./builtin/memory-store.js";
export { MemoryToolDispatcher, MEMORY_TOOL_SCHEMA } from "./builtin/memory-tool.js";
export { scanMemoryContent, sanitizeSnapshotEntry, type ThreatScanResult } from "./builtin/threat-scan.js";

// --- discovery and loading ---------------------------------------------------------------------
export { discoverMemoryProviders, listMemoryProviderNames, findMemoryProvider, describeSearchedLocations } from "./discovery/discover.js";
export {
  type ProviderSource,
  type DiscoveredProvider,
  type DiscoveryProblem,
  type DiscoveryProblemCode,
  type DiscoveryResult,
  type DiscoveryOptions,
  type SearchedLocation,
} from "./discovery/types.js";
export { defaultPackageRoots, MANIFEST_FIELD } from "./discovery/package-source.js";
export { installCommandHint, type InstallHintOptions } from "./discovery/install-hint.js";
export { parseHermesMemoryProviderField, type PackageProviderManifest } from "./discovery/manifest.js";
export { defaultBundledDir, BUNDLED_DIR_ENV } from "./bundled-dir.js";
export { loadMemoryProvider, loadProviderCli, isProviderDisabled, DEFAULT_IMPORT_TIMEOUT_MS, type LoadOptions } from "./loader.js";
export { skillView, listSkills, type ProviderSkill } from "./skills.js";
export {
  pluginRegistrationsOf,
  runPluginHook,
  callPluginFunction,
  type PluginRegistrations,
  type PluginHookRegistration,
  type PluginToolRegistration,
  type PluginCommandRegistration,
  type PluginOtherRegistration,
  type PluginFunction,
  type PluginCallOptions,
} from "./plugin-registrations.js";

// --- configuration, setup, openMemory ----------------------------------------------------------
export {
  readConfig,
  parseConfig,
  updateConfig,
  setConfigValue,
  setActiveProvider,
  configFilePath,
  MAX_CONFIG_BYTES,
  MAX_CONFIG_ALIASES,
  MAX_CONFIG_NODES,
  MAX_CONFIG_DEPTH,
  type HermesConfig,
} from "./config/config-file.js";
export { setPluginDisabled, type PluginDisabledChange } from "./config/plugins-disabled.js";
export { readEnvFile, writeEnvValues, parseEnv, formatEnvValue, envFilePath } from "./config/env-file.js";
export {
  planSetup,
  applySetup,
  readConfigSchema,
  DEFAULT_POST_SETUP_TIMEOUT_MS,
  type SetupField,
  type SetupPlan,
  type SetupResult,
  type SetupState,
} from "./config/setup.js";
export { openMemory, type OpenMemoryOptions } from "./open-memory.js";

// --- isolation: a provider hosted in a worker thread behind the same interface ------------------
export { WorkerHostedProvider, startWorkerHostedProvider, type WorkerHostedOptions } from "./isolation/worker-hosted-provider.js";
export { ISOLATION_MODES, isIsolationMode, type IsolationMode } from "./isolation/protocol.js";

// --- Declarative provider config: one ConfigField list drives setup and the typed runtime config.
export {
  resolveProviderConfig,
  loadProviderConfig,
  configOptionName,
  type ProviderConfigSources,
  type ResolvedProviderConfig,
  type ProviderConfigOf,
  type ProviderConfigOptions,
  type ConfigFieldValue,
  type CamelCaseKey,
  type ConfigValueSource,
} from "./config/resolve-config.js";
export { coerceConfigValue, type CoercedConfigValue } from "./config/coerce.js";
export { normalizeConfigField } from "./config/field-spelling.js";
export { envFileOnlyHint } from "./config/env-file-hint.js";
