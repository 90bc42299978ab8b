import * as core from "@hermes/memory-core";

// Used only when the installed core predates RESERVED_CORE_TOOL_NAMES (the host's core tool set).
const FALLBACK_RESERVED = [
  "clarify", "delegate_task", "terminal", "process", "memory", "todo", "session_search", "read_file",
  "write_file", "patch", "search_files", "web_search", "web_extract", "browser_navigate", "browser_snapshot",
  "browser_click", "browser_type", "browser_scroll", "browser_back", "browser_press", "browser_close",
  "browser_get_images", "browser_vision", "execute_code", "skill_view", "skills_list", "skill_manage",
  "vision_analyze", "image_generate", "text_to_speech", "send_message", "cronjob", "mixture_of_agents",
];

/**
 * Tool names owned by the host's core tool set, which a provider tool can never shadow. Taken from
 * `@hermes/memory-core` when it exports `RESERVED_CORE_TOOL_NAMES`, so the kit follows the host.
 */
export function reservedToolNames(): ReadonlySet<string> {
  const fromCore = (core as Record<string, unknown>).RESERVED_CORE_TOOL_NAMES;
  if (fromCore instanceof Set) return fromCore as ReadonlySet<string>;
  return new Set(FALLBACK_RESERVED);
}
