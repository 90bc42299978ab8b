import { describe, expect, expectTypeOf, it } from "vitest";
import { MEMORY_FILTER_TOOL_PROPERTIES, type MemoryFilter, type MemoryKind, type TimeRange } from "./index.js";

// One entry per key of each type: these records stop compiling (`pnpm typecheck`) when a type
// gains or loses a key, and the tests below hold the schema to the same keys at run time.
const FILTER_KEYS: { readonly [K in keyof Required<MemoryFilter>]: K } = {
  kind: "kind",
  sessionId: "sessionId",
  userId: "userId",
  tags: "tags",
  createdAt: "createdAt",
  metadata: "metadata",
};
const TAG_KEYS: { readonly [K in keyof Required<NonNullable<MemoryFilter["tags"]>>]: K } = { any: "any", all: "all" };
const TIME_RANGE_KEYS: { readonly [K in keyof Required<TimeRange>]: K } = { $gt: "$gt", $gte: "$gte", $lt: "$lt", $lte: "$lte" };
const KINDS: { readonly [K in MemoryKind]: K } = { turn: "turn", fact: "fact", checkpoint: "checkpoint" };

const sorted = (keys: readonly string[]): string[] => [...keys].sort();

describe("MEMORY_FILTER_TOOL_PROPERTIES", () => {
  it("describes every key of MemoryFilter and nothing else", () => {
    expectTypeOf<keyof typeof MEMORY_FILTER_TOOL_PROPERTIES>().toEqualTypeOf<keyof MemoryFilter>();
    expect(sorted(Object.keys(MEMORY_FILTER_TOOL_PROPERTIES))).toEqual(sorted(Object.values(FILTER_KEYS)));
  });

  it("describes the keys of the nested conditions (tags, createdAt) and every MemoryKind", () => {
    expect(sorted(Object.keys(MEMORY_FILTER_TOOL_PROPERTIES.tags.properties))).toEqual(sorted(Object.values(TAG_KEYS)));
    expect(sorted(Object.keys(MEMORY_FILTER_TOOL_PROPERTIES.createdAt.properties))).toEqual(sorted(Object.values(TIME_RANGE_KEYS)));
    const [one, list] = MEMORY_FILTER_TOOL_PROPERTIES.kind.anyOf;
    expect(sorted(one.enum)).toEqual(sorted(Object.values(KINDS)));
    expect(sorted(list.items.enum)).toEqual(sorted(Object.values(KINDS)));
  });

  it("is plain JSON (a tool schema is sent to a model as JSON)", () => {
    expect(JSON.parse(JSON.stringify(MEMORY_FILTER_TOOL_PROPERTIES))).toEqual(MEMORY_FILTER_TOOL_PROPERTIES);
  });
});
