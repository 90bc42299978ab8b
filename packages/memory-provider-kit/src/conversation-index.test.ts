import { describe, expect, it } from "vitest";
import { CONTEXT_CHARS, NO_CONTEXT, clipContext, turnContext, turnDateText } from "./conversation-index.js";

describe("conversational indexing", () => {
  it("takes the two most recent previous turns, most recent first", () => {
    expect(turnContext(["b", "a", "older"])).toEqual({ prev1: "b", prev2: "a" });
    expect(turnContext(["only"])).toEqual({ prev1: "only", prev2: "" });
    expect(turnContext([])).toEqual(NO_CONTEXT);
  });

  it("keeps the first CONTEXT_CHARS characters of long context", () => {
    const long = "word ".repeat(100);
    expect(clipContext(long)).toBe(long.slice(0, CONTEXT_CHARS));
    expect(turnContext([long]).prev1).toHaveLength(CONTEXT_CHARS);
    expect(clipContext("short")).toBe("short");
  });

  it("counts characters outside the BMP as one and never cuts one in half", () => {
    const emoji = "\u{1F600}";
    const text = emoji.repeat(200);
    expect(clipContext(text)).toBe(emoji.repeat(CONTEXT_CHARS));
    const edge = "a".repeat(CONTEXT_CHARS - 1) + emoji + "tail";
    expect(clipContext(edge)).toBe("a".repeat(CONTEXT_CHARS - 1) + emoji);
    // A lone surrogate counts as one character, as SQLite's substr() counts it once stored.
    const lone = "\ud800".repeat(CONTEXT_CHARS + 5);
    expect(clipContext(lone)).toHaveLength(CONTEXT_CHARS);
  });

  it("dates turns from metadata.date, else from their creation day (UTC); other kinds get none", () => {
    const t = Date.UTC(2023, 4, 8, 23, 59);
    expect(turnDateText("turn", { date: " 1:56 pm on 8 May, 2023 " }, t)).toBe("1:56 pm on 8 May, 2023");
    expect(turnDateText("turn", {}, t)).toBe("8 May 2023");
    expect(turnDateText("turn", { date: 42 }, Date.UTC(2024, 11, 31))).toBe("31 December 2024");
    expect(turnDateText("turn", undefined, Date.UTC(2024, 0, 1))).toBe("1 January 2024");
    expect(turnDateText("fact", { date: "8 May" }, t)).toBe("");
    expect(turnDateText("turn", {}, NaN)).toBe("");
  });
});
