/**
 * The model's memory tools: the schemas offered, each call routed to the provider that owns the
 * tool (bounded, scrubbed, its result escaped), and the built-in `memory` tool's committed writes
 * mirrored to the external provider.
 */
import { formatSeconds } from "./bounded-call.js";
import { describeProviderError as describeError } from "./plugin-describe.js";
import type { Logger } from "./logger.js";
import type { HookRunner } from "./manager-hooks.js";
import type { ProviderRegistry } from "./manager-registry.js";
import { BUILTIN_PROVIDER_NAME } from "./provider.js";
import type { MemoryProvider, MemoryWriteAction, MemoryWriteMetadata, MemoryWriteTarget, ToolCallOptions, ToolSchema } from "./provider.js";
import { escapeToolResult } from "./recall-escape.js";

const MIRRORED_ACTIONS: ReadonlySet<string> = new Set(["add", "replace", "remove"]);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function nonEmptyString(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

/**
 * Tool arguments are plain data from the model: only own properties count, so a `__proto__` key
 * (an own property after `JSON.parse`) or an inherited value can never steer the manager.
 */
function own(record: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

/**
 * A shallow copy holding only the own enumerable properties, with an ordinary prototype. An own
 * `__proto__` key stays a plain data property (spread defines properties, it never calls the
 * `__proto__` setter), and nothing inherited reaches a provider.
 */
function plainArgs(args: unknown): Record<string, unknown> {
  return isRecord(args) ? { ...args } : {};
}

function batchEntry(result: Record<string, unknown>, key: string, index: number): string | undefined {
  const map = own(result, key);
  if (Array.isArray(map)) return undefined;
  if (!isRecord(map)) return undefined;
  return nonEmptyString(own(map, String(index)));
}

/** Offers, routes and mirrors the model's memory tools (the rules are `MemoryManager`'s). */
export class ToolRouter {
  constructor(
    private readonly registry: ProviderRegistry,
    private readonly hooks: HookRunner,
    private readonly logger: Logger,
  ) {}

  /** Tool schemas of the offered providers, each tool once, from the provider that owns it. */
  getToolSchemas(): ToolSchema[] {
    const out: ToolSchema[] = [];
    const seen = new Set<string>();
    for (const provider of this.registry.offeredProviders()) {
      for (const schema of this.schemasOf(provider)) {
        if (seen.has(schema.name) || !this.registry.isRoutedTo(schema.name, provider)) continue;
        seen.add(schema.name);
        out.push(schema);
      }
    }
    return out;
  }

  /** One provider's readable schemas; none (with a warning) when `getToolSchemas()` throws. */
  private schemasOf(provider: MemoryProvider): ToolSchema[] {
    let schemas: unknown;
    try {
      schemas = this.hooks.measure(provider, "get_tool_schemas", () => provider.getToolSchemas());
    } catch (error) {
      this.hooks.logHookFailure(provider, "get_tool_schemas", describeError(error));
      return [];
    }
    let list: unknown[];
    try {
      list = Array.isArray(schemas) ? Array.from(schemas as unknown[]) : [];
    } catch (error) {
      this.hooks.logHookFailure(provider, "get_tool_schemas", describeError(error));
      return [];
    }
    const out: ToolSchema[] = [];
    for (const raw of list) {
      const schema = this.registry.readSchema(this.registry.nameOf(provider), raw, true);
      if (schema) out.push(schema);
    }
    return out;
  }

  /** Route a model tool call and escape its result; never throws. */
  async handleToolCall(name: string, args: Record<string, unknown>, options: ToolCallOptions): Promise<string> {
    return escapeToolResult(await this.routeToolCall(name, args, options));
  }

  private async routeToolCall(name: string, args: Record<string, unknown>, options: ToolCallOptions): Promise<string> {
    const provider = this.registry.routeFor(name);
    if (!provider) return JSON.stringify({ error: `No memory provider handles tool '${name}'` });
    const given = plainArgs(args);
    const builtinMemoryTool = name === "memory" && this.registry.nameOf(provider) === BUILTIN_PROVIDER_NAME;
    let callArgs = given;
    if (!builtinMemoryTool) {
      const scrubbed = this.hooks.scrub(given, `the arguments of tool '${name}'`);
      if (!scrubbed.ok)
        return JSON.stringify({ error: `Memory tool '${name}' arguments rejected: ${scrubbed.reason}. Pass flat, plain JSON arguments.` });
      callArgs = scrubbed.value;
    }
    const hook = `handle_tool_call(${name})`;
    const outcome = await this.hooks.callHook(provider, hook, () => provider.handleToolCall(name, callArgs, { ...options }));
    if (outcome.status === "timeout") {
      return JSON.stringify({
        error: `Memory tool '${name}' timed out after ${formatSeconds(outcome.timeoutMs)} (provider '${this.registry.nameOf(provider)}'); the call was abandoned, try again later.`,
      });
    }
    let result: string;
    try {
      if (outcome.status === "error") throw outcome.error;
      const raw: unknown = outcome.value;
      result = typeof raw === "string" ? raw : (JSON.stringify(raw ?? null) ?? "null");
    } catch (error) {
      const message = describeError(error);
      this.hooks.logHookFailure(provider, "handle_tool_call", message, undefined, hook);
      return JSON.stringify({ error: `Memory tool '${name}' failed: ${message}` });
    }
    if (builtinMemoryTool) await this.mirrorBuiltinToolCall(result, given, options);
    return result;
  }

  private async mirrorBuiltinToolCall(result: string, given: Record<string, unknown>, options: ToolCallOptions): Promise<void> {
    try {
      const sessionId = typeof options.sessionId === "string" && options.sessionId ? options.sessionId : undefined;
      await this.notifyMemoryToolWrite(result, given, {
        buildMetadata: () => ({ toolName: "memory", writeOrigin: "memory_tool", ...(sessionId ? { sessionId } : {}) }),
      });
    } catch (error) {
      this.logger.debug(`Mirroring built-in memory write failed: ${describeError(error)}`);
    }
  }

  /** Mirror one committed built-in write to every provider but the built-in one, scrubbed. */
  async onMemoryWrite(action: MemoryWriteAction, target: MemoryWriteTarget, content: string, metadata: MemoryWriteMetadata): Promise<void> {
    const scrubbed = this.hooks.scrub([content ?? "", plainArgs(metadata)] as const, "a mirrored memory write");
    if (!scrubbed.ok) return;
    const [safeContent, safeMetadata] = scrubbed.value;
    await this.hooks.fanOut(
      this.registry.list.filter((p) => this.registry.nameOf(p) !== BUILTIN_PROVIDER_NAME),
      "on_memory_write",
      (provider) => provider.onMemoryWrite(action, target, safeContent, { ...(safeMetadata as MemoryWriteMetadata) }),
    );
  }

  /** Mirror the writes of one built-in `memory` tool call (the rules are the manager's); never throws. */
  async notifyMemoryToolWrite(
    result: string | Record<string, unknown>,
    args: Record<string, unknown>,
    options: { buildMetadata?: () => MemoryWriteMetadata },
  ): Promise<void> {
    let parsed: unknown = result;
    if (typeof result === "string") {
      try {
        parsed = JSON.parse(result);
      } catch {
        return;
      }
    }
    if (!isRecord(parsed) || parsed.success !== true || parsed.staged === true) return;
    const toolArgs = plainArgs(args);
    const target = (nonEmptyString(own(toolArgs, "target")) ?? "memory") as MemoryWriteTarget;
    const operations = own(toolArgs, "operations");
    const batched = Array.isArray(operations) && operations.length > 0;
    const ops: unknown[] = batched ? (operations as unknown[]) : [toolArgs];

    for (let i = 0; i < ops.length; i++) {
      const op = ops[i];
      const opAction = isRecord(op) ? own(op, "action") : undefined;
      if (!isRecord(op) || typeof opAction !== "string" || !MIRRORED_ACTIONS.has(opAction)) continue;
      const action = opAction as MemoryWriteAction;
      try {
        const metadata = this.mirroredMetadata(parsed, op, action, batched ? i + 1 : null, options);
        const content = nonEmptyString(own(op, "content")) ?? nonEmptyString(own(op, "new_text")) ?? "";
        await this.onMemoryWrite(action, target, content, metadata);
      } catch (error) {
        this.logger.debug(`Mirroring memory ${action} (operation ${i + 1}) failed: ${describeError(error)}`);
      }
    }
  }

  /**
   * The metadata of one mirrored operation: the host's own (never its `previousContent`), the
   * operation's `old_text`, and the entry the committed result says was replaced or removed
   * (`batchIndex` is the 1-based operation index of a batched call, `null` for a single one).
   */
  private mirroredMetadata(
    result: Record<string, unknown>,
    op: Record<string, unknown>,
    action: MemoryWriteAction,
    batchIndex: number | null,
    options: { buildMetadata?: () => MemoryWriteMetadata },
  ): MemoryWriteMetadata {
    const metadata: MemoryWriteMetadata = { ...(options.buildMetadata?.() ?? {}) };
    delete metadata.previousContent;
    delete metadata.previous_content;
    const oldText = nonEmptyString(own(op, "old_text")) ?? nonEmptyString(own(op, "oldText"));
    if (oldText) metadata.oldText = oldText;
    if (action !== "add") {
      const previous =
        batchIndex !== null
          ? batchEntry(result, action === "replace" ? "replaced_entries" : "removed_entries", batchIndex)
          : nonEmptyString(own(result, action === "replace" ? "replaced_entry" : "removed_entry"));
      if (previous) metadata.previousContent = previous;
    }
    return metadata;
  }
}
