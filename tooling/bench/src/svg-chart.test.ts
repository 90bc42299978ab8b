import { describe, expect, it } from "vitest";
import { renderSvg, type Chart } from "./svg-chart.js";

const line: Chart = {
  kind: "line",
  title: "latency <vs> size & more",
  xLabel: "items",
  yLabel: "ms",
  logX: true,
  logY: true,
  series: [
    { name: "target", points: [[10_000, 1], [100_000, 2], [1_000_000, 4]] },
    { name: "baseline", points: [[10_000, 0.5], [100_000, 1], [1_000_000, 2]], dashed: true },
  ],
  thresholds: [{ label: "goal", y: 10 }],
};

describe("renderSvg", () => {
  it("renders a standalone SVG with one path per line series, a legend and escaped text", () => {
    const svg = renderSvg(line);
    expect(svg.startsWith("<svg xmlns=\"http://www.w3.org/2000/svg\"")).toBe(true);
    expect(svg.trim().endsWith("</svg>")).toBe(true);
    expect(svg.match(/<path /g)).toHaveLength(2);
    expect(svg).toContain("latency &lt;vs&gt; size &amp; more");
    expect(svg).toContain(">baseline</text>");
    expect(svg).toContain("stroke-dasharray=\"6 4\"");
    expect(svg).toContain(">1M</text>");
    expect(svg).not.toMatch(/NaN|Infinity/);
  });

  it("renders one rect per bar, one per legend entry, plus the background", () => {
    const svg = renderSvg({
      kind: "bar",
      title: "bars",
      xLabel: "stat",
      yLabel: "µs",
      categories: ["median", "p99"],
      series: [
        { name: "a", points: [[0, 1], [1, 3]] },
        { name: "b", points: [[0, 2], [1, 5]] },
      ],
    });
    expect(svg.match(/<rect /g)).toHaveLength(7);
    expect(svg).not.toMatch(/NaN|Infinity/);
  });

  it("copes with empty series and non-positive values on log axes", () => {
    const svg = renderSvg({ ...line, series: [{ name: "empty", points: [] }, { name: "zero", points: [[1, 0]] }] });
    expect(svg).not.toMatch(/NaN|Infinity/);
  });

  it("is deterministic", () => {
    expect(renderSvg(line)).toBe(renderSvg(line));
  });
});
