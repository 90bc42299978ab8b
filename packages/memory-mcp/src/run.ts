import { randomUUID } from "node:crypto";
import type { Readable, Writable } from "node:stream";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { HermesMemoryError, describeError, type Logger, type MemoryManager } from "@hermes/memory-core";
import { boundedProviderCall } from "./bounded.js";
import { DEFAULT_MCP_HTTP_PORT, startMcpHttpServer, type McpHttpServer } from "./http.js";
import { createMemoryMcpServer, searchableProvider, DEFAULT_TOOL_TIMEOUT_MS } from "./server.js";
import { answerStartupFailure, openServedMemory } from "./startup.js";
import { createStdioTransport } from "./stdio.js";
import { checkedUserId } from "./user-id.js";
import { ensureMcpToken, MCP_TOKEN_ENV } from "./token.js";
import { MCP_VERSION } from "./version.js";

/** The transports `runMcpServer` can serve. */
export type McpTransportName = "stdio" | "http";

/** Options of `runMcpServer`. */
export interface RunMcpServerOptions {
  /** Profile home, already resolved (`--hermes-home`, else `HERMES_HOME`, else `~/.hermes`). */
  hermesHome: string;
  /** Workspace for project plugins and discovery. Default `process.cwd()`. */
  cwd?: string;
  /** Use this provider instead of `memory.provider` in config.yaml. */
  provider?: string;
  /**
   * Serve built-in memory when the configured provider cannot be loaded (the status resource says
   * why). Default `false`: the server does not start, and over stdio answers `initialize` with the
   * reason and the fix.
   */
  allowBuiltinOnly?: boolean;
  /** Default `stdio`. */
  transport?: McpTransportName;
  /** HTTP only: port on 127.0.0.1 (default 7437, `0` = any free port). */
  port?: number;
  /** HTTP only: must be 127.0.0.1. */
  host?: string;
  /** HTTP only: extra browser origins allowed. */
  allowedOrigins?: string[];
  /** The session id memory is opened with. Default `mcp-<uuid>`. */
  sessionId?: string;
  /**
   * The user the server acts for: passed to `openMemory` (the providers' sessions have it) and
   * confining every generic tool to that user's items. Absent: the tools reach every item of the
   * home, as the `hermes-memory` CLI does.
   */
  userId?: string;
  /** Bound for one tool call or resource read, in ms. Default 30000. */
  toolTimeoutMs?: number;
  /** Bound for flushing and shutting down memory at exit, in ms. Default 10000. */
  shutdownTimeoutMs?: number;
  /** stdio transport streams (default: the process's). */
  stdin?: Readable;
  stdout?: Writable;
  /** Where warnings go (never stdout: under stdio it carries the protocol). */
  logger: Logger;
  /** Flush and stop on SIGINT/SIGTERM. Default `true`. */
  handleSignals?: boolean;
}

/** A running server. */
export interface RunningMcpServer {
  manager: MemoryManager;
  transport: McpTransportName;
  /** HTTP only: the endpoint URL. */
  url?: string;
  /** Flush memory, shut the providers down and stop serving. Idempotent. */
  close(): Promise<void>;
  /** Resolves after the server stopped (stdin closed, a signal, or `close()`). */
  closed: Promise<void>;
}

/** How much longer than one tool call stopping waits for the answers of calls still running (ms). */
const DRAIN_MARGIN_MS = 1_000;

/** Default bound for the flush and shutdown at exit (ms). */
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 10_000;

/**
 * Open memory with `openMemory()` exactly as the CLI does (profile home, config.yaml,
 * `memory.provider` or `provider`) and serve it over MCP. With stdio, closing stdin stops the
 * server; with HTTP, the endpoint binds to 127.0.0.1 and requires the bearer token stored as
 * `HERMES_MCP_TOKEN` in `$HERMES_HOME/.env` (created on first use). Before stopping — on
 * SIGINT/SIGTERM, stdin close or `close()` — queued writes are flushed and the providers shut
 * down, bounded by `shutdownTimeoutMs` so a stuck provider cannot keep the process alive.
 */
