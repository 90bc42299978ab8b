import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { escapeRecalledJson } from "@hermes/memory-core";

/**
 * A tool result whose text is already safe for a model to read: what `MemoryManager.handleToolCall`
 * returns has passed core's `escapeToolResult` (no stored text in it reads as a tag).
 */
export function toolText(text: string, isError = false): CallToolResult {
  const content: CallToolResult["content"] = [{ type: "text", text }];
  return isError ? { content, isError: true } : { content };
}

/**
 * `payload` as a JSON tool result. Results carry recalled memory, which is data: no stored text may
 * read as a tag that closes a fence the client's host put around it, so every tag opener is written
 * as a `\u` escape (`escapeRecalledJson`; a JSON parser reads back the same value).
 */
export function toolJson(payload: unknown, isError = false): CallToolResult {
  return toolText(escapeRecalledJson(JSON.stringify(payload)), isError);
}
