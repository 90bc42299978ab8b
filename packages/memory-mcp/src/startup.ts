import path from "node:path";
import type { Readable, Writable } from "node:stream";
import { ErrorCode, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import {
  BUILTIN_PROVIDER_NAME,
  HermesMemoryError,
  describeError,
  isCoreMemoryProvider,
  openMemory,
  readConfig,
  type Logger,
  type MemoryManager,
  type OpenMemoryOptions,
} from "@hermes/memory-core";
import { createStdioTransport } from "./stdio.js";

/** Which provider the server was asked to serve, and why another one runs when they differ. */
export interface McpStartupStatus {
  /** The provider asked for (`builtin` for built-in memory only); `null` when config.yaml could not be read. */
  configuredProvider: string | null;
  /** Where that came from: `--provider`, or `memory.provider in <home>/config.yaml`. */
  configuredBy: string;
  /** Why the configured provider is not the active one; absent when it is. */
  reason?: string;
}

/** What `openServedMemory` needs besides `openMemory`'s own options. */
export interface ServedMemoryOptions {
  /** Serve built-in memory when the configured provider cannot be used, instead of failing. */
  allowBuiltinOnly: boolean;
  logger: Logger;
}

/**
 * Open memory for the server. The configured provider must load: any failure (not installed, not
 * available, failed to initialise, config.yaml invalid) is thrown as a typed error whose message
 * names the provider, says why and how to fix it — unless `allowBuiltinOnly`, which serves built-in
 * memory instead and keeps the reason for the status resource.
 */
export async function openServedMemory(
  open: OpenMemoryOptions & { hermesHome: string; cwd: string },
  served: ServedMemoryOptions,
): Promise<{ manager: MemoryManager; startup: McpStartupStatus }> {
  const configured = await configuredProvider(open.hermesHome, open.provider);
  try {
    return { manager: await openMemory({ ...open, strict: true }), startup: configured };
  } catch (error) {
    if (!HermesMemoryError.isInstance(error)) throw error;
    if (!served.allowBuiltinOnly) throw startupFailure(error, configured, open.cwd);
    served.logger.warn(`${describeError(error)} Serving built-in memory only (--allow-builtin-only).`);
    const manager = await openMemory({ ...open, provider: BUILTIN_PROVIDER_NAME, strict: false });
    return { manager, startup: { ...configured, reason: describeError(error) } };
  }
}

async function configuredProvider(hermesHome: string, explicit: string | undefined): Promise<McpStartupStatus> {
  const named = (name: string): string => (isCoreMemoryProvider(name) ? BUILTIN_PROVIDER_NAME : name.trim());
  if (explicit !== undefined) return { configuredProvider: named(explicit), configuredBy: "--provider" };
  const configuredBy = `memory.provider in ${path.join(hermesHome, "config.yaml")}`;
  try {
    return { configuredProvider: named((await readConfig(hermesHome)).memory.provider), configuredBy };
  } catch {
    return { configuredProvider: null, configuredBy };
  }
}

/** The error an MCP client shows: what was asked for, core's reason and fix, and the ways out. */
function startupFailure(error: HermesMemoryError, configured: McpStartupStatus, cwd: string): HermesMemoryError {
  const asked = configured.configuredProvider === null ? "" : ` '${configured.configuredProvider}' (${configured.configuredBy})`;
  // MCP clients pick the working directory, and packages are discovered from it.
  const where =
    error.code === "PROVIDER_NOT_FOUND"
      ? ` MCP clients start this server in a directory of their choosing (here ${cwd}); pass --cwd <project> when the provider is installed in a project.`
      : "";
  return new HermesMemoryError({
    code: error.code,
    message: `Cannot serve the configured memory provider${asked}: ${describeError(error)}${where} To serve only the built-in memory (MEMORY.md / USER.md), pass --allow-builtin-only.`,
    cause: error,
  });
}

/** How long a server that failed to start waits for the client's `initialize` to answer it (ms). */
export const STARTUP_FAILURE_ANSWER_MS = 10_000;

/**
 * Answer the client's requests with `error` until it has sent `initialize` (or stdin ends, or
 * `waitMs` passed), then stop reading. An MCP client that sees the server exit before answering
 * reports only "connection closed" and leaves the reason in a log file; an error answer to
 * `initialize` is what it shows the user. Nothing is awaited on a terminal: no client is there.
 */
export async function answerStartupFailure(
  stdin: Readable,
  stdout: Writable,
  error: HermesMemoryError,
  logger: Logger,
  waitMs = STARTUP_FAILURE_ANSWER_MS,
): Promise<void> {
  if ((stdin as { isTTY?: boolean }).isTTY) return;
  const transport = createStdioTransport(stdin, stdout, logger);
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, waitMs);
    timer.unref();
    const done = (): void => {
      clearTimeout(timer);
      resolve();
    };
    transport.oninputend = done;
    transport.onoutputgone = done;
    transport.onmessage = (message) => {
      const request = message as { id?: string | number; method?: unknown };
      if (typeof request.method !== "string" || request.id === undefined) return;
      const reply = {
        jsonrpc: "2.0",
        id: request.id,
        error: { code: ErrorCode.InternalError, message: error.message, data: { code: error.code } },
      } as unknown as JSONRPCMessage;
      void transport.send(reply).then(() => {
        if (request.method === "initialize") done();
      });
    };
    void transport.start();
  });
  transport.stopInput();
  await transport.drain(1_000);
  await transport.close();
}
