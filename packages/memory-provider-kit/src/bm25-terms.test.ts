import { describe, expect, it } from "vitest";
import { bestByEstimate, countAsciiWord, idf, nthSmallest, readVarints, sumHexVarints, termPattern } from "./bm25-terms.js";

describe("layered ranker helpers", () => {
  it("sums a length record given as hex (SQL's hex()) as the record's own varints sum", () => {
    // SQLite varints: 7 bits per byte, high bit set on all but the last; a 9th byte carries 8 bits.
    const encode = (value: number): number[] => {
      if (value >= 2 ** 56) {
        const low = value % 256;
        const high = Math.floor(value / 256);
        const bytes = Array.from({ length: 8 }, (_, i) => (Math.floor(high / 2 ** (7 * (7 - i))) % 128) | 0x80);
        return [...bytes, low];
      }
      const groups: number[] = [];
      let v = value;
      do {
        groups.unshift(v % 128);
        v = Math.floor(v / 128);
      } while (v > 0);
      return groups.map((g, i) => (i < groups.length - 1 ? g | 0x80 : g));
    };
    let seed = 7;
    const random = () => (seed = (seed * 48_271) % 2_147_483_647) / 2_147_483_647;
    for (let r = 0; r < 300; r++) {
      const values = Array.from({ length: 1 + Math.floor(random() * 6) }, () => Math.floor(random() ** 4 * [200, 70_000, 3e9][r % 3]!));
      const bytes = Uint8Array.from(values.flatMap(encode));
      const hex = Buffer.from(bytes).toString("hex").toUpperCase();
      expect(readVarints(bytes)).toEqual(values);
      expect(sumHexVarints(hex)).toBe(values.reduce((a, b) => a + b, 0));
      expect(sumHexVarints(hex.toLowerCase())).toBe(values.reduce((a, b) => a + b, 0));
    }
    expect(sumHexVarints(Buffer.from(Uint8Array.from([...Array(8).fill(0x81), 0x05])).toString("hex"))).toBe(
      readVarints(Uint8Array.from([...Array(8).fill(0x81), 0x05]))[0],
    );
    expect(sumHexVarints("")).toBe(0);
  });

  it("picks the rows a full sort by estimate, then id, would pick, in that order", () => {
    let seed = 11;
    const random = () => (seed = (seed * 48_271) % 2_147_483_647) / 2_147_483_647;
    for (let r = 0; r < 200; r++) {
      const n = Math.floor(random() * 400);
      const ids = Array.from({ length: n }, (_, i) => i * 3 + Math.floor(random() * 3)).sort(() => random() - 0.5);
      // Few distinct estimates, so ties at the cut are common.
      const estimates = ids.map(() => Math.floor(random() * 12) / 4);
      const wanted = Math.floor(random() * 80);
      const expected = ids
        .map((id, i) => ({ id, e: estimates[i]! }))
        .sort((x, y) => y.e - x.e || x.id - y.id)
        .slice(0, wanted)
        .map((x) => x.id);
      expect(bestByEstimate(ids, estimates, wanted)).toEqual(expected);
    }
  });

  it("selects the value a full ascending sort puts at an index", () => {
    let seed = 5;
    const random = () => (seed = (seed * 48_271) % 2_147_483_647) / 2_147_483_647;
    for (let r = 0; r < 300; r++) {
      const n = 1 + Math.floor(random() * 500);
      // Some rounds with many equal values, some sorted or reversed (a quickselect's bad cases).
      const distinct = r % 3 === 0 ? 4 : 1e6;
      const values = Array.from({ length: n }, () => Math.floor(random() * distinct) / 7);
      if (r % 5 === 1) values.sort((a, b) => a - b);
      if (r % 5 === 2) values.sort((a, b) => b - a);
      const sorted = [...values].sort((a, b) => a - b);
      const index = Math.floor(random() * n);
      expect(nthSmallest(Float64Array.from(values), index)).toBe(sorted[index]);
    }
  });

  it("counts a word in plain ASCII text as its pattern does", () => {
    let seed = 3;
    const random = () => (seed = (seed * 48_271) % 2_147_483_647) / 2_147_483_647;
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
    // Words and glue chosen so that bases, suffixes, longer words and neighbouring letters or digits collide often.
    const words = [
      "run",
      "runs",
      "running",
      "runnings",
      "rerun",
      "runly",
      "runed",
      "runes",
      "runx",
      "runs2",
      "2run",
      "ran",
      "r",
      "ru",
      "class",
      "classes",
      "go",
      "going",
      "goings",
      "ago",
      "bus",
      "buses",
      "busing",
    ];
    const glue = [" ", "  ", ", ", ".", "-", "_", "'", "!", "\n", "", "9", "a"];
    for (let r = 0; r < 400; r++) {
      const text = Array.from({ length: 1 + Math.floor(random() * 12) }, () => pick(words) + pick(glue)).join("");
      const term = pick(["run", "runs", "running", "class", "classes", "go", "goings", "bus", "buses", "ran", "r"]);
      const pattern = termPattern(term);
      const expected = [...text.matchAll(pattern)].length;
      const base = baseOf(term);
      expect(countAsciiWord(text.toLowerCase(), base)).toBe(expected);
      expect(countAsciiWord(text.toUpperCase().toLowerCase(), base)).toBe([...text.toUpperCase().matchAll(pattern)].length);
    }
  });
});

/** `termPattern`'s base of a plain ASCII word: lower-cased, without one suffix when the rest stays over two letters ("ss" keeps its s). */
function baseOf(term: string): string {
  const lower = term.toLowerCase();
  for (const suffix of ["ings", "ing", "ed", "es", "s", "ly"]) {
    if (lower.length > suffix.length + 2 && lower.endsWith(suffix) && !(suffix === "s" && lower.endsWith("ss")))
      return lower.slice(0, -suffix.length);
  }
  return lower;
}

describe("layered BM25 helpers", () => {
  it("reads SQLite varints big-endian", () => {
    expect(readVarints(Uint8Array.from([0xbd, 0x84, 0x40, 0x05, 0x81, 0x00]))).toEqual([1_000_000, 5, 128]);
  });

  it("uses FTS5's IDF, floored for words in most rows", () => {
    expect(idf(1000, 10)).toBeCloseTo(Math.log(990.5 / 10.5));
    expect(idf(1000, 900)).toBe(1e-6);
  });

  it("matches a word's common inflections, case- and accent-insensitively, whole words only", () => {
    const count = (term: string, text: string) => text.normalize("NFD").replace(/\p{M}/gu, "").match(termPattern(term))?.length ?? 0;
    expect(count("meeting", "Meetings, a meeting, we meet")).toBe(3);
    expect(count("cafe", "Café and cafes")).toBe(2);
    expect(count("cat", "category concat cat")).toBe(1);
    expect(() => termPattern("a(b[")).not.toThrow();
  });
});
