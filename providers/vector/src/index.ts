/**
 * @hermes/memory-vector — the `vector` memory provider: semantic recall over an embedded local
 * index (usearch HNSW + SQLite sidecar) by default, Pinecone at scale, hybrid with BM25.
 *
 * The public entry: the provider, its configuration and the embedders a user constructs. The
 * stores, the sidecar, the tokenizer and the ranking are internal (`@hermes/memory-vector/internal`
 * reaches the parts this repository's benchmarks and packed-install tests drive directly).
 */
import type { Logger, MemoryProvider } from "@hermes/memory-core";
import { VectorMemoryProvider, type VectorMemoryProviderOptions } from "./vector-memory-provider.js";

export {
  VectorMemoryProvider,
  type VectorMemoryProviderOptions,
  type ExportedItem,
  type ProgressCallback,
} from "./vector-memory-provider.js";
export type { Embedder } from "./embedders/embedder.js";
export { HashingEmbedder, type HashingEmbedderOptions } from "./embedders/hashing-embedder.js";
export { OpenAIEmbedder, DEFAULT_EMBED_INPUT_CHARS, type OpenAIEmbedderOptions } from "./embedders/openai-embedder.js";
export { OnnxEmbedder, type OnnxEmbedderOptions } from "./embedders/onnx-embedder.js";
export {
  resolveVectorConfig,
  loadVectorConfig,
  MAX_DIMENSIONS,
  DEFAULT_VECTOR_CONFIG,
  type VectorConfig,
  type StoreKind,
  type EmbedderKind,
  type PineconeLayout,
} from "./vector-config.js";

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
  ctx.registerMemoryProvider(
    new VectorMemoryProvider({
      ...(ctx.hermesHome ? { hermesHome: ctx.hermesHome } : {}),
      ...(ctx.logger ? { logger: ctx.logger } : {}),
      ...options,
    }),
  );
}
