import { describe, expect, it } from "vitest";
import { MAX_ITEM_ID_LENGTH, MAX_METADATA_DEPTH, parseItemMetadata, parseMemoryItem, parseMemoryUpdate } from "./memory-item.js";
import { DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT, parseSearchLimit } from "./memory-filter.js";
import { refusal } from "./test-support/refusal.js";

function nested(depth: number): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  let node = root;
  for (let i = 1; i < depth; i++) {
    const child: Record<string, unknown> = {};
    node.x = child;
    node = child;
  }
  node.x = 1;
  return root;
}

describe("parseMemoryItem", () => {
  it("applies the defaults and keeps what was given", () => {
    const now = Date.UTC(2026, 0, 1);
    expect(parseMemoryItem({ content: "hello" }, "remember()", now)).toEqual({
      content: "hello",
      kind: "fact",
      tags: [],
      metadata: {},
      expiresAt: null,
    });
    expect(
      parseMemoryItem(
        {
          content: "hi",
          kind: "turn",
          sessionId: "s1",
          userId: "u1",
          tags: ["a", "b"],
          metadata: { n: 1, when: new Date(now), f: () => 1 },
          ttlMs: 1000,
        },
        "remember()",
        now,
      ),
    ).toEqual({
      content: "hi",
      kind: "turn",
      sessionId: "s1",
      userId: "u1",
      tags: ["a", "b"],
      metadata: { n: 1, when: new Date(now).toISOString() },
      expiresAt: now + 1000,
    });
    // "" and null ids are absent; a null kind is the default.
    expect(parseMemoryItem({ content: "x", sessionId: "", userId: null, kind: null, tags: null, metadata: null })).toEqual({
      content: "x",
      kind: "fact",
      tags: [],
      metadata: {},
      expiresAt: null,
    });
  });

  it("returns a copy of the metadata, never the caller's object", () => {
    const metadata = { list: [1, { a: "b" }] };
    const parsed = parseMemoryItem({ content: "x", metadata });
    expect(parsed.metadata).toEqual(metadata);
    expect(parsed.metadata).not.toBe(metadata);
    expect(parsed.metadata.list).not.toBe(metadata.list);
  });

  it.each([
    [null, /needs an item object/],
    [undefined, /needs an item object/],
    ["text", /needs an item object/],
    [[{ content: "x" }], /needs an item object/],
    [{}, /content must be text/],
    [{ content: 5 }, /content must be text/],
    [{ content: " \t\n" }, /content must be text/],
    [{ content: "x", kind: "bogus" }, /kind must be one of turn, fact, checkpoint/],
    [{ content: "x", kind: "TURN" }, /kind must be one of/],
    [{ content: "x", sessionId: 5 }, /sessionId must be text/],
    [{ content: "x", userId: "u".repeat(MAX_ITEM_ID_LENGTH + 1) }, /userId must be text of at most 4096/],
    [{ content: "x", tags: "a" }, /tags must be a list of non-empty text/],
    [{ content: "x", tags: ["a", ""] }, /tags must be a list/],
    [{ content: "x", tags: [1] }, /tags must be a list/],
    [{ content: "x", metadata: "m" }, /metadata must be an object/],
    [{ content: "x", metadata: [1] }, /metadata must be an object/],
    [{ content: "x", expiresAt: "soon" }, /expiresAt must be an ISO 8601 time/],
    [{ content: "x", expiresAt: 1, ttlMs: 1 }, /not both/],
  ])("refuses %j", (item, message) => {
    expect(refusal(() => parseMemoryItem(item, "remember()"))).toMatch(message);
  });

  it("refuses metadata JSON cannot hold (a BigInt)", () => {
    expect(refusal(() => parseMemoryItem({ content: "x", metadata: { n: 10n } }))).toMatch(
      /serialisable as JSON \(Do not know how to serialize a BigInt\)/,
    );
    expect(refusal(() => parseMemoryUpdate({ metadata: { big: 1n } }))).toMatch(/^update\(\): metadata must be serialisable as JSON/);
  });

  it("names the caller in its messages", () => {
    expect(refusal(() => parseMemoryItem({ content: "" }, "import line 3"))).toMatch(/^import line 3: content/);
  });
});

