/**
 * Hostile and malformed input on the wire: raw lines on the stdin of the built `hermes-memory-mcp`
 * binary (a real child process), and raw HTTP on a real 127.0.0.1 socket. Whatever arrives, the
 * server answers with a typed error and keeps serving.
 */
import net from "node:net";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { readEnvFile, silentLogger } from "@hermes/memory-core";
import { runMcpServer, type RunningMcpServer } from "./run.js";
import { MCP_TOKEN_ENV } from "./token.js";
import { tempHome } from "./test-support/providers.js";
import { RawStdioServer as RawServer, type WireMessage } from "./test-support/raw-stdio.js";

let home: { dir: string; cleanup: () => void };

beforeEach(() => {
  home = tempHome();
});

afterEach(() => {
  home.cleanup();
});

/** The binary with the SQLite provider on this test's home. */
class RawStdioServer extends RawServer {
  constructor(args: string[] = []) {
    super(home.dir, args);
  }
}

describe("hermes-memory-mcp on raw stdio", () => {
  it("answers a line that is not JSON with a -32700 parse error and keeps serving", async () => {
    const server = new RawStdioServer();
    await server.initialize();
    const from = server.messages.length;
    server.write("this is not json\n");
    server.write('{"jsonrpc":"2.0","id":1,\n');
    const parse = await server.reply((m) => m.error?.code === -32700, from);
    expect(parse).toMatchObject({ jsonrpc: "2.0", id: null });
    expect(parse.error!.message).toMatch(/not valid JSON/);
    await vi.waitFor(() => expect(server.messages.filter((m) => m.error?.code === -32700)).toHaveLength(2), {
      timeout: 5_000,
      interval: 20,
    });
    await server.stillServes("after-parse-errors");
    expect(await server.stop()).toEqual({ code: 0, signal: null });
  }, 30_000);

  it("answers a message that is not JSON-RPC with -32600, echoing its id when it has a usable one", async () => {
    const server = new RawStdioServer();
    await server.initialize();
    const from = server.messages.length;
    server.send({ id: 7, method: "tools/list" }); // no "jsonrpc"
    const missing = await server.reply((m) => m.id === 7, from);
    expect(missing.error).toMatchObject({ code: -32600 });
    expect(missing.error!.message).toMatch(/jsonrpc/);
    server.send([{ jsonrpc: "2.0", id: 8, method: "tools/list" }]); // a batch
    server.send({ jsonrpc: "2.0", id: { odd: true }, method: "tools/list" });
    server.send({ jsonrpc: "2.0", id: 1.5, method: "tools/list" });
    await vi.waitFor(() => expect(server.messages.slice(from).filter((m) => m.error?.code === -32600 && m.id === null)).toHaveLength(3), {
      timeout: 5_000,
      interval: 20,
    });
    expect(server.messages.slice(from).some((m) => /batch/i.test(m.error?.message ?? ""))).toBe(true);
    await server.stillServes("after-invalid-requests");
    expect(await server.stop()).toEqual({ code: 0, signal: null });
  }, 30_000);

  it("refuses a message over the size limit with an error instead of exiting, and keeps serving", async () => {
    const server = new RawStdioServer();
    await server.initialize();
    const from = server.messages.length;
    server.send({
      jsonrpc: "2.0",
      id: "huge",
      method: "tools/call",
      params: { name: "remember", arguments: { content: "z".repeat(11 * 1024 * 1024) } },
    });
    const refused = await server.reply((m) => m.error?.code === -32600, from, 20_000);
    expect(refused.error!.message).toMatch(/larger than \d+ bytes/);
    expect(server.child.exitCode).toBeNull();
    await server.stillServes("after-huge");
    expect(await server.stop()).toEqual({ code: 0, signal: null });
  }, 60_000);

  it("answers tools/call with malformed params with -32602 naming the field, not an internal error", async () => {
    const server = new RawStdioServer();
    await server.initialize();
    for (const [id, params] of [
      ["null-args", { name: "memory", arguments: null }],
      ["array-args", { name: "memory", arguments: [1, 2] }],
      ["string-args", { name: "memory", arguments: "add this" }],
      ["no-name", { arguments: {} }],
    ] as const) {
      server.send({ jsonrpc: "2.0", id, method: "tools/call", params });
      const answer = await server.reply((m) => m.id === id);
      expect(answer.error?.code, JSON.stringify(answer)).toBe(-32602);
      expect(answer.error!.message).toMatch(/Invalid tools\/call request/);
      expect(answer.error!.message).toMatch(id === "no-name" ? /"name"/ : /"arguments"/);
    }
    await server.stillServes("after-bad-params");
    expect(await server.stop()).toEqual({ code: 0, signal: null });
  }, 30_000);

  it("stops cleanly, without a stack trace, when the client closes its end of stdout", async () => {
    const server = new RawStdioServer();
    await server.initialize();
    server.child.stdout.destroy();
    for (let i = 0; i < 5; i++) server.send({ jsonrpc: "2.0", id: `gone-${i}`, method: "tools/list" });
    const timer = setTimeout(() => server.child.kill("SIGKILL"), 15_000);
    const exit = await server.exit;
    clearTimeout(timer);
    expect(exit, server.stderr).toEqual({ code: 0, signal: null });
    expect(server.stderr).not.toMatch(/Unhandled| {4}at /);
  }, 30_000);
});

