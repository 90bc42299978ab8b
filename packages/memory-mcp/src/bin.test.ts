/**
 * The built `hermes-memory-mcp` binary, spawned as a real process by the MCP SDK's own stdio client
 * transport, with the SQLite provider discovered from this package's node_modules.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { openMemory } from "@hermes/memory-core";
import { tempHome } from "./test-support/providers.js";

const PACKAGE_DIR = fileURLToPath(new URL("..", import.meta.url));
const manifest = JSON.parse(fs.readFileSync(path.join(PACKAGE_DIR, "package.json"), "utf8")) as { bin: Record<string, string> };
/** The file the package's `bin` points at (built by `pnpm build`). */
const BIN = path.join(PACKAGE_DIR, manifest.bin["hermes-memory-mcp"]!);

let home: { dir: string; cleanup: () => void };

function childEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== "HERMES_HOME") env[k] = v;
  return env;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function spawnServer(): Promise<{ client: Client; transport: StdioClientTransport; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, "--hermes-home", home.dir, "--provider", "sqlite", "--session-id", "mcp-bin"],
    cwd: PACKAGE_DIR,
    env: childEnv(),
    stderr: "pipe",
  });
  let err = "";
  transport.stderr?.on("data", (chunk: Buffer) => (err += chunk.toString("utf8")));
  const client = new Client({ name: "bin-test", version: "1.0.0" });
  await client.connect(transport);
  return { client, transport, stderr: () => err };
}

async function recallInThisProcess(query: string): Promise<{ recalled: string; system: string }> {
  const manager = await openMemory({ sessionId: "after-mcp", hermesHome: home.dir, cwd: PACKAGE_DIR, provider: "sqlite" });
  try {
    return { recalled: await manager.prefetchAll(query, { sessionId: "after-mcp" }), system: await manager.buildSystemPrompt() };
  } finally {
    await manager.shutdownAll();
  }
}

beforeEach(() => {
  home = tempHome();
});

afterEach(() => {
  home.cleanup();
});

describe("hermes-memory-mcp over stdio", () => {
  it("lists and calls the tools; memory written through MCP is recalled by openMemory() after stdin closes", async () => {
    const { client, transport, stderr } = await spawnServer();
    const pid = transport.pid!;
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(["memory", "search", "remember", "forget", "sqlite_memory_search"]));

    const note = await client.callTool({ name: "memory", arguments: { action: "add", target: "memory", content: "The release train leaves every second Tuesday." } });
    expect(note.isError, JSON.stringify(note)).toBeFalsy();
    const fact = await client.callTool({ name: "remember", arguments: { content: "The on-call pager rotation uses the name kestrel." } });
    expect(fact.isError, JSON.stringify(fact)).toBeFalsy();
    const found = JSON.parse(((await client.callTool({ name: "search", arguments: { query: "kestrel pager" } })) as CallToolResult).content.map((c) => (c as { text: string }).text).join(""));
    expect(JSON.stringify(found)).toContain("kestrel");

    await client.close(); // ends the child's stdin
    await vi.waitFor(() => expect(alive(pid)).toBe(false), { timeout: 15_000, interval: 50 });
    expect(stderr()).not.toMatch(/error/i);

    const { recalled, system } = await recallInThisProcess("Which name does the on-call pager rotation use?");
    expect(recalled).toContain("kestrel");
    expect(system).toContain("The release train leaves every second Tuesday.");
  }, 30_000);

  it("flushes writes before exiting on SIGTERM", async () => {
    const { client, transport } = await spawnServer();
    const pid = transport.pid!;
    const fact = await client.callTool({ name: "remember", arguments: { content: "The staging cluster is called heron." } });
    expect(fact.isError).toBeFalsy();
    process.kill(pid, "SIGTERM");
    await vi.waitFor(() => expect(alive(pid)).toBe(false), { timeout: 15_000, interval: 50 });
    await client.close().catch(() => {});
    const { recalled } = await recallInThisProcess("What is the staging cluster called?");
    expect(recalled).toContain("heron");
  }, 30_000);

  it("prints the HTTP token only when asked", async () => {
    const { spawnSync } = await import("node:child_process");
    const r = spawnSync(process.execPath, [BIN, "--print-token", "--hermes-home", home.dir], { encoding: "utf8", env: childEnv() });
    expect(r.status, r.stderr).toBe(0);
    const token = r.stdout.trim();
    expect(fs.readFileSync(path.join(home.dir, ".env"), "utf8")).toContain(`HERMES_MCP_TOKEN=${token}`);
    const bad = spawnSync(process.execPath, [BIN, "--transport", "http", "--host", "0.0.0.0", "--hermes-home", home.dir], { encoding: "utf8", env: childEnv() });
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/only binds to 127\.0\.0\.1/);
    expect(bad.stderr).not.toContain(token);
  });
});
