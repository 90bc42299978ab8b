import { describe, expect, it } from "vitest";
import { createRandom } from "./prng.js";

describe("createRandom", () => {
  it("produces the same sequence for the same seed and a different one for another seed", () => {
    const a = createRandom(42);
    const b = createRandom(42);
    const c = createRandom(43);
    const seqA = Array.from({ length: 5 }, () => a.next());
    expect(Array.from({ length: 5 }, () => b.next())).toEqual(seqA);
    expect(Array.from({ length: 5 }, () => c.next())).not.toEqual(seqA);
  });

  it("stays in range", () => {
    const r = createRandom(1);
    for (let i = 0; i < 1000; i++) {
      const u = r.next();
      expect(u).toBeGreaterThanOrEqual(0);
      expect(u).toBeLessThan(1);
      expect(r.int(7)).toBeLessThan(7);
    }
  });

  it("draws standard normals (mean ≈ 0, variance ≈ 1)", () => {
    const r = createRandom(3);
    const xs = Array.from({ length: 20_000 }, () => r.gaussian());
    const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
    const variance = xs.reduce((s, x) => s + (x - mean) ** 2, 0) / xs.length;
    expect(Math.abs(mean)).toBeLessThan(0.05);
    expect(Math.abs(variance - 1)).toBeLessThan(0.05);
  });

  it("refuses to pick from an empty array", () => {
    expect(() => createRandom(1).pick([])).toThrow(/non-empty/);
  });
});
