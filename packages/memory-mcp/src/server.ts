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
  silentLogger,
  type JsonSchema,
  type Logger,
  type MemoryManager,
  type MemoryProvider,
  type SearchableMemory,
} from "@hermes/memory-core";
import { ToolUserScope } from "@hermes/memory-provider-kit";
import { boundedProviderCall } from "./bounded.js";
import { toolJson, toolText } from "./tool-result.js";
import type { McpStartupStatus } from "./startup.js";
import {
  SEARCHABLE_TOOL_NAMES,
  ToolInputError,
  callSearchable,
  searchableActionOf,
  searchableTools,
  type SearchableToolName,
} from "./searchable-tools.js";

/** Default upper bound for one tool call or resource read, in ms. */
export const DEFAULT_TOOL_TIMEOUT_MS = 30_000;

/** The URIs of the resources the server lists. */
export const RESOURCE_URIS = {
  memory: "hermes-memory://builtin/MEMORY.md",
  user: "hermes-memory://builtin/USER.md",
  stats: "hermes-memory://provider/stats",
  status: "hermes-memory://status",
} as const;

/** Options of `createMemoryMcpServer`. */
export interface MemoryMcpServerOptions {
  /** The profile home the manager was opened with (where MEMORY.md and USER.md live). */
  hermesHome: string;
  /** The session id passed to `handleToolCall`. */
  sessionId: string;
  /**
   * The user every generic tool acts for: `search` finds only this user's items, `remember` stores
   * items as theirs, and `get` / `forget` answer for another user's id exactly as for an id never
   * used. Open the manager with the same `userId` (`openMemory({ userId })`) so the providers' own
   * tools and hooks act for the same user. Absent: the tools reach every item of the home.
   */
  userId?: string;
  /** Upper bound for one tool call or resource read, in ms. Default 30000. */
  toolTimeoutMs?: number;
  logger?: Logger;
  /** The server's name and version announced to clients. */
  serverInfo?: { name: string; version: string };
  /**
   * Which provider the server was asked to serve and, when another one runs, why (the status
   * resource reports it). Absent: the active provider counts as the configured one.
   */
  startup?: McpStartupStatus;
}

function objectSchema(parameters: unknown): Tool["inputSchema"] {
  if (typeof parameters !== "object" || parameters === null || Array.isArray(parameters)) return { type: "object", properties: {} };
  return { ...(parameters as JsonSchema), type: "object" } as Tool["inputSchema"];
}

