// The minimal provider with a forget tool beside its search tool: a correct one (the item is looked
// up by id and the session's user together, so another user's id is answered like an unknown one)
// and the ways a provider crosses the user boundary, one mistake each.
import type { ToolSchema } from "@hermes/memory-core";
import { MinimalProvider } from "./minimal-provider.js";

const FORGET_TOOL = "minimal_forget";

export class ForgetToolProvider extends MinimalProvider {
  override getToolSchemas(): ToolSchema[] {
    return [
      ...super.getToolSchemas(),
      {
        name: FORGET_TOOL,
        description: "Forget one item by the id a search returned.",
        parameters: { type: "object", properties: { id: { type: "string", minLength: 1 } }, required: ["id"], additionalProperties: false },
      },
    ];
  }

  override handleToolCall(toolName: string, args: Record<string, unknown>): string {
    if (toolName !== FORGET_TOOL) return super.handleToolCall(toolName, args);
    if (typeof args?.id !== "string") return JSON.stringify({ error: "id must be a string" });
    return JSON.stringify(this.forgetFor(args.id) ? { ok: true, id: args.id } : { error: `no item with id ${args.id}` });
  }

  /** Delete the session user's item with `id`: one look-up with both conditions. */
  protected forgetFor(id: string): boolean {
    const index = this.items.findIndex((i) => i.id === id && this.reaches(i.userId));
    if (index < 0) return false;
    this.items.splice(index, 1);
    this.scheduleWrite();
    return true;
  }

  /** Whether the session's tools reach an item of `owner`. */
  protected reaches(owner: string | undefined): boolean {
    return this.userId === undefined || owner === this.userId;
  }
}

/** Its search tool searches every user's items, not the session user's. */
export class LeakySearchToolProvider extends MinimalProvider {
  override handleToolCall(toolName: string, args: Record<string, unknown>): string {
    if (toolName !== "minimal_search" || typeof args?.query !== "string") return super.handleToolCall(toolName, args);
    return JSON.stringify({ results: this.search(args.query, { limit: 5 }).map((h) => h.content) });
  }
}

/** Its forget tool deletes the item with the id, whoever's it is (answering like the correct one). */
export class UnscopedForgetToolProvider extends ForgetToolProvider {
  protected override reaches(): boolean {
    return true;
  }
}

/** Its forget tool keeps another user's item, but says it exists: an existence oracle. */
export class OracleForgetToolProvider extends ForgetToolProvider {
  override handleToolCall(toolName: string, args: Record<string, unknown>): string {
    const item = toolName === FORGET_TOOL ? this.items.find((i) => i.id === args?.id) : undefined;
    if (item && item.userId !== this.userId) return JSON.stringify({ error: "that item belongs to another user" });
    return super.handleToolCall(toolName, args);
  }
}

/** Stores through a remember tool as well: a provider whose tools are all a host has (no SearchableMemory declared). */
export class ToolsOnlyProvider extends ForgetToolProvider {
  override getToolSchemas(): ToolSchema[] {
    return [
      ...super.getToolSchemas(),
      {
        name: "minimal_remember",
        description: "Save a note for later sessions.",
        parameters: { type: "object", properties: { content: { type: "string", minLength: 1 } }, required: ["content"], additionalProperties: false },
      },
    ];
  }

  override handleToolCall(toolName: string, args: Record<string, unknown>): string {
    if (toolName !== "minimal_remember") return super.handleToolCall(toolName, args);
    if (typeof args?.content !== "string" || args.content.trim() === "") return JSON.stringify({ error: "content must be text" });
    return JSON.stringify({ ok: true, id: this.remember({ content: args.content, kind: "fact" }) });
  }
}

/** The tools-only provider with a search tool that searches every user's items. */
export class LeakyToolsOnlyProvider extends ToolsOnlyProvider {
  override handleToolCall(toolName: string, args: Record<string, unknown>): string {
    if (toolName !== "minimal_search" || typeof args?.query !== "string") return super.handleToolCall(toolName, args);
    return JSON.stringify({ results: this.search(args.query, { limit: 5 }).map((h) => h.content) });
  }
}
