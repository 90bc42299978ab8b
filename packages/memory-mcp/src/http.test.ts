import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readEnvFile, silentLogger } from "@hermes/memory-core";
import { startMcpHttpServer } from "./http.js";
import { runMcpServer, type RunningMcpServer } from "./run.js";
import { MCP_TOKEN_ENV, ensureMcpToken, tokensMatch } from "./token.js";
import { tempHome } from "./test-support/providers.js";

let home: { dir: string; cleanup: () => void };
/** A bearer token for servers started directly. */
const TOKEN = "t".repeat(43);
let running: RunningMcpServer;

beforeEach(async () => {
  home = tempHome();
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
  home.cleanup();
});

const initialize = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "curl", version: "1" } },
});

function post(headers: Record<string, string>, url = running.url!): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: initialize,
  });
}

async function token(): Promise<string> {
  return (await readEnvFile(home.dir))[MCP_TOKEN_ENV]!;
}

describe("the Streamable HTTP transport", () => {
  it("binds to 127.0.0.1 and stores a generated token in $HERMES_HOME/.env", async () => {
    expect(running.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    expect(await token()).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(fs.statSync(path.join(home.dir, ".env")).mode & 0o077).toBe(0);
    // The same token is reused on the next start.
    expect(await ensureMcpToken(home.dir)).toBe(await token());
  });

  it("refuses requests without the bearer token (401)", async () => {
    const none = await post({});
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect((await post({ authorization: "Bearer wrong" })).status).toBe(401);
    expect((await post({ authorization: `Basic ${await token()}` })).status).toBe(401);
  });

  it("refuses a foreign Origin or Host even with the token (403)", async () => {
    const auth = { authorization: `Bearer ${await token()}` };
    expect((await post({ ...auth, origin: "https://evil.example" })).status).toBe(403);
    const port = new URL(running.url!).port;
    expect((await post({ ...auth, origin: `http://localhost:${port}` })).status).toBe(200);
    // A DNS-rebinding page reaches 127.0.0.1 under its own host name.
    const rebound = await new Promise<number>((resolve, reject) => {
      const req = http.request(
        running.url!,
        { method: "POST", headers: { ...auth, host: `evil.example:${port}`, "content-type": "application/json" } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on("error", reject);
      req.end(initialize);
    });
    expect(rebound).toBe(403);
  });

  it("lists and calls the tools for an SDK Client that sends the token", async () => {
    const transport = new StreamableHTTPClientTransport(new URL(running.url!), {
      requestInit: { headers: { authorization: `Bearer ${await token()}` } },
    });
    const client = new Client({ name: "http-test", version: "1.0.0" });
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain("memory");
      const result = await client.callTool({
        name: "memory",
        arguments: { action: "add", target: "user", content: "Prefers short answers." },
      });
      expect(result.isError).toBeFalsy();
      expect(fs.readFileSync(path.join(home.dir, "memories", "USER.md"), "utf8")).toContain("Prefers short answers.");
    } finally {
      await client.close();
    }
  });

  it("an SDK Client without the token cannot connect", async () => {
    const client = new Client({ name: "http-test", version: "1.0.0" });
    await expect(client.connect(new StreamableHTTPClientTransport(new URL(running.url!)))).rejects.toThrow();
  });
});

describe("startMcpHttpServer", () => {
  it("refuses to bind anywhere but 127.0.0.1", async () => {
    await expect(
      startMcpHttpServer({
        createServer: () => {
          throw new Error("unused");
        },
        token: TOKEN,
        host: "0.0.0.0",
        port: 0,
      }),
    ).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  });

  it("says a port in use is in use, with the option to choose another (PORT_IN_USE)", async () => {
    const first = await startMcpHttpServer({
      createServer: () => {
        throw new Error("unused");
      },
      token: TOKEN,
      port: 0,
    });
    try {
      const second = startMcpHttpServer({
        createServer: () => {
          throw new Error("unused");
        },
        token: TOKEN,
        port: first.port,
      });
      await expect(second).rejects.toMatchObject({
        code: "PORT_IN_USE",
        message: expect.stringMatching(new RegExp(`port ${first.port} is already in use.*--port`)),
      });
    } finally {
      await first.close();
    }
  });

  it("cuts off a client that trickles its request, and refuses connections past maxConnections", async () => {
    const server = await startMcpHttpServer({
      createServer: () => {
        throw new Error("unused");
      },
      token: TOKEN,
      port: 0,
      requestTimeoutMs: 400,
      headersTimeoutMs: 300,
      maxConnections: 2,
    });
    try {
      // Each socket with the time from its connection to its close, listened for from the start.
      const open = (): Promise<{ socket: net.Socket; closed: Promise<number> }> =>
        new Promise((resolve, reject) => {
          const socket = net.connect(server.port, "127.0.0.1");
          const started = Date.now();
          const closed = new Promise<number>((done) => socket.on("close", () => done(Date.now() - started)));
          socket.on("error", () => undefined);
          socket.resume(); // read what the server sends, so its close is seen
          socket.once("connect", () => resolve({ socket, closed }));
          socket.once("error", reject);
        });
      // Headers never finished: closed after the headers timeout, not Node's 300 s.
      const slow = await open();
      slow.socket.write("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n");
      expect(await slow.closed).toBeLessThan(5_000);
      // Two idle connections fill the server; a third is closed at once.
      const a = await open();
      const b = await open();
      const c = await open();
      expect(await c.closed).toBeLessThan(2_000);
      a.socket.destroy();
      b.socket.destroy();
    } finally {
      await server.close();
    }
    await expect(
      startMcpHttpServer({
        createServer: () => {
          throw new Error("unused");
        },
        token: TOKEN,
        port: 0,
        maxConnections: 0,
      }),
    ).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  });
});

describe("tokensMatch", () => {
  it("compares whole tokens only", () => {
    expect(tokensMatch("abc", "abc")).toBe(true);
    expect(tokensMatch("abc", "abcd")).toBe(false);
    expect(tokensMatch("", "")).toBe(false);
  });
});