function errorResult(message: string): CallToolResult {
  return toolJson({ error: message }, true);
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

/** The part of a zod schema `validRequest` uses (the SDK's request schemas are zod 4). */
interface RequestParser<T> {
  safeParse(
    data: unknown,
  ): { success: true; data: T } | { success: false; error: { issues: ReadonlyArray<{ path: readonly PropertyKey[]; message: string }> } };
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
  throw new McpError(
    ErrorCode.InvalidParams,
    `Invalid params for ${request.method}: ${problems}. ${PARAMS_HINTS[request.method] ?? ""}`.trim(),
  );
}

/** The request envelope alone for `schema`'s method: the transport already checked it, params are checked by `validRequest`. */
function envelope<S extends { shape: { method: Parameters<typeof RequestSchema.extend>[0][string] } }>(schema: S) {
  return RequestSchema.extend({ method: schema.shape.method as S["shape"]["method"] });
}

type Searchable = MemoryProvider & SearchableMemory;

/** The active external provider when it implements `SearchableMemory`. */
export function searchableProvider(manager: MemoryManager): Searchable | null {
  const provider = manager.providers.find((p) => p.name !== BUILTIN_PROVIDER_NAME && isSearchableMemory(p));
  return provider && isSearchableMemory(provider) ? provider : null;
}

/**
 * An MCP server over an open `MemoryManager`, with one tool per action. Tools: every tool the
 * manager routes (the built-in `memory` tool and the active provider's tools) and, when the provider
 * is a `SearchableMemory`, the generic `search` / `remember` / `forget` / `get`, which then replace
 * the provider's own tools for the same actions (see `searchableActionOf`). Resources: MEMORY.md,
 * USER.md and, for a searchable provider, its stats.
 *
 * With `userId`, the generic tools act only within that user's items. Every call is bounded by
 * `toolTimeoutMs` and isolated: a provider that throws or hangs yields an MCP tool error
 * (`isError: true`) and the server keeps serving. Connect it to a transport with
 * `server.connect(transport)`; the manager stays owned by the caller.
 */
export function createMemoryMcpServer(manager: MemoryManager, options: MemoryMcpServerOptions): McpServer {
  const logger = options.logger ?? silentLogger;
  const timeoutMs = options.toolTimeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS;
  const degraded = options.startup?.reason
    ? ` Note: the configured memory provider '${options.startup.configuredProvider ?? "(unknown)"}' is not active (${options.startup.reason}); only built-in memory is served. Read ${RESOURCE_URIS.status} for details.`
    : "";
  const mcp = new McpServer(options.serverInfo ?? { name: "hermes-memory", version: "0.0.0" }, {
    capabilities: { tools: {}, resources: {} },
    instructions: `Persistent memory across sessions. Use the \`memory\` tool to save durable notes (target memory) and facts about the user (target user); use \`search\` to look up past conversations when the provider supports it.${degraded}`,
  });
  const server = mcp.server;

  // The built-in provider's tools (core's own) are never taken for a provider's copy of a generic tool.
  const builtinTools = new Set((manager.getProvider(BUILTIN_PROVIDER_NAME)?.getToolSchemas() ?? []).map((schema) => schema.name));
  const duplicateOf = (tool: string, provider: Searchable | null): SearchableToolName | null =>
    provider && !builtinTools.has(tool) ? searchableActionOf(tool, provider.name) : null;
  const scope = { timeoutMs, sessionId: options.sessionId, users: new ToolUserScope(options.userId) };

  // The store's counts cover every user of the home: a server for one user does not offer them.
  const statsProvider = (): Searchable | null => (options.userId === undefined ? searchableProvider(manager) : null);

  const listTools = (): Tool[] => {
    const provider = searchableProvider(manager);
    const tools: Tool[] = manager
      .getToolSchemas()
      .filter((schema) => duplicateOf(schema.name, provider) === null)
      .map((schema) => ({ name: schema.name, description: schema.description, inputSchema: objectSchema(schema.parameters) }));
    if (provider) tools.push(...searchableTools(provider));
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
      const provider = searchableProvider(manager);
      if (provider && (SEARCHABLE_TOOL_NAMES as readonly string[]).includes(name)) {
        return await callSearchable(provider, name as SearchableToolName, args, scope);
      }
      const generic = duplicateOf(name, provider);
      if (generic)
        return errorResult(`Unknown tool '${name}': this server offers '${generic}' for that action; list the tools to see them.`);
      if (manager.hasTool(name)) {
        const result = await boundedProviderCall(`Memory tool '${name}'`, timeoutMs, () =>
          manager.handleToolCall(name, args, { sessionId: options.sessionId }),
        );
        // handleToolCall returns its result escaped already (core escapeToolResult).
        return toolText(result, isErrorPayload(result));
      }
      return errorResult(`Unknown tool '${name}'. List the tools again: the active memory provider may have changed.`);
    } catch (error) {
      if (!(error instanceof ToolInputError)) logger.warn(`MCP tool '${name}' failed: ${describeError(error)}`);
      return errorResult(error instanceof ToolInputError ? `Invalid arguments for '${name}': ${error.message}` : describeError(error));
    }
  });

  server.setRequestHandler(envelope(ListResourcesRequestSchema), async (request) => {
    validRequest(ListResourcesRequestSchema, request);
    return { resources: resourceList(statsProvider()) };
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
    if (uri === RESOURCE_URIS.status) {
      return { contents: [{ uri, mimeType: "application/json", text: JSON.stringify(statusReport(manager, options), null, 2) }] };
    }
    const provider = statsProvider();
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

/** The resources offered: MEMORY.md, USER.md, the status report and, for `provider` (a searchable provider whose counts this server may show), its stats. */
function resourceList(provider: Searchable | null): Resource[] {
  const resources: Resource[] = [
    { uri: RESOURCE_URIS.memory, name: "MEMORY.md", description: "The agent's notes (built-in memory).", mimeType: "text/markdown" },
    {
      uri: RESOURCE_URIS.user,
      name: "USER.md",
      description: "What the agent knows about the user (built-in memory).",
      mimeType: "text/markdown",
    },
    {
      uri: RESOURCE_URIS.status,
      name: "memory status",
      description: "The configured and the active memory provider, why they differ, and the user served.",
      mimeType: "application/json",
    },
  ];
  if (provider) {
    resources.push({
      uri: RESOURCE_URIS.stats,
      name: `${provider.name} stats`,
      description: `Item counts and location of the '${provider.name}' memory store.`,
      mimeType: "application/json",
    });
  }
  return resources;
}

/** What `hermes-memory://status` reports. */
function statusReport(manager: MemoryManager, options: MemoryMcpServerOptions): Record<string, unknown> {
  const active = manager.providers.find((p) => p.name !== BUILTIN_PROVIDER_NAME)?.name ?? BUILTIN_PROVIDER_NAME;
  const startup = options.startup;
  return {
    configuredProvider: startup ? startup.configuredProvider : active,
    ...(startup ? { configuredBy: startup.configuredBy } : {}),
    activeProvider: active,
    ...(startup?.reason ? { reason: startup.reason } : {}),
    userId: options.userId ?? null,
    hermesHome: options.hermesHome,
  };
}
