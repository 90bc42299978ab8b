import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { escapeToolResult } from "@hermes/memory-core";

/**
 * A tool result as the client's model reads it. Results carry recalled memory, which is data: no
 * stored text may read as a tag that closes a fence the client's host put around it
 * (`escapeToolResult`: JSON keeps its parsed value, tag openers become `\u` escapes).
 */
export function toolText(text: string, isError = false): CallToolResult {
  const content: CallToolResult["content"] = [{ type: "text", text: escapeToolResult(text) }];
  return isError ? { content, isError: true } : { content };
}

/** `payload` as a JSON tool result (see `toolText`). */
export function toolJson(payload: unknown, isError = false): CallToolResult {
  return toolText(JSON.stringify(payload), isError);
}
