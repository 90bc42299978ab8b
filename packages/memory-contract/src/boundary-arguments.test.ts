import { describe, expect, it } from "vitest";
import { boundaryArguments, parameterRole, type BoundaryTarget } from "./boundary-arguments.js";
import { compileParameters, createSchemaValidator } from "./tool-schema-checks.js";

const target: BoundaryTarget = { userId: "owner", sessionId: "owner-session", itemId: "42", word: "pelican" };

describe("parameterRole", () => {
  it("reads users, sessions and item ids from parameter names", () => {
    expect(["userId", "user_id", "user"].map(parameterRole)).toEqual(["user", "user", "user"]);
    expect(["sessionId", "session_only"].map(parameterRole)).toEqual(["session", "session"]);
    expect(["id", "ids", "memory_id", "itemId", "noteIds", "key"].map(parameterRole)).toEqual(["id", "id", "id", "id", "id", "id"]);
    expect(["query", "content", "valid", "tags", "kind", "monkey"].map(parameterRole)).toEqual([
      "text",
      "text",
      "text",
      "text",
      "text",
      "text",
    ]);
  });
});

describe("boundaryArguments", () => {
  const search = {
    type: "object",
    properties: {
      query: { type: "string", minLength: 1 },
      limit: { type: "integer", minimum: 1, maximum: 10 },
      kind: {
        anyOf: [
          { type: "string", enum: ["turn", "fact"] },
          { type: "array", items: { type: "string" } },
        ],
      },
      userId: { type: "string" },
      sessionId: { type: "string" },
      all: { type: "boolean" },
      tags: { type: "object", properties: { any: { type: "array", items: { type: "string" } } } },
    },
    required: ["query"],
    additionalProperties: false,
  };

  it("fills required text with the marker word or the id, then the optional scalars, then the user", () => {
    const sets = boundaryArguments(search, target, 1);
    expect(sets.map((s) => s.args)).toEqual([
      { query: "pelican" },
      { query: "42" },
      { query: "pelican", userId: "owner" },
      { query: "pelican", limit: 10, kind: "fact", sessionId: "owner-session", all: true },
      { query: "42", limit: 10, kind: "fact", sessionId: "owner-session", all: true },
      { query: "pelican", limit: 10, kind: "fact", userId: "owner", sessionId: "owner-session", all: true },
    ]);
    // Flags alternate with the turn.
    expect(boundaryArguments(search, target, 2)[3]!.args).toMatchObject({ kind: "turn", all: false });
    expect(sets.every((s) => !s.namesItem)).toBe(true);
  });

  it("gives parameters naming an item the target's id (as a number where only a number fits) and says so", () => {
    const forget = { type: "object", properties: { id: { type: ["string", "integer"] } }, required: ["id"] };
    expect(boundaryArguments(forget, target)).toEqual([
      { label: "required arguments, text as a marker word", args: { id: "42" }, namesItem: true },
    ]);
    const numeric = { type: "object", properties: { item_id: { type: "integer", minimum: 1 } }, required: ["item_id"] };
    expect(boundaryArguments(numeric, target)[0]).toMatchObject({ args: { item_id: 42 }, namesItem: true });
    const list = { type: "object", properties: { ids: { type: "array", items: { type: "string" }, minItems: 1 } }, required: ["ids"] };
    expect(boundaryArguments(list, target)[0]).toMatchObject({ args: { ids: ["42"] }, namesItem: true });
  });

  it("stays within every schema it is given (Ajv agrees)", () => {
    const schemas = [
      search,
      {
        type: "object",
        properties: {
          action: { type: "string", enum: ["add", "search"] },
          content: { type: "string", minLength: 1 },
          query: { type: "string" },
        },
        required: ["action"],
      },
      {
        type: "object",
        properties: {
          id: { type: ["string", "integer"] },
          content: { type: "string" },
          tags: { type: "array", items: { type: "string" }, maxItems: 4 },
        },
        required: ["id", "content"],
      },
      {
        type: "object",
        properties: {
          note: { type: "object", properties: { text: { type: "string" }, pinned: { type: "boolean" } }, required: ["text", "pinned"] },
        },
        required: ["note"],
      },
      { type: "object", properties: { count: { type: "number", exclusiveMinimum: 0, exclusiveMaximum: 5 } }, required: ["count"] },
    ];
    const ajv = createSchemaValidator();
    for (const schema of schemas) {
      const { validate } = compileParameters(ajv, schema);
      for (const turn of [0, 1, 2]) {
        for (const set of boundaryArguments(schema, target, turn)) expect(validate!(set.args), JSON.stringify(set.args)).toBe(true);
      }
    }
  });

  it("drops argument sets that come out the same", () => {
    expect(boundaryArguments({ type: "object", properties: {} }, target)).toEqual([
      { label: "required arguments, text as a marker word", args: {}, namesItem: false },
    ]);
  });
});