describe("the HTTP transport on a raw socket", () => {
  let running: RunningMcpServer;

  beforeEach(async () => {
    running = await runMcpServer({
      hermesHome: home.dir,
      cwd: home.dir,
      transport: "http",
      port: 0,
      logger: silentLogger,
      handleSignals: false,
    });
  });

  afterEach(async () => {
    await running?.close();
  });

  it("closes the connection after refusing a request instead of reading an endless body", async () => {
    const port = Number(new URL(running.url!).port);
    for (const headers of [[], [`Authorization: Bearer ${(await readEnvFile(home.dir))[MCP_TOKEN_ENV]!}`]]) {
      const socket = net.connect(port, "127.0.0.1");
      let response = "";
      socket.on("data", (chunk: Buffer) => (response += chunk.toString("utf8")));
      const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
      socket.on("error", () => {});
      const target = headers.length > 0 ? "/elsewhere" : "/mcp";
      socket.write(
        [
          `POST ${target} HTTP/1.1`,
          `Host: 127.0.0.1:${port}`,
          "Content-Type: application/json",
          `Content-Length: ${100 * 1024 * 1024}`,
          ...headers,
          "",
          "",
        ].join("\r\n"),
      );
      socket.write(Buffer.alloc(1024, "a"));
      await vi.waitFor(() => expect(response).toMatch(headers.length > 0 ? /^HTTP\/1\.1 404/ : /^HTTP\/1\.1 401/), {
        timeout: 5_000,
        interval: 10,
      });
      // Keep streaming the body; the server must hang up rather than read all 100 MB.
      const chunk = Buffer.alloc(64 * 1024, "a");
      let sent = 0;
      let open = true;
      void closed.then(() => (open = false));
      while (open && sent < 100 * 1024 * 1024) {
        if (!socket.write(chunk)) await new Promise((resolve) => setTimeout(resolve, 5));
        sent += chunk.length;
        await new Promise((resolve) => setImmediate(resolve));
        if (sent > 20 * 1024 * 1024) break;
      }
      // Bounded wait for the hang-up (a busy machine may take a while to get to it).
      await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 10_000))]);
      expect(open, `the server still reads the body after ${sent} bytes`).toBe(false);
      socket.destroy();
    }
  }, 30_000);

  it("answers requests with malformed params with -32602, and the next request normally", async () => {
    const token = (await readEnvFile(home.dir))[MCP_TOKEN_ENV]!;
    const post = async (body: unknown): Promise<WireMessage> => {
      const res = await fetch(running.url!, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${token}` },
        body: JSON.stringify(body),
      });
      return (await res.json()) as WireMessage;
    };
    const badArgs = await post({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "memory", arguments: [] } });
    expect(badArgs.error?.code).toBe(-32602);
    expect(badArgs.error?.message).toMatch(/"arguments"/);
    const badUri = await post({ jsonrpc: "2.0", id: 2, method: "resources/read", params: { uri: 42 } });
    expect(badUri.error?.code).toBe(-32602);
    expect(badUri.error?.message).toMatch(/params\.uri/);
    const badCursor = await post({ jsonrpc: "2.0", id: 3, method: "tools/list", params: { cursor: 5 } });
    expect(badCursor.error?.code).toBe(-32602);
    const listed = await post({ jsonrpc: "2.0", id: 4, method: "tools/list" });
    expect(listed.result?.tools?.map((t) => t.name)).toContain("memory");
  });
});
