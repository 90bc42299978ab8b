/**
 * Look-alike and malformed headers on the HTTP transport. Every check is an exact comparison: each
 * refused value below would pass a check that matched a prefix, a suffix or an unanchored pattern
 * of an allowed value, so these tests fail if one of the checks becomes such a match.
 */
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readEnvFile, silentLogger } from "@hermes/memory-core";
import { startMcpHttpServer } from "./http.js";
import { runMcpServer, type RunningMcpServer } from "./run.js";
import { MCP_TOKEN_ENV, MIN_MCP_TOKEN_LENGTH } from "./token.js";
import { tempHome } from "./test-support/providers.js";

let home: { dir: string; cleanup: () => void };
let running: RunningMcpServer | undefined;

beforeEach(() => {
  home = tempHome();
});

afterEach(async () => {
  await running?.close();
  running = undefined;
  home.cleanup();
});

const INITIALIZE = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "headers", version: "1" } },
});

/** POST an initialize request with exactly these headers (node:http sends `Host` as given) and return the status. */
function post(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers } },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on("error", reject);
    req.end(INITIALIZE);
  });
}

async function start(): Promise<{ url: string; port: string; token: string }> {
  running = await runMcpServer({
    hermesHome: home.dir,
    cwd: home.dir,
    transport: "http",
    port: 0,
    logger: silentLogger,
    handleSignals: false,
  });
  const token = (await readEnvFile(home.dir))[MCP_TOKEN_ENV]!;
  return { url: running.url!, port: new URL(running.url!).port, token };
}

describe("the HTTP transport's header checks", () => {
  it("accepts its own Origin and refuses look-alike origins (403)", async () => {
    const { url, port, token } = await start();
    const auth = { authorization: `Bearer ${token}` };
    for (const origin of [`http://localhost:${port}`, `http://127.0.0.1:${port}`])
      expect(await post(url, { ...auth, origin }), origin).toBe(200);
    for (const origin of [
      "http://localhost.evil.example",
      "http://127.0.0.1.evil.example",
      `http://localhost:${port}.evil.example`,
      `http://127.0.0.1:${port}.evil.example`,
      `http://localhost:${port}@evil.example`,
      `http://localhost:${port}0`,
      `http://localhost:${port}/`,
      `http://evil.localhost:${port}`,
      `http://evil.example/http://localhost:${port}`,
      `https://localhost:${port}`,
      "http://localhost",
      "null",
    ]) {
      expect(await post(url, { ...auth, origin }), origin).toBe(403);
    }
  });

  it("accepts its own Host and refuses look-alike hosts (403)", async () => {
    const { url, port, token } = await start();
    const auth = { authorization: `Bearer ${token}` };
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST:${port}`])
      expect(await post(url, { ...auth, host }), host).toBe(200);
    for (const host of [
      `localhost.evil.example:${port}`,
      `127.0.0.1.evil.example:${port}`,
      `localhost:${port}.evil.example`,
      `localhost:${port}@evil.example`,
      `localhost:${port}0`,
      `evil.localhost:${port}`,
      `xlocalhost:${port}`,
      `127.0.0.10:${port}`,
      "localhost",
      "127.0.0.1",
    ]) {
      expect(await post(url, { ...auth, host }), host).toBe(403);
    }
  });

  it("accepts exactly 'Bearer <token>' (the scheme in any case) and refuses malformed or partial credentials (401)", async () => {
    const { url, token } = await start();
    for (const authorization of [`Bearer ${token}`, `bearer ${token}`, `BEARER ${token}`])
      expect(await post(url, { authorization }), authorization).toBe(200);
    for (const authorization of [
      `Bearer ${token} extra`,
      `Bearer ${token},Bearer ${token}`,
      `Bearer  ${token}`,
      `Bearer\t${token}`,
      `Bearer:${token}`,
      `Bearer ${token}x`,
      `Bearer x${token}`,
      `Bearer ${token.slice(0, -1)}`,
      `Bearer ${token.slice(1)}`,
      `Bearerx ${token}`,
      `xBearer ${token}`,
      `Basic ${token}`,
      token,
      "Bearer",
    ]) {
      expect(await post(url, { authorization }), authorization).toBe(401);
    }
  });
});

describe("the HTTP bearer token's length", () => {
  it(`serves with a configured token of exactly ${MIN_MCP_TOKEN_LENGTH} characters and refuses to start with one of ${MIN_MCP_TOKEN_LENGTH - 1}`, async () => {
    const atBound = "k".repeat(MIN_MCP_TOKEN_LENGTH - 1) + "9";
    fs.writeFileSync(path.join(home.dir, ".env"), `${MCP_TOKEN_ENV}=${atBound}\n`, { mode: 0o600 });
    const { url } = await start();
    expect(await post(url, { authorization: `Bearer ${atBound}` })).toBe(200);
    expect(await post(url, { authorization: `Bearer ${atBound.slice(0, -1)}` })).toBe(401);
    await running!.close();
    running = undefined;

    fs.writeFileSync(path.join(home.dir, ".env"), `${MCP_TOKEN_ENV}=${atBound.slice(0, -1)}\n`, { mode: 0o600 });
    await expect(
      runMcpServer({ hermesHome: home.dir, cwd: home.dir, transport: "http", port: 0, logger: silentLogger, handleSignals: false }),
    ).rejects.toMatchObject({
      code: "INVALID_CONFIG",
      message: expect.stringMatching(
        new RegExp(`${MCP_TOKEN_ENV} .* ${MIN_MCP_TOKEN_LENGTH - 1} characters.*at least ${MIN_MCP_TOKEN_LENGTH}.*delete the line`, "i"),
      ),
    });
  });

  it("refuses a configured token with characters a Bearer credential cannot carry", async () => {
    fs.writeFileSync(path.join(home.dir, ".env"), `${MCP_TOKEN_ENV}="correct horse battery staple"\n`, { mode: 0o600 });
    await expect(
      runMcpServer({ hermesHome: home.dir, cwd: home.dir, transport: "http", port: 0, logger: silentLogger, handleSignals: false }),
    ).rejects.toMatchObject({ code: "INVALID_CONFIG" });
  });

  it(`startMcpHttpServer refuses a token shorter than ${MIN_MCP_TOKEN_LENGTH} characters`, async () => {
    const unused = (): never => {
      throw new Error("unused");
    };
    await expect(startMcpHttpServer({ createServer: unused, token: "s".repeat(MIN_MCP_TOKEN_LENGTH - 1), port: 0 })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
    });
    const server = await startMcpHttpServer({ createServer: unused, token: "s".repeat(MIN_MCP_TOKEN_LENGTH), port: 0 });
    await server.close();
  });
});
