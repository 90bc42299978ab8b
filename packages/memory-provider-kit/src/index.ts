/**
 * `@hermes/memory-provider-kit`: what memory providers share. Safe FTS5 queries, recall
 * formatting, tool-argument validation and routing, the user boundary of tools, the prefetch cache, SQLite store opening, the
 * batching writer, the layered BM25 ranker, conversational context (neighbour score spreading,
 * speaker boost), the stored text of turns and checkpoints, JSONL export/import files, and memory
 * filters (validation, evaluation in JavaScript and in SQL) and expiry times, and the rule that makes
 * stored values readable (BLOBs or non-JSON text left by older versions or other programs).
 */
export { buildFtsQuery, queryTokens, uniqueTerms, quoteTerm, isStopword, clipQuery, MAX_QUERY_TERMS, MAX_QUERY_CHARS, type FtsQueryOptions } from "./fts-query.js";
export { formatRecall, defaultRecallLabel, recallEntryCount, MIN_ENTRY_CHARS, type RecallFormatOptions } from "./recall-format.js";
export { ToolRouter, toolError, type ToolHandler, type ToolRouterOptions } from "./tool-router.js";
export { ToolUserScope, type ToolItemScope } from "./tool-user-scope.js";
export { PrefetchCache, PREFETCH_CACHE_SIZE } from "./prefetch-cache.js";
export {
  openSqliteStore,
  openSqliteStoreAsync,
  closeSqliteStore,
  createSqliteDriverLoader,
  storageError,
  isBusyError,
  isUnwritableError,
  withBusyTimeout,
  DEFAULT_SQLITE_LOCK_WAIT_MS,
  sqliteLockWaitMs,
  type SqliteDb,
  type SqliteDriver,
  type SqliteDriverLoader,
  type SqliteStoreSpec,
  type OpenSqliteStoreOptions,
} from "./sqlite-store.js";
export { createNativeModuleLoader, nativeModuleMissing, isNativeAddonFailure, NATIVE_MODULE_MISSING, type NativeModuleLoader } from "./native-module.js";
export { BatchingWriter, DEFAULT_MAX_QUEUE, type BatchingWriterOptions } from "./batching-writer.js";
export {
  LayeredRanker,
  idf,
  readVarints,
  termPattern,
  MAX_LAYERED_TERMS,
  WARM_LENGTH_ROWS,
  ITEMS_RANKER_SCHEMA,
  HELPER_MIN_ROWS,
  type CountedTerm,
  type LayeredRankOptions,
  type LayeredRankerOptions,
  type LayeredRankerSchema,
} from "./layered-ranker.js";
export { SmallIndexCompactor, SMALL_INDEX_ITEMS, SMALL_INDEX_SEGMENTS } from "./fts-compaction.js";
export { WalCheckpointer, CHECKPOINT_COMMITS, CHECKPOINT_ITEMS, WAL_LIMIT_BYTES, type WalCheckpointerOptions, type WalCheckpointerStatus } from "./wal-checkpointer.js";
export { relatedTerms, relatedWords, RELATED_TERM_WEIGHT, RELATED_TERM_MAX_SHARE, MAX_RELATED_TERMS } from "./related-terms.js";
export { planRanking, planRelated, relatedToRank, relatedTermCap, DocumentFrequencies, ftsTermCounter, type TermCounter, DOCUMENT_FREQUENCY_CACHE_SIZE, COMMON_TERM_SHARE, COMMON_TERM_MIN_DOCS, type RankPlan } from "./rank-plan.js";
export {
  NEIGHBOUR_WEIGHTS,
  STATEMENT_NEXT_FACTOR,
  SECOND_PREVIOUS_WEIGHT,
  contextGivers,
  asksQuestion,
  nextTurnShare,
  SPEAKER_BOOST,
  propagateContext,
  boostNamedSpeakers,
  speakerNamed,
  queryTermSet,
  type ContextRow,
  type ContextCandidate,
  type NeighbourLookup,
  type PropagateOptions,
} from "./conversation-context.js";
export { turnText, turnSpeaker, checkpointText, checkpointCopies, USER_LABEL, ASSISTANT_LABEL } from "./transcript-text.js";
export { writeJsonlFile, readJsonlFile, readJsonlFileSync, countJsonlRecords, checkJsonlTarget, checkJsonlSource, type JsonlLine, type ProgressCallback } from "./jsonl.js";
export {
  CONTEXT_TURNS,
  CONTEXT_CHARS,
  TURN_COLUMN_WEIGHTS,
  NO_CONTEXT,
  turnContext,
  clipContext,
  itemsContextSql,
  turnDateText,
  RecentTurns,
  RECENT_SESSIONS,
  type TurnColumnWeights,
  type TurnContext,
} from "./conversation-index.js";
export {
  parseMemoryFilter,
  isEmptyFilter,
  needsExtendedFilter,
  matchesFilter,
  matchesMetadata,
  filterToSql,
  resolveExpiry,
  toEpochMs,
  MEMORY_FILTER_TOOL_PROPERTIES,
  REMEMBER_TOOL_PROPERTIES,
  MAX_FILTER_DEPTH,
  MAX_FILTER_CONDITIONS,
  MAX_FIELD_NAME_LENGTH,
  PROTO_FIELD,
  type FilterScalar,
  type MetadataNode,
  type ParsedTimeRange,
  type ParsedMemoryFilter,
  type FilterRecord,
  type ParseFilterOptions,
  type FilterSqlColumns,
  type FilterSql,
  type FilterSqlOptions,
  MEMORY_ITEM_KINDS,
  parseSearchLimit,
  DEFAULT_SEARCH_LIMIT,
  MAX_SEARCH_LIMIT,
} from "./memory-filter.js";
export { parseForgetScope, checkWholeStoreErasure, type ParsedForgetScope } from "./forget-scope.js";
export {
  parseMemoryItem,
  parseItemMetadata,
  parseMemoryUpdate,
  MAX_ITEM_ID_LENGTH,
  MAX_METADATA_DEPTH,
  type ParsedMemoryItem,
  type ParsedMemoryUpdate,
} from "./memory-item.js";
export {
  UNREADABLE_KEY,
  decodeUtf8,
  unreadableOriginal,
  readableText,
  readableJson,
  keepUnreadable,
  tooDeepForSqlite,
  jsonNestsDeeperThan,
  SQLITE_JSON_MAX_DEPTH,
  type KeptValue,
  type ReadableText,
  type ReadableJson,
} from "./unreadable-values.js";

// Issue 42, shared hook logic: what both providers store from the host's hooks, and renamed settings.
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
export { applyRenamedSettings, type RenamedSetting } from "./renamed-settings.js";
export { readableRow, type ReadableRow } from "./unreadable-values.js";
export { planQueryRanking } from "./rank-plan.js";
export { PREFETCH_CONFIG_FIELDS, DEFAULT_PREFETCH_LIMIT, DEFAULT_PREFETCH_MAX_CHARS } from "./prefetch-settings.js";
