import { parseMemoryFilter } from "@hermes/memory-provider-kit";
import { describe, expect, it } from "vitest";
import { CorpusGenerator } from "./corpus.js";
import { FILTER_SHAPES, OTHER_USER, OWNER_USER, createdAtWindow, filteredItem, filteredTexts, userOf } from "./filtered-corpus.js";

const SIZE = 10_000;
const window = { ...createdAtWindow(SIZE), from: "2026-12-01T00:00:00.000Z", to: "2026-12-01T00:00:01.000Z" };

describe("the filtered suite's corpus and filter shapes", () => {
  it("has four shapes that each pass exactly 1 % of the items", () => {
    expect(FILTER_SHAPES.map((s) => s.name)).toEqual(["userId", "metadata", "tag", "createdAt"]);
    for (const shape of FILTER_SHAPES) {
      let passing = 0;
      for (let i = 0; i < SIZE; i++) if (shape.passes(i, window)) passing++;
      expect(passing, shape.name).toBe(SIZE / 100);
    }
  });

  it("writes items whose fields agree with what the shapes say passes", () => {
    const gen = new CorpusGenerator(1);
    for (let i = 0; i < 300; i++) {
      const item = filteredItem(gen, i);
      expect(item.userId).toBe(userOf(i));
      expect(item.userId === OTHER_USER, `item ${i} userId`).toBe(FILTER_SHAPES[0]!.passes(i, window));
      expect(item.metadata?.project === "project-11", `item ${i} metadata`).toBe(FILTER_SHAPES[1]!.passes(i, window));
      expect(item.tags?.includes("tag-52"), `item ${i} tag`).toBe(FILTER_SHAPES[2]!.passes(i, window));
    }
    expect(userOf(0)).toBe(OWNER_USER);
  });

  it("builds filters the kit's parser accepts, and the createdAt one only once its bounds are known", () => {
    for (const shape of FILTER_SHAPES) expect(() => parseMemoryFilter(shape.filter(window)), shape.name).not.toThrow();
    expect(() => FILTER_SHAPES[3]!.filter(createdAtWindow(SIZE))).toThrow(/not been read back/);
  });

  it("passes the createdAt shape by the read-back set when there is one", () => {
    const passing = new Set([5, 6]);
    expect(FILTER_SHAPES[3]!.passes(5, { ...window, passing })).toBe(true);
    expect(FILTER_SHAPES[3]!.passes(window.first, { ...window, passing })).toBe(false);
  });

  it("regenerates the same texts the items carry", () => {
    const gen = new CorpusGenerator(9);
    const items = Array.from({ length: 50 }, (_, i) => filteredItem(gen, i).content);
    expect(filteredTexts(9, 50)).toEqual(items);
  });
});
