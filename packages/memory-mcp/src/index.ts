/**
 * @hermes/memory-mcp — Hermes memory as an MCP server: the memory tools, search / remember / forget / get
 * for searchable providers, and MEMORY.md / USER.md / provider stats / status as resources, over stdio or
 * Streamable HTTP on 127.0.0.1.
 */
export { createMemoryMcpServer, DEFAULT_TOOL_TIMEOUT_MS, RESOURCE_URIS, type MemoryMcpServerOptions } from "./server.js";
export { SEARCHABLE_TOOL_NAMES, searchableActionOf, type SearchableToolName } from "./searchable-tools.js";
export {
  startMcpHttpServer,
  MCP_HTTP_HOST,
  MCP_HTTP_PATH,
  DEFAULT_MCP_HTTP_PORT,
  MCP_HTTP_LIMITS,
  type McpHttpServer,
  type McpHttpServerOptions,
} from "./http.js";
export { type McpStartupStatus } from "./startup.js";
export {
  runMcpServer,
  DEFAULT_SHUTDOWN_TIMEOUT_MS,
  type RunMcpServerOptions,
  type RunningMcpServer,
  type McpTransportName,
} from "./run.js";
export { runMcpCli, runMcpCommand, type McpCliIo, type McpCommandOptions } from "./cli.js";
export { ensureMcpToken, MCP_TOKEN_ENV, MIN_MCP_TOKEN_LENGTH } from "./token.js";
export { MCP_VERSION } from "./version.js";
