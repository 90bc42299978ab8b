import { describe, expect, it } from "vitest";
import { MEMORY_FILTER_TOOL_PROPERTIES, type ToolSchema } from "@hermes/memory-core";
import {
  MEMORY_TOOL_LIMITS,
  REMEMBER_TOOL_PROPERTIES,
  ToolRouter,
  memoryToolSchemas,
  parseMemoryFilter,
} from "@hermes/memory-provider-kit";

const ALL = ["search", "remember", "forget", "list", "get"] as const;

function properties(schema: ToolSchema): Record<string, { description?: string; maximum?: number; minimum?: number }> {
  return (schema.parameters as { properties: Record<string, { description?: string; maximum?: number; minimum?: number }> }).properties;
}

function byName(schemas: ToolSchema[], name: string): ToolSchema {
  const schema = schemas.find((s) => s.name === name);
  if (!schema) throw new Error(`no tool ${name}`);
  return schema;
}

/** The default a `limit` property's description tells the model. */
function documentedDefault(schema: ToolSchema): number {
  const match = /\(default (\d+)\)/.exec(properties(schema).limit?.description ?? "");
  if (!match) throw new Error(`${schema.name}: its limit documents no default`);
  return Number(match[1]);
}

describe("memoryToolSchemas", () => {
  it("names each tool by prefix and action, in the order asked", () => {
    expect(memoryToolSchemas({ prefix: "notes_memory_", actions: ["forget", "search"], store: "notes" }).map((s) => s.name)).toEqual([
      "notes_memory_forget",
      "notes_memory_search",
    ]);
    expect(memoryToolSchemas({ prefix: "", actions: ALL, store: "the store" }).map((s) => s.name)).toEqual([...ALL]);
  });

  it("documents the limits handlers apply (MEMORY_TOOL_LIMITS), search's default being the search() API's", () => {
    const schemas = memoryToolSchemas({ prefix: "", actions: ALL, store: "the store" });
    expect(MEMORY_TOOL_LIMITS).toEqual({ search: { default: 10, max: 50 }, list: { default: 20, max: 100 } });
    for (const action of ["search", "list"] as const) {
      const schema = byName(schemas, action);
      expect(documentedDefault(schema), action).toBe(MEMORY_TOOL_LIMITS[action].default);
      expect(properties(schema).limit).toMatchObject({ minimum: 1, maximum: MEMORY_TOOL_LIMITS[action].max });
    }
  });

  it("offers every filter key of core's MemoryFilter with the filters capability, less the ones left out", () => {
    const full = byName(memoryToolSchemas({ prefix: "", actions: ["search"], store: "s", capabilities: { filters: true } }), "search");
    expect(Object.keys(properties(full))).toEqual(["query", "limit", ...Object.keys(MEMORY_FILTER_TOOL_PROPERTIES)]);
    expect(full.description).toContain("(kind, sessionId, userId, tags, createdAt, metadata)");
    const noUser = byName(
      memoryToolSchemas({ prefix: "", actions: ["search"], store: "s", capabilities: { filters: true }, withoutFilterKeys: ["userId"] }),
      "search",
    );
    expect(Object.keys(properties(noUser))).toEqual(["query", "limit", "kind", "sessionId", "tags", "createdAt", "metadata"]);
    const plain = byName(memoryToolSchemas({ prefix: "", actions: ["search"], store: "s" }), "search");
    expect(Object.keys(properties(plain))).toEqual(["query", "limit", "kind", "sessionId"]);
  });

  it("offers ttlMs and expiresAt on remember only with the expiry capability", () => {
    const plain = byName(memoryToolSchemas({ prefix: "", actions: ["remember"], store: "s" }), "remember");
    expect(properties(plain)).toEqual(REMEMBER_TOOL_PROPERTIES);
    const expiring = byName(
      memoryToolSchemas({ prefix: "", actions: ["remember"], store: "s", capabilities: { expiry: true } }),
      "remember",
    );
    expect(Object.keys(properties(expiring))).toEqual(["content", "tags", "ttlMs", "expiresAt"]);
  });

  it("adds a tool's extra properties after the shared ones", () => {
    const search = byName(
      memoryToolSchemas({
        prefix: "",
        actions: ["search"],
        store: "s",
        capabilities: { filters: true },
        extraProperties: { search: { session_only: { type: "boolean" } } },
      }),
      "search",
    );
    expect(Object.keys(properties(search)).at(-1)).toBe("session_only");
  });

  it("validates what each tool documents and refuses what it does not name", () => {
    const schemas = memoryToolSchemas({ prefix: "", actions: ALL, store: "s", capabilities: { filters: true, expiry: true } });
    const router = new ToolRouter({ owner: "test", schemas });
    expect(
      router.validate("search", {
        query: "deploy",
        limit: 50,
        kind: ["fact"],
        tags: { any: ["work"] },
        createdAt: { $gte: "2026-01-01T00:00:00Z" },
        metadata: { p: 1 },
      }),
    ).toBeNull();
    expect(router.validate("search", { query: "deploy", limit: 51 })).toMatch(/limit must be <= 50/);
    expect(router.validate("search", { query: "" })).toMatch(/query/);
    expect(router.validate("search", { query: "x", sessionid: "s1" })).toMatch(/must NOT have additional properties/);
    expect(router.validate("remember", { content: "Deploys on Fridays.", tags: ["ops"], ttlMs: 1000 })).toBeNull();
    expect(router.validate("forget", { id: "m1" })).toBeNull();
    expect(router.validate("forget", { id: 17 })).toBeNull();
    expect(router.validate("get", { id: "" })).toMatch(/id/);
    expect(router.validate("list", { limit: 100, kind: "turn" })).toBeNull();
    expect(router.validate("list", { limit: 101 })).toMatch(/limit must be <= 100/);
  });

  it("offers only filter keys parseMemoryFilter accepts", () => {
    const samples: Record<string, unknown> = {
      kind: ["turn", "fact"],
      sessionId: "s1",
      userId: "u1",
      tags: { all: ["a"] },
      createdAt: { $lt: "2026-01-01T00:00:00Z" },
      metadata: { p: { $gte: 1 } },
    };
    expect(Object.keys(samples).sort()).toEqual(Object.keys(MEMORY_FILTER_TOOL_PROPERTIES).sort());
    for (const [key, value] of Object.entries(samples)) expect(() => parseMemoryFilter({ [key]: value }), key).not.toThrow();
  });
});
