import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { expect, vi } from "vitest";

/** The package folder, and the file its `bin` points at (built by `pnpm build`). */
export const PACKAGE_DIR = fileURLToPath(new URL("../..", import.meta.url));
const manifest = JSON.parse(fs.readFileSync(path.join(PACKAGE_DIR, "package.json"), "utf8")) as { bin: Record<string, string> };
export const BIN = path.join(PACKAGE_DIR, manifest.bin["hermes-memory-mcp"]!);

/** The test process's environment without `HERMES_HOME`, so only `--hermes-home` picks the profile. */
export function childEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== "HERMES_HOME") env[k] = v;
  return env;
}

/**
 * The built binary on the MCP SDK's stdio client transport, as an MCP client starts it:
 * `--hermes-home <home>` then `args`, the environment without `HERMES_HOME`. `stderr()` is what the
 * server wrote there so far.
 */
export function binTransport(home: string, args: string[]): { transport: StdioClientTransport; stderr: () => string } {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, "--hermes-home", home, ...args],
    cwd: PACKAGE_DIR,
    env: childEnv(),
    stderr: "pipe",
  });
  let err = "";
  transport.stderr?.on("data", (chunk: Buffer) => (err += chunk.toString("utf8")));
  return { transport, stderr: () => err };
}

/** One JSON-RPC message as the server wrote it. */
export interface WireMessage {
  jsonrpc?: string;
  id?: unknown;
  result?: { tools?: Array<{ name: string }>; isError?: boolean; content?: Array<{ text: string }>; contents?: Array<{ text: string }> };
  error?: { code: number; message: string };
}

/** The built binary on raw stdio: write lines, read the JSON lines it answers. */
export class RawStdioServer {
  readonly child: ChildProcessWithoutNullStreams;
  readonly messages: WireMessage[] = [];
  stderr = "";
  /** Everything written to stdout, as received. */
  stdout = "";
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private pending = "";

  /** `args` come after `--hermes-home <home>`; without `--provider` in them, `--provider sqlite` is added. */
  constructor(home: string, args: string[] = []) {
    const provider = args.includes("--provider") ? [] : ["--provider", "sqlite"];
    this.child = spawn(process.execPath, [BIN, "--hermes-home", home, ...provider, "--session-id", "mcp-wire", ...args], {
      cwd: PACKAGE_DIR,
      env: childEnv(),
    });
    this.child.stdin.on("error", () => {}); // the server may be gone while we write
    this.child.stdout.on("data", (chunk: Buffer) => {
      const text = chunk.toString("utf8");
      this.stdout += text;
      this.pending += text;
      let index: number;
      while ((index = this.pending.indexOf("\n")) !== -1) {
        const line = this.pending.slice(0, index);
        this.pending = this.pending.slice(index + 1);
        this.messages.push(JSON.parse(line) as WireMessage);
      }
    });
    this.child.stderr.on("data", (chunk: Buffer) => (this.stderr += chunk.toString("utf8")));
    this.exit = new Promise((resolve) => this.child.once("exit", (code, signal) => resolve({ code, signal })));
  }

  write(text: string): void {
    this.child.stdin.write(text);
  }

  send(message: unknown): void {
    this.write(`${JSON.stringify(message)}\n`);
  }

  /** The `initialize` request as a client sends it first. */
  static initializeRequest(id: string | number = "init"): unknown {
    return {
      jsonrpc: "2.0",
      id,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "wire-test", version: "1" } },
    };
  }

  async initialize(): Promise<void> {
    this.send(RawStdioServer.initializeRequest());
    await this.reply((m) => m.id === "init");
    this.send({ jsonrpc: "2.0", method: "notifications/initialized" });
  }

  /** The first message (from `from` on) that matches. */
  async reply(match: (m: WireMessage) => boolean, from = 0, timeout = 10_000): Promise<WireMessage> {
    let found: WireMessage | undefined;
    await vi.waitFor(
      () => {
        found = this.messages.slice(from).find(match);
        expect(found, `no matching reply; got ${JSON.stringify(this.messages).slice(0, 500)}; stderr: ${this.stderr}`).toBeDefined();
      },
      { timeout, interval: 20 },
    );
    return found!;
  }

  /** A valid tools/list still answers. */
  async stillServes(id: string): Promise<void> {
    this.send({ jsonrpc: "2.0", id, method: "tools/list" });
    const listed = await this.reply((m) => m.id === id);
    expect(listed.result?.tools?.map((t) => t.name)).toContain("memory");
  }

  /** The process's exit, killing it when it has not exited within `timeoutMs`. */
  async exited(timeoutMs = 15_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    const timer = setTimeout(() => this.child.kill("SIGKILL"), timeoutMs);
    const exit = await this.exit;
    clearTimeout(timer);
    return exit;
  }

  async stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    this.child.stdin.end();
    return this.exited();
  }
}
