import { describe, expect, it } from "vitest";
import { isStopword, uniqueTerms } from "./fts-query.js";
import { MAX_RELATED_TERMS, relatedTerms, relatedWords } from "./related-terms.js";
import { RELATED_WORDS_TEXT } from "./related-words-data.js";

describe("relatedWords", () => {
  it("gives a common word's embedding neighbours, most similar first, and nothing for words the table lacks", () => {
    expect(relatedWords("kids")).toContain("children");
    expect(relatedWords("dogs")).toContain("pets");
    expect(relatedWords("zzqx")).toEqual([]);
    expect(relatedWords("")).toEqual([]);
    expect(relatedWords("Kids")).toEqual([]); // the table is keyed by lower-case query words
    expect(relatedWords("__proto__")).toEqual([]);
    // Names are left out of the table: a question about one person must not search for another.
    for (const name of ["melanie", "jon", "caroline", "andrew", "paris"]) expect(relatedWords(name)).toEqual([]);
  });

  it("holds only plain lower-case words, none a stopword or a name, at most four per word, never the word itself", () => {
    const lines = RELATED_WORDS_TEXT.split("\n");
    expect(lines.length).toBeGreaterThan(5_000);
    for (const line of lines) {
      const [word, ...related] = line.split(" ");
      expect(word).toMatch(/^[a-z]+$/);
      expect(related.length).toBeGreaterThanOrEqual(1);
      expect(related.length).toBeLessThanOrEqual(4);
      expect(related).not.toContain(word);
      for (const r of [word!, ...related]) {
        expect(r).toMatch(/^[a-z]+$/);
        expect(isStopword(r)).toBe(false);
      }
    }
  });
});

describe("relatedTerms", () => {
  it("lists each query word's related words in query order, without the query's own words or repeats", () => {
    const terms = uniqueTerms("What do Melanie's kids and dogs like?");
    expect(terms).toEqual(["melanie", "kids", "dogs"]);
    const related = relatedTerms(terms);
    expect(related).toEqual(
      [...relatedWords("kids"), ...relatedWords("dogs")].filter((w, i, all) => all.indexOf(w) === i && !terms.includes(w)),
    );
    // "pets" and "dogs" are each other's neighbours: a query with both adds neither again.
    expect(relatedWords("pets")).toContain("dogs");
    expect(relatedTerms(["pets", "dogs"])).not.toContain("dogs");
    expect(relatedTerms(["pets", "dogs"])).not.toContain("pets");
  });

  it("adds nothing for names, made-up or non-English words, or no words, and stops at the cap", () => {
    expect(relatedTerms([])).toEqual([]);
    expect(relatedTerms(["melanie", "xyzzy", "über"])).toEqual([]);
    const many = RELATED_WORDS_TEXT.split("\n")
      .slice(0, 40)
      .map((l) => l.split(" ")[0]!);
    expect(relatedTerms(many)).toHaveLength(MAX_RELATED_TERMS);
    expect(relatedTerms(many, 5)).toEqual(relatedTerms(many).slice(0, 5));
    expect(relatedTerms(many, 0)).toEqual([]);
    expect(relatedTerms(many, Number.NaN)).toEqual([]);
  });
});
