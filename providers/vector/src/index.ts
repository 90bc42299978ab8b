/**
 * @hermes/memory-vector — the `vector` memory provider: semantic recall over an embedded local
 * index (usearch HNSW + SQLite sidecar) by default, Pinecone at scale, hybrid with BM25.
 */
import type { Logger, MemoryProvider } from "@hermes/memory-core";
import { VectorMemoryProvider, type VectorMemoryProviderOptions } from "./vector-memory-provider.js";

export { VectorMemoryProvider, type VectorMemoryProviderOptions, type ExportedItem, type ProgressCallback } from "./vector-memory-provider.js";
export { type Embedder, l2Normalize, cosineSimilarity, isLexicalEmbedder } from "./embedders/embedder.js";
export { HashingEmbedder, type HashingEmbedderOptions } from "./embedders/hashing-embedder.js";
export { OpenAIEmbedder, DEFAULT_EMBED_INPUT_CHARS, type OpenAIEmbedderOptions } from "./embedders/openai-embedder.js";
export { OnnxEmbedder, type OnnxEmbedderOptions } from "./embedders/onnx-embedder.js";
export { WordPieceTokenizer } from "./embedders/wordpiece-tokenizer.js";
export {
  DEFAULT_NAMESPACE,
  type VectorStore,
  type VectorRecord,
  type VectorMatch,
  type VectorQueryOptions,
  type VectorDeleteTarget,
  type NamespaceOptions,
  type VectorStoreStats,
} from "./backends/vector-store.js";
export { LocalVectorStore, DEFAULT_EXPANSION_SEARCH, DEFAULT_EXACT_THRESHOLD, LEXICAL_EXACT_THRESHOLD, type LocalVectorStoreOptions } from "./local/local-vector-store.js";
export { PineconeVectorStore, flattenMetadata, type PineconeVectorStoreOptions } from "./pinecone/pinecone-vector-store.js";
export { PineconeRemoteMemory, type PineconeRemoteMemoryOptions, type RememberOptions as RemoteRememberOptions } from "./pinecone/pinecone-remote-store.js";
export { Sidecar, toFtsQuery, type SidecarRow, type KeywordHit, type SidecarOpenOptions } from "./local/sidecar.js";
export { matchesFilter, type MetadataFilter, type MetadataValue, type VectorMetadata } from "./metadata-filter.js";
export {
  reciprocalRankFusion,
  RRF_K,
  scoreFusion,
  LEXICAL_EMBEDDER_FUSION,
  fusionWeightsFor,
  SEMANTIC_EMBEDDER_FUSION,
  type FusedResult,
  type FusionWeights,
} from "./search/rank-fusion.js";
export { NEIGHBOUR_WEIGHTS, SPEAKER_BOOST } from "./search/conversation-context.js";
export { resolveVectorConfig, MAX_DIMENSIONS, loadVectorConfig, loadVectorConfigSync, renderNamespace, DEFAULT_VECTOR_CONFIG, type VectorConfig, type StoreKind, type EmbedderKind, type PineconeLayout } from "./vector-config.js";
export { VECTOR_TOOL_SCHEMAS, SEARCH_TOOL, REMEMBER_TOOL, FORGET_TOOL } from "./vector-tools.js";
export { dimensionMismatchError } from "./backends/index-identity.js";

/** The part of core's registration context this provider uses. */
export interface VectorRegistrationContext {
  registerMemoryProvider(provider: MemoryProvider): void;
  /** The profile home, when the host knows it (core's loader always passes it). */
  readonly hermesHome?: string;
  /** The host's logger, where background failures are reported (core's loader always passes it). */
  readonly logger?: Logger;
}

/**
 * Entry point called by `loadMemoryProvider("vector")`: registers one `VectorMemoryProvider`.
 * Opens nothing; reads config.yaml/.env only so `isAvailable()` is accurate before `initialize`.
 */
export function register(ctx: VectorRegistrationContext, options: VectorMemoryProviderOptions = {}): void {
  ctx.registerMemoryProvider(new VectorMemoryProvider({ ...(ctx.hermesHome ? { hermesHome: ctx.hermesHome } : {}), ...(ctx.logger ? { logger: ctx.logger } : {}), ...options }));
}
