/**
 * Hand-written SVG charts (no dependencies, no native code): a line chart for "latency vs store
 * size" style plots and a grouped bar chart for recall@k. Output is deterministic for the same data.
 */

/** One line (or one bar group member). */
export interface Series {
  name: string;
  /** Points `[x, y]` for line charts; for bar charts, `x` is the category index. */
  points: Array<[number, number]>;
  /** Dashed lines mark baselines and reference rows. */
  dashed?: boolean;
}

/** A chart description, stored in the suite JSON so it can be re-rendered. */
export interface Chart {
  kind: "line" | "bar";
  title: string;
  xLabel: string;
  yLabel: string;
  series: Series[];
  /** Category labels (bar charts) or tick labels for x values (line charts, optional). */
  categories?: string[];
  logX?: boolean;
  logY?: boolean;
  /** Horizontal goal/reference lines. */
  thresholds?: Array<{ label: string; y: number }>;
}

const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#17becf"];
const W = 780;
const H = 420;
const M = { top: 40, right: 215, bottom: 55, left: 70 };

function esc(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

function niceNumber(v: number): string {
  if (v === 0) return "0";
  const abs = Math.abs(v);
  if (abs >= 1e6) return `${+(v / 1e6).toPrecision(3)}M`;
  if (abs >= 1e3) return `${+(v / 1e3).toPrecision(3)}k`;
  return String(+v.toPrecision(3));
}

function linearTicks(min: number, max: number, count = 5): number[] {
  if (max <= min) return [min];
  const raw = (max - min) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? raw;
  const ticks: number[] = [];
  for (let t = Math.ceil(min / step) * step; t <= max + step * 1e-9; t += step) ticks.push(+t.toPrecision(12));
  return ticks;
}

function logTicks(min: number, max: number): number[] {
  const ticks: number[] = [];
  for (let e = Math.floor(Math.log10(min)); e <= Math.ceil(Math.log10(max)); e++) ticks.push(10 ** e);
  return ticks;
}

/** Renders a chart as a standalone SVG document. */
export function renderSvg(chart: Chart): string {
  const plotW = W - M.left - M.right;
  const plotH = H - M.top - M.bottom;
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
  );
  out.push(`<rect width="${W}" height="${H}" fill="#fff"/>`);
  out.push(
    `<text x="${W / 2 - M.right / 2 + M.left / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${esc(chart.title)}</text>`,
  );

  const allY = chart.series.flatMap((s) => s.points.map((p) => p[1])).concat((chart.thresholds ?? []).map((t) => t.y));
  const finiteY = allY.filter((v) => Number.isFinite(v) && (!chart.logY || v > 0));
  let yMin = chart.logY ? Math.min(...finiteY) : Math.min(0, ...finiteY);
  let yMax = Math.max(...finiteY);
  if (!Number.isFinite(yMin) || !Number.isFinite(yMax)) {
    yMin = chart.logY ? 1 : 0;
    yMax = 1;
  }
  if (yMax === yMin) yMax = yMin + (chart.logY ? yMin * 9 || 1 : 1);
  let yTicks: number[];
  if (chart.logY) {
    yTicks = logTicks(yMin, yMax);
    yMin = yTicks[0] as number;
    yMax = yTicks[yTicks.length - 1] as number;
  } else {
    yTicks = linearTicks(yMin, yMax * 1.05);
    yMax = Math.max(yMax * 1.05, yTicks[yTicks.length - 1] as number);
  }
  const yPos = (v: number): number => {
    const t = chart.logY ? (Math.log10(v) - Math.log10(yMin)) / (Math.log10(yMax) - Math.log10(yMin)) : (v - yMin) / (yMax - yMin);
    return M.top + plotH * (1 - t);
  };

  let xPos: (v: number) => number;
  const xTickMarks: Array<{ x: number; label: string }> = [];
  const categories = chart.categories ?? [];
  if (chart.kind === "bar") {
    const n = Math.max(1, categories.length);
    xPos = (i: number) => M.left + (plotW * (i + 0.5)) / n;
    categories.forEach((c, i) => xTickMarks.push({ x: xPos(i), label: c }));
  } else {
    const xs = chart.series.flatMap((s) => s.points.map((p) => p[0])).filter((v) => Number.isFinite(v));
    let xMin = Math.min(...xs);
    let xMax = Math.max(...xs);
    if (!Number.isFinite(xMin)) {
      xMin = 0;
      xMax = 1;
    }
    const single = xMax === xMin;
    if (single) xMax = xMin + 1;
    const logX = chart.logX === true && xMin > 0;
    xPos = (v: number) => {
      // One x value (e.g. a --quick run with one size): centre it instead of pinning it to the axis.
      if (single) return M.left + plotW / 2;
      const t = logX ? (Math.log10(v) - Math.log10(xMin)) / (Math.log10(xMax) - Math.log10(xMin)) : (v - xMin) / (xMax - xMin);
      return M.left + plotW * t;
    };
    const distinct = [...new Set(xs)].sort((a, b) => a - b);
    const ticks = distinct.length <= 8 ? distinct : logX ? logTicks(xMin, xMax) : linearTicks(xMin, xMax);
    for (const t of ticks) xTickMarks.push({ x: xPos(t), label: niceNumber(t) });
  }

  // Axes and grid.
  out.push(`<g stroke="#ddd">`);
  for (const t of yTicks) out.push(`<line x1="${M.left}" x2="${M.left + plotW}" y1="${yPos(t).toFixed(1)}" y2="${yPos(t).toFixed(1)}"/>`);
  out.push(`</g>`);
  out.push(`<g fill="#333">`);
  for (const t of yTicks)
    out.push(`<text x="${M.left - 6}" y="${(yPos(t) + 4).toFixed(1)}" text-anchor="end">${esc(niceNumber(t))}</text>`);
  for (const t of xTickMarks) out.push(`<text x="${t.x.toFixed(1)}" y="${M.top + plotH + 18}" text-anchor="middle">${esc(t.label)}</text>`);
  out.push(`</g>`);
  out.push(`<line x1="${M.left}" x2="${M.left}" y1="${M.top}" y2="${M.top + plotH}" stroke="#333"/>`);
  out.push(`<line x1="${M.left}" x2="${M.left + plotW}" y1="${M.top + plotH}" y2="${M.top + plotH}" stroke="#333"/>`);
  out.push(`<text x="${M.left + plotW / 2}" y="${H - 12}" text-anchor="middle">${esc(chart.xLabel)}</text>`);
  out.push(`<text transform="translate(16 ${M.top + plotH / 2}) rotate(-90)" text-anchor="middle">${esc(chart.yLabel)}</text>`);

  for (const th of chart.thresholds ?? []) {
    if (chart.logY && th.y <= 0) continue;
    const y = yPos(th.y).toFixed(1);
    out.push(`<line x1="${M.left}" x2="${M.left + plotW}" y1="${y}" y2="${y}" stroke="#999" stroke-dasharray="2 3"/>`);
    out.push(`<text x="${M.left + plotW - 4}" y="${Number(y) - 4}" text-anchor="end" fill="#666">${esc(th.label)}</text>`);
  }

  const nSeries = chart.series.length;
  chart.series.forEach((s, si) => {
    const color = PALETTE[si % PALETTE.length] as string;
    const dash = s.dashed ? ` stroke-dasharray="6 4"` : "";
    const pts = s.points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y) && (!chart.logY || y > 0));
    if (chart.kind === "bar") {
      const n = Math.max(1, categories.length);
      const groupW = (plotW / n) * 0.8;
      const barW = groupW / Math.max(1, nSeries);
      for (const [i, y] of pts) {
        const x = xPos(i) - groupW / 2 + si * barW;
        const top = yPos(y);
        const base = chart.logY ? M.top + plotH : yPos(Math.max(0, yMin));
        out.push(
          `<rect x="${x.toFixed(1)}" y="${Math.min(top, base).toFixed(1)}" width="${(barW * 0.92).toFixed(1)}" height="${Math.abs(base - top).toFixed(1)}" fill="${color}"${s.dashed ? ` fill-opacity="0.45"` : ""}/>`,
        );
      }
    } else {
      const d = pts.map(([x, y], i) => `${i === 0 ? "M" : "L"}${xPos(x).toFixed(1)},${yPos(y).toFixed(1)}`).join(" ");
      if (d) out.push(`<path d="${d}" fill="none" stroke="${color}" stroke-width="2"${dash}/>`);
      for (const [x, y] of pts) out.push(`<circle cx="${xPos(x).toFixed(1)}" cy="${yPos(y).toFixed(1)}" r="3" fill="${color}"/>`);
    }
    const ly = M.top + 8 + si * 18;
    const lx = W - M.right + 14;
    if (chart.kind === "bar")
      out.push(`<rect x="${lx}" y="${ly - 5}" width="22" height="10" fill="${color}"${s.dashed ? ` fill-opacity="0.45"` : ""}/>`);
    else out.push(`<line x1="${lx}" x2="${lx + 22}" y1="${ly}" y2="${ly}" stroke="${color}" stroke-width="2"${dash}/>`);
    out.push(`<text x="${lx + 28}" y="${ly + 4}">${esc(s.name)}</text>`);
  });
  out.push(`</svg>`);
  return out.join("\n") + "\n";
}
