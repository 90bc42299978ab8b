import { describe, expect, it } from "vitest";
import { CORE_MEMORY_PROVIDER_SENTINELS, isCoreMemoryProvider, isTrivialPrompt } from "./trivial-prompt.js";

describe("isTrivialPrompt", () => {
  it("treats missing, empty and whitespace text as trivial", () => {
    for (const text of [null, undefined, "", "   ", "\n\t"]) expect(isTrivialPrompt(text)).toBe(true);
  });

  it("treats slash commands as trivial", () => {
    expect(isTrivialPrompt("/help")).toBe(true);
    expect(isTrivialPrompt("  /memory approve")).toBe(true);
  });

  it("treats bare acknowledgement words as trivial, case-insensitively", () => {
    const words = [
      "yes",
      "no",
      "ok",
      "okay",
      "sure",
      "thanks",
      "thank you",
      "y",
      "n",
      "yep",
      "nope",
      "yeah",
      "nah",
      "hi",
      "hey",
      "hello",
      "yo",
      "sup",
      "continue",
      "go ahead",
      "do it",
      "proceed",
      "got it",
      "cool",
      "nice",
      "great",
      "done",
      "next",
      "lgtm",
      "k",
    ];
    for (const word of words) {
      expect(isTrivialPrompt(word), word).toBe(true);
      expect(isTrivialPrompt(word.toUpperCase()), word).toBe(true);
    }
  });

  it("allows trailing whitespace and punctuation only", () => {
    for (const text of [
      "hi!",
      "thanks :)",
      "done???",
      "ok.",
      "Thank you!!",
      "sure…",
      "yes — ",
      "cool 😀".slice(0, 5),
      "ok\u00a0",
      "“ok”".slice(1),
      "LGTM!!! ^_^".replace("_", ""),
    ]) {
      expect(isTrivialPrompt(text), text).toBe(true);
    }
  });

  it("does not treat words that merely start with a trivial word as trivial", () => {
    for (const text of [
      "k8s",
      "yolo",
      "note",
      "hindsight",
      "okay so what about the db",
      "yes please deploy",
      "thanks, now fix the bug",
      "ok 👍",
    ]) {
      expect(isTrivialPrompt(text), text).toBe(false);
    }
  });
});

describe("isCoreMemoryProvider", () => {
  it("recognises the sentinel values", () => {
    expect([...CORE_MEMORY_PROVIDER_SENTINELS].sort()).toEqual(["", "built-in", "builtin", "default", "none"]);
    for (const value of ["", "  ", "default", "BUILTIN", " Built-In ", "none", null, undefined]) {
      expect(isCoreMemoryProvider(value), String(value)).toBe(true);
    }
  });

  it("rejects real provider names", () => {
    for (const value of ["sqlite", "vector", "honcho", "builtin2"]) expect(isCoreMemoryProvider(value)).toBe(false);
  });
});
