import { describe, expect, it } from "vitest";
import { CONTEXT_CHARS, NO_CONTEXT, RecentTurns, clipContext, turnContext, turnDateText } from "./conversation-index.js";

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

describe("RecentTurns", () => {
  it("serves a session's last turns from memory until another connection commits or it is cleared", () => {
    const recent = new RecentTurns(2);
    const loads: string[] = [];
    const load = (session: string) => {
      loads.push(session);
      return [`stored ${session}`];
    };
    recent.sync(1);
    const first = recent.previous("s", load);
    expect(first).toEqual(["stored s"]);
    recent.push("s", "one", first);
    recent.push("s", "two", recent.previous("s", load));
    recent.push("s", "three", recent.previous("s", load));
    expect(recent.previous("s", load)).toEqual(["three", "two"]);
    expect(loads).toEqual(["s"]);
    recent.push("s", "four", ["three", "two"]);
    // At most two sessions: the least recently written one is dropped.
    recent.push("t", "t1", []);
    recent.push("u", "u1", []);
    expect(recent.previous("s", load)).toEqual(["stored s"]);
    expect(recent.previous("u", load)).toEqual(["u1"]);
    recent.push("u", "u2", ["u1"]);
    // Same data_version: still trusted; another connection's commit: forgotten.
    recent.sync(1);
    expect(recent.previous("u", load)).toEqual(["u2", "u1"]);
    recent.push("u", "u3", ["u2", "u1"]);
    recent.sync(2);
    expect(recent.previous("u", load)).toEqual(["stored u"]);
    recent.push("u", "u4", ["stored u"]);
    recent.clear();
    expect(recent.previous("u", load)).toEqual(["stored u"]);
  });
});
