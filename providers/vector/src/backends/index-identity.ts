/**
 * Which embedder built a store's vectors (recorded in the sidecar), and the error when the
 * configured embedder differs: vectors from two embedders are never mixed in one index.
 */
import { HermesMemoryError, type Logger } from "@hermes/memory-core";
import type { Embedder } from "../embedders/embedder.js";
import type { Sidecar } from "../local/sidecar.js";
import type { VectorConfig } from "../vector-config.js";

/**
 * Build the `EMBEDDING_DIMENSION_MISMATCH` error: names what the index holds, what is configured,
 * and the fix. Thrown when vectors from two different embedders would be mixed in one index.
 */
export function dimensionMismatchError(details: { stored: string; configured: string; where: string }): HermesMemoryError {
  return new HermesMemoryError({
    code: "EMBEDDING_DIMENSION_MISMATCH",
    message:
      `The vector index at ${details.where} was built with ${details.stored}, but the configured embedder produces ${details.configured}. ` +
      `Vectors from different embedders cannot be mixed. Run \`hermes-memory vector reindex\` to re-embed every stored item with the configured embedder, ` +
      `or set memory.vector.embedder / memory.vector.dimensions back to the values the index was built with.`,
  });
}

/** The sidecar meta key recording which embedder built the store's vectors (one per Pinecone index, one for the local index). */
export function embedderIdentityKey(config: Pick<VectorConfig, "store" | "pineconeIndex">): string {
  return config.store === "pinecone" ? `embedder:pinecone:${config.pineconeIndex}` : "embedder:local";
}

/** What `embedderIdentityKey` records: the embedder's id and vector length. */
export function embedderIdentity(embedder: Pick<Embedder, "id" | "dimensions">): string {
  return `${embedder.id}/${embedder.dimensions}`;
}

/**
 * Check that the recorded embedder is the configured one (`EMBEDDING_DIMENSION_MISMATCH` otherwise,
 * naming the Pinecone index or `localDirectory`). With none recorded, record it when every stored
 * item has its vector in the store; otherwise warn that the items need a reindex.
 */
export function verifyEmbedderIdentity(
  sidecar: Sidecar,
  config: Pick<VectorConfig, "store" | "pineconeIndex">,
  embedder: Pick<Embedder, "id" | "dimensions">,
  options: { localDirectory: string; readOnly: boolean; logger: Logger },
): void {
  const key = embedderIdentityKey(config);
  const recorded = sidecar.getMeta(key);
  if (recorded && recorded !== embedderIdentity(embedder)) {
    const [storedId, storedDims] = recorded.split("/");
    throw dimensionMismatchError({
      stored: `embedder ${storedId} (${storedDims} dimensions)`,
      configured: `embedder ${embedder.id} (${embedder.dimensions} dimensions)`,
      where: config.store === "pinecone" ? `pinecone:${config.pineconeIndex}` : options.localDirectory,
    });
  }
  if (!recorded) {
    const rows = Object.values(sidecar.namespaceCounts()).reduce((a, b) => a + b, 0);
    if (rows > 0 && !(config.store === "local" && sidecar.countVectors() === rows)) {
      options.logger.warn(
        `vector memory: ${rows} stored items have no vectors in the ${config.store} store yet; run \`hermes-memory vector reindex\` to index them.`,
      );
    } else if (!options.readOnly) {
      sidecar.setMeta(key, embedderIdentity(embedder));
    }
  }
}
