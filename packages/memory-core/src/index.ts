/**
 * @hermes/memory-core — the public surface, listed in one place. Everything exported here is part
 * of the contract: changing it is a breaking change.
 */

// --- errors ------------------------------------------------------------------------------------
export {
  HermesMemoryError,
  UnsupportedToolError,
  CheckpointUnavailableError,
  describeError,
  type HermesMemoryErrorCode,
  type HermesMemoryErrorOptions,
} from "./errors.js";

// --- the provider contract ---------------------------------------------------------------------
export {
  MemoryProvider,
  isMemoryProvider,
  isMemoryProviderClass,
  overridesSaveConfig,
  isSearchableMemory,
  isValidProviderName,
  allowsAutomaticWrites,
  PROVIDER_NAME_PATTERN,
  BUILTIN_PROVIDER_NAME,
  INDICATOR_GLYPH,
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
  type MemoryStats,
  type SearchableMemory,
} from "./provider.js";

// --- profiles, files, logging ------------------------------------------------------------------
export { getHermesHome, runWithProfile, bindProfile, defaultHermesHome, expandHome } from "./profile.js";
export {
  atomicWriteFile,
  atomicJsonWrite,
  readJsonOrEmpty,
  readJsonOrEmptySync,
  readTextOrEmpty,
  withFileLock,
  fileLockMode,
  ensurePrivateDir,
  stripBom,
  normalizeNewlines,
  type AtomicWriteOptions,
  type AtomicJsonWriteOptions,
  type FileLockOptions,
  type FileLockMode,
} from "./fs.js";
export { silentLogger, consoleLogger, type Logger } from "./logger.js";

// --- manager, recall, checkpoint, scrub, spill (section owned by the manager work) -------------
export { scrubSecrets, redactSecrets, REDACTED } from "./scrub.js";
export {
  spillIfOversized,
  pruneSpillFiles,
  normalizeSpillConfig,
  sanitizeSessionSegment,
  resolveSpillBase,
  DEFAULT_SPILL_CONFIG,
  SPILL_MARKER_FILE,
  type SpillConfig,
  type SpillOptions,
  type PruneSpillOptions,
} from "./spill.js";
export { isTrivialPrompt, isCoreMemoryProvider, CORE_MEMORY_PROVIDER_SENTINELS } from "./trivial-prompt.js";
export {
  MemoryManager,
  stripSkillScaffolding,
  DEFAULT_EXTERNAL_PREFETCH_TIMEOUT_MS,
  DEFAULT_DRAIN_TIMEOUT_MS,
  DEFAULT_HOOK_TIMEOUT_MS,
  type MemoryManagerOptions,
  type DrainState,
  type ProviderHookReport,
} from "./manager.js";
export { boundedCall, detachedCallCount, type BoundedOutcome, type BoundedCallOptions } from "./bounded-call.js";
export { normalizeToolSchema, RESERVED_CORE_TOOL_NAMES } from "./tool-schema.js";
export {
  fenceRecall,
  sanitizeContext,
  dedupeRepeatedBullets,
  describeRecall,
  StreamingContextScrubber,
  MEMORY_CONTEXT_OPEN,
  MEMORY_CONTEXT_CLOSE,
  MEMORY_CONTEXT_NOTE,
} from "./recall.js";
export {
  preCompress,
  normalizeCheckpointEvidence,
  checkpointRequiredWarning,
  type CheckpointManager,
} from "./checkpoint.js";

// --- text search helpers for FTS5-based providers ----------------------------------------------
export {
  buildFtsQuery,
  queryTokens,
  uniqueTerms,
  quoteTerm,
  isStopword,
  MAX_QUERY_TERMS,
  type FtsQueryOptions,
} from "./fts-query.js";