describe("parseItemMetadata", () => {
  it("accepts MAX_METADATA_DEPTH levels and refuses one more, and metadata referring to itself", () => {
    expect(parseItemMetadata(nested(MAX_METADATA_DEPTH), "m")).toEqual(nested(MAX_METADATA_DEPTH));
    expect(refusal(() => parseItemMetadata(nested(MAX_METADATA_DEPTH + 1), "m"))).toMatch(/more than 64 levels deep/);
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    expect(refusal(() => parseItemMetadata(cyclic, "m"))).toMatch(/refers to itself/);
    // Depth far beyond the call stack is refused, not a RangeError.
    expect(refusal(() => parseItemMetadata(nested(100_000), "m"))).toMatch(/levels deep/);
    const list: unknown[] = [];
    list.push(list);
    expect(refusal(() => parseItemMetadata({ list }, "m"))).toMatch(/levels deep/);
  });

  it("refuses a top-level __proto__ field, the one name filters could not find the same way in every store", () => {
    expect(refusal(() => parseItemMetadata(JSON.parse('{"__proto__": {"polluted": true}, "a": 1}'), "remember()"))).toMatch(
      /remember\(\): a metadata field may not be named "__proto__".*rename it/,
    );
    expect(refusal(() => parseMemoryItem({ content: "x", metadata: JSON.parse('{"__proto__": "x"}') }))).toMatch(/__proto__/);
    expect(refusal(() => parseMemoryUpdate({ metadata: JSON.parse('{"__proto__": 1}') }))).toMatch(/__proto__/);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("keeps a nested __proto__ key as data, never as the prototype", () => {
    const parsed = parseItemMetadata(JSON.parse('{"doc": {"__proto__": {"polluted": true}}, "a": 1}'), "m");
    expect(Object.getPrototypeOf(parsed.doc)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(JSON.stringify(parsed)).toBe('{"doc":{"__proto__":{"polluted":true}},"a":1}');
  });
});

describe("parseMemoryUpdate", () => {
  it("keeps the given keys, drops undefined ones, de-duplicates tags and maps expiresAt", () => {
    expect(
      parseMemoryUpdate({
        content: "new",
        tags: ["a", "a", "b"],
        metadata: { k: "v" },
        expiresAt: "2030-01-01T00:00:00Z",
        ttlMs: undefined,
      }),
    ).toEqual({
      content: "new",
      tags: ["a", "b"],
      metadata: { k: "v" },
      expiresAt: Date.UTC(2030, 0, 1),
    });
    expect(parseMemoryUpdate({ expiresAt: null, tags: [] })).toEqual({ expiresAt: null, tags: [] });
    expect(parseMemoryUpdate({})).toEqual({});
  });

  it.each([
    [null, /changes must be an object/],
    [[], /changes must be an object/],
    [{ kind: "fact" }, /unknown key "kind"/],
    [{ content: "" }, /content must be text/],
    [{ tags: "a" }, /tags must be a list/],
    [{ metadata: null }, /pass \{\} to remove every field/],
    [{ expiresAt: "never" }, /update\(\): expiresAt must be an ISO 8601 time/],
  ])("refuses %j", (changes, message) => {
    expect(refusal(() => parseMemoryUpdate(changes))).toMatch(message);
  });
});

describe("parseSearchLimit", () => {
  it("gives the default for none, rounds down and caps a number of at least 1, and refuses anything else", () => {
    expect(parseSearchLimit(undefined)).toBe(DEFAULT_SEARCH_LIMIT);
    expect(parseSearchLimit(null)).toBe(10);
    expect(parseSearchLimit(undefined, { fallback: 8 })).toBe(8);
    expect(parseSearchLimit(3.9)).toBe(3);
    expect(parseSearchLimit(1)).toBe(1);
    expect(parseSearchLimit(1e12)).toBe(MAX_SEARCH_LIMIT);
    expect(parseSearchLimit(Infinity, { max: 200 })).toBe(200);
    for (const bad of [0, 0.5, -1, Number.NaN, -Infinity, "5", true, {}]) {
      expect(refusal(() => parseSearchLimit(bad))).toMatch(/^search options: limit must be a number of at least 1; got /);
    }
    expect(refusal(() => parseSearchLimit(-2, { what: "tool args" }))).toBe("tool args: limit must be a number of at least 1; got -2.");
  });
});
