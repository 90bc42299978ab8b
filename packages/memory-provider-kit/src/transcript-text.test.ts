import { describe, expect, it } from "vitest";
import { checkpointText, turnSpeaker, turnText } from "./transcript-text.js";

describe("turnText", () => {
  it("labels the user line with the turn author's trimmed name, else User, and the reply Assistant", () => {
    expect(turnText(" hi ", " hello ", { name: "  Caroline " })).toBe("Caroline: hi\nAssistant: hello");
    expect(turnText("hi", "hello")).toBe("User: hi\nAssistant: hello");
    expect(turnText("hi", "hello", { id: "u1", name: "   " })).toBe("User: hi\nAssistant: hello");
    expect(turnSpeaker({ name: "Mel" })).toBe("Mel");
  });

  it("leaves out an empty side and is empty when both are", () => {
    expect(turnText("", "only the reply")).toBe("Assistant: only the reply");
    expect(turnText("only the question", "  ")).toBe("User: only the question");
    expect(turnText("", "")).toBe("");
    expect(turnText(undefined, 42)).toBe("");
  });
});

describe("checkpointText", () => {
  it("labels archived messages by role", () => {
    expect(checkpointText("user", " the plan ")).toBe("User: the plan");
    expect(checkpointText("assistant", "ok")).toBe("Assistant: ok");
  });
});
