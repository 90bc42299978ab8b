/**
 * `@hermes/memory-provider-kit`: what a memory provider is written with. Tool routing and the user
 * boundary of tools, recall formatting, item, filter and forget-scope parsing, the stored text of
 * turns and checkpoints, query words, the prefetch cache, the batching writer, JSON Lines
 * export/import files and the loader of native addons. None of it needs better-sqlite3.
 *
 * The SQLite search engine both reference providers run on (store opening, the layered BM25
 * ranker, conversational context, the WAL checkpointer, filters compiled to SQL) is the
 * `@hermes/memory-provider-kit/sqlite` entry.
 */
export { queryTokens, uniqueTerms, clipQuery, MAX_QUERY_TERMS, MAX_QUERY_CHARS } from "./fts-query.js";
export { formatRecall, defaultRecallLabel, recallEntryCount, type RecallFormatOptions } from "./recall-format.js";
export { ToolRouter, toolError, type ToolHandler, type ToolRouterOptions } from "./tool-router.js";
export { ToolUserScope, type ToolItemScope } from "./tool-user-scope.js";
export { PrefetchCache } from "./prefetch-cache.js";
export { BatchingWriter, DEFAULT_MAX_QUEUE, type BatchingWriterOptions } from "./batching-writer.js";
export { createNativeModuleLoader, NATIVE_MODULE_MISSING, type NativeModuleLoader } from "./native-module.js";
export { turnText, turnSpeaker, checkpointText, checkpointCopies } from "./transcript-text.js";
export {
  writeJsonlFile,
  readJsonlFile,
  readJsonlFileSync,
  countJsonlRecords,
  checkJsonlTarget,
  checkJsonlSource,
  type JsonlLine,
  type ProgressCallback,
} from "./jsonl.js";
export {
  parseMemoryFilter,
  isEmptyFilter,
  matchesMemoryFilter,
  resolveExpiry,
  toEpochMs,
  MEMORY_ITEM_KINDS,
  parseSearchLimit,
  type FilterScalar,
  type MetadataNode,
  type ParsedTimeRange,
  type ParsedMemoryFilter,
  type FilterRecord,
  type ParseFilterOptions,
} from "./memory-filter.js";
export { parseForgetScope, checkWholeStoreErasure, type ParsedForgetScope } from "./forget-scope.js";
export { StepPacer, STEP_TARGET_MS, yieldToEventLoop, type StepPacerOptions } from "./paced-steps.js";
export { parseMemoryItem, parseItemMetadata, parseMemoryUpdate, type ParsedMemoryItem, type ParsedMemoryUpdate } from "./memory-item.js";
// --- model-facing tools of a memory store: one schema builder (search, remember, forget, list, get)
export {
  memoryToolSchemas,
  MEMORY_TOOL_LIMITS,
  REMEMBER_TOOL_PROPERTIES,
  type MemoryToolAction,
  type MemoryToolSchemaOptions,
} from "./memory-tool-schemas.js";
// --- what both providers store from the host's hooks: the item of a turn, checkpoint items and
// their digest, mirrored built-in writes, the session switch after a flush
export {
  turnItem,
  checkpointItems,
  checkpointDigest,
  chatMessageText,
  mirroredWrite,
  switchSessionAfterFlush,
  type HookSession,
  type TurnItem,
  type CheckpointItem,
  type MirroredFact,
  type MirroredWrite,
} from "./provider-hooks.js";
// --- settings every provider names the same way
export { PREFETCH_CONFIG_FIELDS } from "./prefetch-settings.js";
export { applyRenamedSettings, type RenamedSetting } from "./renamed-settings.js";