// --- built-in memory (section owned by the built-in memory work) -------------------------------
export { BuiltinMemoryProvider, type BuiltinMemoryOptions } from "./builtin/builtin-provider.js";
export {
  BuiltinMemoryStore,
  MEMORY_ENTRY_DELIMITER,
  DEFAULT_MEMORY_CHAR_LIMIT,
  DEFAULT_USER_CHAR_LIMIT,
  BUILTIN_MEMORY_FILES,
  MEMORY_WRITE_NOTE,
  parseMemoryEntries,
  serializeMemoryEntries,
  isConsolidationFailure,
  entryDelimiterError,
  MAX_BATCH_OPERATIONS,
  type BuiltinMemoryTarget,
  type BuiltinMemoryStoreOptions,
  type MemoryToolResult,
  type MemoryOperation,
  type MemoryUsage,
} from "./builtin/memory-store.js";
export {
  MemoryToolDispatcher,
  MEMORY_TOOL_NAME,
  MEMORY_TOOL_SCHEMA,
  MEMORY_FAILURE_CAP,
  MEMORY_UNAVAILABLE_RESULT,
} from "./builtin/memory-tool.js";
export {
  scanMemoryContent,
  sanitizeSnapshotEntry,
  THREAT_PATTERNS,
  THREAT_SCAN_WINDOW,
  type ThreatPattern,
  type ThreatScanResult,
} from "./builtin/threat-scan.js";

// --- discovery, loading, configuration, openMemory (section owned by the discovery work) -------
export {
  discoverMemoryProviders,
  listMemoryProviderNames,
  findMemoryProvider,
  resolveDiscoveryOptions,
  describeSearchedLocations,
  type ResolvedDiscoveryOptions,
} from "./discovery/discover.js";
export {
  type ProviderSource,
  type DiscoveredProvider,
  type DiscoveryProblem,
  type DiscoveryProblemCode,
  type DiscoveryResult,
  type DiscoveryOptions,
  type SearchedLocation,
} from "./discovery/types.js";
export { defaultPackageRoots, findNearestPackageRoot, MANIFEST_FIELD } from "./discovery/package-source.js";
export { entryLooksLikeMemoryProvider, HEURISTIC_WINDOW_CHARS } from "./discovery/directory-source.js";
export {
  parsePluginYaml,
  parseHermesMemoryProviderField,
  packageMainExport,
  providerNameError,
  type PluginYaml,
  type PackageProviderManifest,
} from "./discovery/manifest.js";
export {
  loadMemoryProvider,
  loadProviderCli,
  isProviderDisabled,
  DEFAULT_IMPORT_TIMEOUT_MS,
  type LoadOptions,
  type MemoryProviderRegistrationContext,
  type RegisterCli,
} from "./loader.js";
export { skillView, listSkills, clearProviderSkills, type ProviderSkill } from "./skills.js";
export {
  readConfig,
  parseConfig,
  updateConfig,
  setConfigValue,
  setActiveProvider,
  setDocumentValue,
  configFilePath,
  CONFIG_FILE_NAME,
  MAX_CONFIG_BYTES,
  MAX_CONFIG_ALIASES,
  MAX_CONFIG_NODES,
  MAX_CONFIG_DEPTH,
  type HermesConfig,
} from "./config/config-file.js";
export {
  readEnvFile,
  writeEnvValues,
  parseEnv,
  formatEnvValue,
  envFilePath,
  envNameError,
  ENV_FILE_NAME,
  ENV_NAME_PATTERN,
  DENIED_ENV_NAMES,
} from "./config/env-file.js";
export { getEnv, getEnvView, readEnvFileSync } from "./config/secrets.js";
export { projectPluginsEnabled } from "./config/environment.js";
export {
  planSetup,
  applySetup,
  defaultEnvVarName,
  DEFAULT_POST_SETUP_TIMEOUT_MS,
  type SetupField,
  type SetupPlan,
  type SetupResult,
  type SetupState,
} from "./config/setup.js";
export { openMemory, type OpenMemoryOptions } from "./open-memory.js";

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
