/**
 * A namespace's vectors in one growable matrix, for the local store's exact (brute-force) search of
 * small namespaces.
 */
/** A namespace's vectors held in one growable matrix for brute-force search. */
export class ExactNamespace {
  keys: number[] = [];
  /** The record id of each key (same slot). */
  ids: string[] = [];
  private readonly slot = new Map<number, number>();
  /** The slot of a key, if present. */
  slotOf(key: number): number | undefined {
    return this.slot.get(key);
  }
  data: Float32Array;
  norms: Float32Array;
  constructor(
    private readonly dims: number,
    capacity: number,
  ) {
    this.data = new Float32Array(Math.max(16, capacity) * dims);
    this.norms = new Float32Array(Math.max(16, capacity));
  }
  /**
   * Append a vector given as its stored bytes (float32), copied straight into the matrix. Bytes of
   * another length (a vector of other dimensions) are skipped.
   */
  append(key: number, id: string, bytes: Uint8Array): void {
    if (bytes.byteLength !== this.dims * 4 || this.slot.has(key)) return;
    const i = this.keys.length;
    if ((i + 1) * this.dims > this.data.length) this.grow();
    this.keys.push(key);
    this.ids.push(id);
    this.slot.set(key, i);
    const base = i * this.dims;
    new Uint8Array(this.data.buffer, base * 4, bytes.byteLength).set(bytes);
    let n = 0;
    for (let j = base; j < base + this.dims; j++) n += this.data[j]! * this.data[j]!;
    this.norms[i] = Math.sqrt(n);
  }
  private grow(): void {
    const grown = new Float32Array(this.data.length * 2);
    grown.set(this.data);
    this.data = grown;
    const norms = new Float32Array(this.norms.length * 2);
    norms.set(this.norms);
    this.norms = norms;
  }
  set(key: number, id: string, vector: Float32Array): void {
    let i = this.slot.get(key);
    if (i === undefined) {
      i = this.keys.length;
      if ((i + 1) * this.dims > this.data.length) this.grow();
      this.keys.push(key);
      this.ids.push(id);
      this.slot.set(key, i);
    }
    this.data.set(vector, i * this.dims);
    let n = 0;
    for (let j = 0; j < vector.length; j++) n += vector[j]! * vector[j]!;
    this.norms[i] = Math.sqrt(n);
  }
}
