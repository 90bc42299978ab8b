import { describe, expect, it } from "vitest";

// The public surface is a contract: adding, removing or renaming an export must be a deliberate
// change made here and in the changeset, never a side effect of editing a module. The test reads
// the built entry, as an installed package is imported.
describe("@hermes/memory-ai-sdk exports", () => {
  it("the main entry exports exactly these values", async () => {
    const entry = (await import(new URL("../dist/index.js", import.meta.url).href)) as Record<string, unknown>;
    expect(Object.keys(entry).sort()).toEqual(["memoryMiddleware", "memoryTools"]);
  });
});
