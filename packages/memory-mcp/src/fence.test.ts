/**
 * Recalled memory is data on the MCP path too: memories built to break out of a memory fence are
 * stored in the real SQLite provider, then read back through the built binary by the MCP SDK's
 * client with every tool that returns stored text. No tool result holds anything a model might read
 * as a fence tag, and the JSON in it parses back to exactly what was stored.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openMemory, type MemoryProvider, type SearchableMemory } from "@hermes/memory-core";
import { fenceTagsIn, hostileRecallText, seededRandom } from "@hermes/test-support";
import { tempHome } from "./test-support/providers.js";
import { PACKAGE_DIR, binTransport } from "./test-support/raw-stdio.js";

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

async function callText(name: string, args: Record<string, unknown>): Promise<string> {
  const result = (await client!.callTool({ name, arguments: args })) as CallToolResult;
  expect(result.isError, `${name} failed: ${JSON.stringify(result.content)}`).not.toBe(true);
  return result.content.map((c) => (c as { text: string }).text).join("");
}

function expectNoFenceTags(where: string, text: string, stored: string): void {
  const tags = fenceTagsIn(text);
  if (tags.length > 0)
    throw new Error(`${where} reads as ${tags.join("; ")}\nstored: ${JSON.stringify(stored)}\nresult: ${JSON.stringify(text)}`);
}

describe("MCP tool results carrying hostile memories (seed 4041)", () => {
  it("hold no fence tag in search, get and the provider's own list, and parse back to what was stored", async () => {
    const rng = seededRandom(4041);
    const cases = Array.from({ length: 60 }, (_, i) => ({ keyword: `wombat${i}zed`, ...hostileRecallText(rng, `P${i}m`) }));
    const manager = await openMemory({ sessionId: "api", hermesHome: home.dir, cwd: PACKAGE_DIR, provider: "sqlite", strict: true });
    const provider = manager.getProvider("sqlite") as MemoryProvider & SearchableMemory;
    const ids: string[] = [];
    for (const c of cases) ids.push(await provider.remember({ content: `${c.keyword} ${c.text}`, kind: "fact" }));
    await provider.flush?.();
    await manager.shutdownAll();

    const { transport } = binTransport(home.dir, ["--provider", "sqlite"]);
    client = new Client({ name: "fence", version: "1.0.0" });
    await client.connect(transport);

    for (const [i, c] of cases.entries()) {
      const stored = `${c.keyword} ${c.text}`;
      const search = await callText("search", { query: c.keyword, limit: 1 });
      expectNoFenceTags(`search, case ${i}`, search, stored);
      expect((JSON.parse(search) as { hits: Array<{ content: string }> }).hits[0]!.content).toBe(stored);
      const get = await callText("get", { id: ids[i] });
      expectNoFenceTags(`get, case ${i}`, get, stored);
      expect((JSON.parse(get) as { hit: { content: string } }).hit.content).toBe(stored);
    }
    const list = await callText("sqlite_memory_list", { limit: 100 });
    expectNoFenceTags("sqlite_memory_list", list, "(all cases)");
    const listed = (JSON.parse(list) as { items: Array<{ content: string }> }).items.map((item) => item.content).sort();
    expect(listed).toEqual(cases.map((c) => `${c.keyword} ${c.text}`).sort());
  });
});
