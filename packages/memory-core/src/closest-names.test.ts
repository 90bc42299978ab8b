import { describe, expect, it } from "vitest";
import { closestNames } from "@hermes/memory-core";

describe("closestNames", () => {
  it("suggests the names one or two edits away (swaps count once), fewest edits first", () => {
    expect(closestNames("stauts", ["setup", "status", "off", "show"])).toEqual(["status"]);
    expect(closestNames("lst", ["list", "add", "remove"])).toEqual(["list"]);
    expect(closestNames("sqllite", ["sqlite", "vector"])).toEqual(["sqlite"]);
    expect(closestNames("SQLite", ["sqlite"])).toEqual(["sqlite"]);
    expect(closestNames("vectr", ["vector", "sqlite"])).toEqual(["vector"]);
    expect(closestNames("beta", ["betb", "beto", "bet"])).toEqual(["bet", "betb", "beto"]);
  });

  it("suggests nothing for an exact name, an unrelated word, or a short name most of which differs", () => {
    expect(closestNames("sqlite", ["sqlite", "sqlites"])).toEqual([]);
    expect(closestNames("pinecone", ["sqlite", "vector"])).toEqual([]);
    expect(closestNames("ab", ["xy", "ac"])).toEqual([]);
    expect(closestNames("anything", [])).toEqual([]);
  });
});
