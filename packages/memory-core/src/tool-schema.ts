import type { ToolSchema } from "./provider.js";

/**
 * Tool names owned by the host agent's core tool set. An external memory provider can never
 * route or advertise a tool with one of these names: core tools always win, and a duplicate name
 * makes strict model APIs reject the whole request. The list must match the host agent's core
 * tool names exactly. The built-in provider is exempt because it legitimately owns `memory`.
 */
export const RESERVED_CORE_TOOL_NAMES: ReadonlySet<string> = new Set([
  "clarify",
  "delegate_task",
  "terminal",
  "process",
  "memory",
  "todo",
  "session_search",
  "read_file",
  "write_file",
  "patch",
  "search_files",
  "web_search",
  "web_extract",
  "browser_navigate",
  "browser_snapshot",
  "browser_click",
  "browser_type",
  "browser_scroll",
  "browser_back",
  "browser_press",
  "browser_close",
  "browser_get_images",
  "browser_vision",
  "execute_code",
  "skill_view",
  "skills_list",
  "skill_manage",
  "vision_analyze",
  "image_generate",
  "text_to_speech",
  "send_message",
  "cronjob",
  "mixture_of_agents",
]);

function isPlainRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Bring a provider's tool schema into the bare `{name, description, parameters}` form, or return
 * `null` when it cannot be advertised. Accepts the wrapped OpenAI form
 * `{type: "function", function: {...}}` and unwraps it. A schema without a non-empty string `name`
 * yields `null` — advertising a nameless (often double-wrapped) tool makes strict providers reject
 * the whole request (#47707). Called at registration and whenever schemas are listed. Never
 * mutates its input (extra keys are kept on a copy; a missing `description` becomes `""` and
 * missing `parameters` an empty object schema). Throws only what reading the schema throws (a
 * getter or Proxy trap of provider code): the manager catches it and skips the schema, naming
 * the error.
 */
export function normalizeToolSchema(schema: unknown): ToolSchema | null {
  if (!isPlainRecord(schema)) return null;
  let candidate: Record<string, unknown> = schema;
  if (schema.type === "function" && isPlainRecord(schema.function)) candidate = schema.function;
  const name = candidate.name;
  if (typeof name !== "string" || name.trim() === "") return null;
  return {
    ...candidate,
    name,
    description: typeof candidate.description === "string" ? candidate.description : "",
    parameters: isPlainRecord(candidate.parameters) ? candidate.parameters : { type: "object", properties: {} },
  };
}
