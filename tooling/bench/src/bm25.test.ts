import { describe, expect, it } from "vitest";
import { Bm25Index, tokenize } from "./bm25.js";

describe("tokenize", () => {
  it("lower-cases and splits on anything that is not a letter or digit", () => {
    expect(tokenize(`Caroline said, "I'm going to the LGBTQ group!" 2023`)).toEqual([
      "caroline",
      "said",
      "i",
      "m",
      "going",
      "to",
      "the",
      "lgbtq",
      "group",
      "2023",
    ]);
  });

  it("keeps letters of any script", () => {
    expect(tokenize("Zoë visited Zürich")).toEqual(["zoë", "visited", "zürich"]);
  });
});

describe("Bm25Index", () => {
  it("ranks the document with the rare query term first", () => {
    const index = new Bm25Index();
    index.add("the cat sat on the mat");
    index.add("the dog chased the cat");
    index.add("a purple giraffe");
    const hits = index.search("purple cat", 10);
    expect(hits[0]?.doc).toBe(2);
    expect(hits.map((h) => h.doc).sort()).toEqual([0, 1, 2]);
  });

  it("matches the Okapi BM25 formula (k1 1.2, b 0.75, non-negative idf)", () => {
    const index = new Bm25Index(1.2, 0.75);
    index.add("apple banana");
    index.add("banana banana cherry");
    const [hit] = index.search("cherry", 1);
    // n = 2, df = 1 → idf = ln(1 + 1.5/1.5) = ln 2; tf = 1, dl = 3, avgdl = 2.5.
    const expected = (Math.log(2) * 1 * 2.2) / (1 + 1.2 * (1 - 0.75 + (0.75 * 3) / 2.5));
    expect(hit?.doc).toBe(1);
    expect(hit?.score).toBeCloseTo(expected, 10);
  });

  it("prefers shorter documents for the same term frequency (length normalisation)", () => {
    const index = new Bm25Index();
    index.add("memory");
    index.add("memory " + "filler ".repeat(30));
    index.add("unrelated");
    expect(index.search("memory", 2).map((h) => h.doc)).toEqual([0, 1]);
  });

  it("omits documents without any query term, honours the limit, and breaks ties by insertion order", () => {
    const index = new Bm25Index();
    index.add("alpha");
    index.add("alpha");
    index.add("beta");
    expect(index.search("alpha", 1)).toEqual([{ doc: 0, score: expect.any(Number) }]);
    expect(index.search("gamma", 5)).toEqual([]);
    expect(new Bm25Index().search("x", 5)).toEqual([]);
  });
});
