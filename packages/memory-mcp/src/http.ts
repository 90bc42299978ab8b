import http from "node:http";
import type { AddressInfo } from "node:net";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { HermesMemoryError, describeError, silentLogger, type Logger } from "@hermes/memory-core";
import { bearerToken, mcpTokenProblem, tokensMatch } from "./token.js";

/** The only address the HTTP transport binds to. */
export const MCP_HTTP_HOST = "127.0.0.1";
/** The default port of the HTTP transport. */
export const DEFAULT_MCP_HTTP_PORT = 7437;
/** The endpoint path of the HTTP transport. */
export const MCP_HTTP_PATH = "/mcp";

/** Options of `startMcpHttpServer`. */
export interface McpHttpServerOptions {
  /** Builds a fresh MCP server for one request (the transport is stateless). */
  createServer: () => McpServer;
  /** The bearer token every request must present. */
  token: string;
  /** Port on 127.0.0.1; `0` picks a free one. Default 7437. */
  port?: number;
  /** Must be `127.0.0.1` (the default): the server never listens beyond this machine. */
  host?: string;
  /** Extra browser origins allowed besides the server's own (`http://127.0.0.1:<port>`, `http://localhost:<port>`). */
  allowedOrigins?: string[];
  logger?: Logger;
  /**
   * Longest time a client may take to send one whole request, headers and body (default 30 s;
   * Node's own default is 300 s). A client that trickles a body is cut off after it.
   */
  requestTimeoutMs?: number;
  /** Longest time a client may take to send the headers of a request (default 10 s). */
  headersTimeoutMs?: number;
  /** Most connections open at once (default 256); further ones are closed at once. */
  maxConnections?: number;
}

/** Defaults of the HTTP server's limits (see `McpHttpServerOptions`). */
export const MCP_HTTP_LIMITS = { requestTimeoutMs: 30_000, headersTimeoutMs: 10_000, maxConnections: 256 } as const;

/** A running HTTP transport. */
export interface McpHttpServer {
  /** `http://127.0.0.1:<port>/mcp` */
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Refuse anything but the loopback address: the token is the only protection of the endpoint. */
export function assertLoopbackHost(host: string | undefined): string {
  const chosen = host ?? MCP_HTTP_HOST;
  if (chosen !== MCP_HTTP_HOST) {
    throw new HermesMemoryError({
      code: "INVALID_ARGUMENT",
      message: `The MCP HTTP transport only binds to ${MCP_HTTP_HOST} (got '${chosen}'); drop --host or pass --host ${MCP_HTTP_HOST}. Put a reverse proxy in front of it if it must be reached from elsewhere.`,
    });
  }
  return chosen;
}

/**
 * Refuse a request. The connection is closed after the answer: the request body was not read, and
 * keeping the connection alive would make Node read (and discard) whatever the client keeps sending.
 */
function reply(res: http.ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  if (res.headersSent) return;
  res.writeHead(status, { "content-type": "application/json", connection: "close", ...headers });
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }));
}

/** Why the server could not listen, as a typed error saying what to do; other errors pass through. */
function listenError(error: NodeJS.ErrnoException, host: string, port: number): Error {
  if (error.code === "EADDRINUSE") {
    return new HermesMemoryError({
      code: "PORT_IN_USE",
      message: `The MCP HTTP transport cannot listen on ${host}:${port}: port ${port} is already in use (another hermes-memory mcp, or another program). Stop that program, or choose another port with --port <n> (--port 0 picks a free one).`,
      cause: error,
    });
  }
  if (error.code === "EACCES") {
    return new HermesMemoryError({
      code: "PORT_NOT_PERMITTED",
      message: `The MCP HTTP transport is not allowed to listen on ${host}:${port} (ports below 1024 need privileges). Choose another port with --port <n>, e.g. --port ${DEFAULT_MCP_HTTP_PORT}.`,
      cause: error,
    });
  }
  return error;
}

/**
 * Serve MCP over Streamable HTTP on 127.0.0.1 (stateless, JSON responses). Each request must come
 * with `Authorization: Bearer <token>` (401 otherwise), a `Host` of this server and, when a browser
 * sends one, an `Origin` of this server or `allowedOrigins` (403 otherwise) — so a web page cannot
 * reach the endpoint through DNS rebinding. Only `POST /mcp` is served.
 */
