import type { ToolSchema } from "@hermes/memory-core";
import { MEMORY_FILTER_TOOL_PROPERTIES, REMEMBER_TOOL_PROPERTIES, ToolRouter } from "@hermes/memory-provider-kit";

/** Tool names this provider offers. */
export const SEARCH_TOOL = "vector_memory_search";
export const REMEMBER_TOOL = "vector_memory_remember";
export const FORGET_TOOL = "vector_memory_forget";

/** The tool schemas (bare OpenAI function form). */
export const VECTOR_TOOL_SCHEMAS: ToolSchema[] = [
  {
    name: SEARCH_TOOL,
    description:
      "Search long-term vector memory (past conversation turns, stored facts and checkpoints) by meaning and keywords. Use when the user refers to something discussed before or you need prior context.",
    parameters: {
      type: "object",
      properties: {
        query: { type: "string", minLength: 1, description: "What to look for, in natural language." },
        limit: { type: "integer", minimum: 1, maximum: 50, description: "Maximum results (default 8)." },
        ...MEMORY_FILTER_TOOL_PROPERTIES,
        session_only: { type: "boolean", description: "Only items from the current session (instead of sessionId)." },
      },
      required: ["query"],
      additionalProperties: false,
    },
  },
  {
    name: REMEMBER_TOOL,
    description: "Store a durable fact in long-term vector memory so it can be recalled in later sessions.",
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
    name: FORGET_TOOL,
    description: "Delete one item from long-term vector memory by the id a search returned.",
    parameters: {
      type: "object",
      properties: { id: { type: "string", minLength: 1, description: "Item id from vector_memory_search." } },
      required: ["id"],
      additionalProperties: false,
    },
  },
];

/** Validates and routes this provider's tool calls. */
export const VECTOR_TOOL_ROUTER = new ToolRouter({ owner: "Provider vector", schemas: VECTOR_TOOL_SCHEMAS });
