import type { Summary } from "./stats.js";

/** A rendered-agnostic table: the markdown printer and the JSON writer both read it. */
export interface Table {
  title: string;
  columns: string[];
  rows: Array<Array<string | number>>;
}

/** Renders a GitHub-flavoured markdown table (numbers right-aligned). */
export function renderMarkdownTable(table: Table): string {
  const numeric = table.columns.map((_, i) => table.rows.length > 0 && table.rows.every((r) => typeof r[i] === "number"));
  const cell = (v: string | number | undefined): string => String(v ?? "").replace(/\|/g, "\\|");
  const lines = [
    `| ${table.columns.map(cell).join(" | ")} |`,
    `| ${table.columns.map((_, i) => (numeric[i] ? "---:" : "---")).join(" | ")} |`,
    ...table.rows.map((r) => `| ${table.columns.map((_, i) => cell(r[i])).join(" | ")} |`),
  ];
  return `**${table.title}**\n\n${lines.join("\n")}`;
}

/** Formats a number with a sensible number of significant digits for a table cell. */
export function fmt(value: number, digits = 3): string {
  if (!Number.isFinite(value)) return String(value);
  const abs = Math.abs(value);
  if (abs === 0) return "0";
  if (abs >= 1000) return Math.round(value).toLocaleString("en-US");
  return Number(value.toPrecision(digits)).toString();
}

/** The standard latency columns: median, p95, p99, min–max. */
export const LATENCY_COLUMNS = ["median", "p95", "p99", "min–max"];

/** Latency cells in the given unit label, e.g. `["1.2 µs", …]`. */
export function latencyCells(s: Summary, unit: string): string[] {
  return [`${fmt(s.median)} ${unit}`, `${fmt(s.p95)} ${unit}`, `${fmt(s.p99)} ${unit}`, `${fmt(s.min)}–${fmt(s.max)} ${unit}`];
}

/** A ratio cell such as `0.42×`. */
export function ratio(value: number, baseline: number): string {
  if (!(baseline > 0)) return "n/a";
  return `${fmt(value / baseline, 3)}×`;
}
