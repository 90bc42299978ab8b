import { describe, expect, it } from "vitest";
import { HermesMemoryError } from "@hermes/memory-core";
import { collectSet, parseSetPairs } from "./memory-setup.js";

describe("--set parsing", () => {
  it("collects repeated options and splits at the first '='", () => {
    const pairs = collectSet("url=https://x.example/?a=b", collectSet("region=eu"));
    expect(parseSetPairs(pairs)).toEqual({ region: "eu", url: "https://x.example/?a=b" });
  });
  it("rejects a pair without a key with a remedy", () => {
    expect(() => parseSetPairs(["=value"])).toThrow(/--set expects key=value/);
    try {
      parseSetPairs(["novalue"]);
    } catch (error) {
      expect(HermesMemoryError.isInstance(error)).toBe(true);
    }
  });
});
