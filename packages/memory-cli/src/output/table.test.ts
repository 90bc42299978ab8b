import { describe, expect, it } from "vitest";
import { renderTable } from "./table.js";

describe("renderTable", () => {
  it("aligns columns by visible width, ignoring colour codes, without trailing blanks", () => {
    const red = (s: string) => `\u001b[31m${s}\u001b[39m`;
    const table = renderTable(
      ["NAME", "ACTIVE", "LOCATION"],
      [
        ["alpha", red("yes"), "/a"],
        ["b", "", "/bb"],
      ],
    );
    expect(table.split("\n")).toEqual(["NAME   ACTIVE  LOCATION", `alpha  ${red("yes")}     /a`, "b              /bb"]);
  });
});
