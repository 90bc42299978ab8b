import { describe, expect, it } from "vitest";
import type { MemoryHit } from "@hermes/memory-core";
import { formatRecall, recallEntryCount } from "./recall-format.js";

const hit = (content: string, kind: MemoryHit["kind"] = "turn"): MemoryHit => ({
  id: "1",
  content,
  kind,
  score: 1,
  createdAt: "2026-01-02T03:04:05Z",
  metadata: {},
});

describe("formatRecall", () => {
  it("renders a header and one labelled line per hit, whitespace collapsed", () => {
    expect(formatRecall([hit("a  b\nc"), hit("fact text", "fact")], { header: "## H", maxChars: 1000 })).toBe(
      "## H\n- [turn 2026-01-02] a b c\n- [fact 2026-01-02] fact text",
    );
  });

  it("uses a custom label", () => {
    expect(formatRecall([hit("x")], { header: "## H", maxChars: 100, label: (h) => `${h.kind}!` })).toBe("## H\n- [turn!] x");
  });

  it("never exceeds the budget, shortens with an ellipsis, and is empty when nothing fits", () => {
    const long = hit("word ".repeat(200));
    for (const max of [30, 60, 100, 500, 2000])
      expect(formatRecall([long, long], { header: "## H", maxChars: max }).length).toBeLessThanOrEqual(max);
    expect(formatRecall([long], { header: "## H", maxChars: 80 }).endsWith("…")).toBe(true);
    expect(formatRecall([long], { header: "## H", maxChars: 30 })).toBe("");
    expect(formatRecall([], { header: "## H", maxChars: 100 })).toBe("");
  });

  it("counts the entries of a block", () => {
    expect(recallEntryCount(formatRecall([hit("a"), hit("b")], { header: "## H", maxChars: 500 }))).toBe(2);
    expect(recallEntryCount("")).toBe(0);
  });
});
