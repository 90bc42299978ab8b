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
    {
      name: "target",
      points: [
        [10_000, 1],
        [100_000, 2],
        [1_000_000, 4],
      ],
    },
    {
      name: "baseline",
      points: [
        [10_000, 0.5],
        [100_000, 1],
        [1_000_000, 2],
      ],
      dashed: true,
    },
  ],
  thresholds: [{ label: "goal", y: 10 }],
};

describe("renderSvg", () => {
  it("renders a standalone SVG with one path per line series, a legend and escaped text", () => {
    const svg = renderSvg(line);
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trim().endsWith("</svg>")).toBe(true);
    expect(svg.match(/<path /g)).toHaveLength(2);
    expect(svg).toContain("latency &lt;vs&gt; size &amp; more");
    expect(svg).toContain(">baseline</text>");
    expect(svg).toContain('stroke-dasharray="6 4"');
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
        {
          name: "a",
          points: [
            [0, 1],
            [1, 3],
          ],
        },
        {
          name: "b",
          points: [
            [0, 2],
            [1, 5],
          ],
        },
      ],
    });
    expect(svg.match(/<rect /g)).toHaveLength(7);
    // On a linear axis bar heights are proportional to the values 1, 3 (series a) and 2, 5 (series b).
    const heights = [...svg.matchAll(/<rect x="[\d.]+" y="[\d.]+" width="([\d.]+)" height="([\d.]+)"/g)]
      .filter((m) => m[1] !== "22") // legend swatches
      .map((m) => Number(m[2]));
    expect(heights).toHaveLength(4);
    const unit = heights[0]!;
    expect(unit).toBeGreaterThan(10);
    expect(heights.map((h) => h / unit)).toEqual([1, 3, 2, 5].map((v) => expect.closeTo(v, 1)));
    expect(svg).not.toMatch(/NaN|Infinity/);
  });

  it("copes with empty series and non-positive values on log axes", () => {
    const svg = renderSvg({
      ...line,
      series: [
        { name: "empty", points: [] },
        { name: "zero", points: [[1, 0]] },
      ],
    });
    expect(svg).not.toMatch(/NaN|Infinity/);
  });

  it("places line points on the log scales: equal ratios give equal steps, and values rise upwards", () => {
    const svg = renderSvg(line);
    const paths = [...svg.matchAll(/<path d="([^"]+)"/g)].map((m) =>
      m[1]!.split(" ").map((cmd) => cmd.slice(1).split(",").map(Number) as [number, number]),
    );
    expect(paths).toHaveLength(2);
    const [target, baseline] = paths as [Array<[number, number]>, Array<[number, number]>];
    // x: 10k, 100k, 1M on a log axis are evenly spaced, from the y axis to the right edge.
    const xs = target.map(([x]) => x);
    const yAxisX = Number(/<line x1="([\d.]+)" x2="\1" [^>]*stroke="#333"/.exec(svg)![1]);
    expect(xs[0]).toBeCloseTo(yAxisX, 0);
    expect(xs[1]! - xs[0]!).toBeGreaterThan(50);
    expect(xs[2]! - xs[1]!).toBeCloseTo(xs[1]! - xs[0]!, 0);
    expect(baseline.map(([x]) => x)).toEqual(xs);
    // y: 1, 2, 4 double each time, so they climb (SVG y shrinks) by equal steps...
    const ty = target.map(([, y]) => y);
    const step = ty[0]! - ty[1]!;
    expect(step).toBeGreaterThan(20);
    expect(ty[1]! - ty[2]!).toBeCloseTo(step, 0);
    // ...and the baseline (half the target everywhere) sits exactly one doubling lower.
    baseline.forEach(([, y], i) => expect(y - ty[i]!).toBeCloseTo(step, 0));
  });
});
