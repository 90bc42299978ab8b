import path from "node:path";
import type { Readable, Writable } from "node:stream";
import { parseArgs } from "node:util";
import { HermesMemoryError, defaultHermesHome, describeError, expandHome } from "@hermes/memory-core";
import { DEFAULT_MCP_HTTP_PORT, MCP_HTTP_HOST } from "./http.js";
import { streamLogger } from "./logger.js";
import { runMcpServer, type McpTransportName } from "./run.js";
import { ensureMcpToken } from "./token.js";
import { checkedUserId } from "./user-id.js";
import { MCP_VERSION } from "./version.js";

/** The process streams and environment `runMcpCli` works with. */
export interface McpCliIo {
  stdin: Readable;
  stdout: Writable;
  stderr: Writable;
  env: NodeJS.ProcessEnv;
  cwd: string;
}

/** The options shared by `hermes-memory-mcp` and `hermes-memory mcp`. */
export interface McpCommandOptions {
  transport?: string;
  port?: string | number;
  host?: string;
  provider?: string;
  sessionId?: string;
  /** The user the server acts for (`--user`). */
  user?: string;
  toolTimeout?: string | number;
  printToken?: boolean;
  /** Serve built-in memory when the configured provider cannot be loaded (`--allow-builtin-only`). */
  allowBuiltinOnly?: boolean;
  verbose?: boolean;
}

const USAGE = `Usage: hermes-memory-mcp [options]

Serve Hermes memory over MCP (the same as \`hermes-memory mcp\`).

Options:
  --transport <stdio|http>  transport (default: stdio)
  --port <n>                HTTP port on ${MCP_HTTP_HOST} (default: ${DEFAULT_MCP_HTTP_PORT}; 0 = any free port)
  --host <addr>             HTTP bind address; only ${MCP_HTTP_HOST} is accepted
  --hermes-home <dir>       Hermes home (default: $HERMES_HOME, else ~/.hermes)
  --cwd <dir>               working directory for project discovery (default: the current directory)
  --provider <name>         use this memory provider instead of memory.provider in config.yaml
  --allow-builtin-only      serve built-in memory when that provider cannot be loaded
                            (default: refuse to start, saying why)
  --session-id <id>         session id memory is opened with (default: mcp-<uuid>)
  --user <id>               act for this user only: the tools reach only this user's items
                            (default: every item of the home)
  --tool-timeout <ms>       bound for one tool call or resource read (default: 30000)
  --print-token             print the HTTP bearer token (creating it if needed) and exit
  --verbose                 log more to stderr
  -h, --help                show this help
  -V, --version             show the version
`;

function parseNumber(value: string | number | undefined, name: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  // Digits only: Number() would read "" as 0 and accept "1e3" or " 80 ".
  const n = typeof value === "number" ? value : /^\d{1,16}$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new HermesMemoryError({
      code: "INVALID_ARGUMENT",
      message: `--${name} must be an integer from ${min} to ${max} (got '${String(value)}').`,
    });
  }
  return n;
}

/**
 * Run the MCP server for a parsed command line until it stops. `hermesHome` and `cwd` are resolved
 * by the caller the way the CLI resolves them. With `printToken`, prints the HTTP bearer token to
 * stdout and returns without serving.
 */
