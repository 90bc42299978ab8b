import { describe, expect, it } from "vitest";
import type { ToolSchema } from "@hermes/memory-core";
import { ToolRouter, toolError } from "./tool-router.js";

const schemas: ToolSchema[] = [
  {
    name: "x_search",
    description: "search",
    parameters: {
      type: "object",
      properties: { query: { type: "string", minLength: 1 } },
      required: ["query"],
      additionalProperties: false,
    },
  },
];

describe("ToolRouter", () => {
  const router = new ToolRouter({ owner: "x memory", schemas });

  it("validates arguments and routes to the handler, JSON-stringifying its result", () => {
    expect(router.handles("x_search")).toBe(true);
    expect(router.handles("other")).toBe(false);
    expect(JSON.parse(router.run("x_search", { query: "a" }, { x_search: (a) => ({ got: a.query }) }))).toEqual({ got: "a" });
  });

  it("answers unknown tools, invalid arguments, missing handlers and throws with an error string", async () => {
    expect(JSON.parse(router.run("nope", {}, {})).error).toMatch(/x memory does not handle tool nope/);
    expect(JSON.parse(router.run("x_search", { query: 42 }, { x_search: () => 1 })).error).toMatch(/Invalid arguments for x_search.*query/);
    expect(JSON.parse(router.run("x_search", { query: "a", extra: 1 }, { x_search: () => 1 })).error).toMatch(/additional/);
    expect(JSON.parse(router.run("x_search", undefined, { x_search: () => 1 })).error).toMatch(/query/);
    expect(JSON.parse(router.run("x_search", { query: "a" }, {})).error).toMatch(/does not handle/);
    expect(
      JSON.parse(
        router.run(
          "x_search",
          { query: "a" },
          {
            x_search: () => {
              throw new Error("boom");
            },
          },
        ),
      ).error,
    ).toMatch(/boom/);
    expect(
      JSON.parse(await router.runAsync("x_search", { query: "a" }, { x_search: async () => Promise.reject(new Error("late")) })).error,
    ).toMatch(/late/);
    expect(JSON.parse(await router.runAsync("x_search", { query: "a" }, { x_search: async (a) => ({ q: a.query }) }))).toEqual({ q: "a" });
  });

  it("toolError builds the error shape", () => {
    expect(JSON.parse(toolError("bad"))).toEqual({ error: "bad" });
  });
});

describe("ToolRouter refuses invalid arguments before any handler runs", () => {
  const rememberSchema: ToolSchema = {
    name: "x_remember",
    description: "remember",
    parameters: {
      type: "object",
      properties: {
        content: { type: "string", minLength: 1 },
        limit: { type: "integer", minimum: 1, maximum: 50 },
        kind: { type: "string", enum: ["fact", "turn"] },
        tags: { type: "array", items: { type: "string" } },
      },
      required: ["content"],
      additionalProperties: false,
    },
  };
  const router = new ToolRouter({ owner: "x memory", schemas: [rememberSchema] });
  const calls: unknown[] = [];
  const handlers = { x_remember: (args: Record<string, unknown>) => (calls.push(args), { ok: true }) };

  const refusals: Array<[string, unknown, RegExp]> = [
    [
      "a missing required property",
      { limit: 3 },
      /^Invalid arguments for x_remember: \(arguments\) must have required property 'content'$/,
    ],
    ["an empty string below minLength", { content: "" }, /\/content must NOT have fewer than 1 characters/],
    ["a number where a string is required", { content: 42 }, /\/content must be string/],
    ["a string where an integer is required", { content: "a", limit: "3" }, /\/limit must be integer/],
    ["a fraction where an integer is required", { content: "a", limit: 2.5 }, /\/limit must be integer/],
    ["an integer below its minimum", { content: "a", limit: 0 }, /\/limit must be >= 1/],
    ["an integer above its maximum", { content: "a", limit: 51 }, /\/limit must be <= 50/],
    ["a value outside the enum", { content: "a", kind: "checkpoint" }, /\/kind must be equal to one of the allowed values/],
    ["a wrongly typed array item", { content: "a", tags: ["ok", 7] }, /\/tags\/1 must be string/],
    [
      "an extra property with additionalProperties: false",
      { content: "a", extra: true },
      /\(arguments\) must NOT have additional properties/,
    ],
    ["an array instead of an object", ["a"], /\(arguments\) must be object/],
    ["a string instead of an object", "remember this", /\(arguments\) must be object/],
    ["a number instead of an object", 7, /\(arguments\) must be object/],
    ["null (no arguments), which lacks the required property", null, /\(arguments\) must have required property 'content'/],
  ];

  it.each(refusals)("%s", async (_what, args, message) => {
    calls.length = 0;
    expect(router.validate("x_remember", args)).toMatch(message);
    expect(JSON.parse(router.run("x_remember", args, handlers))).toEqual({ error: expect.stringMatching(message) });
    expect(JSON.parse(await router.runAsync("x_remember", args, handlers))).toEqual({ error: expect.stringMatching(message) });
    expect(calls).toEqual([]);
  });

  it("names every violation of one call, not only the first", () => {
    expect(router.validate("x_remember", { content: 1, limit: 99, extra: 1 })).toBe(
      "Invalid arguments for x_remember: (arguments) must NOT have additional properties; /content must be string; /limit must be <= 50",
    );
  });

  it("answers a tool it does not know without running anything, through validate, run and runAsync", async () => {
    calls.length = 0;
    expect(router.handles("x_forget")).toBe(false);
    expect(router.validate("x_forget", { content: "a" })).toBe("x memory does not handle tool x_forget");
    expect(JSON.parse(router.run("x_forget", { content: "a" }, { ...handlers, x_forget: handlers.x_remember }))).toEqual({
      error: "x memory does not handle tool x_forget",
    });
    expect(JSON.parse(await router.runAsync("x_forget", { content: "a" }, handlers))).toEqual({
      error: "x memory does not handle tool x_forget",
    });
    expect(calls).toEqual([]);
  });

  it("passes valid arguments at the bounds to the handler unchanged", () => {
    calls.length = 0;
    for (const args of [{ content: "a" }, { content: "a", limit: 1 }, { content: "a", limit: 50, kind: "turn", tags: [] }]) {
      expect(JSON.parse(router.run("x_remember", args, handlers))).toEqual({ ok: true });
    }
    expect(calls).toEqual([{ content: "a" }, { content: "a", limit: 1 }, { content: "a", limit: 50, kind: "turn", tags: [] }]);
  });
});
