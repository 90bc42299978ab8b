/**
 * What a client that sends its requests and goes away gets from the built `hermes-memory-mcp`
 * binary (a real child process): an answer to every request it sent before closing stdin — the
 * last one too, when it has no newline — and no warning about leaked listeners.
 */
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openMemory, type SearchableMemory } from "@hermes/memory-core";
import { tempHome } from "./test-support/providers.js";
import { PACKAGE_DIR, RawStdioServer } from "./test-support/raw-stdio.js";

let home: { dir: string; cleanup: () => void };

beforeEach(() => {
  home = tempHome();
});

afterEach(() => {
  home.cleanup();
});

const remember = (id: string, content: string): unknown => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name: "remember", arguments: { content } },
});

/** Core as this package resolves it, so the fixture provider extends the class the server checks. */
const CORE_URL = pathToFileURL(fs.realpathSync(path.join(PACKAGE_DIR, "node_modules/@hermes/memory-core/dist/index.js"))).href;

/** A user-directory provider `slow` whose `remember` takes `ms`, then appends the content to `<home>/slow.jsonl`. */
function writeSlowProvider(ms: number): void {
  const dir = path.join(home.dir, "plugins", "slow");
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, "plugin.yaml"), "name: slow\nversion: 1.0.0\ndescription: fixture\n");
  fs.writeFileSync(
    path.join(dir, "index.js"),
    `import fs from "node:fs";
import { MemoryProvider } from ${JSON.stringify(CORE_URL)};
class Slow extends MemoryProvider {
  name = "slow";
  count = 0;
  isAvailable() { return true; }
  initialize(_s, ctx) { this.file = ctx.hermesHome + "/slow.jsonl"; }
  getToolSchemas() { return []; }
  getConfigSchema() { return []; }
  async remember(item) {
    await new Promise((resolve) => setTimeout(resolve, ${ms}));
    fs.appendFileSync(this.file, item.content + "\\n");
    return "s" + ++this.count;
  }
  search() { return []; }
  get() { return null; }
  forget() { return false; }
  stats() { return { items: this.count, byKind: { turn: 0, fact: this.count, checkpoint: 0 } }; }
  flush() {}
}
export function register(ctx) { ctx.registerMemoryProvider(new Slow()); }
`,
  );
}

/** How many items of the SQLite store in `home` hold `word`. */
async function storedCopies(word: string): Promise<number> {
  const manager = await openMemory({ sessionId: "count", hermesHome: home.dir, cwd: PACKAGE_DIR, provider: "sqlite", strict: true });
  try {
    const provider = manager.getProvider("sqlite") as unknown as SearchableMemory;
    return (await provider.search(word, { limit: 50 })).filter((hit) => hit.content.includes(word)).length;
  } finally {
    await manager.shutdownAll();
  }
}

describe("hermes-memory-mcp when the client closes stdin", () => {
  it("answers every request sent before stdin closed, each write applied once, the last line without a newline too", async () => {
    const server = new RawStdioServer(home.dir);
    // Everything at once, as a client that writes its requests and ends the stream.
    server.write(
      [
        RawStdioServer.initializeRequest(),
        { jsonrpc: "2.0", method: "notifications/initialized" },
        remember("w1", "The boiler room key is in drawer osprey."),
        { jsonrpc: "2.0", id: "l1", method: "tools/list" },
      ]
        .map((m) => `${JSON.stringify(m)}\n`)
        .join(""),
    );
    server.write(JSON.stringify(remember("w2", "The roof hatch code is plover."))); // no newline
    server.child.stdin.end();
    const exit = await server.exited();
    expect(exit, server.stderr).toEqual({ code: 0, signal: null });
    const answered = server.messages.map((m) => m.id);
    expect(answered, `stdout: ${server.stdout}\nstderr: ${server.stderr}`).toEqual(expect.arrayContaining(["init", "w1", "l1", "w2"]));
    for (const id of ["w1", "w2"]) {
      const answer = server.messages.find((m) => m.id === id)!;
      expect(answer.result?.isError, JSON.stringify(answer)).toBeFalsy();
    }
    expect(await storedCopies("osprey")).toBe(1);
    expect(await storedCopies("plover")).toBe(1);
  }, 30_000);

  it("answers a request that is still running when stdin closes, and applies it once", async () => {
    writeSlowProvider(300);
    const server = new RawStdioServer(home.dir, ["--provider", "slow"]);
    await server.initialize();
    server.send(remember("slow-1", "Written slowly: heron."));
    server.child.stdin.end(); // while remember() waits
    const exit = await server.exited();
    expect(exit, server.stderr).toEqual({ code: 0, signal: null });
    const answer = server.messages.find((m) => m.id === "slow-1");
    expect(answer, `stdout: ${server.stdout}\nstderr: ${server.stderr}`).toBeDefined();
    expect(answer!.result?.isError, JSON.stringify(answer)).toBeFalsy();
    expect(fs.readFileSync(path.join(home.dir, "slow.jsonl"), "utf8")).toBe("Written slowly: heron.\n");
  }, 30_000);

  it("prints no MaxListenersExceededWarning when the client is gone while many answers are pending", async () => {
    const server = new RawStdioServer(home.dir);
    await server.initialize();
    server.child.stdout.destroy(); // the client stops reading
    for (let i = 0; i < 40; i++) server.send({ jsonrpc: "2.0", id: `gone-${i}`, method: "tools/list" });
    server.child.stdin.end();
    const exit = await server.exited();
    expect(exit, server.stderr).toEqual({ code: 0, signal: null });
    expect(server.stderr).not.toMatch(/MaxListenersExceeded|Unhandled| {4}at /);
  }, 30_000);
});
