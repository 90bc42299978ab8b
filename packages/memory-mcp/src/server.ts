import fs from "node:fs/promises";
import path from "node:path";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import {
  CallToolRequestSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  RequestSchema,
  type CallToolResult,
  type Resource,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import {
  BUILTIN_MEMORY_FILES,
  BUILTIN_PROVIDER_NAME,
  describeError,
  isSearchableMemory,
  scrubSecrets,
  searchCapabilities,
  silentLogger,
  type JsonSchema,
  type Logger,
  type MemoryItem,
  type MemoryKind,
  type MemoryManager,
  type MemorySearchOptions,
  type MemoryProvider,
  type SearchableMemory,
} from "@hermes/memory-core";
import { MEMORY_FILTER_TOOL_PROPERTIES, REMEMBER_TOOL_PROPERTIES, ToolRouter } from "@hermes/memory-provider-kit";
import { boundedProviderCall } from "./bounded.js";

/** Default upper bound for one tool call or resource read, in ms. */
export const DEFAULT_TOOL_TIMEOUT_MS = 30_000;

/** The URIs of the resources the server lists. */
export const RESOURCE_URIS = {
  memory: "hermes-memory://builtin/MEMORY.md",
  user: "hermes-memory://builtin/USER.md",
  stats: "hermes-memory://provider/stats",
} as const;

/** The tools added for a provider that implements `SearchableMemory`. */
export const SEARCHABLE_TOOL_NAMES = ["search", "remember", "forget"] as const;

/** Options of `createMemoryMcpServer`. */
export interface MemoryMcpServerOptions {
  /** The profile home the manager was opened with (where MEMORY.md and USER.md live). */
  hermesHome: string;
  /** The session id passed to `handleToolCall`. */
  sessionId: string;
  /** Upper bound for one tool call or resource read, in ms. Default 30000. */
  toolTimeoutMs?: number;
  logger?: Logger;
  /** The server's name and version announced to clients. */
  serverInfo?: { name: string; version: string };
}

const KINDS: readonly MemoryKind[] = ["turn", "fact", "checkpoint"];

const SEARCHABLE_TOOLS: Tool[] = [
  {
    name: "search",
    description: "Search the memory provider's store (past turns, facts, checkpoints) and return the best matches with their ids.",
    inputSchema: {
      type: "object",
      properties: {
        query: { type: "string", description: "What to look for, in plain words." },
        limit: { type: "integer", minimum: 1, maximum: 50, description: "Maximum number of hits (default 10)." },
        kind: { type: "string", enum: [...KINDS], description: "Only this kind of item." },
        sessionId: { type: "string", description: "Only items from this session." },
      },
      required: ["query"],
    },
  },
  {
    name: "remember",
    description: "Store a fact (or turn) in the memory provider so later sessions can recall it. Returns the new item's id.",
    inputSchema: {
      type: "object",
      properties: {
        ...REMEMBER_TOOL_PROPERTIES,
        kind: { type: "string", enum: [...KINDS], description: "Kind of item (default fact)." },
      },
      required: ["content"],
    },
  },
  {
    name: "forget",
    description: "Delete one item from the memory provider by the id `search` or `remember` returned.",
    inputSchema: {
      type: "object",
      properties: { id: { type: "string", description: "The item id." } },
      required: ["id"],
    },
  },
];

// `content` and `tags` of a remember call are checked against the same schema, and by the same
// validator, as the providers' own remember tools.
const REMEMBER_ARGS = new ToolRouter({
  owner: "the memory MCP server",
  schemas: [{ name: "remember", description: "content and tags of a remember call", parameters: { type: "object", properties: REMEMBER_TOOL_PROPERTIES } }],
});

// The filter keys a provider with the `filters` capability honours; `userId` stays out: the server
// answers for the home it was opened on, and a model must not read across users.
const { userId: _userFilter, ...FILTER_PROPERTIES } = MEMORY_FILTER_TOOL_PROPERTIES;
const EXTENDED_FILTER_KEYS = ["tags", "createdAt", "metadata"] as const;

/** The searchable tools as `provider` supports them: filters and expiry appear only when it declares them. */
function searchableTools(provider: SearchableMemory): Tool[] {
  const capabilities = searchCapabilities(provider);
  return SEARCHABLE_TOOLS.map((tool) => {
    const schema = tool.inputSchema as { properties: Record<string, unknown> };
    if (tool.name === "search" && capabilities.filters) {
      return { ...tool, inputSchema: { ...tool.inputSchema, properties: { ...schema.properties, ...FILTER_PROPERTIES } } };
    }
    if (tool.name === "remember" && capabilities.expiry) {
      const ttlMs = { type: "integer", minimum: 1, description: "Forget the item this many milliseconds from now." };
      const expiresAt = { type: "string", description: "Forget the item at this ISO 8601 time (instead of ttlMs)." };
      return { ...tool, inputSchema: { ...tool.inputSchema, properties: { ...schema.properties, ttlMs, expiresAt } } };
    }
    return tool;
  });
}

function objectSchema(parameters: unknown): Tool["inputSchema"] {
  if (typeof parameters !== "object" || parameters === null || Array.isArray(parameters)) return { type: "object", properties: {} };
  return { ...(parameters as JsonSchema), type: "object" } as Tool["inputSchema"];
}

function textResult(text: string, isError = false): CallToolResult {
  return isError ? { content: [{ type: "text", text }], isError: true } : { content: [{ type: "text", text }] };
}

function errorResult(message: string): CallToolResult {
  return textResult(JSON.stringify({ error: message }), true);
}

/** A manager tool result is an error when it is a JSON object with an `error` (and no `success: true`). */
function isErrorPayload(result: string): boolean {
  try {
    const parsed: unknown = JSON.parse(result);
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return false;
    const record = parsed as Record<string, unknown>;
    return record.error !== undefined && record.success !== true;
  } catch {
    return false;
  }
}

function stringArg(args: Record<string, unknown>, name: string, required: boolean): string | undefined {
  const value = args[name];
  if (value === undefined && !required) return undefined;
  if (typeof value !== "string" || (required && value.trim() === "")) {
    throw new ToolInputError(`'${name}' must be a${required ? " non-empty" : ""} string`);
  }
  return value;
}

function kindArg(args: Record<string, unknown>): MemoryKind | undefined {
  const kind = stringArg(args, "kind", false);
  if (kind !== undefined && !KINDS.includes(kind as MemoryKind)) throw new ToolInputError(`'kind' must be one of ${KINDS.join(", ")}`);
  return kind as MemoryKind | undefined;
}

class ToolInputError extends Error {}

/** The part of a zod schema `validRequest` uses (the SDK's request schemas are zod 4). */
interface RequestParser<T> {
  safeParse(data: unknown): { success: true; data: T } | { success: false; error: { issues: ReadonlyArray<{ path: readonly PropertyKey[]; message: string }> } };
}

/** What each method's params look like, for the -32602 message. */
const PARAMS_HINTS: Record<string, string> = {
  "tools/list": "params is optional: { cursor?: string }.",
  "resources/list": "params is optional: { cursor?: string }.",
  "resources/read": "Send params { uri: string } (resources/list gives the URIs).",
};

/**
 * `request` checked against `schema`. The SDK parses a request before its handler runs and reports a
 * failure as -32603 Internal error with a raw multi-line issue dump; here it is -32602 Invalid params
 * naming each bad field, as JSON-RPC prescribes for a caller's mistake.
 */
function validRequest<T>(schema: RequestParser<T>, request: { method: string }): T {
  const parsed = schema.safeParse(request);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.map(String).join(".") || "request"}: ${issue.message.replace(/expected record/g, "expected an object")}`)
    .join("; ");
  throw new McpError(ErrorCode.InvalidParams, `Invalid params for ${request.method}: ${problems}. ${PARAMS_HINTS[request.method] ?? ""}`.trim());
}

/** The request envelope alone for `schema`'s method: the transport already checked it, params are checked by `validRequest`. */
function envelope<S extends { shape: { method: Parameters<typeof RequestSchema.extend>[0][string] } }>(schema: S) {
  return RequestSchema.extend({ method: schema.shape.method as S["shape"]["method"] });
}

/** The active external provider when it implements `SearchableMemory`. */
export function searchableProvider(manager: MemoryManager): (MemoryProvider & SearchableMemory) | null {
  const provider = manager.providers.find((p) => p.name !== BUILTIN_PROVIDER_NAME && isSearchableMemory(p));
  return provider && isSearchableMemory(provider) ? provider : null;
}

/**
 * An MCP server over an open `MemoryManager`. Tools: every tool the manager routes (the built-in
 * `memory` tool and the active provider's tools) plus `search` / `remember` / `forget` when the
 * provider is a `SearchableMemory` (a provider tool of the same name wins). Resources: MEMORY.md,
 * USER.md and, for a searchable provider, its stats.
 *
 * Every call is bounded by `toolTimeoutMs` and isolated: a provider that throws or hangs yields an
 * MCP tool error (`isError: true`) and the server keeps serving. Connect it to a transport with
 * `server.connect(transport)`; the manager stays owned by the caller.
 */
export function createMemoryMcpServer(manager: MemoryManager, options: MemoryMcpServerOptions): McpServer {
  const logger = options.logger ?? silentLogger;
  const timeoutMs = options.toolTimeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS;
  const mcp = new McpServer(options.serverInfo ?? { name: "hermes-memory", version: "0.0.0" }, {
    capabilities: { tools: {}, resources: {} },
    instructions:
      "Persistent memory across sessions. Use the `memory` tool to save durable notes (target memory) and facts about the user (target user); use `search` to look up past conversations when the provider supports it.",
  });
  const server = mcp.server;

  const listTools = (): Tool[] => {
    const tools: Tool[] = manager.getToolSchemas().map((schema) => ({
      name: schema.name,
      description: schema.description,
      inputSchema: objectSchema(schema.parameters),
    }));
    const provider = searchableProvider(manager);
    if (provider) {
      for (const extra of searchableTools(provider)) if (!manager.hasTool(extra.name)) tools.push(extra);
    }
    return tools;
  };

  server.setRequestHandler(envelope(ListToolsRequestSchema), async (request) => {
    validRequest(ListToolsRequestSchema, request);
    return { tools: listTools() };
  });

  // The SDK's Server answers bad tools/call params itself (-32602) once the envelope got through;
  // the parse here still yields the arguments as the schema outputs them (no own `__proto__` key).
  server.setRequestHandler(envelope(CallToolRequestSchema), async (envelopeRequest): Promise<CallToolResult> => {
    const request = validRequest(CallToolRequestSchema, envelopeRequest);
    const name = request.params.name;
    const rawArgs: unknown = request.params.arguments ?? {};
    const args = typeof rawArgs === "object" && rawArgs !== null && !Array.isArray(rawArgs) ? (rawArgs as Record<string, unknown>) : {};
    try {
      if (manager.hasTool(name)) {
        const result = await boundedProviderCall(`Memory tool '${name}'`, timeoutMs, () =>
          manager.handleToolCall(name, args, { sessionId: options.sessionId }),
        );
        return textResult(result, isErrorPayload(result));
      }
      const provider = searchableProvider(manager);
      if (provider && (SEARCHABLE_TOOL_NAMES as readonly string[]).includes(name)) {
        return await callSearchable(provider, name as (typeof SEARCHABLE_TOOL_NAMES)[number], args, timeoutMs, options.sessionId);
      }
      return errorResult(`Unknown tool '${name}'. List the tools again: the active memory provider may have changed.`);
    } catch (error) {
      if (!(error instanceof ToolInputError)) logger.warn(`MCP tool '${name}' failed: ${describeError(error)}`);
      return errorResult(error instanceof ToolInputError ? `Invalid arguments for '${name}': ${error.message}` : describeError(error));
    }
  });

  server.setRequestHandler(envelope(ListResourcesRequestSchema), async (request) => {
    validRequest(ListResourcesRequestSchema, request);
    const resources: Resource[] = [
      { uri: RESOURCE_URIS.memory, name: "MEMORY.md", description: "The agent's notes (built-in memory).", mimeType: "text/markdown" },
      { uri: RESOURCE_URIS.user, name: "USER.md", description: "What the agent knows about the user (built-in memory).", mimeType: "text/markdown" },
    ];
    const provider = searchableProvider(manager);
    if (provider) {
      resources.push({ uri: RESOURCE_URIS.stats, name: `${provider.name} stats`, description: `Item counts and location of the '${provider.name}' memory store.`, mimeType: "application/json" });
    }
    return { resources };
  });

  server.setRequestHandler(envelope(ReadResourceRequestSchema), async (envelopeRequest) => {
    const uri = validRequest(ReadResourceRequestSchema, envelopeRequest).params.uri;
    if (uri === RESOURCE_URIS.memory || uri === RESOURCE_URIS.user) {
      const file = path.join(options.hermesHome, "memories", BUILTIN_MEMORY_FILES[uri === RESOURCE_URIS.memory ? "memory" : "user"]);
      const text = await fs.readFile(file, "utf8").catch((error: NodeJS.ErrnoException) => {
        if (error.code === "ENOENT") return "";
        throw new McpError(ErrorCode.InternalError, `Could not read ${file}: ${error.message}`);
      });
      return { contents: [{ uri, mimeType: "text/markdown", text }] };
    }
    const provider = searchableProvider(manager);
    if (uri === RESOURCE_URIS.stats && provider) {
      try {
        const stats = await boundedProviderCall(`Memory provider '${provider.name}' stats()`, timeoutMs, () => provider.stats());
        return { contents: [{ uri, mimeType: "application/json", text: JSON.stringify({ provider: provider.name, ...stats }, null, 2) }] };
      } catch (error) {
        logger.warn(`Reading ${uri} failed: ${describeError(error)}`);
        throw new McpError(ErrorCode.InternalError, `Could not read the '${provider.name}' stats: ${describeError(error)}`);
      }
    }
    throw new McpError(ErrorCode.InvalidParams, `Unknown resource '${uri}'. List the resources to see what this server offers.`);
  });

  return mcp;
}

async function callSearchable(
  provider: MemoryProvider & SearchableMemory,
  name: (typeof SEARCHABLE_TOOL_NAMES)[number],
  args: Record<string, unknown>,
  timeoutMs: number,
  sessionId: string,
): Promise<CallToolResult> {
  const label = `Memory provider '${provider.name}' ${name}()`;
  if (name === "search") {
    const query = scrubSecrets(stringArg(args, "query", true)!);
    const limit = args.limit === undefined ? 10 : args.limit;
    if (typeof limit !== "number" || !Number.isInteger(limit) || limit < 1 || limit > 50) throw new ToolInputError("'limit' must be an integer from 1 to 50");
    const session = stringArg(args, "sessionId", false);
    const options: MemorySearchOptions = { limit, ...(session ? { sessionId: session } : {}) };
    const capabilities = searchCapabilities(provider);
    if (capabilities.filters && Array.isArray(args.kind)) {
      options.kind = args.kind as MemoryKind[]; // the provider validates the list
    } else {
      const kind = kindArg(args);
      if (kind) options.kind = kind;
    }
    for (const key of EXTENDED_FILTER_KEYS) {
      if (args[key] === undefined) continue;
      if (!capabilities.filters) throw new ToolInputError(`'${key}' needs a provider that supports filters; '${provider.name}' does not`);
      (options as Record<string, unknown>)[key] = args[key]; // validated by the provider (INVALID_ARGUMENT)
    }
    const hits = await boundedProviderCall(label, timeoutMs, () => provider.search(query, options));
    return textResult(JSON.stringify({ hits }));
  }
  if (name === "remember") {
    // Everything leaving through a provider is scrubbed, like the manager does for its hooks.
    const content = stringArg(args, "content", true)!;
    const tags = args.tags === undefined ? undefined : args.tags;
    const invalid = REMEMBER_ARGS.validate("remember", { content, ...(tags === undefined ? {} : { tags }) });
    if (invalid) throw new ToolInputError(`${invalid} (longer text: split it into self-contained facts)`);
    const kind = kindArg(args) ?? "fact";
    const item: MemoryItem = { content: scrubSecrets(content), kind, sessionId, ...(tags ? { tags: tags as string[] } : {}) };
    for (const key of ["ttlMs", "expiresAt"] as const) {
      if (args[key] === undefined) continue;
      if (!searchCapabilities(provider).expiry) throw new ToolInputError(`'${key}' needs a provider that supports expiry; '${provider.name}' does not`);
      (item as unknown as Record<string, unknown>)[key] = args[key]; // validated by the provider (INVALID_ARGUMENT)
    }
    const id = await boundedProviderCall(label, timeoutMs, () => provider.remember(item));
    return textResult(JSON.stringify({ success: true, id }));
  }
  const id = stringArg(args, "id", true)!;
  const removed = await boundedProviderCall(label, timeoutMs, () => provider.forget(id));
  if (removed === true) return textResult(JSON.stringify({ success: true, id }));
  const error = `No item '${id}' in the '${provider.name}' memory store (already forgotten, or never stored); use search to find the ids of stored items.`;
  return textResult(JSON.stringify({ success: false, id, error }), true);
}
