import { describe, expect, it } from "vitest";
import * as sqlite from "@hermes/memory-sqlite";

// The entry is a contract (read through the built package, as a host imports it): adding, removing
// or renaming an export must be a deliberate change made here and in the changeset. The provider's
// settings schema, tool schemas and recall block are reached through the provider itself
// (`getConfigSchema()`, `getToolSchemas()`, `prefetch`).
describe("@hermes/memory-sqlite exports", () => {
  it("exports exactly these values", () => {
    expect(Object.keys(sqlite).sort()).toEqual(["SqliteMemoryProvider", "register"]);
  });
});
