import fs from "node:fs";
import path from "node:path";
import type { SuiteResult } from "./suite-result.js";
import { renderSvg } from "./svg-chart.js";
import { renderMarkdownTable } from "./table.js";

/** Renders one suite as markdown: status, tables, goals, notes, machine. */
export function renderSuiteMarkdown(r: SuiteResult, svgLink?: string): string {
  const out: string[] = [`### \`${r.suite}\`${r.quick ? " (--quick)" : ""}`, ""];
  if (r.status === "skipped") {
    out.push(`skipped: ${r.skipped.join("; ") || "nothing could be measured"}`, "");
    return out.join("\n");
  }
  for (const t of r.tables) out.push(renderMarkdownTable(t), "");
  if (r.goals.length > 0) {
    out.push(
      renderMarkdownTable({
        title: "goals",
        columns: ["goal", "measured", "status"],
        rows: r.goals.map((g) => [g.goal, g.measured, g.met === null ? "not measured" : g.met ? "met" : "NOT met"]),
      }),
      "",
    );
  }
  for (const s of r.skipped) out.push(`- skipped: ${s}`);
  for (const n of r.notes) out.push(`- ${n}`);
  if (r.skipped.length + r.notes.length > 0) out.push("");
  if (svgLink && r.chart) out.push(`![${r.suite} chart](${svgLink})`, "");
  out.push(
    `<sub>${r.machine.cores} × ${r.machine.cpu}, ${r.machine.memoryGiB} GiB, ${r.machine.platform}, Node ${r.machine.node}, load average ${r.machine.loadAverage}; ` +
      `${r.startedAt}, ${(r.durationMs / 1000).toFixed(1)} s</sub>`,
    "",
  );
  return out.join("\n");
}

/** Writes `<suite>.json` and (when there is a chart) `<suite>.svg` into `outDir`. */
export function writeSuiteFiles(r: SuiteResult, outDir: string): { json: string; svg: string | null } {
  fs.mkdirSync(outDir, { recursive: true });
  const json = path.join(outDir, `${r.suite}.json`);
  fs.writeFileSync(json, JSON.stringify(r, null, 2) + "\n");
  let svg: string | null = null;
  if (r.chart) {
    svg = path.join(outDir, `${r.suite}.svg`);
    fs.writeFileSync(svg, renderSvg(r.chart));
  }
  return { json, svg };
}

const START = (suite: string) => `<!-- bench:${suite}:start -->`;
const END = (suite: string) => `<!-- bench:${suite}:end -->`;

/**
 * Replaces the block between `<!-- bench:<suite>:start -->` and `:end -->` in the README with the
 * suite's latest markdown. Returns false (and leaves the file alone) when the markers are missing.
 */
export function updateReadmeBlock(readme: string, suite: string, markdown: string): string | null {
  const start = readme.indexOf(START(suite));
  const end = readme.indexOf(END(suite));
  if (start < 0 || end < start) return null;
  return `${readme.slice(0, start + START(suite).length)}\n${markdown.trim()}\n${readme.slice(end)}`;
}
