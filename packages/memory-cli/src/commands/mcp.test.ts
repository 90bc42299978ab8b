/**
 * `hermes-memory mcp` through the built CLI binary, driven by the MCP SDK's own clients.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openMemory, readEnvFile, type MemoryProvider, type SearchableMemory } from "@hermes/memory-core";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { BIN, CLI_DIR, childEnv, runCli, tempDir } from "../test-support/cli-harness.js";

let home: { dir: string; cleanup: () => void };

beforeEach(() => {
  home = tempDir("hermes-cli-mcp-");
});

afterEach(() => {
  home.cleanup();
});

function env(): Record<string, string> {
  return Object.fromEntries(Object.entries(childEnv()).filter((e): e is [string, string] => e[1] !== undefined));
}

describe("hermes-memory mcp", () => {
  it("serves the memory tools over stdio with the profile the CLI resolves", async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, "mcp", "--hermes-home", home.dir],
      cwd: CLI_DIR,
      env: env(),
      stderr: "pipe",
    });
    const client = new Client({ name: "cli-test", version: "1.0.0" });
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain("memory");
      const result = await client.callTool({ name: "memory", arguments: { action: "add", target: "memory", content: "CLI-served note." } });
      expect(result.isError).toBeFalsy();
    } finally {
      await client.close();
    }
    expect(fs.readFileSync(path.join(home.dir, "memories", "MEMORY.md"), "utf8")).toContain("CLI-served note.");
  }, 30_000);

  it("serves HTTP on 127.0.0.1 with the token from $HERMES_HOME/.env and never prints the token", async () => {
    const child = spawn(process.execPath, [BIN, "mcp", "--transport", "http", "--port", "0", "--hermes-home", home.dir], {
      cwd: CLI_DIR,
      env: childEnv(),
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stderr = "";
    let stdout = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    const url = await new Promise<string>((resolve, reject) => {
      child.stderr.on("data", (d: Buffer) => {
        stderr += d.toString();
        const match = /listening on (http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(stderr);
        if (match) resolve(match[1]!);
      });
      child.on("close", (code) => reject(new Error(`exited ${code}: ${stderr}`)));
    });
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    try {
      const token = (await readEnvFile(home.dir)).HERMES_MCP_TOKEN!;
      expect((await fetch(url, { method: "POST", body: "{}" })).status).toBe(401);
      const client = new Client({ name: "cli-http", version: "1.0.0" });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
      );
      expect((await client.listTools()).tools.map((t) => t.name)).toContain("memory");
      await client.close();
      expect(stderr + stdout).not.toContain(token);
    } finally {
      child.kill("SIGINT");
    }
    expect(await exited).toBe(0);
  }, 30_000);

  it("refuses a bind address other than 127.0.0.1 and prints the token only on --print-token", async () => {
    const refused = await runCli(["mcp", "--transport", "http", "--host", "0.0.0.0", "--hermes-home", home.dir], { cwd: CLI_DIR });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/only binds to 127\.0\.0\.1/);
    const printed = await runCli(["mcp", "--print-token", "--hermes-home", home.dir], { cwd: CLI_DIR });
    expect(printed.code).toBe(0);
    expect(printed.stdout.trim()).toBe((await readEnvFile(home.dir)).HERMES_MCP_TOKEN);
  }, 30_000);

  it("says the port is in use and how to choose another (exit 1), instead of an internal error", async () => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    const port = (blocker.address() as net.AddressInfo).port;
    try {
      const result = await runCli(["mcp", "--transport", "http", "--port", String(port), "--hermes-home", home.dir], { cwd: CLI_DIR });
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr).toMatch(new RegExp(`port ${port} .*in use`));
      expect(result.stderr).toMatch(/--port/);
      expect(result.stderr).not.toMatch(/internal error|This is a bug/);
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  }, 30_000);

  it("refuses a port that is not a number from 0 to 65535 with a usage error, also with --print-token", async () => {
    const cases = [
      ...["abc", "-1", "65536", "1e3", ""].map((port) => [port, "--transport", "http"]),
      ...["abc", "65536"].map((port) => [port, "--print-token"]),
    ];
    for (const [port, ...extra] of cases) {
      const result = await runCli(["mcp", ...extra, "--port", port!, "--hermes-home", home.dir], { cwd: CLI_DIR });
      expect(result.code, `--port '${port}' ${extra.join(" ")}: ${result.stderr}`).toBe(1);
      expect(result.stderr).toMatch(/--port must be an integer from 0 to 65535/);
      expect(result.stdout).toBe("");
    }
    expect(fs.existsSync(path.join(home.dir, ".env"))).toBe(false); // no token was created either
  }, 60_000);

  it("serves one user's memory with --user: items are stored as theirs and other users' are out of reach", async () => {
    const bobId = await withSqlite("bob", async (provider) =>
      provider.remember({ content: "Bob keeps the spare key under the heron statue.", userId: "bob" }),
    );
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, "mcp", "--hermes-home", home.dir, "--provider", "sqlite", "--user", "alice"],
      cwd: CLI_DIR,
      env: env(),
      stderr: "pipe",
    });
    const client = new Client({ name: "cli-user", version: "1.0.0" });
    await client.connect(transport);
    let aliceId: string;
    try {
      const text = async (name: string, args: Record<string, unknown>): Promise<string> =>
        ((await client.callTool({ name, arguments: args })) as CallToolResult).content.map((c) => (c as { text: string }).text).join("");
      aliceId = String((JSON.parse(await text("remember", { content: "Alice keeps her key by the heron print." })) as { id: string }).id);
      expect(JSON.parse(await text("search", { query: "heron key" }))).toMatchObject({ hits: [{ id: aliceId }] });
      expect(await text("get", { id: bobId })).toMatch(/No item/);
    } finally {
      await client.close();
    }
    await withSqlite("alice", async (provider) => {
      expect(await provider.get(aliceId)).toMatchObject({ userId: "alice" });
      expect(await provider.get(bobId)).toMatchObject({ userId: "bob" });
    });
  }, 30_000);

  it("refuses to start when the configured provider cannot be loaded (exit 1, naming it and the fix), unless --allow-builtin-only", async () => {
    fs.writeFileSync(path.join(home.dir, "config.yaml"), "memory:\n  provider: ghost\n");
    for (const transport of ["stdio", "http"]) {
      const refused = await runCli(
        ["mcp", "--transport", transport, ...(transport === "http" ? ["--port", "0"] : []), "--hermes-home", home.dir],
        { cwd: CLI_DIR },
      );
      expect(refused.code, `${transport}: ${refused.stderr}`).toBe(1);
      expect(refused.stderr).toMatch(
        /^hermes-memory: Cannot serve the configured memory provider 'ghost' \(memory\.provider in .*config\.yaml\): Memory provider 'ghost' not found/,
      );
      expect(refused.stderr).toMatch(/--allow-builtin-only/);
    }
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, "mcp", "--allow-builtin-only", "--hermes-home", home.dir],
      cwd: CLI_DIR,
      env: env(),
      stderr: "pipe",
    });
    const client = new Client({ name: "cli-builtin-only", version: "1.0.0" });
    await client.connect(transport);
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["memory"]);
      const status = await client.readResource({ uri: "hermes-memory://status" });
      expect(JSON.parse((status.contents[0] as { text: string }).text)).toMatchObject({
        configuredProvider: "ghost",
        activeProvider: "builtin",
      });
    } finally {
      await client.close();
    }
  }, 60_000);
});

/** Run `work` on the SQLite provider of the test's home through the public API, for `userId`. */
async function withSqlite<T>(userId: string, work: (provider: MemoryProvider & SearchableMemory) => T | Promise<T>): Promise<T> {
  const manager = await openMemory({
    sessionId: `api-${userId}`,
    hermesHome: home.dir,
    cwd: CLI_DIR,
    provider: "sqlite",
    userId,
    strict: true,
  });
  try {
    const result = await work(manager.getProvider("sqlite") as MemoryProvider & SearchableMemory);
    await (manager.getProvider("sqlite") as MemoryProvider & SearchableMemory).flush();
    return result;
  } finally {
    await manager.shutdownAll();
  }
}
