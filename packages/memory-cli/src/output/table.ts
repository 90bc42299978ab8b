import { stripVTControlCharacters } from "node:util";

/** Visible width of a string that may contain ANSI colour codes. */
function visibleWidth(text: string): number {
  return [...stripVTControlCharacters(text)].length;
}

/**
 * Render rows as a left-aligned plain-text table with a header and two-space gutters. Cells may be
 * coloured; widths ignore the escape codes. The last column is never padded (no trailing blanks).
 */
export function renderTable(headers: string[], rows: string[][], formatHeader: (h: string) => string = (h) => h): string {
  const widths = headers.map((h, i) => Math.max(visibleWidth(h), ...rows.map((r) => visibleWidth(r[i] ?? ""))));
  const line = (cells: string[], fmt: (s: string) => string = (s) => s): string =>
    cells
      .map((cell, i) => {
        const text = fmt(cell);
        return i === cells.length - 1 ? text : text + " ".repeat((widths[i] ?? 0) - visibleWidth(cell));
      })
      .join("  ")
      .trimEnd();
  return [line(headers, formatHeader), ...rows.map((r) => line(headers.map((_, i) => r[i] ?? "")))].join("\n");
}
