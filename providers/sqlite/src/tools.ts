import type { MemoryKind, MemorySearchOptions, ToolSchema } from "@hermes/memory-core";
import {
  MEMORY_TOOL_LIMITS,
  memoryToolSchemas,
  parseMemoryFilter,
  ToolRouter,
  toolError,
  type ToolItemScope,
  type ToolUserScope,
} from "@hermes/memory-provider-kit";
import type { StoredItem } from "./memory-store.js";

/** Tool names (prefixed so they never clash with other providers' or core tools). */
export const TOOL_NAMES = {
  search: "sqlite_memory_search",
  remember: "sqlite_memory_remember",
  forget: "sqlite_memory_forget",
  list: "sqlite_memory_list",
} as const;

/** The four tool schemas, in the bare OpenAI function form; search takes every filter key. */
export const TOOL_SCHEMAS: ToolSchema[] = memoryToolSchemas({
  prefix: "sqlite_memory_",
  actions: ["search", "remember", "forget", "list"],
  store: "long-term memory",
  capabilities: { filters: true },
});

/** What the tools need from the provider; `runTool` limits every call to the session's user first. */
export interface ToolBackend {
  search(
    query: string,
    options: MemorySearchOptions & { limit: number },
  ): Array<{
    id: string;
    kind: MemoryKind;
    content: string;
    score: number;
    sessionId?: string;
    createdAt: string;
    tags?: string[];
    expiresAt?: string;
  }>;
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
  // The router has checked every argument against its schema first: a `limit` is a whole number
  // within the schema's bounds, or absent and then the default the schema documents.
  return router.run(name, args, {
    [TOOL_NAMES.search]: (a) => {
      const { query, limit, ...filterArgs } = a;
      // Operators, values and limits the schema does not express are checked here (typed errors
      // come back as the tool's JSON error); the validated arguments are passed on unchanged.
      parseMemoryFilter(filterArgs, { what: "search filter" });
      const results = backend
        .search(
          String(query),
          scope.within({
            ...(filterArgs as MemorySearchOptions),
            limit: (limit as number | undefined) ?? MEMORY_TOOL_LIMITS.search.default,
          }),
        )
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
        .list(
          scope.within({
            limit: (a.limit as number | undefined) ?? MEMORY_TOOL_LIMITS.list.default,
            ...(a.kind ? { kind: a.kind as MemoryKind } : {}),
          }),
        )
        .map((i) => ({ id: i.id, kind: i.kind, content: i.content, tags: i.tags, sessionId: i.sessionId, createdAt: i.createdAt }));
      return { items, count: items.length };
    },
  });
}

function round(n: number): number {
  return Math.round(n * 1e4) / 1e4;
}
