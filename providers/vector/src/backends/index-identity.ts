import { HermesMemoryError } from "@hermes/memory-core";

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
