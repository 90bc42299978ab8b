import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { UnsupportedToolError } from "../errors.js";
import { runWithProfile } from "../profile.js";
import { BuiltinMemoryProvider } from "./builtin-provider.js";

let home: string;
let other: string;
beforeEach(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-builtin-provider-"));
  other = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-builtin-other-"));
});
afterEach(() => {
  fs.rmSync(home, { recursive: true, force: true });
  fs.rmSync(other, { recursive: true, force: true });
});

const call = async (p: BuiltinMemoryProvider, args: Record<string, unknown>) =>
  JSON.parse(await p.handleToolCall("memory", args)) as Record<string, unknown>;

describe("BuiltinMemoryProvider", () => {
  it("is the always-available builtin provider with one tool and no setup fields", () => {
    const provider = new BuiltinMemoryProvider();
    expect(provider.name).toBe("builtin");
    expect(provider.isAvailable()).toBe(true);
    expect(provider.getToolSchemas().map((s) => s.name)).toEqual(["memory"]);
    expect(provider.getConfigSchema()).toEqual([]);
  });

  it("answers 'not available' before initialize", async () => {
    const provider = new BuiltinMemoryProvider();
    expect(await call(provider, { action: "add", target: "memory", content: "x" })).toEqual({
      error: "Memory is not available. It may be disabled in config or this environment.",
      success: false,
    });
    expect(provider.systemPromptBlock()).toBe("");
  });

  it("stores under ctx.hermesHome/memories even when another profile is active at write time", async () => {
    const provider = new BuiltinMemoryProvider();
    await provider.initialize("s1", { hermesHome: home });
    const result = await runWithProfile(other, () => call(provider, { action: "add", target: "memory", content: "fact" }));
    expect(result).toMatchObject({ success: true, done: true, target: "memory", message: "Entry added." });
    expect(fs.readFileSync(path.join(home, "memories", "MEMORY.md"), "utf8")).toBe("fact");
    expect(fs.existsSync(path.join(other, "memories"))).toBe(false);
  });

  it("returns JSON strings and throws UnsupportedToolError for other tools", async () => {
    const provider = new BuiltinMemoryProvider();
    await provider.initialize("s1", { hermesHome: home });
    expect(typeof (await provider.handleToolCall("memory", { target: "memory", action: "add", content: "a" }))).toBe("string");
    await expect(provider.handleToolCall("other_tool", {})).rejects.toSatisfy((e: unknown) => UnsupportedToolError.isInstance(e));
  });

  it("renders the frozen snapshot of both files, gated by the enable flags", async () => {
    fs.mkdirSync(path.join(home, "memories"), { recursive: true });
    fs.writeFileSync(path.join(home, "memories", "MEMORY.md"), "note one");
    fs.writeFileSync(path.join(home, "memories", "USER.md"), "Name: Ada");

    const both = new BuiltinMemoryProvider();
    await both.initialize("s1", { hermesHome: home });
    const block = both.systemPromptBlock();
    expect(block).toMatch(/^═{46}\nMEMORY \(your personal notes\) \[0% — 8\/2,200 chars\]\n═{46}\nnote one\n\n═{46}\nUSER PROFILE/);
    expect(block.endsWith("Name: Ada")).toBe(true);

    await call(both, { action: "add", target: "memory", content: "added mid-session" });
    expect(both.systemPromptBlock()).toBe(block);

    const memoryOnly = new BuiltinMemoryProvider({ userProfileEnabled: false });
    await memoryOnly.initialize("s2", { hermesHome: home });
    expect(memoryOnly.systemPromptBlock()).not.toContain("USER PROFILE");
    expect(memoryOnly.systemPromptBlock()).toContain("added mid-session");

    const userOnly = new BuiltinMemoryProvider({ memoryEnabled: false });
    await userOnly.initialize("s3", { hermesHome: home });
    expect(userOnly.systemPromptBlock()).not.toContain("MEMORY (your personal notes)");
    expect(userOnly.systemPromptBlock()).toContain("Name: Ada");

    const none = new BuiltinMemoryProvider({ memoryEnabled: false, userProfileEnabled: false });
    await none.initialize("s4", { hermesHome: home });
    expect(none.systemPromptBlock()).toBe("");
    expect((await call(none, { action: "add", target: "memory", content: "x" })).error).toMatch(/^Memory is not available/);
  });

  it("rejects invalid limits at construction", () => {
    expect(() => new BuiltinMemoryProvider({ userCharLimit: -1 })).toThrow(/user_char_limit/);
  });

  it("applies configured limits", async () => {
    const provider = new BuiltinMemoryProvider({ memoryCharLimit: 10 });
    await provider.initialize("s1", { hermesHome: home });
    expect((await call(provider, { action: "add", target: "memory", content: "x".repeat(11) })).error).toMatch(/^Memory at 0\/10 chars/);
  });

  it("resets the failure cap at turn start", async () => {
    const provider = new BuiltinMemoryProvider();
    await provider.initialize("s1", { hermesHome: home });
    for (let i = 0; i < 4; i++) await call(provider, { action: "remove", target: "memory", old_text: "missing" });
    expect((await call(provider, { action: "remove", target: "memory", old_text: "missing" })).error).toMatch(/failed 5 times this turn/);
    provider.onTurnStart(2, "hello", {});
    expect((await call(provider, { action: "remove", target: "memory", old_text: "missing" })).error).toMatch(/^No entry matched/);
  });

  it("reports previous entries for mirroring", async () => {
    const provider = new BuiltinMemoryProvider();
    await provider.initialize("s1", { hermesHome: home });
    await call(provider, { action: "add", target: "memory", content: "old value" });
    expect(await call(provider, { action: "replace", target: "memory", old_text: "old", content: "new value" })).toMatchObject({
      replaced_entry: "old value",
    });
  });
});
