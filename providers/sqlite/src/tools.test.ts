import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ToolSchema } from "@hermes/memory-core";
import { SqliteMemoryProvider } from "./sqlite-memory-provider.js";

let home: string;
let provider: SqliteMemoryProvider;

beforeEach(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), "sqlite-tools-"));
  provider = new SqliteMemoryProvider({ path: path.join(home, "m.db") });
  await provider.initialize("s0", { hermesHome: home });
});
afterEach(async () => {
  await provider.shutdown();
  fs.rmSync(home, { recursive: true, force: true });
});

function schema(name: string): ToolSchema {
  return provider.getToolSchemas().find((s) => s.name === name)!;
}

/** The `limit` a tool's schema tells the model: its default (from the description) and its maximum. */
function documentedLimit(name: string): { default: number; max: number } {
  const limit = (schema(name).parameters as { properties: { limit: { description: string; maximum: number } } }).properties.limit;
  return { default: Number(/\(default (\d+)\)/.exec(limit.description)?.[1]), max: limit.maximum };
}

function call(
  name: string,
  args: Record<string, unknown>,
): { results?: unknown[]; items?: unknown[]; count?: number; ok?: boolean; error?: string } {
  return JSON.parse(provider.handleToolCall(name, args)) as { count?: number };
}

describe("the sqlite tools' limits", () => {
  it("return at most the default their schema documents when a call gives no limit, and at most the documented maximum", () => {
    for (let i = 0; i < 120; i++) provider.remember({ content: `harbour note number ${i}`, kind: "fact" });
    for (const [name, args, key] of [
      ["sqlite_memory_search", { query: "harbour note" }, "results"],
      ["sqlite_memory_list", {}, "items"],
    ] as const) {
      const limit = documentedLimit(name);
      expect(limit.default, name).toBe(name === "sqlite_memory_search" ? 10 : 20);
      expect(call(name, args)[key], name).toHaveLength(limit.default);
      expect(call(name, { ...args, limit: limit.max })[key], name).toHaveLength(limit.max);
      expect(call(name, { ...args, limit: limit.max + 1 }).error, name).toMatch(/limit must be <= /);
    }
  });

  it("forget takes the id as text or as a whole number", () => {
    const first = call("sqlite_memory_remember", { content: "The ferry leaves at nine." }) as { id: string };
    const second = call("sqlite_memory_remember", { content: "The ferry returns at five." }) as { id: string };
    expect(call("sqlite_memory_forget", { id: first.id }).ok).toBe(true);
    expect(call("sqlite_memory_forget", { id: Number(second.id) }).ok).toBe(true);
    expect(call("sqlite_memory_list", {}).count).toBe(0);
  });
});
