import { describe, expect, it } from "vitest";
import {
  asksQuestion,
  boostNamedSpeakers,
  contextGivers,
  NEIGHBOUR_WEIGHTS,
  SECOND_PREVIOUS_WEIGHT,
  STATEMENT_NEXT_FACTOR,
  nextTurnShare,
  propagateContext,
  speakerNamed,
  queryTermSet,
  type ContextCandidate,
  type ContextRow,
} from "./conversation-context.js";

const turn = (id: string, session = "s"): ContextRow => ({ id, metadata: { kind: "turn", session_id: session } });

describe("propagateContext", () => {
  it("passes NEIGHBOUR_WEIGHTS shares to the next two turns and the previous one, from pre-propagation scores", () => {
    const rows = ["t1", "t2", "t3", "t4"].map((id) => turn(id));
    const lookup = (r: ContextRow) => {
      const i = rows.findIndex((x) => x.id === r.id);
      return { next: rows.slice(i + 1, i + 3), previous: i > 0 ? [rows[i - 1]!] : [] };
    };
    const candidates = new Map<string, ContextCandidate>([["t2", { id: "t2", score: 1, metadata: rows[1]!.metadata, row: rows[1]! }]]);
    const out = propagateContext(candidates, lookup);
    expect(out.get("t3")!.score).toBeCloseTo(NEIGHBOUR_WEIGHTS[0]);
    expect(out.get("t4")!.score).toBeCloseTo(NEIGHBOUR_WEIGHTS[1]);
    expect(out.get("t1")!.score).toBeCloseTo(NEIGHBOUR_WEIGHTS[2]);
    expect(out.get("t2")!.score).toBe(1);
    expect(candidates.size).toBe(1);
  });

  it("passes SECOND_PREVIOUS_WEIGHT to the second previous turn when the lookup returns it", () => {
    const rows = ["t1", "t2", "t3", "t4"].map((id) => turn(id));
    const lookup = (r: ContextRow) => {
      const i = rows.findIndex((x) => x.id === r.id);
      return { next: rows.slice(i + 1, i + 3), previous: rows.slice(0, i).reverse() };
    };
    const out = propagateContext(new Map([["t4", { id: "t4", score: 1, metadata: rows[3]!.metadata, row: rows[3]! }]]), lookup);
    expect(out.get("t3")!.score).toBeCloseTo(NEIGHBOUR_WEIGHTS[2]);
    expect(out.get("t2")!.score).toBeCloseTo(SECOND_PREVIOUS_WEIGHT);
    expect(out.has("t1")).toBe(false);
  });

  it("with asksQuestion, a turn that asks no question passes less to its next turn only", () => {
    const rows = ["q", "a", "b", "s", "c", "d"].map((id) => turn(id));
    const lookup = (r: ContextRow) => {
      const i = rows.findIndex((x) => x.id === r.id);
      return { next: rows.slice(i + 1, i + 3), previous: i > 0 ? [rows[i - 1]!] : [] };
    };
    const candidate = (i: number): [string, ContextCandidate] => [
      rows[i]!.id,
      { id: rows[i]!.id, score: 1, metadata: rows[i]!.metadata, row: rows[i]! },
    ];
    const out = propagateContext(new Map([candidate(0), candidate(3)]), lookup, { asksQuestion: (row) => row.id === "q" });
    expect(out.get("a")!.score).toBeCloseTo(NEIGHBOUR_WEIGHTS[0]);
    expect(out.get("c")!.score).toBeCloseTo(NEIGHBOUR_WEIGHTS[0] * STATEMENT_NEXT_FACTOR);
    expect(out.get("d")!.score).toBeCloseTo(NEIGHBOUR_WEIGHTS[1]);
    expect(out.get("b")!.score).toBeCloseTo(NEIGHBOUR_WEIGHTS[1] + NEIGHBOUR_WEIGHTS[2]);
  });

  it("asksQuestion looks for a question mark; nextTurnShare scales only statements", () => {
    expect(asksQuestion('Caroline said, "How was the trip?"')).toBe(true);
    expect(asksQuestion("旅行はどうでしたか？")).toBe(true);
    expect(asksQuestion("It was great!")).toBe(false);
    expect(nextTurnShare([0.5, 0.3, 0.3], true)).toBe(0.5);
    expect(nextTurnShare([0.5, 0.3, 0.3], false)).toBeCloseTo(0.5 * STATEMENT_NEXT_FACTOR);
  });

  it("facts and rows without a session pass nothing on", () => {
    const fact: ContextRow = { id: "f", metadata: { kind: "fact", session_id: "s" } };
    const out = propagateContext(new Map([["f", { id: "f", score: 1, metadata: fact.metadata, row: fact }]]), () => ({
      next: [turn("x")],
      previous: [],
    }));
    expect(out.size).toBe(1);
  });
});

describe("contextGivers", () => {
  it("is twice the hits asked for, and at least 40", () => {
    expect([1, 5, 10, 20, 21, 50, 1000].map(contextGivers)).toEqual([40, 40, 40, 40, 42, 100, 2000]);
  });
});

describe("speaker handling", () => {
  it("recognises a speaker named in the query and boosts only their candidates", () => {
    expect(speakerNamed("Caroline", queryTermSet("What did Caroline paint?"))).toBe(true);
    expect(speakerNamed("Melanie", queryTermSet("What did Caroline paint?"))).toBe(false);
    expect(speakerNamed(undefined, queryTermSet("Caroline"))).toBe(false);
    const list = [
      { score: 1, speaker: "Caroline" },
      { score: 1, speaker: "Melanie" },
    ];
    boostNamedSpeakers("What did Caroline paint?", list, (c) => c.speaker, 2);
    expect(list.map((c) => c.score)).toEqual([2, 1]);
  });
});
