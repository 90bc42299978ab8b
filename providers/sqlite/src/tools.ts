import type { MemoryKind, MemorySearchOptions, ToolSchema } from "@hermes/memory-core";
import {
  MEMORY_FILTER_TOOL_PROPERTIES,
  REMEMBER_TOOL_PROPERTIES,
  MEMORY_ITEM_KINDS,
  parseMemoryFilter,
  ToolRouter,
  toolError,
  type ToolItemScope,
  type ToolUserScope,
} from "@hermes/memory-provider-kit";
import type { StoredItem } from "./memory-store.js";
import { clampLimit } from "./store-search.js";

/** Tool names (prefixed so they never clash with other providers' or core tools). */
export const TOOL_NAMES = {
  search: "sqlite_memory_search",
  remember: "sqlite_memory_remember",
  forget: "sqlite_memory_forget",
  list: "sqlite_memory_list",
} as const;

const kindSchema = { type: "string", enum: [...MEMORY_ITEM_KINDS], description: "Only items of this kind: turn, fact or checkpoint." };

/** The four tool schemas, in the bare OpenAI function form. */
export const TOOL_SCHEMAS: ToolSchema[] = [
  {
    name: TOOL_NAMES.search,
    description:
      "Search long-term memory (past conversation turns, saved facts, compression checkpoints) by keywords. Returns the best matches with their ids. Optional filters (kind, sessionId, userId, tags, createdAt, metadata) restrict which items are searched; every filter given must hold.",
    parameters: {
      type: "object",
      properties: {
        query: { type: "string", minLength: 1, description: "What to look for, in plain words." },
        limit: { type: "integer", minimum: 1, maximum: 50, description: "Most results to return (default 10)." },
        ...MEMORY_FILTER_TOOL_PROPERTIES,
      },
      required: ["query"],
      additionalProperties: false,
    },
  },
  {
    name: TOOL_NAMES.remember,
    description: "Save a durable fact to long-term memory (a preference, decision or detail worth recalling in later sessions).",
    parameters: {
      type: "object",
      properties: {
        ...REMEMBER_TOOL_PROPERTIES,
      },
      required: ["content"],
      additionalProperties: false,
    },
  },
  {
    name: TOOL_NAMES.forget,
    description: "Delete one memory item by the id that search or list returned.",
    parameters: {
      type: "object",
      properties: { id: { type: ["string", "integer"], description: "Id of the item to delete." } },
      required: ["id"],
      additionalProperties: false,
    },
  },
  {
    name: TOOL_NAMES.list,
    description: "List the most recent memory items, newest first.",
    parameters: {
      type: "object",
      properties: {
        limit: { type: "integer", minimum: 1, maximum: 100, description: "Most items to return (default 20)." },
        kind: kindSchema,
      },
      additionalProperties: false,
    },
  },
];

/** What the tools need from the provider; `runTool` limits every call to the session's user first. */
export interface ToolBackend {
  search(
    query: string,
    options: MemorySearchOptions & { limit: number },
  ): Array<{ id: string; kind: MemoryKind; content: string; score: number; sessionId?: string; createdAt: string; tags?: string[]; expiresAt?: string }>;
  /** Store a fact under the session's user. */
  rememberFact(content: string, tags: string[]): string;
  /** Delete the item in `scope` (its id and user, in one query); false when none is. */
  forget(scope: ToolItemScope): boolean;
  list(options: { limit: number; kind?: MemoryKind; userId?: string }): StoredItem[];
}

const router = new ToolRouter({ owner: "sqlite memory", schemas: TOOL_SCHEMAS });

/**
 * Run one tool call: validate `args` against the tool's schema, then execute it against `backend`
 * within `scope`, the session's user. Always returns a JSON string; never throws (errors become
 * `{"error": "..."}`).
 */
export function runTool(name: string, args: unknown, backend: ToolBackend | undefined, scope: ToolUserScope): string {
  if (!backend) {
    const invalid = router.validate(name, args);
    return toolError(invalid ?? "sqlite memory is not initialised; the database could not be opened (see the agent log)");
  }
  return router.run(name, args, {
    [TOOL_NAMES.search]: (a) => {
      const { query, limit, ...filterArgs } = a;
      // Operators, values and limits the schema does not express are checked here (typed errors
      // come back as the tool's JSON error); the validated arguments are passed on unchanged.
      parseMemoryFilter(filterArgs, { what: "search filter" });
      const results = backend
        .search(String(query), scope.within({ ...(filterArgs as MemorySearchOptions), limit: clampLimit(limit, 10, 50) }))
        .map((h) => ({
          id: h.id,
          kind: h.kind,
          content: h.content,
          score: round(h.score),
          sessionId: h.sessionId,
          createdAt: h.createdAt,
          ...(h.tags ? { tags: h.tags } : {}),
          ...(h.expiresAt ? { expiresAt: h.expiresAt } : {}),
        }));
      return { results, count: results.length };
    },
    [TOOL_NAMES.remember]: (a) => {
      const content = String(a.content).trim();
      if (!content) return { error: "content must not be empty" };
      const id = backend.rememberFact(content, (a.tags as string[] | undefined) ?? []);
      return { ok: true, id };
    },
    [TOOL_NAMES.forget]: (a) => {
      const id = String(a.id);
      return backend.forget(scope.item(id)) ? { ok: true, id } : { error: `no memory item with id ${id}` };
    },
    [TOOL_NAMES.list]: (a) => {
      const items = backend
        .list(scope.within({ limit: clampLimit(a.limit, 20, 100), ...(a.kind ? { kind: a.kind as MemoryKind } : {}) }))
        .map((i) => ({ id: i.id, kind: i.kind, content: i.content, tags: i.tags, sessionId: i.sessionId, createdAt: i.createdAt }));
      return { items, count: items.length };
    },
  });
}

function round(n: number): number {
  return Math.round(n * 1e4) / 1e4;
}
