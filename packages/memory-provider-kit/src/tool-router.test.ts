import { describe, expect, it } from "vitest";
import type { ToolSchema } from "@hermes/memory-core";
import { ToolRouter, toolError } from "./tool-router.js";

const schemas: ToolSchema[] = [
  {
    name: "x_search",
    description: "search",
    parameters: { type: "object", properties: { query: { type: "string", minLength: 1 } }, required: ["query"], additionalProperties: false },
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
        router.run("x_search", { query: "a" }, {
          x_search: () => {
            throw new Error("boom");
          },
        }),
      ).error,
    ).toMatch(/boom/);
    expect(JSON.parse(await router.runAsync("x_search", { query: "a" }, { x_search: async () => Promise.reject(new Error("late")) })).error).toMatch(/late/);
    expect(JSON.parse(await router.runAsync("x_search", { query: "a" }, { x_search: async (a) => ({ q: a.query }) }))).toEqual({ q: "a" });
  });

  it("toolError builds the error shape", () => {
    expect(JSON.parse(toolError("bad"))).toEqual({ error: "bad" });
  });
});