export async function runMcpCommand(io: McpCliIo, hermesHome: string, cwd: string, options: McpCommandOptions): Promise<void> {
  // Every option is checked before anything happens, --print-token included.
  const port = parseNumber(options.port, "port", 0, 65535);
  const toolTimeoutMs = parseNumber(options.toolTimeout, "tool-timeout", 1, 3_600_000);
  if (options.user !== undefined) checkedUserId(options.user);
  const transport = (options.transport ?? "stdio") as McpTransportName;
  if (transport !== "stdio" && transport !== "http") {
    throw new HermesMemoryError({
      code: "INVALID_ARGUMENT",
      message: `--transport must be stdio or http (got '${String(options.transport)}').`,
    });
  }
  if (options.printToken) {
    io.stdout.write(`${await ensureMcpToken(hermesHome)}\n`);
    return;
  }
  if (transport === "stdio" && (options.port !== undefined || options.host !== undefined)) {
    throw new HermesMemoryError({
      code: "INVALID_ARGUMENT",
      message: "--port and --host apply to --transport http only; add --transport http or drop them.",
    });
  }
  const logger = streamLogger(io.stderr, { verbose: options.verbose === true });
  const running = await runMcpServer({
    hermesHome,
    cwd,
    transport,
    logger,
    stdin: io.stdin,
    stdout: io.stdout,
    ...(options.provider !== undefined ? { provider: options.provider } : {}),
    ...(options.allowBuiltinOnly === true ? { allowBuiltinOnly: true } : {}),
    ...(options.sessionId !== undefined ? { sessionId: options.sessionId } : {}),
    ...(options.user !== undefined ? { userId: options.user } : {}),
    ...(port !== undefined ? { port } : {}),
    ...(options.host !== undefined ? { host: options.host } : {}),
    ...(toolTimeoutMs !== undefined ? { toolTimeoutMs } : {}),
  });
  if (running.url)
    io.stderr.write(
      `hermes-memory mcp: listening on ${running.url} (bearer token: HERMES_MCP_TOKEN in ${path.join(hermesHome, ".env")}; print it with --print-token)\n`,
    );
  await running.closed;
}

/** `hermes-memory-mcp`: parse `args` (without node and script), serve, return the exit code. */
export async function runMcpCli(args: string[], io: McpCliIo): Promise<number> {
  try {
    const { values } = parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: {
        transport: { type: "string" },
        port: { type: "string" },
        host: { type: "string" },
        "hermes-home": { type: "string" },
        cwd: { type: "string" },
        provider: { type: "string" },
        "session-id": { type: "string" },
        user: { type: "string" },
        "tool-timeout": { type: "string" },
        "print-token": { type: "boolean" },
        "allow-builtin-only": { type: "boolean" },
        verbose: { type: "boolean" },
        help: { type: "boolean", short: "h" },
        version: { type: "boolean", short: "V" },
      },
    });
    if (values.help) {
      io.stdout.write(USAGE);
      return 0;
    }
    if (values.version) {
      io.stdout.write(`${MCP_VERSION}\n`);
      return 0;
    }
    const home = values["hermes-home"]?.trim();
    const hermesHome = home ? path.resolve(io.cwd, expandHome(home)) : defaultHermesHome(io.env);
    const cwd = values.cwd ? path.resolve(io.cwd, expandHome(values.cwd)) : io.cwd;
    await runMcpCommand(io, hermesHome, cwd, {
      ...(values.transport !== undefined ? { transport: values.transport } : {}),
      ...(values.port !== undefined ? { port: values.port } : {}),
      ...(values.host !== undefined ? { host: values.host } : {}),
      ...(values.provider !== undefined ? { provider: values.provider } : {}),
      ...(values["session-id"] !== undefined ? { sessionId: values["session-id"] } : {}),
      ...(values.user !== undefined ? { user: values.user } : {}),
      ...(values["tool-timeout"] !== undefined ? { toolTimeout: values["tool-timeout"] } : {}),
      printToken: values["print-token"] === true,
      allowBuiltinOnly: values["allow-builtin-only"] === true,
      verbose: values.verbose === true,
    });
    return 0;
  } catch (error) {
    const usage = error instanceof TypeError && "code" in error && String((error as { code: unknown }).code).startsWith("ERR_PARSE_ARGS");
    io.stderr.write(`hermes-memory-mcp: ${describeError(error)}${usage ? " (see --help)" : ""}\n`);
    return usage || HermesMemoryError.isInstance(error) ? 1 : 2;
  }
}
