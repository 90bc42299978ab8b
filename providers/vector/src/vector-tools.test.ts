import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MEMORY_TOOL_LIMITS } from "@hermes/memory-provider-kit";
import { VectorMemoryProvider } from "./vector-memory-provider.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

async function open(): Promise<VectorMemoryProvider> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-vector-tools-"));
  cleanups.push(() => fs.rmSync(home, { recursive: true, force: true }));
  const provider = new VectorMemoryProvider({ env: {}, dimensions: 128 });
  await provider.initialize("s1", { hermesHome: home });
  cleanups.push(() => provider.shutdown());
  return provider;
}

describe("vector_memory_search's limit", () => {
  it("returns at most the default its schema documents (the search() API's) when a call gives no limit, and at most the documented maximum", async () => {
    const p = await open();
    for (let i = 0; i < 60; i++) await p.remember({ content: `harbour note number ${i}`, kind: "fact", sessionId: "s1" });
    await p.flush();
    const limit = (
      p.getToolSchemas().find((s) => s.name === "vector_memory_search")!.parameters as {
        properties: { limit: { description: string; maximum: number } };
      }
    ).properties.limit;
    const documented = Number(/\(default (\d+)\)/.exec(limit.description)?.[1]);
    expect(documented).toBe(MEMORY_TOOL_LIMITS.search.default);
    const search = async (args: Record<string, unknown>) =>
      JSON.parse(await p.handleToolCall("vector_memory_search", { query: "harbour note", ...args })) as { count?: number; error?: string };
    expect((await search({})).count).toBe(documented);
    expect((await search({ limit: limit.maximum })).count).toBe(limit.maximum);
    expect((await search({ limit: limit.maximum + 1 })).error).toMatch(/limit must be <= /);
  });
});
