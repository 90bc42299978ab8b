/**
 * `@hermes/memory-vector/internal`: parts of the provider that this repository's benchmarks and
 * packed-install tests drive directly. Not part of the public API: anything here may change or go
 * in any release. Use the package's main entry (`VectorMemoryProvider`) instead.
 */
export {
  LocalVectorStore,
  DEFAULT_EXPANSION_SEARCH,
  DEFAULT_EXACT_THRESHOLD,
  LEXICAL_EXACT_THRESHOLD,
  type LocalVectorStoreOptions,
} from "./local/local-vector-store.js";
