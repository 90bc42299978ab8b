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
  withFileLock,
  ensurePrivateDir,
  stripBom,
  type AtomicWriteOptions,
  type AtomicJsonWriteOptions,
  type FileLockOptions,
} from "./fs.js";
export { silentLogger, consoleLogger, type Logger } from "./logger.js";

// --- manager, recall, checkpoint, scrub, spill (section owned by the manager work) -------------

// --- built-in memory (section owned by the built-in memory work) -------------------------------

// --- discovery, loading, configuration, openMemory (section owned by the discovery work) -------
