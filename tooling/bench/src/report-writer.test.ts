import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { renderSuiteMarkdown, updateReadmeBlock, writeSuiteFiles } from "./report-writer.js";
import { SuiteRecorder } from "./suite-result.js";

describe("renderSuiteMarkdown", () => {
  it("says skipped with the reason when nothing was measured", () => {
    const rec = new SuiteRecorder("vector", true);
    rec.skip("@hermes/memory-vector is not built");
    const md = renderSuiteMarkdown(rec.finish());
    expect(md).toContain("### `vector` (--quick)");
    expect(md).toContain("skipped: @hermes/memory-vector is not built");
  });

  it("prints tables, goals with met / NOT met / not measured, notes and the machine", () => {
    const rec = new SuiteRecorder("sync", false);
    rec.table({ title: "t", columns: ["a"], rows: [["x"]] });
    rec.goal("g1", "1", true);
    rec.goal("g2", "2", false);
    rec.goal("g3", "n/a", null);
    rec.note("a note");
    const md = renderSuiteMarkdown(rec.finish(), "../../bench-results/sync.svg");
    expect(md).toMatch(/\| g1 \| 1 \| met \|/);
    expect(md).toMatch(/\| g2 \| 2 \| NOT met \|/);
    expect(md).toMatch(/\| g3 \| n\/a \| not measured \|/);
    expect(md).toContain("- a note");
    expect(md).toContain("Node v");
  });
});

describe("writeSuiteFiles", () => {
  it("writes <suite>.json and <suite>.svg", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bench-writer-"));
    try {
      const rec = new SuiteRecorder("sync", true);
      rec.table({ title: "t", columns: ["a"], rows: [["x"]] });
      rec.result.chart = {
        kind: "bar",
        title: "c",
        xLabel: "x",
        yLabel: "y",
        categories: ["a"],
        series: [{ name: "s", points: [[0, 1]] }],
      };
      const files = writeSuiteFiles(rec.finish(), dir);
      expect(JSON.parse(fs.readFileSync(files.json, "utf8")).suite).toBe("sync");
      expect(fs.readFileSync(files.svg!, "utf8")).toContain("<svg");
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("updateReadmeBlock", () => {
  it("replaces only the marked block of that suite", () => {
    const readme =
      "intro\n<!-- bench:sync:start -->\nold\n<!-- bench:sync:end -->\n<!-- bench:vector:start -->\nkeep\n<!-- bench:vector:end -->\n";
    const updated = updateReadmeBlock(readme, "sync", "new table\n");
    expect(updated).toBe(
      "intro\n<!-- bench:sync:start -->\nnew table\n<!-- bench:sync:end -->\n<!-- bench:vector:start -->\nkeep\n<!-- bench:vector:end -->\n",
    );
    expect(updateReadmeBlock(readme, "locomo", "x")).toBeNull();
  });
});
