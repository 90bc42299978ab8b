/**
 * The built `hermes-memory-mcp` binary, spawned as a real process by the MCP SDK's own stdio client
 * transport, with the SQLite provider discovered from this package's node_modules.
 */
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { openMemory } from "@hermes/memory-core";
import { tempHome } from "./test-support/providers.js";
import { BIN, PACKAGE_DIR, binTransport, childEnv } from "./test-support/raw-stdio.js";

/** Core as this package resolves it, so a fixture provider extends the class the server checks. */
const CORE_URL = pathToFileURL(fs.realpathSync(path.join(PACKAGE_DIR, "node_modules/@hermes/memory-core/dist/index.js"))).href;

let home: { dir: string; cleanup: () => void };

/**
 * A user directory provider `$HERMES_HOME/plugins/<name>/`: a SearchableMemory whose `remember`
 * only queues (durable in `<home>/<name>.jsonl` after `flush()`), and whose other calls can be
 * made to throw, hang or reject late through `mode`.
 */
function writeFixtureProvider(name: string, mode: "ok" | "broken"): void {
  const dir = path.join(home.dir, "plugins", name);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, "plugin.yaml"), `name: ${name}\nversion: 1.0.0\ndescription: fixture\nhooks: [sync_turn]\n`);
  fs.writeFileSync(
    path.join(dir, "index.js"),
    `import fs from "node:fs";
import { MemoryProvider } from ${JSON.stringify(CORE_URL)};
const broken = ${JSON.stringify(mode === "broken")};
class Fixture extends MemoryProvider {
  name = ${JSON.stringify(name)};
  queued = [];
  isAvailable() { return true; }
  initialize(_s, ctx) { this.file = ctx.hermesHome + "/${name}.jsonl"; }
  getToolSchemas() { return []; }
  getConfigSchema() { return []; }
  remember(item) {
    if (broken) return new Promise(() => {});
    this.queued.push(item.content);
    return "q" + this.queued.length;
  }
  search() { if (broken) throw new Error("search exploded"); return []; }
  get() { return null; }
  forget() { if (broken) return new Promise((_, reject) => setTimeout(() => { fs.writeFileSync(this.file + ".rejected", ""); reject(new Error("late rejection")); }, 300)); return false; }
  stats() { if (broken) return Promise.reject(new Error("stats exploded")); return { items: this.queued.length, byKind: { turn: 0, fact: this.queued.length, checkpoint: 0 } }; }
  async flush() {
    await new Promise((resolve) => setTimeout(resolve, 20));
    for (const line of this.queued.splice(0)) fs.appendFileSync(this.file, line + "\\n");
  }
}
export function register(ctx) { ctx.registerMemoryProvider(new Fixture()); }
`,
  );
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function spawnServer(
  provider = "sqlite",
  extraArgs: string[] = [],
): Promise<{ client: Client; transport: StdioClientTransport; stderr: () => string }> {
  const { transport, stderr } = binTransport(home.dir, ["--provider", provider, "--session-id", "mcp-bin", ...extraArgs]);
  const client = new Client({ name: "bin-test", version: "1.0.0" });
  await client.connect(transport);
  return { client, transport, stderr };
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
    const names = tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(["memory", "search", "remember", "forget", "get", "sqlite_memory_list"]));
    expect(names.filter((name) => /^sqlite_memory_(search|remember|forget)$/.test(name))).toEqual([]);

    const note = await client.callTool({
      name: "memory",
      arguments: { action: "add", target: "memory", content: "The release train leaves every second Tuesday." },
    });
    expect(note.isError, JSON.stringify(note)).toBeFalsy();
    const fact = await client.callTool({ name: "remember", arguments: { content: "The on-call pager rotation uses the name kestrel." } });
    expect(fact.isError, JSON.stringify(fact)).toBeFalsy();
    const found = JSON.parse(
      ((await client.callTool({ name: "search", arguments: { query: "kestrel pager" } })) as CallToolResult).content
        .map((c) => (c as { text: string }).text)
        .join(""),
    );
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

  for (const how of ["SIGTERM", "SIGINT", "stdin close"] as const) {
    it(`flushes a provider's queued writes before exiting on ${how}`, async () => {
      writeFixtureProvider("queued", "ok");
      const { client, transport, stderr } = await spawnServer("queued");
      const pid = transport.pid!;
      expect((await client.listTools()).tools.map((t) => t.name)).toContain("remember");
      const result = await client.callTool({ name: "remember", arguments: { content: "queued fact one" } });
      expect(result.isError, JSON.stringify(result)).toBeFalsy();
      const durable = path.join(home.dir, "queued.jsonl");
      expect(fs.existsSync(durable)).toBe(false); // only queued so far
      if (how === "stdin close") await client.close();
      else process.kill(pid, how);
      await vi.waitFor(() => expect(alive(pid)).toBe(false), { timeout: 15_000, interval: 50 });
      await client.close().catch(() => {});
      expect(fs.readFileSync(durable, "utf8"), stderr()).toBe("queued fact one\n");
    }, 30_000);
  }

  it("keeps serving when the provider throws, hangs or rejects late", async () => {
    writeFixtureProvider("broken", "broken");
    const { client, transport, stderr } = await spawnServer("broken", ["--tool-timeout", "150"]);
    const pid = transport.pid!;
    const calls = [
      ["search", { query: "anything" }, /search exploded/],
      ["remember", { content: "never stored" }, /did not finish within 150 ms/],
      ["forget", { id: "x" }, /did not finish within 150 ms/],
    ] as const;
    for (const [name, args, message] of calls) {
      const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
      expect(result.isError, name).toBe(true);
      expect((result.content[0] as { text: string }).text).toMatch(message);
    }
    await expect(client.readResource({ uri: "hermes-memory://provider/stats" })).rejects.toThrow(/stats exploded/);
    // Past the late rejection of forget(): the process is still alive and answering.
    await vi.waitFor(() => expect(fs.existsSync(path.join(home.dir, "broken.jsonl.rejected"))).toBe(true), {
      timeout: 5_000,
      interval: 20,
    });
    expect(alive(pid), stderr()).toBe(true);
    const note = await client.callTool({ name: "memory", arguments: { action: "add", target: "memory", content: "Still serving." } });
    expect(note.isError).toBeFalsy();
    await client.close();
    await vi.waitFor(() => expect(alive(pid)).toBe(false), { timeout: 15_000, interval: 50 });
  }, 30_000);

  it("prints the HTTP token only when asked", async () => {
    const { spawnSync } = await import("node:child_process");
    const r = spawnSync(process.execPath, [BIN, "--print-token", "--hermes-home", home.dir], { encoding: "utf8", env: childEnv() });
    expect(r.status, r.stderr).toBe(0);
    const token = r.stdout.trim();
    expect(fs.readFileSync(path.join(home.dir, ".env"), "utf8")).toContain(`HERMES_MCP_TOKEN=${token}`);
    const bad = spawnSync(process.execPath, [BIN, "--transport", "http", "--host", "0.0.0.0", "--hermes-home", home.dir], {
      encoding: "utf8",
      env: childEnv(),
    });
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/only binds to 127\.0\.0\.1/);
    expect(bad.stderr).not.toContain(token);
  });
});
