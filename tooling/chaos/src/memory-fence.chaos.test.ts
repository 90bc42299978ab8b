/**
 * Chaos class: hostile recalled text. Stored memories built to break out of the memory fence —
 * nested, split, padded, attribute-carrying, full-width, zero-width and look-alike tags — go
 * through every path that fences recall: `fenceRecall`, the manager's `recall` over the real
 * SQLite provider, the AI SDK middleware, and the MCP server's tool results (the built
 * `hermes-memory mcp` over stdio, read with the MCP SDK's client). A fresh random seed each run, printed so a failure
 * can be replayed with `HERMES_FENCE_SEED=<seed>`.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { generateText, wrapLanguageModel } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BuiltinMemoryProvider, MemoryManager, fenceRecall } from "@hermes/memory-core";
import { memoryMiddleware } from "@hermes/memory-ai-sdk";
import { SqliteMemoryProvider } from "@hermes/memory-sqlite";
import { fenceTagsIn, fenceViolations, hostileRecallText, seededRandom, type HostileRecall } from "@hermes/test-support";
import { CHAOS_DIR, CLI_BIN } from "./support.js";

const SEED = process.env.HERMES_FENCE_SEED ? Number(process.env.HERMES_FENCE_SEED) : Math.floor(Math.random() * 2 ** 31);
const CASES = 400;

type GenerateResult = Awaited<ReturnType<MockLanguageModelV3["doGenerate"]>>;
const reply: GenerateResult = {
  content: [{ type: "text", text: "ok" }],
  finishReason: { unified: "stop", raw: "stop" },
  usage: {
    inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: 1, text: 1, reasoning: undefined },
  },
  warnings: [],
};

function check(path: string, i: number, c: HostileRecall, block: string): void {
  // Text that is nothing but fence tags and notes recalls nothing, and nothing is lost.
  if (block === "" && c.markers.length === 0) return;
  const problems = fenceViolations(block, c.markers);
  if (problems.length > 0) {
    throw new Error(
      `${path}, seed ${SEED} (replay: HERMES_FENCE_SEED=${SEED}), case ${i}: ${problems.join("; ")}\nstored: ${JSON.stringify(c.text)}\nblock: ${JSON.stringify(block)}`,
    );
  }
}

describe(`memory fence under generated hostile memories (seed ${SEED})`, () => {
  let home: string;
  let manager: MemoryManager;
  let sqlite: SqliteMemoryProvider;
  const rng = seededRandom(SEED);
  const cases = Array.from({ length: CASES }, (_, i) => ({ keyword: `quokka${i}vex`, ...hostileRecallText(rng, `C${i}k`) }));

  beforeAll(async () => {
    console.log(`memory fence chaos seed: ${SEED}`);
    home = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-chaos-fence-"));
    manager = new MemoryManager({ hermesHome: home });
    sqlite = new SqliteMemoryProvider({ prefetchMaxChars: 1_000_000 });
    manager.addProvider(new BuiltinMemoryProvider());
    manager.addProvider(sqlite);
    await manager.initializeAll("chaos", { hermesHome: home });
    for (const c of cases) sqlite.remember({ content: `${c.keyword} ${c.text}`, kind: "fact" });
    await sqlite.flush();
  });

  afterAll(async () => {
    await manager?.shutdownAll();
    fs.rmSync(home, { recursive: true, force: true });
  });

  it("fenceRecall", () => {
    for (const [i, c] of cases.entries()) check("fenceRecall", i, c, fenceRecall(c.text));
  });

  it("the manager's recall over the SQLite provider", async () => {
    for (const [i, c] of cases.entries())
      check("MemoryManager.recall", i, c, await manager.recall(`what about ${c.keyword}?`, { sessionId: "chaos" }));
  });

  it("the AI SDK middleware", async () => {
    for (const [i, c] of cases.entries()) {
      const model = new MockLanguageModelV3({ doGenerate: reply });
      const question = `what about ${c.keyword}?`;
      await generateText({
        model: wrapLanguageModel({ model, middleware: memoryMiddleware(manager, { sessionId: "chaos" }) }),
        prompt: question,
      });
      const user = model.doGenerateCalls[0]!.prompt.find((m) => m.role === "user")!;
      const parts = (user.content as Array<{ type: string; text?: string }>).filter((p) => p.type === "text");
      expect(parts[0]!.text).toBe(question);
      check("memoryMiddleware", i, c, (parts.at(-1)!.text ?? "").replace(/^\n\n/, ""));
    }
  });

  it("the MCP server's tool results", async () => {
    // The store is closed first, so the server's process opens it as an MCP client would find it; the
    // middleware above stored its turns too, so the search asks for facts.
    await manager.shutdownAll();
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== "HERMES_HOME") env[k] = v;
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI_BIN, "mcp", "--hermes-home", home, "--provider", "sqlite"],
      cwd: CHAOS_DIR,
      env,
      stderr: "pipe",
    });
    const client = new Client({ name: "chaos-fence", version: "1.0.0" });
    await client.connect(transport);
    try {
      for (const [i, c] of cases.entries()) {
        const result = (await client.callTool({
          name: "search",
          arguments: { query: c.keyword, limit: 1, kind: "fact" },
        })) as CallToolResult;
        const text = result.content.map((part) => (part as { text: string }).text).join("");
        const tags = fenceTagsIn(text);
        if (tags.length > 0)
          throw new Error(
            `MCP search, seed ${SEED} (replay: HERMES_FENCE_SEED=${SEED}), case ${i}: reads as ${tags.join("; ")}\nresult: ${JSON.stringify(text)}`,
          );
        expect((JSON.parse(text) as { hits: Array<{ content: string }> }).hits[0]?.content).toBe(`${c.keyword} ${c.text}`);
      }
    } finally {
      await client.close();
    }
  });
});
