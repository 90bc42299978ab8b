import { describe, expect, it } from "vitest";
import { DEMO_CONVERSATION, recallMentions } from "./demo-conversation.js";

describe("the shipped demo conversation", () => {
  it("has two sessions and three questions whose facts come from session one", () => {
    expect(DEMO_CONVERSATION.sessions).toHaveLength(2);
    expect(DEMO_CONVERSATION.questions).toHaveLength(3);
    const sessionOne = DEMO_CONVERSATION.sessions[0]!.turns.map((t) => `${t.user} ${t.assistant}`).join(" ");
    const sessionTwo = DEMO_CONVERSATION.sessions[1]!.turns.map((t) => `${t.user} ${t.assistant}`).join(" ");
    for (const q of DEMO_CONVERSATION.questions) {
      expect(recallMentions(sessionOne, q)).toBe(true);
      // Facts are distinctive: session two never mentions them.
      expect(recallMentions(sessionTwo, q)).toBe(false);
    }
  });
  it("matches expected words case-insensitively and needs all of them", () => {
    const q = DEMO_CONVERSATION.questions[0]!;
    expect(recallMentions("ANNELIESE lands march 14th", q)).toBe(true);
    expect(recallMentions("Anneliese", q)).toBe(false);
  });
});
