import { describe, expect, it } from "vitest";
import { buildFtsQuery, isStopword, queryTokens, uniqueTerms } from "./fts-query.js";

describe("fts query builder", () => {
  it("drops stopwords and question words, strips possessives, quotes and ORs the rest", () => {
    expect(queryTokens("What did Caroline's sister paint?")).toEqual(["caroline", "sister", "paint"]);
    expect(buildFtsQuery("When is the Berlin marathon, and where?")).toBe('"berlin" OR "marathon"');
    expect(isStopword("what")).toBe(true);
    expect(isStopword("marathon")).toBe(false);
  });

  it("never lets FTS syntax through and returns null when nothing searchable is left", () => {
    expect(buildFtsQuery('NEAR(a b) "x" -y *z')).toBe('"near" OR "b" OR "x" OR "y" OR "z"');
    expect(buildFtsQuery("what is it?")).toBeNull();
    expect(buildFtsQuery("")).toBeNull();
    expect(buildFtsQuery(42)).toBeNull();
  });

  it("keeps unique terms in first-seen order and caps their number", () => {
    expect(uniqueTerms("cats dogs cats birds", 2)).toEqual(["cats", "dogs"]);
    const many = Array.from({ length: 100 }, (_, i) => `w${i}`).join(" ");
    expect(buildFtsQuery(many)!.split(" OR ")).toHaveLength(24);
  });
});
