import { describe, expect, it } from "vitest";
import { percentile, scaleSummary, summarize } from "./stats.js";

describe("percentile", () => {
  it("interpolates linearly between order statistics", () => {
    const sorted = [1, 2, 3, 4, 5];
    expect(percentile(sorted, 50)).toBe(3);
    expect(percentile(sorted, 0)).toBe(1);
    expect(percentile(sorted, 100)).toBe(5);
    expect(percentile(sorted, 25)).toBe(2);
    expect(percentile([10, 20], 95)).toBeCloseTo(19.5);
  });

  it("returns the only sample for a single-sample set", () => {
    expect(percentile([7], 99)).toBe(7);
  });

  it("refuses an empty sample set instead of printing 0", () => {
    expect(() => percentile([], 50)).toThrow(/empty/);
  });
});

describe("summarize", () => {
  it("reports median, p95, p99, min, max and mean of unsorted samples without modifying them", () => {
    const samples = Array.from({ length: 100 }, (_, i) => 100 - i);
    const copy = [...samples];
    const s = summarize(samples);
    expect(samples).toEqual(copy);
    expect(s.n).toBe(100);
    expect(s.min).toBe(1);
    expect(s.max).toBe(100);
    expect(s.median).toBeCloseTo(50.5);
    expect(s.p95).toBeCloseTo(95.05);
    expect(s.p99).toBeCloseTo(99.01);
    expect(s.mean).toBeCloseTo(50.5);
  });

  it("sorts numerically, not lexically", () => {
    expect(summarize([10, 9, 100]).median).toBe(10);
  });

  it("scales every location statistic", () => {
    const s = scaleSummary(summarize([0.001, 0.002, 0.003]), 1000);
    expect(s.median).toBeCloseTo(2);
    expect(s.max).toBeCloseTo(3);
    expect(s.n).toBe(3);
  });
});