export async function runMcpServer(options: RunMcpServerOptions): Promise<RunningMcpServer> {
  const transportName = options.transport ?? "stdio";
  if (transportName !== "stdio" && transportName !== "http") {
    throw new HermesMemoryError({
      code: "INVALID_ARGUMENT",
      message: `Unknown MCP transport '${String(transportName)}'; use --transport stdio (default) or --transport http.`,
    });
  }
  const logger = options.logger;
  const userId = options.userId === undefined ? undefined : checkedUserId(options.userId);
  const sessionId = options.sessionId ?? `mcp-${randomUUID()}`;
  const toolTimeoutMs = options.toolTimeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS;
  const shutdownTimeoutMs = options.shutdownTimeoutMs ?? DEFAULT_SHUTDOWN_TIMEOUT_MS;

  // Fail on a bad host or an unwritable token before any provider is opened.
  const token = transportName === "http" ? await ensureMcpToken(options.hermesHome) : "";

  const opened = await openForServing(options, transportName, sessionId, userId);
  const { manager, startup } = opened;

  const serverOptions = {
    hermesHome: options.hermesHome,
    sessionId,
    toolTimeoutMs,
    logger,
    serverInfo: { name: "hermes-memory", version: MCP_VERSION },
    startup,
    ...(userId !== undefined ? { userId } : {}),
  };
  let http: McpHttpServer | null = null;
  let stopTransport: () => Promise<void> = async () => {};
  let resolveClosed!: () => void;
  const closed = new Promise<void>((resolve) => (resolveClosed = resolve));

  let closing: Promise<void> | null = null;
  const close = (): Promise<void> => {
    // Assigned before any work starts: stopping the transport fires its onclose, which calls
    // close() again and must get this same promise back.
    closing ??= (async () => {
      await Promise.resolve();
      removeSignalHandlers();
      await stopTransport().catch((error: unknown) => logger.warn(`Stopping the MCP transport failed: ${describeError(error)}`));
      await flushAndShutdown(manager, shutdownTimeoutMs, logger);
      resolveClosed();
    })();
    return closing;
  };

  const onSignal = (signal: NodeJS.Signals): void => {
    logger.info(`Received ${signal}; flushing memory and stopping`);
    void close();
  };
  const removeSignalHandlers = (): void => {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  };
  if (options.handleSignals !== false) {
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
  }

  try {
    if (transportName === "stdio") {
      stopTransport = await serveStdio(createMemoryMcpServer(manager, serverOptions), options, toolTimeoutMs, close);
    } else {
      http = await startMcpHttpServer({
        createServer: () => createMemoryMcpServer(manager, serverOptions),
        token,
        port: options.port ?? DEFAULT_MCP_HTTP_PORT,
        ...(options.host !== undefined ? { host: options.host } : {}),
        ...(options.allowedOrigins ? { allowedOrigins: options.allowedOrigins } : {}),
        logger,
      });
      const server = http;
      stopTransport = () => server.close();
    }
  } catch (error) {
    await close();
    throw error;
  }

  logger.info(
    `MCP server ready (${transportName}${http ? ` at ${http.url}; bearer token: ${MCP_TOKEN_ENV} in ${options.hermesHome}/.env` : ""})`,
  );
  return { manager, transport: transportName, ...(http ? { url: http.url } : {}), close, closed };
}

/**
 * Open memory as `runMcpServer` serves it. When the configured provider cannot be used (and
 * built-in memory only was not accepted), a stdio client's `initialize` is answered with the reason
 * before the error is thrown, so the client shows it.
 */
async function openForServing(
  options: RunMcpServerOptions,
  transportName: McpTransportName,
  sessionId: string,
  userId: string | undefined,
): ReturnType<typeof openServedMemory> {
  try {
    return await openServedMemory(
      {
        sessionId,
        hermesHome: options.hermesHome,
        cwd: options.cwd ?? process.cwd(),
        platform: "mcp",
        agentContext: "primary",
        logger: options.logger,
        ...(options.provider !== undefined ? { provider: options.provider } : {}),
        ...(userId !== undefined ? { userId } : {}),
      },
      { allowBuiltinOnly: options.allowBuiltinOnly === true, logger: options.logger },
    );
  } catch (error) {
    if (transportName === "stdio" && HermesMemoryError.isInstance(error)) {
      await answerStartupFailure(options.stdin ?? process.stdin, options.stdout ?? process.stdout, error, options.logger);
    }
    throw error;
  }
}

/**
 * Connect `mcp` to stdin/stdout; `close` runs when stdin ends, the transport closes or stdout fails.
 * Returns how to stop the transport: stop reading, let every request already received be answered,
 * then close.
 */
async function serveStdio(
  mcp: McpServer,
  options: RunMcpServerOptions,
  toolTimeoutMs: number,
  close: () => Promise<void>,
): Promise<() => Promise<void>> {
  const logger = options.logger;
  const transport = createStdioTransport(options.stdin ?? process.stdin, options.stdout ?? process.stdout, logger);
  transport.onclose = () => void close();
  transport.oninputend = () => void close();
  // The client closed its end of stdout (EPIPE): nothing can be answered any more, so stop
  // like on stdin close (flushing memory) instead of dying on an unhandled 'error' event.
  transport.onoutputgone = (error) => {
    logger.warn(`Cannot write to stdout (${describeError(error)}); the MCP client is gone, stopping`);
    void close();
  };
  await mcp.connect(transport);
  return async () => {
    // Every call already running ends within toolTimeoutMs (a timeout is an answer too), so
    // this bound lets each request received before the stop be answered.
    transport.stopInput();
    const bound = toolTimeoutMs + DRAIN_MARGIN_MS;
    if (!(await transport.drain(bound))) {
      logger.warn(
        `Stopping after ${bound} ms with ${transport.pendingRequests} MCP request(s) unanswered or answers not yet written to stdout`,
      );
    }
    await mcp.close();
  };
}

/** Wait for queued writes, flush a searchable provider, then shut every provider down — bounded. */
async function flushAndShutdown(manager: MemoryManager, timeoutMs: number, logger: Logger): Promise<void> {
  try {
    await manager.flushPending(timeoutMs);
    const provider = searchableProvider(manager);
    if (provider) await boundedProviderCall(`Memory provider '${provider.name}' flush()`, timeoutMs, () => provider.flush());
  } catch (error) {
    logger.warn(`Flushing memory before exit failed: ${describeError(error)}`);
  }
  try {
    await boundedProviderCall("Memory shutdown", timeoutMs, () => manager.shutdownAll());
  } catch (error) {
    logger.warn(`Shutting memory down failed: ${describeError(error)}`);
  }
}
