import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { HermesMemoryError } from "@hermes/memory-core";
import {
  AVERAGE_DOCUMENT_TERMS,
  encodeDocument,
  encodeQuery,
  hybridQuery,
  MAX_SPARSE_TERMS,
  sparseDot,
  sparseTerms,
  termIndex,
} from "./sparse-encoder.js";

const SAMPLE = "Caroline moved to Lisbon in 2024; she's running a small café near the harbour and loves sailing.";

describe("sparse encoder: terms and indices", () => {
  it("hashes terms with FNV-1a 32-bit (known values) to unsigned 32-bit indices", () => {
    expect(termIndex("")).toBe(2166136261);
    expect(termIndex("a")).toBe(0xe40c292c);
    expect(termIndex("foobar")).toBe(0xbf9cf968);
    for (const term of sparseTerms(SAMPLE)) {
      const index = termIndex(term);
      expect(Number.isInteger(index) && index >= 0 && index <= 0xffffffff).toBe(true);
    }
  });

  it("gives the same vector in another process (no per-process state such as a random hash seed)", { timeout: 30_000 }, () => {
    const here = encodeDocument(SAMPLE);
    const module = pathToFileURL(fileURLToPath(new URL("./sparse-encoder.ts", import.meta.url))).href;
    const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx/esm")).href;
    const script = `const { encodeDocument } = await import(${JSON.stringify(module)}); console.log(JSON.stringify(encodeDocument(${JSON.stringify(SAMPLE)})));`;
    const child = spawnSync(process.execPath, ["--import", tsx, "--input-type=module", "-e", script], { encoding: "utf8" });
    expect(child.stderr).toBe("");
    expect(JSON.parse(child.stdout)).toEqual(here);
  });

  it("drops stopwords, folds Latin diacritics and Porter-stems plain words, as the BM25 path's tokenizer", () => {
    expect(sparseTerms("The runner was running; she runs! Café crème, naïve résumé. Caroline's connections connected")).toEqual([
      "runner",
      "run",
      "run",
      "cafe",
      "creme",
      "naiv",
      "resum",
      "carolin",
      "connect",
      "connect",
    ]);
    expect(sparseTerms("what is it?")).toEqual([]);
    expect(encodeQuery("what is it?")).toEqual({ indices: [], values: [] });
  });

  it("matches a query word and a document word exactly when SQLite FTS5's porter tokenizer (the BM25 path) does", () => {
    const words = [
      "running",
      "runs",
      "run",
      "runner",
      "connection",
      "connected",
      "connects",
      "happiness",
      "happy",
      "generously",
      "generous",
      "ponies",
      "pony",
      "relational",
      "relate",
      "cafés",
      "cafe",
      "sailing",
      "sailed",
      "studies",
      "studying",
      "caresses",
      "caress",
    ];
    const db = new Database(":memory:");
    db.exec("CREATE VIRTUAL TABLE t USING fts5(text, tokenize='porter unicode61 remove_diacritics 2')");
    const insert = db.prepare("INSERT INTO t (rowid, text) VALUES (?, ?)");
    words.forEach((w, i) => insert.run(i + 1, w));
    const match = db.prepare("SELECT rowid FROM t WHERE t MATCH ?").pluck();
    let pairs = 0;
    for (const query of words) {
      const fts = new Set((match.all(`"${query}"`) as number[]).map((rowid) => words[rowid - 1]));
      const sparse = new Set(words.filter((doc) => sparseDot(encodeQuery(query), encodeDocument(doc)) > 0));
      expect({ query, matches: [...sparse].sort() }).toEqual({ query, matches: [...fts].sort() });
      pairs += fts.size;
    }
    expect(pairs).toBeGreaterThan(words.length); // inflections did meet, not only identical words
    db.close();
  });

  it("reads a long document whole (past the tokenizer's 4096-character window), cutting only at whitespace", () => {
    const filler = "lorem ipsum dolor sit amet ".repeat(400); // 10,800 characters
    const doc = encodeDocument(`${filler} zanzibar`);
    expect(sparseDot(encodeQuery("zanzibar"), doc)).toBeGreaterThan(0);
    const words = sparseTerms(`${"abcdefghij ".repeat(1000)}`);
    expect(new Set(words)).toEqual(new Set(["abcdefghij"]));
    expect(words).toHaveLength(1000);
  });
});

