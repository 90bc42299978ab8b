import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { CorpusGenerator, ZipfSampler, buildVocabulary } from "./corpus.js";
import { cachedFile } from "./corpus-cache.js";
import { createRandom } from "./prng.js";

describe("CorpusGenerator", () => {
  it("gives identical corpora for one seed and different corpora for two seeds", () => {
    const sample = (seed: number) => {
      const g = new CorpusGenerator(seed);
      return Array.from({ length: 20 }, () => [g.userTurn(), g.assistantTurn(), g.query()]).flat();
    };
    const a = sample(5);
    expect(sample(5)).toEqual(a);
    const b = sample(6);
    expect(b).not.toEqual(a);
    // Not just one differing item: a generator that ignored its seed would match almost everywhere.
    expect(a.filter((text, i) => text === b[i]).length).toBeLessThan(a.length / 4);
  });

  it("writes user turns shorter than assistant turns, within the configured bounds", () => {
    const gen = new CorpusGenerator(1);
    const words = (s: string) => s.split(" ").length;
    const users = Array.from({ length: 300 }, () => words(gen.userTurn()));
    const assistants = Array.from({ length: 300 }, () => words(gen.assistantTurn()));
    const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[xs.length >> 1]!;
    expect(median(users)).toBeLessThan(median(assistants));
    expect(Math.min(...users)).toBeGreaterThanOrEqual(3);
    expect(Math.max(...assistants)).toBeLessThanOrEqual(300);
  });

  it("builds a vocabulary of unique words", () => {
    const v = buildVocabulary(500);
    expect(new Set(v.contentWords).size).toBe(v.contentWords.length);
  });

  it("samples Zipf ranks with the most frequent rank first", () => {
    const z = new ZipfSampler(100);
    const r = createRandom(2);
    const counts = new Array(100).fill(0);
    for (let i = 0; i < 5000; i++) counts[z.sample(r)]++;
    expect(counts[0]).toBeGreaterThan(counts[10]);
    expect(counts[10]).toBeGreaterThan(counts[90]);
  });
});

describe("cachedFile", () => {
  it("builds once, then reuses; an interrupted build is never reused", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bench-cache-"));
    try {
      const file = path.join(dir, "c.db");
      let builds = 0;
      const build = async (tmp: string) => {
        builds++;
        fs.writeFileSync(tmp, "data");
      };
      expect(await cachedFile(file, build)).toEqual({ file, reused: false });
      expect(await cachedFile(file, build)).toEqual({ file, reused: true });
      expect(builds).toBe(1);
      fs.rmSync(`${file}.complete`);
      await expect(cachedFile(file, async () => Promise.reject(new Error("interrupted")))).rejects.toThrow("interrupted");
      expect(fs.existsSync(file)).toBe(false);
      expect(fs.readdirSync(dir)).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
