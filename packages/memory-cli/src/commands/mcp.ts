import { Option, type Command } from "commander";
import { DEFAULT_MCP_HTTP_PORT, MCP_HTTP_HOST, runMcpCommand, type McpCommandOptions } from "@hermes/memory-mcp";
import type { CliIo } from "../cli-io.js";
import { withContext } from "../with-context.js";

/**
 * Add `mcp`: serve memory over MCP. Memory is opened from the same profile home, config and
 * provider as every other command (`--hermes-home`, `--cwd`, config.yaml `memory.provider`). The
 * command returns only after the server stopped and memory was flushed.
 */
export function registerMcpCommand(program: Command, io: CliIo): void {
  program
    .command("mcp")
    .description("serve memory to MCP clients (Claude Desktop, Claude Code, Cursor) over stdio or HTTP on 127.0.0.1")
    .addOption(new Option("--transport <transport>", "transport").choices(["stdio", "http"]).default("stdio"))
    .option("--port <port>", `HTTP port on ${MCP_HTTP_HOST} (0 = any free port; default ${DEFAULT_MCP_HTTP_PORT})`)
    .option("--host <address>", `HTTP bind address; only ${MCP_HTTP_HOST} is accepted`)
    .option("--provider <name>", "use this memory provider instead of memory.provider in config.yaml")
    .option("--allow-builtin-only", "serve built-in memory when that provider cannot be loaded (default: refuse to start, saying why)")
    .option("--session-id <id>", "session id memory is opened with (default: mcp-<uuid>)")
    .option("--user <id>", "act for this user only: the tools reach only this user's items (default: every item of the home)")
    .option("--tool-timeout <ms>", "bound for one tool call or resource read (default 30000)")
    .option("--print-token", "print the HTTP bearer token (created on first use in $HERMES_HOME/.env) and exit")
    .option("--verbose", "log more to stderr")
    .action(
      withContext(io, async (ctx, options: McpCommandOptions) => {
        await runMcpCommand(io, ctx.hermesHome, ctx.cwd, options);
      }),
    );
}
