/**
 * The `memory` tool the model calls to edit MEMORY.md / USER.md: its schema and its dispatch.
 * Validation order, result messages and the per-turn failure cap match the Python agent's tool,
 * so a model sees the same answers from either host.
 */
import { describeError } from "../errors.js";
import type { ToolSchema } from "../provider.js";
import type { BuiltinMemoryStore, MemoryToolResult } from "./memory-store.js";
import { isConsolidationFailure } from "./memory-store.js";

/** Name of the built-in memory tool. */
export const MEMORY_TOOL_NAME = "memory";

/** More consecutive consolidation failures than this in one turn trip the cap. */
export const MEMORY_FAILURE_CAP = 3;

/** The `memory` tool schema (bare OpenAI function form). */
export const MEMORY_TOOL_SCHEMA: ToolSchema = Object.freeze({
  name: MEMORY_TOOL_NAME,
  description:
    "Save durable facts to your persistent memory, shown to you at the start of every future session. " +
    "Two stores: target='user' for who the user is (preferences, role, communication style, names) and " +
    "target='memory' for your own notes (environment facts, project conventions, procedures that worked). " +
    "Save proactively, in this priority: user preferences > environment facts > procedures. " +
    "Do NOT save trivial or task-progress details (what you are doing right now, one-off results). " +
    "Prefer ONE call with `operations` to apply several changes at once (all-or-nothing); use " +
    "action='replace'/'remove' with old_text (a short unique substring of the entry) to consolidate " +
    "when a store is near its character limit. A successful result is final: do not repeat the call.",
  parameters: {
    type: "object",
    properties: {
      action: {
        type: "string",
        enum: ["add", "replace", "remove"],
        description: "Single-operation form: what to do. Omit when using `operations`.",
      },
      target: {
        type: "string",
        enum: ["memory", "user"],
        description: "'user' = the user profile (USER.md); 'memory' = your notes (MEMORY.md).",
      },
      content: {
        type: "string",
        description: "The entry text for 'add', or the new text for 'replace'.",
      },
      old_text: {
        type: "string",
        description: "For 'replace'/'remove': a short substring that identifies exactly one existing entry.",
      },
      operations: {
        type: "array",
        description: "Batched form: several operations on the same target, applied in order, all-or-nothing.",
        items: {
          type: "object",
          properties: {
            action: { type: "string", enum: ["add", "replace", "remove"] },
            content: { type: "string" },
            old_text: { type: "string" },
          },
          required: ["action"],
        },
      },
    },
    required: ["target"],
  },
}) as ToolSchema;

/** Returned when the built-in store is missing (disabled or not initialised). */
export const MEMORY_UNAVAILABLE_RESULT: Readonly<MemoryToolResult> = Object.freeze({
  error: "Memory is not available. It may be disabled in config or this environment.",
  success: false,
});

function nonEmptyString(value: unknown): value is string {
  return typeof value === "string" && value.trim() !== "";
}

/**
 * Dispatches `memory` tool calls to a `BuiltinMemoryStore` and enforces the per-turn failure cap:
 * after more than `MEMORY_FAILURE_CAP` consecutive over-budget / no-match failures in one turn,
 * every further failure returns a terminal "stop retrying" result. A success or `resetTurn()`
 * (at turn start) clears the count.
 */
export class MemoryToolDispatcher {
  private failures = 0;

  constructor(private readonly store: BuiltinMemoryStore | null) {}

  /** Called at the start of each turn. */
  resetTurn(): void {
    this.failures = 0;
  }

  /** Consecutive consolidation failures so far in this turn. */
  get consecutiveFailures(): number {
    return this.failures;
  }

  /** Handle one call; returns the result object (never throws). */
  async call(args: Record<string, unknown> | null | undefined): Promise<MemoryToolResult> {
    let result: MemoryToolResult;
    try {
      result = await this.dispatch(args ?? {});
    } catch (error) {
      result = { success: false, error: `Memory write failed: ${describeError(error)}` };
    }
    if (result.success === true) {
      this.failures = 0;
    } else if (isConsolidationFailure(result)) {
      this.failures++;
      if (this.failures > MEMORY_FAILURE_CAP) {
        return {
          success: false,
          done: true,
          error: `Memory consolidation failed ${this.failures} times this turn. Stop retrying memory calls — leave memory unchanged for now and continue with your reply to the user. The fact can be saved in a later turn.`,
        };
      }
    }
    return result;
  }

  /** `call` serialised to the JSON string a tool result must be. */
  async callJson(args: Record<string, unknown> | null | undefined): Promise<string> {
    return JSON.stringify(await this.call(args));
  }

  private async dispatch(args: Record<string, unknown>): Promise<MemoryToolResult> {
    const store = this.store;
    if (!store) return { ...MEMORY_UNAVAILABLE_RESULT };
    const target = args.target;
    if (target !== "memory" && target !== "user") {
      return { success: false, error: `Invalid target '${String(target ?? "")}'. Use 'memory' or 'user'.` };
    }
    if (args.operations !== undefined && args.operations !== null) {
      if (!Array.isArray(args.operations)) {
        return { success: false, error: "operations must be a list of {action, content?, old_text?} objects." };
      }
      return store.applyBatch(target, args.operations);
    }
    const action = args.action;
    if (action === "add" && !nonEmptyString(args.content)) {
      return { success: false, error: "Content is required for 'add' action." };
    }
    if ((action === "replace" || action === "remove") && !nonEmptyString(args.old_text)) {
      const entries = await store.entries(target);
      return {
        success: false,
        error: `'${action}' needs old_text -- a short unique substring of the entry to ${action}. None was provided. Reissue the ${action} with old_text set to part of one of the current_entries below.`,
        current_entries: store.sanitizedEntries(target, entries),
        usage: store.usageText(target, entries),
      };
    }
    if (action === "replace" && !nonEmptyString(args.content)) {
      return { success: false, error: "content is required for 'replace' action." };
    }
    switch (action) {
      case "add":
        return store.add(target, args.content as string);
      case "replace":
        return store.replace(target, args.old_text as string, args.content as string);
      case "remove":
        return store.remove(target, args.old_text as string);
      default:
        return { success: false, error: `Unknown action '${String(action ?? "")}'. Use: add, replace, remove` };
    }
  }
}
