import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { SuiteContext } from "../suite-result.js";
import { runLocomoSuite } from "./locomo.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function context(dataFile: string): SuiteContext {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bench-locomo-suite-"));
  dirs.push(dir);
  return { quick: true, buildCache: false, repoRoot: dir, cacheDir: path.join(dir, "cache"), dataFile, log: () => {} };
}

describe("locomo suite", () => {
  it("says skipped with the path when the data file is absent, and never invents numbers", async () => {
    const ctx = context("/nonexistent/locomo.json");
    const result = await runLocomoSuite(ctx);
    expect(result.status).toBe("skipped");
    expect(result.skipped.join(" ")).toContain("no LoCoMo data at /nonexistent/locomo.json");
    expect(result.tables).toEqual([]);
  });

  it("runs the protocol on any file of the LoCoMo format and prints the BM25 baseline beside DRAGON", async () => {
    const ctx = context("");
    const file = path.join(ctx.repoRoot, "mini.json");
    fs.writeFileSync(
      file,
      JSON.stringify([
        {
          sample_id: "mini",
          conversation: {
            speaker_a: "Ann",
            speaker_b: "Bob",
            session_1_date_time: "1:00 pm on 1 May, 2023",
            session_1: [
              { speaker: "Ann", dia_id: "D1:1", text: "I adopted a greyhound called Pixel." },
              { speaker: "Bob", dia_id: "D1:2", text: "I am training for the Berlin marathon." },
              { speaker: "Ann", dia_id: "D1:3", text: "My sister paints watercolour landscapes." },
            ],
          },
          qa: [
            { question: "What is the name of Ann's greyhound?", answer: "Pixel", evidence: ["D1:1"], category: 4 },
            { question: "Which marathon is Bob training for?", answer: "Berlin", evidence: ["D1:2"], category: 4 },
          ],
        },
      ]),
    );
    const result = await runLocomoSuite({ ...ctx, dataFile: file });
    const overall = result.tables[0]!;
    const bm25 = overall.rows.find((r) => String(r[0]).startsWith("BM25"))!;
    expect(bm25.slice(1, 5)).toEqual(["100.0", "100.0", "100.0", "100.0"]);
    expect(overall.rows.at(-1)!.slice(0, 5)).toEqual(["DRAGON (paper, Table 3; published, not run here)", "56.7", "66.2", "76.7", "82.7"]);
    expect(result.notes.join(" ")).toContain("1 conversation(s) (mini), 3 turns, 2 questions");
    expect(result.chart?.series.some((s) => s.name === "DRAGON (published)")).toBe(true);
    // The in-memory libraries a developer would reach for run on the same protocol.
    for (const lib of ["MiniSearch", "Orama"]) {
      const row = overall.rows.find((r) => String(r[0]).startsWith(lib))!;
      expect(row.slice(1, 5)).toEqual(["100.0", "100.0", "100.0", "100.0"]);
    }
    const latency = result.tables.find((t) => t.title.startsWith("locomo: per-query search time"))!;
    expect(latency.columns).toEqual(["retriever", "mini (3 turns)", "all", "vs MiniSearch", "vs SQLite provider"]);
    const miniRow = latency.rows.find((r) => String(r[0]).startsWith("MiniSearch"))!;
    expect(miniRow[3]).toBe("1×");
    expect(Number(miniRow[1])).toBeGreaterThan(0);
    // The vector provider's hybrid search time against the SQLite provider's, with the goal beside it.
    for (const stat of ["median", "p95"]) {
      const goal = result.goals.find(
        (g) =>
          g.goal === `VectorMemoryProvider hybrid ${stat} search ≤ 1× SqliteMemoryProvider's (every question, searched in alternation)`,
      );
      expect(goal?.measured).toMatch(/^\S+ ms vs \S+ ms = \S+×$/);
      expect(typeof goal?.met).toBe("boolean");
    }
  });
});
