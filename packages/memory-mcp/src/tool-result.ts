import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { escapeRecalledJson, escapeRecalledText } from "@hermes/memory-core";

/**
 * A tool result as the client's model reads it. Results carry recalled memory, which is data: no
 * stored text may read as a tag that closes a fence the client's host put around it. JSON results
 * have every tag opener written as a `\u` escape (a JSON parser reads back the same value); other
 * text has the opener of anything tag-like written as `&lt;`.
 */
export function toolText(text: string, isError = false): CallToolResult {
  const safe = isJson(text) ? escapeRecalledJson(text) : escapeRecalledText(text);
  const content: CallToolResult["content"] = [{ type: "text", text: safe }];
  return isError ? { content, isError: true } : { content };
}

/** `payload` as a JSON tool result (see `toolText`). */
export function toolJson(payload: unknown, isError = false): CallToolResult {
  return toolText(JSON.stringify(payload), isError);
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
