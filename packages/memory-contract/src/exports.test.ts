import { describe, expect, it } from "vitest";

// The public surface is a contract: adding, removing or renaming an export must be a deliberate
// change made here and in the changeset, never a side effect of editing a module. The test reads
// the built entries, as an installed package is imported.
// The package's binary (`dist/bin.js`) is a command, not an export.
describe("@hermes/memory-contract exports", () => {
  it("the main entry exports exactly these values", async () => {
    const entry = (await import(new URL("../dist/index.js", import.meta.url).href)) as Record<string, unknown>;
    expect(Object.keys(entry).sort()).toEqual([
      "CONTRACT_CLAUSES",
      "CONTRACT_GROUPS",
      "createSetupFromPackage",
      "formatContractReport",
      "getClause",
      "inferCapabilities",
      "resolvePackageDir",
      "resolveTimeouts",
      "runContractCli",
      "runMemoryProviderContract",
      "summarizeResults",
    ]);
  });

  it("the ./vitest entry exports exactly these values", async () => {
    const entry = (await import(new URL("../dist/vitest.js", import.meta.url).href)) as Record<string, unknown>;
    expect(Object.keys(entry).sort()).toEqual(["describeMemoryProviderContract"]);
  });
});
