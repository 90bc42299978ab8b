import { describe, expect, it } from "vitest";
import { buildFtsQuery, clipQuery, isStopword, MAX_QUERY_CHARS, MAX_QUERY_TERMS, queryTokens, uniqueTerms } from "./fts-query.js";

describe("buildFtsQuery", () => {
  it("quotes every term, drops stopwords and question words, and ORs the rest", () => {
    expect(buildFtsQuery("What did Caroline research?")).toBe('"caroline" OR "research"');
    expect(buildFtsQuery("Where's Melanie's dog?")).toBe('"melanie" OR "dog"');
    expect(isStopword("what")).toBe(true);
    expect(isStopword("dog")).toBe(false);
  });

  it("treats FTS syntax as text", () => {
    expect(buildFtsQuery('NEAR(foo bar) AND "x" OR -y: z*')).toBe('"near" OR "foo" OR "bar" OR "x" OR "y" OR "z"');
    expect(buildFtsQuery("col:value")).toBe('"col" OR "value"');
  });

  it("returns null when nothing searchable is left", () => {
    for (const input of ["", "   ", "the and of", '"""', "***", "\0\0", "()", 42 as unknown as string, undefined]) {
      expect(buildFtsQuery(input)).toBeNull();
    }
  });

  it("keeps unicode words (diacritics, CJK, digits) and caps the term count", () => {
    expect(queryTokens("Café naïve 東京 2023")).toEqual(["café", "naïve", "東京", "2023"]);
    const many = Array.from({ length: 200 }, (_, i) => `word${i}`).join(" ");
    expect(buildFtsQuery(many)!.split(" OR ")).toHaveLength(MAX_QUERY_TERMS);
    expect(buildFtsQuery("x".repeat(100_000))).toBeNull(); // one 100k-char "word" is noise
  });
});

describe("uniqueTerms", () => {
  it("keeps unique terms in first-seen order and caps their number", () => {
    expect(uniqueTerms("dog cat dog bird cat")).toEqual(["dog", "cat", "bird"]);
    expect(uniqueTerms("one two three four", 2)).toEqual(["one", "two"]);
  });
});

describe("clipQuery", () => {
  it("keeps the first MAX_QUERY_CHARS characters, never half of a surrogate pair", () => {
    expect(clipQuery("short")).toBe("short");
    expect(clipQuery("x".repeat(MAX_QUERY_CHARS + 10))).toBe("x".repeat(MAX_QUERY_CHARS));
    const split = "x".repeat(MAX_QUERY_CHARS - 1) + "😀" + "tail";
    expect(clipQuery(split)).toBe("x".repeat(MAX_QUERY_CHARS - 1));
    expect(clipQuery(42 as never)).toBe("");
  });

  it("is what queryTokens reads: words past the limit are not searched", () => {
    const query = `${"filler ".repeat(MAX_QUERY_CHARS / 7 + 1)}zeppelin`;
    expect(queryTokens(query)).not.toContain("zeppelin");
    expect(queryTokens(clipQuery(`zeppelin ${query}`))).toContain("zeppelin");
  });
});
