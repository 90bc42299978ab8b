import { describe, expect, it } from "vitest";
import { RecallAccumulator, parseEvidence, parseLocomo, recallAtKs, turnContent } from "./locomo-data.js";

const doc = [
  {
    sample_id: "conv-x",
    conversation: {
      speaker_a: "Ann",
      speaker_b: "Bob",
      session_2_date_time: "2:00 pm on 9 May, 2023",
      session_2: [{ speaker: "Bob", dia_id: "D2:1", text: "Later." }],
      session_1_date_time: "1:56 pm on 8 May, 2023",
      session_1: [
        { speaker: "Ann", dia_id: "D1:1", text: "Hi Bob!" },
        { speaker: "Bob", dia_id: "D1:2", text: "Look at this.", blip_caption: "a photo of a dog" },
      ],
    },
    qa: [
      { question: "Who said hi?", answer: "Ann", evidence: ["D1:1"], category: 4 },
      { question: "What two things?", answer: "x", evidence: ["D1:2; D2:1", "D9:9"], category: 1 },
      { question: "Unanswerable?", adversarial_answer: "y", evidence: ["D7:7"], category: 5 },
    ],
  },
];

describe("parseLocomo", () => {
  it("turns each dialogue turn into one item in session order with the protocol's content", () => {
    const [conv] = parseLocomo(doc);
    expect(conv!.sampleId).toBe("conv-x");
    expect(conv!.turns.map((t) => t.diaId)).toEqual(["D1:1", "D1:2", "D2:1"]);
    expect(conv!.turns[1]).toEqual({
      content: 'Bob said, "Look at this." and shared a photo of a dog',
      sessionId: "session_1",
      diaId: "D1:2",
      speaker: "Bob",
      date: "1:56 pm on 8 May, 2023",
    });
  });

  it("splits malformed evidence, drops ids that match no turn, and drops questions left without evidence", () => {
    const [conv] = parseLocomo(doc);
    expect(conv!.questions.map((q) => q.evidence)).toEqual([["D1:1"], ["D1:2", "D2:1"]]);
    expect(conv!.droppedQuestions).toBe(1);
  });

  it("rejects a document that is not an array", () => {
    expect(() => parseLocomo({})).toThrow(/JSON array/);
  });
});

describe("protocol helpers", () => {
  it("formats content exactly as the README says", () => {
    expect(turnContent("Ann", "Hi")).toBe('Ann said, "Hi"');
  });

  it("parses evidence strings with semicolons and spaces", () => {
    expect(parseEvidence(["D8:6; D9:17", "D1:2", 5])).toEqual(["D8:6", "D9:17", "D1:2"]);
  });

  it("computes recall@k as the share of evidence among the top k", () => {
    expect(recallAtKs(["a", "b"], ["x", "a", "y", "z", "w", "b"], [1, 2, 5, 6])).toEqual([0, 0.5, 0.5, 1]);
  });

  it("averages per category and overall in percent", () => {
    const acc = new RecallAccumulator([5]);
    acc.add(4, [1]);
    acc.add(4, [0]);
    acc.add(1, [1]);
    expect(acc.rows()).toEqual([
      { label: "multi-hop", n: 1, recall: [100] },
      { label: "single-hop", n: 2, recall: [50] },
      { label: "overall", n: 3, recall: [(100 * 2) / 3] },
    ]);
  });
});
