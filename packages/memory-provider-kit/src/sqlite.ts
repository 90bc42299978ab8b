/**
 * `@hermes/memory-provider-kit/sqlite`: the SQLite search engine of the reference providers (needs
 * better-sqlite3, an optional peer, which the caller passes in). FTS5 MATCH expressions, opening a
 * store (WAL, busy timeout, migrations), the layered BM25 ranker for large stores, the rank plan and
 * related words, conversational context (neighbour score spreading, speaker boost) and the stored
 * context columns of turns, the small-index compactor and the WAL checkpointer, filters compiled to
 * SQL, and the rule that makes stored values readable (BLOBs or non-JSON text left by older
 * versions or other programs).
 */
export { buildFtsQuery, quoteTerm, type FtsQueryOptions } from "./fts-query.js";
export {
  openSqliteStore,
  openSqliteStoreAsync,
  closeSqliteStore,
  createSqliteDriverLoader,
  storageError,
  isBusyError,
  isUnwritableError,
  withBusyTimeout,
  sqliteLockWaitMs,
  type SqliteDb,
  type SqliteDriver,
  type SqliteDriverLoader,
  type SqliteStoreSpec,
  type OpenSqliteStoreOptions,
} from "./sqlite-store.js";
export {
  LayeredRanker,
  ITEMS_RANKER_SCHEMA,
  type CountedTerm,
  type LayeredRankOptions,
  type LayeredRankerOptions,
  type LayeredRankerSchema,
} from "./layered-ranker.js";
export { SmallIndexCompactor } from "./fts-compaction.js";
export { WalCheckpointer, type WalCheckpointerOptions, type WalCheckpointerStatus } from "./wal-checkpointer.js";
export { RELATED_TERM_WEIGHT } from "./related-terms.js";
export {
  planRanking,
  planQueryRanking,
  relatedToRank,
  DocumentFrequencies,
  ftsTermCounter,
  type TermCounter,
  type RankPlan,
} from "./rank-plan.js";
export {
  NEIGHBOUR_WEIGHTS,
  SECOND_PREVIOUS_WEIGHT,
  SPEAKER_BOOST,
  contextGivers,
  asksQuestion,
  nextTurnShare,
  propagateContext,
  boostNamedSpeakers,
  speakerNamed,
  type ContextRow,
  type ContextCandidate,
  type NeighbourLookup,
  type PropagateOptions,
} from "./conversation-context.js";
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
  type TurnColumnWeights,
  type TurnContext,
} from "./conversation-index.js";
export { filterToSql, type FilterSqlColumns, type FilterSql, type FilterSqlOptions } from "./memory-filter.js";
export {
  UNREADABLE_KEY,
  unreadableOriginal,
  readableRow,
  readableText,
  readableJson,
  keepUnreadable,
  tooDeepForSqlite,
  jsonNestsDeeperThan,
  type KeptValue,
  type ReadableRow,
  type ReadableText,
  type ReadableJson,
} from "./unreadable-values.js";
