import { describe, expect, it } from "vitest";
import {
  compileParameters,
  createSchemaValidator,
  functionToolProblems,
  invalidArgumentCandidates,
  isErrorString,
  sampleArguments,
} from "./tool-schema-checks.js";

const good = {
  name: "notes_search",
  description: "Search notes",
  parameters: { type: "object", properties: { query: { type: "string" }, limit: { type: "integer", minimum: 3 } }, required: ["query"] },
};

describe("functionToolProblems", () => {
  it("accepts a bare and a wrapped valid tool", () => {
    expect(functionToolProblems(good)).toEqual([]);
    expect(functionToolProblems({ type: "function", function: good })).toEqual([]);
  });

  it("names every problem strict APIs reject", () => {
    expect(functionToolProblems({ name: "bad name!", description: "", parameters: { type: "array", required: ["x"] } })).toEqual([
      'tool name "bad name!" does not match ^[a-zA-Z0-9_-]{1,64}$',
      'tool "bad name!" has no description',
      'tool "bad name!" parameters.type is "array", expected "object"',
      'tool "bad name!" requires "x", which is not in properties',
    ]);
    expect(functionToolProblems({ name: "a".repeat(65), description: "d", parameters: { type: "object" } })[0]).toContain("does not match");
    expect(functionToolProblems("nope")).toEqual(["tool schema (unnamed tool) is not an object"]);
  });
});

describe("compileParameters", () => {
  it("compiles valid schemas and reports invalid ones", () => {
    const ajv = createSchemaValidator();
    expect(compileParameters(ajv, good.parameters).validate?.({ query: "x" })).toBe(true);
    expect(compileParameters(ajv, { type: "object", properties: { q: { type: "strin" } } }).error).toMatch(/type/);
    expect(compileParameters(ajv, { $schema: "https://json-schema.org/draft/2020-12/schema", type: "object" }).error).toBeUndefined();
  });
});

describe("argument generation", () => {
  it("builds schema-valid sample arguments", () => {
    const args = sampleArguments({
      type: "object",
      properties: { q: { type: "string" }, mode: { enum: ["a", "b"] }, n: { type: "integer", minimum: 3 } },
      required: ["q", "mode", "n"],
    });
    expect(args).toEqual({ q: "contract test", mode: "a", n: 3 });
  });

  it("builds invalid candidates: missing required keys must error, wrong types must not throw", () => {
    const candidates = invalidArgumentCandidates(good.parameters);
    expect(candidates[0]).toEqual({ label: "no arguments ({})", args: {}, mustError: true });
    expect(candidates.slice(1).map((c) => c.label)).toEqual(["query of the wrong type", "limit of the wrong type"]);
    expect(typeof candidates[1]?.args.query).toBe("object");
  });
});

describe("isErrorString", () => {
  it("recognises JSON error objects and error wording", () => {
    expect(isErrorString(JSON.stringify({ error: "unknown tool x" }))).toBe(true);
    expect(isErrorString(JSON.stringify({ ok: false }))).toBe(true);
    expect(isErrorString("Unknown tool: x")).toBe(true);
    expect(isErrorString(JSON.stringify({ results: [] }))).toBe(false);
    expect(isErrorString("")).toBe(false);
    expect(isErrorString({ error: "x" })).toBe(false);
  });
});
