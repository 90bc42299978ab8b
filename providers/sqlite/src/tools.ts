import { Ajv, type ValidateFunction } from "ajv";
import { describeError, type MemoryKind, type ToolSchema } from "@hermes/memory-core";
import { clampLimit, MEMORY_KINDS, type StoredItem } from "./memory-store.js";

/** Tool names (prefixed so they never clash with other providers' or core tools). */
export const TOOL_NAMES = {
  search: "sqlite_memory_search",
  remember: "sqlite_memory_remember",
  forget: "sqlite_memory_forget",
  list: "sqlite_memory_list",
} as const;

const kindSchema = { type: "string", enum: [...MEMORY_KINDS], description: "Only items of this kind: turn, fact or checkpoint." };

/** The four tool schemas, in the bare OpenAI function form. */
export const TOOL_SCHEMAS: ToolSchema[] = [
  {
    name: TOOL_NAMES.search,
    description:
      "Search long-term memory (past conversation turns, saved facts, compression checkpoints) by keywords. Returns the best matches with their ids.",
    parameters: {
      type: "object",
      properties: {
        query: { type: "string", minLength: 1, description: "What to look for, in plain words." },
        limit: { type: "integer", minimum: 1, maximum: 50, description: "Most results to return (default 10)." },
        kind: kindSchema,
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
        content: { type: "string", minLength: 1, maxLength: 20000, description: "The fact, self-contained." },
        tags: { type: "array", items: { type: "string", maxLength: 64 }, maxItems: 16, description: "Optional labels." },
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

/** What the tools need from the provider. */
export interface ToolBackend {
  search(query: string, options: { limit: number; kind?: MemoryKind }): Array<{ id: string; kind: MemoryKind; content: string; score: number; sessionId?: string; createdAt: string }>;
  rememberFact(content: string, tags: string[]): string;
  forget(id: string): boolean;
  list(options: { limit: number; kind?: MemoryKind }): StoredItem[];
}

let validators: Map<string, ValidateFunction> | undefined;

function validatorFor(name: string): ValidateFunction | undefined {
  if (!validators) {
    const ajv = new Ajv({ allErrors: true, strict: false });
    validators = new Map(TOOL_SCHEMAS.map((s) => [s.name, ajv.compile(s.parameters)]));
  }
  return validators.get(name);
}

/** JSON error string in the shape every tool returns on failure. */
export function toolError(message: string): string {
  return JSON.stringify({ error: message });
}

/**
 * Run one tool call: validate `args` against the tool's schema, then execute it against `backend`.
 * Always returns a JSON string; never throws (errors become `{"error": "..."}`).
 */
export function runTool(name: string, args: unknown, backend: ToolBackend | undefined): string {
  try {
    const validate = validatorFor(name);
    if (!validate) return toolError(`unknown tool: ${name}`);
    const input = args ?? {};
    if (!validate(input)) {
      const detail = (validate.errors ?? [])
        .map((e) => `${e.instancePath || "arguments"} ${e.message ?? "is invalid"}`.trim())
        .join("; ");
      return toolError(`invalid arguments for ${name}: ${detail}`);
    }
    if (!backend) return toolError("sqlite memory is not initialised; the database could not be opened (see the agent log)");
    const a = input as Record<string, unknown>;
    switch (name) {
      case TOOL_NAMES.search: {
        const results = backend
          .search(String(a.query), { limit: clampLimit(a.limit, 10, 50), ...(a.kind ? { kind: a.kind as MemoryKind } : {}) })
          .map((h) => ({ id: h.id, kind: h.kind, content: h.content, score: round(h.score), sessionId: h.sessionId, createdAt: h.createdAt }));
        return JSON.stringify({ results, count: results.length });
      }
      case TOOL_NAMES.remember: {
        const content = String(a.content).trim();
        if (!content) return toolError("content must not be empty");
        const id = backend.rememberFact(content, (a.tags as string[] | undefined) ?? []);
        return JSON.stringify({ ok: true, id });
      }
      case TOOL_NAMES.forget: {
        const id = String(a.id);
        return backend.forget(id) ? JSON.stringify({ ok: true, id }) : toolError(`no memory item with id ${id}`);
      }
      case TOOL_NAMES.list: {
        const items = backend
          .list({ limit: clampLimit(a.limit, 20, 100), ...(a.kind ? { kind: a.kind as MemoryKind } : {}) })
          .map((i) => ({ id: i.id, kind: i.kind, content: i.content, tags: i.tags, sessionId: i.sessionId, createdAt: i.createdAt }));
        return JSON.stringify({ items, count: items.length });
      }
      default:
        return toolError(`unknown tool: ${name}`);
    }
  } catch (error) {
    return toolError(describeError(error));
  }
}

function round(n: number): number {
  return Math.round(n * 1e4) / 1e4;
}
