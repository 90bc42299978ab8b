import { describe, expect, it } from "vitest";
import { boostNamedSpeakers, propagateContext, speakerOf, type ContextCandidate } from "./conversation-context.js";
import { sessionNeighbours } from "../test-support/session-neighbours.js";
import { Sidecar } from "../local/sidecar.js";
import type { SidecarRef, SidecarRow } from "../local/sidecar-rows.js";

function turns(sidecar: Sidecar, session: string, texts: Array<[speaker: string, text: string]>): SidecarRow[] {
  const rows = texts.map(([speaker, text], i) => ({
    id: `${session}-${i}`,
    text,
    metadata: { kind: "turn", session_id: session, extra: JSON.stringify({ speaker }) },
    vector: null,
  }));
  sidecar.upsert("ns", rows);
  return sidecar
    .getByIds(
      "ns",
      rows.map((r) => r.id),
    )
    .sort((a, b) => a.key - b.key);
}

const candidate = (row: SidecarRow, score: number): ContextCandidate => ({ id: row.id, score, metadata: row.metadata, row });

describe("propagateContext", () => {
  it("passes 0.5 / 0.3 of a turn's score to the next two turns and 0.3 to the previous one, within its session", () => {
    const sidecar = Sidecar.open(":memory:");
    try {
      const a = turns(sidecar, "s1", [
        ["Ann", "a0"],
        ["Bob", "a1"],
        ["Ann", "a2"],
        ["Bob", "a3"],
        ["Ann", "a4"],
      ]);
      turns(sidecar, "s2", [["Ann", "other session"]]);
      sidecar.upsert("ns", [{ id: "fact", text: "a fact", metadata: { kind: "fact", session_id: "s1" }, vector: null }]);
      const lookup = (row: SidecarRef) => sessionNeighbours(sidecar, "ns", row.metadata.session_id as string, row.key, 2, 1);
      const out = propagateContext(
        new Map([
          [a[1]!.id, candidate(a[1]!, 10)],
          [a[3]!.id, candidate(a[3]!, 1)],
        ]),
        lookup,
      );
      const score = (id: string) => out.get(id)?.score;
      expect(score("s1-0")).toBeCloseTo(3); // previous of a1
      expect(score("s1-1")).toBeCloseTo(10); // unchanged: a3 gives nothing backwards two steps
      expect(score("s1-2")).toBeCloseTo(5 + 0.3); // next of a1 + previous of a3
      expect(score("s1-3")).toBeCloseTo(1 + 3); // own + next-but-one of a1
      expect(score("s1-4")).toBeCloseTo(0.5); // next of a3 (the fact and the other session get nothing)
      expect(out.has("s2-0")).toBe(false);
      expect(out.has("fact")).toBe(false);
    } finally {
      sidecar.close();
    }
  });

  it("honours the filter and the giver cap, and never mutates its input", () => {
    const sidecar = Sidecar.open(":memory:");
    try {
      const a = turns(sidecar, "s1", [
        ["Ann", "a0"],
        ["Bob", "a1"],
        ["Ann", "a2"],
      ]);
      const input = new Map([
        [a[1]!.id, candidate(a[1]!, 2)],
        [a[2]!.id, candidate(a[2]!, 1)],
      ]);
      const lookup = (row: SidecarRef) => sessionNeighbours(sidecar, "ns", "s1", row.key, 2, 1);
      const filtered = propagateContext(input, lookup, { accept: (row) => row.id !== "s1-0" });
      expect(filtered.has("s1-0")).toBe(false);
      expect(filtered.get("s1-2")!.score).toBeCloseTo(2); // 1 + 0.5 · 2
      const capped = propagateContext(input, lookup, { maxGivers: 0 });
      expect([...capped.values()].map((c) => c.score)).toEqual([2, 1]);
      expect(input.get("s1-2")!.score).toBe(1);
    } finally {
      sidecar.close();
    }
  });
});

describe("boostNamedSpeakers", () => {
  it("boosts ×1.3 the turns of a speaker the query names, case-insensitively, and nobody else", () => {
    const mk = (id: string, speaker: string | undefined): ContextCandidate => ({
      id,
      score: 1,
      metadata: speaker ? { extra: JSON.stringify({ speaker }) } : {},
    });
    const map = new Map([
      ["1", mk("1", "Caroline")],
      ["2", mk("2", "Melanie")],
      ["3", mk("3", undefined)],
    ]);
    boostNamedSpeakers("What did caroline's sister paint?", map);
    expect([...map.values()].map((c) => c.score)).toEqual([1.3, 1, 1]);
    boostNamedSpeakers("what painting?", map);
    expect(map.get("1")!.score).toBe(1.3);
  });

  it("reads the speaker from metadata or the JSON extra field", () => {
    expect(speakerOf({ speaker: "Ann" })).toBe("Ann");
    expect(speakerOf({ extra: '{"speaker":"Bob"}' })).toBe("Bob");
    expect(speakerOf({ extra: "not json speaker" })).toBeUndefined();
  });
});
