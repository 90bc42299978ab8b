import { describe, expect, it } from "vitest";
import { checkpointCopies, checkpointText, turnSpeaker, turnText } from "./transcript-text.js";

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

describe("checkpointCopies", () => {
  it("gives the archived texts of a turn's two messages, for any speaker label", () => {
    expect(checkpointCopies(turnText("My code is 4711", "Noted."), "User")).toEqual(
      expect.arrayContaining([checkpointText("user", "My code is 4711"), checkpointText("assistant", "Noted.")]),
    );
    const byName = turnText("hi there", "hello", { name: "Caroline" });
    expect(checkpointCopies(byName, "Caroline")).toEqual(expect.arrayContaining(["User: hi there", "Assistant: hello"]));
    expect(checkpointCopies(byName)).toEqual(expect.arrayContaining(["User: hi there", "Assistant: hello"]));
    expect(checkpointCopies(turnText("", "only the reply"))).toContain("Assistant: only the reply");
    expect(checkpointCopies(turnText("only the question", ""), "User")).toContain("User: only the question");
  });

  it("covers every split when a message itself holds an 'Assistant: ' line", () => {
    const text = turnText("quote:\nAssistant: fake", "real reply");
    expect(checkpointCopies(text, "User")).toEqual(expect.arrayContaining(["User: quote:\nAssistant: fake", "Assistant: real reply"]));
  });
});
