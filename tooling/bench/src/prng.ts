/**
 * Seeded pseudo-random numbers, so every corpus and query set is identical from run to run and
 * machine to machine (a cached database must match what a fresh run would generate).
 */

/** A deterministic random source. Not cryptographic; never use it for anything but test data. */
export interface Random {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [0, n). */
  int(n: number): number;
  /** Standard normal (Box–Muller). */
  gaussian(): number;
  /** A random element of a non-empty array. */
  pick<T>(items: readonly T[]): T;
}

/**
 * Creates a mulberry32 generator from a 32-bit seed. Same seed, same sequence, on every platform.
 */
export function createRandom(seed: number): Random {
  let state = seed >>> 0;
  let spare: number | null = null;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n) => Math.floor(next() * n),
    gaussian: () => {
      if (spare !== null) {
        const s = spare;
        spare = null;
        return s;
      }
      // 1 - next() keeps the logarithm's argument in (0, 1].
      const u = 1 - next();
      const v = next();
      const r = Math.sqrt(-2 * Math.log(u));
      spare = r * Math.sin(2 * Math.PI * v);
      return r * Math.cos(2 * Math.PI * v);
    },
    pick: (items) => {
      const item = items[Math.floor(next() * items.length)];
      if (item === undefined) throw new RangeError("pick() needs a non-empty array");
      return item;
    },
  };
}