describe("sparse encoder: weights", () => {
  it("saturates term frequency and normalises by length against the fixed average", () => {
    const weightOf = (text: string, word: string): number => {
      const v = encodeDocument(text);
      return v.values[v.indices.indexOf(termIndex(word))] ?? 0;
    };
    const average = Array.from({ length: AVERAGE_DOCUMENT_TERMS }, (_, i) => `filler${i}`);
    // Once in a document of average length weighs exactly 1.
    expect(weightOf(["kiwi", ...average.slice(1)].join(" "), "kiwi")).toBeCloseTo(1, 10);
    // More occurrences weigh more, but less than proportionally, never past k1 + 1 = 2.2.
    const once = weightOf("kiwi apple", "kiwi");
    const twice = weightOf("kiwi kiwi apple", "kiwi");
    const many = weightOf(`${"kiwi ".repeat(50)}apple`, "kiwi");
    expect(twice).toBeGreaterThan(once);
    expect(twice).toBeLessThan(2 * once);
    expect(many).toBeLessThan(2.2);
    // The same single occurrence weighs less in a longer document.
    expect(weightOf(["kiwi", ...average, ...average].join(" "), "kiwi")).toBeLessThan(weightOf("kiwi apple", "kiwi"));
  });

  it("weighs each distinct query term 1/n, so an average document holding every query term scores 1 and fewer terms score less", () => {
    const q = encodeQuery("sailing Lisbon harbour sailing");
    expect(q.values).toEqual([1 / 3, 1 / 3, 1 / 3]);
    const average = Array.from({ length: AVERAGE_DOCUMENT_TERMS - 3 }, (_, i) => `filler${i}`);
    expect(sparseDot(q, encodeDocument(["sail", "lisbon", "harbour", ...average].join(" ")))).toBeCloseTo(1, 10);
    expect(sparseDot(q, encodeDocument(["sail", "lisbon", ...average, "x"].join(" ")))).toBeCloseTo(2 / 3, 10);
    expect(sparseDot(q, encodeDocument("nothing in common"))).toBe(0);
  });

  it("keeps at most 1000 terms (the heaviest), indices ascending and unique, as Pinecone requires", () => {
    const text = Array.from({ length: 1500 }, (_, i) => `w${i}`).join(" ") + " heavy heavy heavy";
    const v = encodeDocument(text);
    expect(v.indices).toHaveLength(MAX_SPARSE_TERMS);
    expect(v.indices).toContain(termIndex("heavi"));
    expect([...v.indices].sort((a, b) => a - b)).toEqual(v.indices);
    expect(new Set(v.indices).size).toBe(v.indices.length);
  });

  it("scales dense by alpha and sparse by 1 − alpha, and refuses an alpha outside 0..1", () => {
    const sparse = encodeQuery("sailing lisbon");
    const { vector, sparseVector } = hybridQuery([0.6, 0.8], sparse, 0.25);
    expect(vector).toEqual([0.15, 0.2]);
    expect(sparseVector.indices).toEqual(sparse.indices);
    expect(sparseVector.values).toEqual(sparse.values.map((v) => v * 0.75));
    expect(sparse.values).toEqual([0.5, 0.5]); // the input is not changed
    for (const bad of [-0.1, 1.5, Number.NaN]) {
      const error = (() => {
        try {
          hybridQuery([1], sparse, bad);
        } catch (e) {
          return e;
        }
      })();
      expect(HermesMemoryError.hasCode(error, "INVALID_ARGUMENT")).toBe(true);
    }
  });
});
