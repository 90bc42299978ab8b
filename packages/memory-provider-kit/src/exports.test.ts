import { describe, expect, it } from "vitest";
import * as authoring from "@hermes/memory-provider-kit";
import * as sqlite from "@hermes/memory-provider-kit/sqlite";

// Both entries are a contract (they are read through the built package, as a provider imports
// them): adding, removing or moving an export must be a deliberate change made here and in the
// changeset, never a side effect of editing a module.
describe("@hermes/memory-provider-kit exports", () => {
  it("the authoring entry exports exactly these values", () => {
    expect(Object.keys(authoring).sort()).toEqual([
      "BatchingWriter",
      "DEFAULT_MAX_QUEUE",
      "MAX_QUERY_CHARS",
      "MAX_QUERY_TERMS",
      "MEMORY_ITEM_KINDS",
      "MEMORY_TOOL_LIMITS",
      "NATIVE_MODULE_MISSING",
      "PrefetchCache",
      "REMEMBER_TOOL_PROPERTIES",
      "ToolRouter",
      "ToolUserScope",
      "checkJsonlSource",
      "checkJsonlTarget",
      "checkWholeStoreErasure",
      "checkpointCopies",
      "checkpointText",
      "clipQuery",
      "countJsonlRecords",
      "createNativeModuleLoader",
      "defaultRecallLabel",
      "formatRecall",
      "isEmptyFilter",
      "matchesMemoryFilter",
      "memoryToolSchemas",
      "parseForgetScope",
      "parseItemMetadata",
      "parseMemoryFilter",
      "parseMemoryItem",
      "parseMemoryUpdate",
      "parseSearchLimit",
      "queryTokens",
      "readJsonlFile",
      "readJsonlFileSync",
      "recallEntryCount",
      "resolveExpiry",
      "toEpochMs",
      "toolError",
      "turnSpeaker",
      "turnText",
      "uniqueTerms",
      "writeJsonlFile",
    ]);
  });

  it("the /sqlite entry exports exactly these values", () => {
    expect(Object.keys(sqlite).sort()).toEqual([
      "CONTEXT_CHARS",
      "CONTEXT_TURNS",
      "DocumentFrequencies",
      "ITEMS_RANKER_SCHEMA",
      "LayeredRanker",
      "NEIGHBOUR_WEIGHTS",
      "NO_CONTEXT",
      "RELATED_TERM_WEIGHT",
      "RecentTurns",
      "SECOND_PREVIOUS_WEIGHT",
      "SPEAKER_BOOST",
      "SmallIndexCompactor",
      "TURN_COLUMN_WEIGHTS",
      "UNREADABLE_KEY",
      "WalCheckpointer",
      "asksQuestion",
      "boostNamedSpeakers",
      "buildFtsQuery",
      "clipContext",
      "closeSqliteStore",
      "contextGivers",
      "createSqliteDriverLoader",
      "filterToSql",
      "ftsTermCounter",
      "isBusyError",
      "isUnwritableError",
      "itemsContextSql",
      "jsonNestsDeeperThan",
      "keepUnreadable",
      "keptValue",
      "nextTurnShare",
      "openSqliteStore",
      "openSqliteStoreAsync",
      "planRanking",
      "propagateContext",
      "quoteTerm",
      "readableJson",
      "readableText",
      "relatedToRank",
      "speakerNamed",
      "sqliteLockWaitMs",
      "storageError",
      "tooDeepForSqlite",
      "turnContext",
      "turnDateText",
      "withBusyTimeout",
    ]);
  });

  it("no name is exported by both entries", () => {
    expect(Object.keys(sqlite).filter((name) => name in authoring)).toEqual([]);
  });
});
