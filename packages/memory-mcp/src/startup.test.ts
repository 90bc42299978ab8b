/**
 * Honest start-up: the built `hermes-memory-mcp` binary, started the way an MCP client starts it,
 * refuses to serve when the configured provider cannot be loaded — answering `initialize` with the
 * reason and the fix, then exiting 1 — unless `--allow-builtin-only` accepts built-in memory, and
 * `hermes-memory://status` says which provider was asked for, which one runs and why they differ.
 */
import fs from "node:fs";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { silentLogger } from "@hermes/memory-core";
import { runMcpServer } from "./run.js";
import { RESOURCE_URIS } from "./server.js";
import { tempHome } from "./test-support/providers.js";
import { RawStdioServer, binTransport } from "./test-support/raw-stdio.js";

let home: { dir: string; cleanup: () => void };
let client: Client | undefined;

beforeEach(() => {
  home = tempHome();
});

afterEach(async () => {
  await client?.close();
  client = undefined;
  home.cleanup();
});

function configure(provider: string): void {
  fs.writeFileSync(path.join(home.dir, "config.yaml"), `memory:\n  provider: ${provider}\n`);
}

async function status(c: Client): Promise<Record<string, unknown>> {
  const read = await c.readResource({ uri: RESOURCE_URIS.status });
  return JSON.parse((read.contents[0] as { text: string }).text) as Record<string, unknown>;
}

// The binary is started as an MCP client starts it: no --provider, config.yaml decides.
describe("hermes-memory-mcp when the configured provider cannot be loaded", () => {
  it("answers initialize with what is wrong and how to fix it, then exits 1", async () => {
    configure("ghost");
    const server = new RawStdioServer(home.dir, ["--provider", "ghost"]);
    server.send(RawStdioServer.initializeRequest());
    const answer = await server.reply((m) => m.id === "init");
    expect(answer.error?.message).toMatch(/'ghost'/);
    expect(answer.error?.message).toMatch(/not found/);
    expect(answer.error?.message).toMatch(/npm install|plugins add/);
    expect(answer.error?.message).toMatch(/--allow-builtin-only/);
    expect(answer.error?.message).toMatch(/--cwd/);
    const exit = await server.exited();
    expect(exit.code, server.stderr).toBe(1);
    expect(server.stderr).toMatch(/'ghost'.*not found/);
    expect(server.stderr).not.toMatch(/internal error| {4}at /);
  }, 30_000);

  it("fails the SDK client's connect with that message (config.yaml names the provider)", async () => {
    configure("ghost");
    const { transport, stderr } = binTransport(home.dir, []);
    const c = new Client({ name: "startup", version: "1.0.0" });
    await expect(c.connect(transport)).rejects.toThrow(/memory\.provider in .*config\.yaml.*'ghost'/s);
    await vi.waitFor(() => expect(stderr()).toMatch(/hermes-memory-mcp: .*'ghost'/), { timeout: 10_000, interval: 20 });
    await c.close().catch(() => {});
  }, 30_000);

  it("serves built-in memory with --allow-builtin-only, and the status resource says why", async () => {
    configure("ghost");
    const { transport } = binTransport(home.dir, ["--allow-builtin-only", "--user", "alice"]);
    client = new Client({ name: "startup", version: "1.0.0" });
    await client.connect(transport);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["memory"]);
    expect((await client.listResources()).resources.map((r) => r.uri)).toContain(RESOURCE_URIS.status);
    const report = await status(client);
    expect(report).toMatchObject({ configuredProvider: "ghost", activeProvider: "builtin", userId: "alice" });
    expect(String(report.reason)).toMatch(/'ghost' not found/);
    expect(client.getInstructions()).toMatch(/'ghost'.*not active/s);
  }, 30_000);
});

describe("the status resource", () => {
  it("reports the configured provider as active, with no reason, when it loaded", async () => {
    configure("sqlite");
    const { transport } = binTransport(home.dir, []);
    client = new Client({ name: "startup", version: "1.0.0" });
    await client.connect(transport);
    const report = await status(client);
    expect(report).toMatchObject({ configuredProvider: "sqlite", activeProvider: "sqlite", userId: null });
    expect(report).not.toHaveProperty("reason");
  }, 30_000);

  it("reports built-in memory as configured and active when no provider is configured", async () => {
    const { transport } = binTransport(home.dir, []);
    client = new Client({ name: "startup", version: "1.0.0" });
    await client.connect(transport);
    expect(await status(client)).toMatchObject({ configuredProvider: "builtin", activeProvider: "builtin" });
  }, 30_000);
});

describe("runMcpServer over HTTP when the configured provider cannot be loaded", () => {
  it("rejects with the typed error before listening", async () => {
    configure("ghost");
    await expect(
      runMcpServer({ hermesHome: home.dir, cwd: home.dir, transport: "http", port: 0, logger: silentLogger, handleSignals: false }),
    ).rejects.toMatchObject({
      code: "PROVIDER_NOT_FOUND",
      message: expect.stringMatching(/'ghost'.*--allow-builtin-only/s),
    });
  });
});