export async function startMcpHttpServer(options: McpHttpServerOptions): Promise<McpHttpServer> {
  const host = assertLoopbackHost(options.host);
  const logger = options.logger ?? silentLogger;
  const tokenProblem = mcpTokenProblem(String(options.token ?? ""));
  if (tokenProblem) {
    throw new HermesMemoryError({
      code: "INVALID_ARGUMENT",
      message: `The MCP HTTP transport's bearer token ${tokenProblem}; use ensureMcpToken(hermesHome).`,
    });
  }
  let port = options.port ?? DEFAULT_MCP_HTTP_PORT;

  const allowed = (): { hosts: Set<string>; origins: Set<string> } => ({
    hosts: new Set([`${MCP_HTTP_HOST}:${port}`, `localhost:${port}`]),
    origins: new Set([`http://${MCP_HTTP_HOST}:${port}`, `http://localhost:${port}`, ...(options.allowedOrigins ?? [])]),
  });

  // A loopback client sends a request in milliseconds; holding sockets open for Node's 300 s
  // default would let one slow or stuck client pile up connections.
  const limit = (name: keyof typeof MCP_HTTP_LIMITS): number => {
    const value = options[name] ?? MCP_HTTP_LIMITS[name];
    if (!Number.isInteger(value) || value < 1) {
      throw new HermesMemoryError({
        code: "INVALID_ARGUMENT",
        message: `startMcpHttpServer: ${name} must be a positive integer, got ${String(value)}.`,
      });
    }
    return value;
  };
  const requestTimeout = limit("requestTimeoutMs");
  const headersTimeout = Math.min(limit("headersTimeoutMs"), requestTimeout);
  const maxConnections = limit("maxConnections");

  // Node checks those timeouts every `connectionsCheckingInterval` (30 s by default).
  const server = http.createServer(
    { requestTimeout, headersTimeout, connectionsCheckingInterval: Math.min(1_000, Math.ceil(headersTimeout / 2)) },
    (req, res) => {
      void handle(req, res).catch((error: unknown) => {
        logger.error(`MCP HTTP request failed: ${describeError(error)}`);
        reply(res, 500, "Internal error");
      });
    },
  );

  server.maxConnections = maxConnections;

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const { hosts, origins } = allowed();
    if (!hosts.has(String(req.headers.host ?? "").toLowerCase())) return reply(res, 403, "Forbidden: unexpected Host header");
    const origin = req.headers.origin;
    if (origin !== undefined && !origins.has(origin)) return reply(res, 403, "Forbidden: origin not allowed");
    const presented = bearerToken(req.headers.authorization);
    if (presented === null || !tokensMatch(presented, options.token)) {
      return reply(res, 401, "Unauthorized: send Authorization: Bearer <HERMES_MCP_TOKEN from $HERMES_HOME/.env>", {
        "www-authenticate": 'Bearer realm="hermes-memory"',
      });
    }
    const url = new URL(req.url ?? "/", `http://${MCP_HTTP_HOST}`);
    if (url.pathname !== MCP_HTTP_PATH) return reply(res, 404, `Not found: the MCP endpoint is ${MCP_HTTP_PATH}`);
    if (req.method !== "POST") return reply(res, 405, "Method not allowed: this stateless endpoint serves POST only", { allow: "POST" });

    const mcp = options.createServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on("close", () => {
      void transport.close().catch(() => {});
      void mcp.close().catch(() => {});
    });
    await mcp.connect(transport);
    await transport.handleRequest(req, res);
  }

  await new Promise<void>((resolve, reject) => {
    const refused = (error: NodeJS.ErrnoException): void => reject(listenError(error, host, port));
    server.once("error", refused);
    server.listen(port, host, () => {
      server.off("error", refused);
      resolve();
    });
  });
  port = (server.address() as AddressInfo).port;
  return {
    url: `http://${MCP_HTTP_HOST}:${port}${MCP_HTTP_PATH}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
