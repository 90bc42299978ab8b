import { HermesMemoryError, type MemoryHit, type MemorySearchOptions, type ToolSchema } from "@hermes/memory-core";
import { MEMORY_TOOL_LIMITS, memoryToolSchemas, ToolRouter, type ToolItemScope, type ToolUserScope } from "@hermes/memory-provider-kit";

/** Tool names this provider offers. */
export const SEARCH_TOOL = "vector_memory_search";
export const REMEMBER_TOOL = "vector_memory_remember";
export const FORGET_TOOL = "vector_memory_forget";

/** The tool schemas (bare OpenAI function form); search takes every filter key and `session_only`. */
export const VECTOR_TOOL_SCHEMAS: ToolSchema[] = memoryToolSchemas({
  prefix: "vector_memory_",
  actions: ["search", "remember", "forget"],
  store: "long-term vector memory",
  searchesBy: "by meaning and keywords",
  capabilities: { filters: true },
  extraProperties: {
    search: { session_only: { type: "boolean", description: "Only items from the current session (instead of sessionId)." } },
  },
});

/** Validates and routes this provider's tool calls. */
export const VECTOR_TOOL_ROUTER = new ToolRouter({ owner: "Provider vector", schemas: VECTOR_TOOL_SCHEMAS });

/** What the tools need from the provider; `runVectorTool` limits every call to the session's user first. */
export interface VectorToolBackend {
  /** Throws `PROVIDER_UNAVAILABLE` when the provider is not open. */
  assertOpen(): void;
  /** The session the tools run in (`session_only`). */
  sessionId(): string;
  search(query: string, options: MemorySearchOptions & { limit: number }): Promise<MemoryHit[]>;
  /** Store a fact under the session's user and wait until it is stored. */
  rememberFact(content: string, tags: string[]): Promise<{ id: string; status: "stored"; warning?: string }>;
  /** Delete the item in `scope` (its id and user, looked up together) from every copy; false when none is. */
  forget(scope: ToolItemScope): Promise<boolean>;
}

/**
 * Validate and run one tool call against `backend` within `scope`, the session's user; always a
 * JSON string (errors as `{"error": ...}`), never a throw.
 */
export function runVectorTool(name: string, args: unknown, backend: VectorToolBackend, scope: ToolUserScope): Promise<string> {
  return VECTOR_TOOL_ROUTER.runAsync(name, args, {
    [SEARCH_TOOL]: async (a) => {
      backend.assertOpen();
      const { query, limit, session_only: sessionOnly, ...conditions } = a;
      let hits: MemoryHit[];
      try {
        const filter = { ...conditions, ...(sessionOnly === true ? { sessionId: backend.sessionId() } : {}) } as MemorySearchOptions;
        hits = await backend.search(
          String(query),
          scope.within({ ...filter, limit: (limit as number | undefined) ?? MEMORY_TOOL_LIMITS.search.default }),
        );
      } catch (error) {
        if (HermesMemoryError.isInstance(error) && error.code === "INVALID_ARGUMENT") return { error: error.message };
        throw error;
      }
      return {
        results: hits.map((h) => ({
          id: h.id,
          content: h.content,
          kind: h.kind,
          score: h.score,
          created_at: h.createdAt,
          session_id: h.sessionId,
          ...(h.tags ? { tags: h.tags } : {}),
          ...(h.expiresAt ? { expires_at: h.expiresAt } : {}),
          scores: h.metadata.scores,
        })),
        count: hits.length,
      };
    },
    [REMEMBER_TOOL]: (a) => backend.rememberFact(String(a.content), Array.isArray(a.tags) ? (a.tags as string[]) : []),
    [FORGET_TOOL]: async (a) => {
      backend.assertOpen();
      const id = String(a.id);
      return (await backend.forget(scope.item(id))) ? { id, status: "forgotten" } : { error: `No memory item with id ${id}` };
    },
  });
}
