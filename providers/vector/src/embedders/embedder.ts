/**
 * Turns texts into fixed-size vectors. Implementations must be deterministic for a given `id`
 * (the index records `id` and `dimensions` and refuses to mix vectors from different embedders).
 */
export interface Embedder {
  /** Stable identity of the model and its settings, e.g. `hashing-v1` or `openai:text-embedding-3-small`. */
  readonly id: string;
  /** Length of every vector `embed` returns. */
  readonly dimensions: number;
  /**
   * Embed a batch of texts, one vector per text in the same order. May call the network (remote
   * embedders); must not be called on a caller's hot path (the provider calls it in the background).
   */
  embed(texts: string[]): Promise<Float32Array[]>;
  /** Release sessions or sockets. Optional and idempotent. */
  close?(): Promise<void>;
}

/**
 * True for a lexical embedder: its vectors hash the words and character n-grams of the text
 * (the bundled `hashing` embedder, ids starting with `hashing`) instead of encoding meaning. Such
 * vectors are nearly orthogonal unless texts share words, so they rank like keywords, and a
 * proximity graph (HNSW) cannot be navigated over them.
 */
export function isLexicalEmbedder(embedderId: string): boolean {
  return embedderId.startsWith("hashing");
}

/** Scale `vector` in place to unit length (a zero vector stays zero). Returns the same array. */
export function l2Normalize(vector: Float32Array): Float32Array {
  let sum = 0;
  for (let i = 0; i < vector.length; i++) sum += vector[i]! * vector[i]!;
  if (sum > 0) {
    const inv = 1 / Math.sqrt(sum);
    for (let i = 0; i < vector.length; i++) vector[i] = vector[i]! * inv;
  }
  return vector;
}

/** Cosine similarity of two equal-length vectors; 0 when either is a zero vector. */
export function cosineSimilarity(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  if (na === 0 || nb === 0) return 0;
  return dot / Math.sqrt(na * nb);
}
