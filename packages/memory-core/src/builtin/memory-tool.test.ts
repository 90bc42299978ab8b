import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BuiltinMemoryStore } from "./memory-store.js";
import { MEMORY_FAILURE_CAP, MEMORY_TOOL_SCHEMA, MemoryToolDispatcher } from "./memory-tool.js";

let home: string;
let store: BuiltinMemoryStore;
beforeEach(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-memtool-"));
  store = new BuiltinMemoryStore({ dir: path.join(home, "memories"), memoryCharLimit: 30 });
});
afterEach(() => {
  fs.rmSync(home, { recursive: true, force: true });
});

describe("memory tool schema", () => {
  it("has the documented parameters", () => {
    expect(MEMORY_TOOL_SCHEMA.name).toBe("memory");
    const params = MEMORY_TOOL_SCHEMA.parameters as {
      properties: Record<string, { enum?: string[]; items?: unknown }>;
      required: string[];
    };
    expect(params.required).toEqual(["target"]);
    expect(params.properties.action?.enum).toEqual(["add", "replace", "remove"]);
    expect(params.properties.target?.enum).toEqual(["memory", "user"]);
    expect(Object.keys(params.properties).sort()).toEqual(["action", "content", "old_text", "operations", "target"]);
    expect(params.properties.operations?.items).toMatchObject({ required: ["action"] });
    expect(MEMORY_TOOL_SCHEMA.description).toMatch(/operations/);
  });
});

describe("memory tool dispatch", () => {
  it("reports a missing store", async () => {
    expect(await new MemoryToolDispatcher(null).call({ action: "add", target: "memory", content: "x" })).toEqual({
      success: false,
      error: "Memory is not available. It may be disabled in config or this environment.",
    });
  });

  it("validates in the documented order with the exact messages", async () => {
    const tool = new MemoryToolDispatcher(store);
    expect((await tool.call({ action: "add", target: "notes", content: "x" })).error).toBe(
      "Invalid target 'notes'. Use 'memory' or 'user'.",
    );
    expect((await tool.call({ action: "add", content: "x" })).error).toBe("Invalid target ''. Use 'memory' or 'user'.");
    expect((await tool.call({ target: "memory", operations: "add x" })).error).toBe(
      "operations must be a list of {action, content?, old_text?} objects.",
    );
    expect((await tool.call({ action: "add", target: "memory" })).error).toBe("Content is required for 'add' action.");
    expect((await tool.call({ action: "replace", target: "memory", content: "x" })).error).toBe(
      "'replace' needs old_text -- a short unique substring of the entry to replace. None was provided. Reissue the replace with old_text set to part of one of the current_entries below.",
    );
    expect((await tool.call({ action: "replace", target: "memory", old_text: "x" })).error).toBe(
      "content is required for 'replace' action.",
    );
    expect((await tool.call({ action: "forget", target: "memory" })).error).toBe("Unknown action 'forget'. Use: add, replace, remove");
  });

  it("returns current entries and usage when old_text is missing", async () => {
    await store.add("memory", "alpha");
    const result = await new MemoryToolDispatcher(store).call({ action: "remove", target: "memory" });
    expect(result).toEqual({
      success: false,
      error:
        "'remove' needs old_text -- a short unique substring of the entry to remove. None was provided. Reissue the remove with old_text set to part of one of the current_entries below.",
      current_entries: ["alpha"],
      usage: "5/30",
    });
  });

  it("routes single operations and batches to the store", async () => {
    const tool = new MemoryToolDispatcher(store);
    expect(await tool.call({ action: "add", target: "user", content: "Name: Ada" })).toMatchObject({
      success: true,
      message: "Entry added.",
    });
    expect(
      await tool.call({ target: "user", operations: [{ action: "replace", old_text: "Ada", content: "Name: Ada L." }] }),
    ).toMatchObject({
      success: true,
      message: "Applied 1 operation(s).",
      replaced_entries: { "1": "Name: Ada" },
    });
    expect(JSON.parse(await tool.callJson({ action: "remove", target: "user", old_text: "Ada" }))).toMatchObject({
      success: true,
      removed_entry: "Name: Ada L.",
    });
  });

  it("caps consecutive consolidation failures in a turn and resets at turn start", async () => {
    const tool = new MemoryToolDispatcher(store);
    await tool.call({ action: "add", target: "memory", content: "x".repeat(25) });
    for (let i = 1; i <= MEMORY_FAILURE_CAP; i++) {
      const result = await tool.call({ action: "add", target: "memory", content: `too long ${i}` });
      expect(result.error).toMatch(/^Memory at 25\/30 chars/);
    }
    const capped = await tool.call({ action: "remove", target: "memory", old_text: "nothing like this" });
    expect(capped).toEqual({
      success: false,
      done: true,
      error:
        "Memory consolidation failed 4 times this turn. Stop retrying memory calls — leave memory unchanged for now and continue with your reply to the user. The fact can be saved in a later turn.",
    });
    expect((await tool.call({ action: "add", target: "memory", content: "again too long" })).error).toMatch(/failed 5 times this turn/);
    tool.resetTurn();
    expect((await tool.call({ action: "add", target: "memory", content: "again too long" })).error).toMatch(/^Memory at/);
  });

  it("does not count validation errors and resets on success", async () => {
    const tool = new MemoryToolDispatcher(store);
    await tool.call({ action: "remove", target: "memory", old_text: "missing" });
    await tool.call({ action: "remove", target: "memory", old_text: "missing" });
    await tool.call({ action: "add", target: "memory" });
    expect(tool.consecutiveFailures).toBe(2);
    await tool.call({ action: "add", target: "memory", content: "ok" });
    expect(tool.consecutiveFailures).toBe(0);
  });
});
