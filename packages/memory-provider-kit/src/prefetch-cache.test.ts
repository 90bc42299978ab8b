import { describe, expect, it } from "vitest";
import { PrefetchCache } from "./prefetch-cache.js";

describe("PrefetchCache", () => {
  it("keys entries by session and query: another session's identical query is a miss", () => {
    const cache = new PrefetchCache<string>();
    cache.set("s1", "where is the office", "lisbon");
    expect(cache.get("s1", "where is the office")).toBe("lisbon");
    expect(cache.get("s2", "where is the office")).toBeUndefined();
    expect(cache.get(undefined, "where is the office")).toBeUndefined();
  });

  it("take serves an entry once", () => {
    const cache = new PrefetchCache<number>();
    cache.set("s", "q", 1);
    expect(cache.take("s", "q")).toBe(1);
    expect(cache.take("s", "q")).toBeUndefined();
  });

  it("keeps at most `capacity` entries, dropping the oldest set first", () => {
    const cache = new PrefetchCache<number>(2);
    cache.set("s", "a", 1);
    cache.set("s", "b", 2);
    cache.set("s", "a", 3); // refreshes a
    cache.set("s", "c", 4);
    expect(cache.size).toBe(2);
    expect(cache.get("s", "b")).toBeUndefined();
    expect(cache.get("s", "a")).toBe(3);
    cache.clear();
    expect(cache.size).toBe(0);
  });
});
