import { describe, expect, it } from "vitest";
import { boostNamedSpeakers, NEIGHBOUR_WEIGHTS, propagateContext, speakerNamed, queryTermSet, type ContextCandidate, type ContextRow } from "./conversation-context.js";

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

  it("facts and rows without a session pass nothing on", () => {
    const fact: ContextRow = { id: "f", metadata: { kind: "fact", session_id: "s" } };
    const out = propagateContext(new Map([["f", { id: "f", score: 1, metadata: fact.metadata, row: fact }]]), () => ({ next: [turn("x")], previous: [] }));
    expect(out.size).toBe(1);
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
