import { describe, expect, it } from "vitest";

// The public surface is a contract: adding, removing or renaming an export must be a deliberate
// change made here and in the changeset, never a side effect of editing a module. The test reads
// the built entry, as an installed package is imported.
// The package's binary (`dist/bin.js`) is a command, not an export.
describe("@hermes/create-memory-provider exports", () => {
  it("the main entry exports exactly these values", async () => {
    const entry = (await import(new URL("../dist/index.js", import.meta.url).href)) as Record<string, unknown>;
    expect(Object.keys(entry).sort()).toEqual(["deriveProviderName", "scaffoldProvider", "validateProviderName"]);
  });
});
