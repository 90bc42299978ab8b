import { createRandom } from "./prng.js";

/**
 * Low-rank synthetic embeddings (x = A·z + noise, rank 24, unit length): uniform random vectors
 * are the worst case for graph indexes and unlike real embeddings; this is the rough stand-in the
 * toolchain notes use. Deterministic for a seed.
 */
export class EmbeddingSpace {
  private readonly basis: Float32Array;

  constructor(
    readonly dim: number,
    readonly rank = 24,
    readonly noise = 0.35,
    seed = 384,
  ) {
    const rnd = createRandom(seed);
    this.basis = new Float32Array(rank * dim);
    for (let i = 0; i < this.basis.length; i++) this.basis[i] = rnd.gaussian();
  }

  /** `count` unit vectors, row-major, from the given sample seed. */
  sample(count: number, seed: number): Float32Array {
    const rnd = createRandom(seed);
    const out = new Float32Array(count * this.dim);
    const z = new Float64Array(this.rank);
    const noiseScale = this.noise * Math.sqrt(this.rank);
    for (let r = 0; r < count; r++) {
      for (let k = 0; k < this.rank; k++) z[k] = rnd.gaussian();
      const off = r * this.dim;
      let norm = 0;
      for (let d = 0; d < this.dim; d++) {
        let v = noiseScale * rnd.gaussian();
        for (let k = 0; k < this.rank; k++) v += (z[k] as number) * (this.basis[k * this.dim + d] as number);
        out[off + d] = v;
        norm += v * v;
      }
      const inv = 1 / Math.sqrt(norm);
      for (let d = 0; d < this.dim; d++) out[off + d] = (out[off + d] as number) * inv;
    }
    return out;
  }
}
