import { describe, expect, it } from "vitest";
import { DEFAULT_SUITES, SUITE_NAMES, parseArgs } from "./cli-args.js";

describe("parseArgs", () => {
  it("runs every suite but filtered and erasure by default, and those when named", () => {
    expect(parseArgs([])).toMatchObject({
      suites: ["sync", "prefetch", "discovery", "vector", "locomo", "isolation"],
      quick: false,
      buildCache: false,
    });
    expect(DEFAULT_SUITES).toEqual(SUITE_NAMES.filter((s) => s !== "filtered" && s !== "erasure"));
    expect(parseArgs(["filtered", "sync"]).suites).toEqual(["sync", "filtered"]);
    expect(parseArgs(["erasure", "filtered"]).suites).toEqual(["filtered", "erasure"]);
  });

  it("accepts suites in any order and runs them in the canonical order", () => {
    expect(parseArgs(["locomo", "sync", "sync"]).suites).toEqual(["sync", "locomo"]);
  });

  it("ignores the bare -- that pnpm forwards and reads flags with values", () => {
    expect(parseArgs(["--", "--quick", "--data", "x.json", "--out=o", "--build-cache"])).toMatchObject({
      quick: true,
      dataFile: "x.json",
      outDir: "o",
      buildCache: true,
    });
  });

  it("rejects unknown arguments and missing values with the usage", () => {
    expect(() => parseArgs(["synk"])).toThrow(/Unknown argument "synk"[\s\S]*usage/);
    expect(() => parseArgs(["--data"])).toThrow(/--data needs a value/);
  });
});
