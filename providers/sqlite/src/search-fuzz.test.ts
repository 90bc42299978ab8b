import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SqliteMemoryProvider } from "./sqlite-memory-provider.js";

describe("hostile query fuzz (5,000 strings through search and prefetch)", () => {
  let home: string;
  let provider: SqliteMemoryProvider;

  beforeAll(async () => {
    home = fs.mkdtempSync(path.join(os.tmpdir(), "sqlite-fuzz-"));
    provider = new SqliteMemoryProvider();
    await provider.initialize("fuzz", { hermesHome: home });
    const seed = [
      "café au lait in Zürich",
      "東京 travel notes",
      "NEAR the OR gate AND NOT",
      'quote " inside',
      "emoji 😀 party",
      "C++ and C# code",
      "col:value pairs",
    ];
    for (const content of seed) provider.remember({ content });
    provider.remember({ kind: "turn", sessionId: "s", content: "a normal turn about hiking" });
  });

  afterAll(async () => {
    await provider.shutdown();
    fs.rmSync(home, { recursive: true, force: true });
  });

  it("never throws", () => {
    // Deterministic PRNG so a failure is reproducible.
    let state = 0x2545f491;
    const rand = () => {
      state ^= state << 13;
      state ^= state >>> 17;
      state ^= state << 5;
      return (state >>> 0) / 0x100000000;
    };
    const pieces = [
      '"',
      "'",
      "*",
      "NEAR",
      "NEAR/3",
      "AND",
      "OR",
      "NOT",
      "-",
      ":",
      "(",
      ")",
      "^",
      "{",
      "}",
      "[",
      "]",
      "\\",
      "\0",
      "😀",
      "東京",
      "café",
      "𝔘𝔫𝔦",
      "\u200b",
      "\ud800",
      "%",
      "_",
      ";",
      "--",
      "/*",
      "rowid",
      "items_fts",
      "col:",
      "+",
      ".",
      ",",
      " ",
      "\n",
      "\t",
      "hiking",
      "zürich",
    ];
    const alphabet = Array.from({ length: 0x3000 }, (_, i) => String.fromCharCode(i + 1));
    let nonEmpty = 0;
    for (let i = 0; i < 5000; i++) {
      let query = "";
      const mode = i % 5;
      const length = mode === 4 ? 1 + Math.floor(rand() * 20_000) : 1 + Math.floor(rand() * 40);
      for (let j = 0; j < length; j++) {
        query += mode === 0 ? alphabet[Math.floor(rand() * alphabet.length)]! : pieces[Math.floor(rand() * pieces.length)]!;
        if (mode === 2 && rand() < 0.3) query += " ";
      }
      if (i === 0) query = "x".repeat(100 * 1024);
      const hits = provider.search(query, { limit: 5 });
      expect(Array.isArray(hits)).toBe(true);
      if (hits.length > 0) nonEmpty++;
      expect(typeof provider.prefetch(query, { sessionId: "fuzz" })).toBe("string");
    }
    expect(nonEmpty).toBeGreaterThan(0);
  }, 60_000);
});
