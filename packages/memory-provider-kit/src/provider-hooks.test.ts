import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { HermesMemoryError } from "@hermes/memory-core";
import { chatMessageText, checkpointDigest, checkpointItems, mirroredWrite, switchSessionAfterFlush, turnItem } from "./provider-hooks.js";

describe("turnItem", () => {
  it("is the labelled turn text of the turn's session and the session's user, with the author in metadata", () => {
    expect(
      turnItem(" hi ", "hello", { sessionId: "s2", turnAuthor: { id: "u9", name: "Dana" } }, { sessionId: "s1", userId: "alice" }),
    ).toEqual({
      kind: "turn",
      content: "Dana: hi\nAssistant: hello",
      speaker: "Dana",
      sessionId: "s2",
      userId: "alice",
      metadata: { authorId: "u9", authorName: "Dana" },
    });
  });

  it("falls back to the provider's session and the turn's author, and is null when both sides are empty", () => {
    expect(turnItem("hi", "", { sessionId: "", turnAuthor: { id: "u9" } }, { sessionId: "s1" })).toEqual({
      kind: "turn",
      content: "User: hi",
      speaker: "User",
      sessionId: "s1",
      userId: "u9",
      metadata: { authorId: "u9" },
    });
    expect(turnItem("hi", "", undefined, {})).toEqual({ kind: "turn", content: "User: hi", speaker: "User", metadata: {} });
    expect(turnItem(" ", "", { sessionId: "s1" }, {})).toBeNull();
  });
});

describe("checkpointItems", () => {
  it("archives each user and assistant message with text once, keyed by user, role and text", () => {
    const messages = [
      { role: "system", content: "rules" },
      { role: "user", content: " I moved to Lisbon " },
      { role: "assistant", content: [{ type: "text", text: "Noted" }, null, { type: "image" }] },
      { role: "user", content: "I moved to Lisbon" },
      { role: "tool", content: "result" },
      { role: "user", content: "   " },
      { role: "assistant", content: "summary", _compressed_summary: true },
      null,
      "text",
    ];
    const items = checkpointItems(messages, { sessionId: "s1", userId: "alice" });
    expect(items.map((i) => [i.content, i.role, i.speaker, i.sessionId, i.userId, i.metadata])).toEqual([
      ["User: I moved to Lisbon", "user", "user", "s1", "alice", { role: "user" }],
      ["Assistant: Noted", "assistant", "assistant", "s1", "alice", { role: "assistant" }],
    ]);
    expect(items[0]!.digest).toBe(checkpointDigest("user", "I moved to Lisbon", "alice"));
    expect(checkpointItems("not a list", {})).toEqual([]);
  });

  it("gives the same digest in every session and different digests per user and role", () => {
    const [a] = checkpointItems([{ role: "user", content: "same words" }], { sessionId: "s1", userId: "alice" });
    const [b] = checkpointItems([{ role: "user", content: "same words" }], { sessionId: "s2", userId: "alice" });
    expect(a!.digest).toBe(b!.digest);
    expect(checkpointDigest("user", "same words", "bob")).not.toBe(a!.digest);
    expect(checkpointDigest("assistant", "same words", "alice")).not.toBe(a!.digest);
    // The SQLite provider's fact digest of "checkpoint\0<role>\0<text>", so its stored checkpoints keep their keys.
    const sqliteKey = createHash("sha256").update("fact\0alice\0checkpoint\0user\0same words").digest("hex");
    expect(a!.digest).toBe(sqliteKey);
  });
});

describe("chatMessageText", () => {
  it("reads string content and the text parts of a content array", () => {
    expect(chatMessageText({ role: "user", content: "plain" })).toBe("plain");
    expect(
      chatMessageText({
        role: "user",
        content: [
          { type: "text", text: "a" },
          { type: "text", text: "b" },
        ],
      }),
    ).toBe("a\nb");
    expect(chatMessageText({ role: "user", content: null })).toBe("");
  });
});

describe("mirroredWrite", () => {
  const session = { sessionId: "s1", userId: "alice" };
  it("add stores the trimmed entry as a fact of the session's user, in the write's session", () => {
    expect(mirroredWrite("add", "memory", " likes tea ", { sessionId: "s7" }, session)).toEqual({
      store: {
        kind: "fact",
        content: "likes tea",
        tags: ["memory"],
        metadata: { source: "builtin", target: "memory" },
        sessionId: "s7",
        userId: "alice",
      },
    });
    expect(mirroredWrite("add", "user", "likes tea", {}, {})).toEqual({
      store: { kind: "fact", content: "likes tea", tags: ["user"], metadata: { source: "builtin", target: "user" } },
    });
    expect(mirroredWrite("add", "memory", "  ", {}, session)).toEqual({});
  });

  it("replace removes the earlier entry's fact unless it says the same, and stores the new one", () => {
    expect(mirroredWrite("replace", "memory", "likes coffee", { previousContent: " likes tea " }, session)).toMatchObject({
      remove: "likes tea",
      store: { content: "likes coffee" },
    });
    expect(mirroredWrite("replace", "memory", "likes tea", { previousContent: "likes tea" }, session)).toEqual({
      store: expect.objectContaining({ content: "likes tea" }),
    });
  });

  it("remove removes the fact of the previous content, else of the content, and stores nothing", () => {
    expect(mirroredWrite("remove", "memory", "likes tea", { previousContent: "likes tea!" }, session)).toEqual({ remove: "likes tea!" });
    expect(mirroredWrite("remove", "memory", " likes tea ", {}, session)).toEqual({ remove: "likes tea" });
    expect(mirroredWrite("remove", "memory", "", {}, session)).toEqual({});
  });
});

describe("switchSessionAfterFlush", () => {
  it("switches after a successful flush and resolves true", async () => {
    const order: string[] = [];
    await expect(
      switchSessionAfterFlush(
        async () => void order.push("flush"),
        () => void order.push("switch"),
      ),
    ).resolves.toBe(true);
    expect(order).toEqual(["flush", "switch"]);
  });

  it("still switches when the flush fails, then throws the flush's error", async () => {
    const failure = new HermesMemoryError({ code: "STORAGE_FAILED", message: "disk full" });
    let switched = false;
    await expect(
      switchSessionAfterFlush(
        () => Promise.reject(failure),
        () => void (switched = true),
      ),
    ).rejects.toBe(failure);
    expect(switched).toBe(true);
  });
});
