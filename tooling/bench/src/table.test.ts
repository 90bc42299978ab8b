import { describe, expect, it } from "vitest";
import { fmt, latencyCells, ratio, renderMarkdownTable } from "./table.js";

describe("renderMarkdownTable", () => {
  it("renders a title, a header, an alignment row and escaped cells", () => {
    const md = renderMarkdownTable({
      title: "t",
      columns: ["what", "n"],
      rows: [
        ["a|b", 1],
        ["c", 22],
      ],
    });
    expect(md).toBe("**t**\n\n| what | n |\n| --- | ---: |\n| a\\|b | 1 |\n| c | 22 |");
  });
});

describe("cells", () => {
  it("formats numbers with three significant digits and thousands separators", () => {
    expect(fmt(0.012345)).toBe("0.0123");
    expect(fmt(12.345)).toBe("12.3");
    expect(fmt(123456.7)).toBe("123,457");
    expect(fmt(0)).toBe("0");
  });

  it("formats latency cells and ratios", () => {
    expect(latencyCells({ n: 3, median: 1, p95: 2, p99: 3, min: 0.5, max: 4, mean: 2 }, "ms")).toEqual([
      "1 ms",
      "2 ms",
      "3 ms",
      "0.5–4 ms",
    ]);
    expect(ratio(1, 4)).toBe("0.25×");
    expect(ratio(1, 0)).toBe("n/a");
  });
});
