import { jsonSchema, tool, type ToolSet } from "ai";
import { describeError, type JsonSchema, type MemoryManager } from "@hermes/memory-core";
import { checkSessionOption, readSessionId } from "./middleware.js";

/** Options of `memoryTools`. */
export interface MemoryToolsOptions {
  /** The conversation the tool calls belong to (a string, or a getter read at every call). */
  sessionId?: string | (() => string);
}

const EMPTY_OBJECT_SCHEMA: JsonSchema = { type: "object", properties: {} };

function objectSchema(parameters: unknown): JsonSchema {
  if (typeof parameters !== "object" || parameters === null || Array.isArray(parameters)) return EMPTY_OBJECT_SCHEMA;
  const schema = parameters as JsonSchema;
  // The AI SDK hands tool input schemas to the model as-is; models require an object at the root.
  return schema.type === undefined ? { ...schema, type: "object" } : schema;
}

/**
 * The manager's tools (the built-in `memory` tool and the active provider's tools) as an AI SDK
 * tool set. Every `execute` routes through `manager.handleToolCall`, so arguments are scrubbed,
 * built-in writes are mirrored to the external provider and a failing provider becomes a JSON
 * `{"error": …}` result for the model instead of an exception. The set is read once, when called:
 * call it again after the active provider changes.
 */
export function memoryTools(manager: MemoryManager, options: MemoryToolsOptions = {}): ToolSet {
  checkSessionOption(options.sessionId, "memoryTools", true);
  const tools: ToolSet = {};
  for (const schema of manager.getToolSchemas()) {
    const name = schema.name;
    tools[name] = tool<Record<string, unknown>, string>({
      description: schema.description ?? `Memory tool ${name}`,
      inputSchema: jsonSchema<Record<string, unknown>>(objectSchema(schema.parameters) as Parameters<typeof jsonSchema>[0]),
      execute: async (input) => {
        let sessionId: string | undefined;
        try {
          sessionId = options.sessionId === undefined ? undefined : readSessionId(options.sessionId);
        } catch (error) {
          // Like every other failure of a memory tool: a JSON error result for the model, not a throw.
          return JSON.stringify({ error: `Memory tool '${name}' not run: ${describeError(error)}` });
        }
        return manager.handleToolCall(name, input ?? {}, sessionId ? { sessionId } : {});
      },
    });
  }
  return tools;
}
