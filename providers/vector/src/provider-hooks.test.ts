/**
 * The hooks whose rules both providers share (the kit's provider-hooks): the item of a turn, the
 * checkpoint key, mirrored built-in writes, the session switch when queued writes cannot be
 * stored, and the prefetch settings.
 */
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { HermesMemoryError } from "@hermes/memory-core";
import { PineconeFake } from "@hermes/pinecone-fake";
import { VectorMemoryProvider, type VectorMemoryProviderOptions } from "./vector-memory-provider.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

function tempHome(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-vector-hooks-"));
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function open(
  options: VectorMemoryProviderOptions = {},
  ctx: Record<string, unknown> = {},
  home = tempHome(),
): Promise<VectorMemoryProvider> {
  const provider = new VectorMemoryProvider({ env: {}, dimensions: 128, ...options });
  await provider.initialize("s1", { hermesHome: home, ...ctx });
  cleanups.push(() => provider.shutdown().catch(() => undefined));
  return provider;
}

describe("vector provider hooks", () => {
  it("stores a turn with its speaker and author, in the turn's session", async () => {
    const p = await open({ hybrid: false });
    p.syncTurn("I adopted a greyhound", "Lovely!", { sessionId: "s9", turnAuthor: { id: "u7", name: "Dana" } });
    await p.flush();
    const [hit] = await p.search("greyhound", { limit: 1 });
    expect(hit).toMatchObject({
      content: "Dana: I adopted a greyhound\nAssistant: Lovely!",
      kind: "turn",
      sessionId: "s9",
      metadata: { speaker: "Dana", authorId: "u7", authorName: "Dana" },
    });
  });

  it("archives a message once per user across sessions, and not again when an earlier version archived it under the session's key", async () => {
    const home = tempHome();
    const p = await open({}, {}, home);
    const evidence = [{ role: "user", content: "Book the Sintra day trip" }];
    await p.onPreCompress(evidence, { requireCheckpoint: true });
    expect(await p.onSessionSwitch("s2", { parentSessionId: "s1", reset: false, rewound: false, reason: "compression" })).toBe(true);
    await p.onPreCompress([...evidence, { role: "assistant", content: "Booked." }], { requireCheckpoint: true });
    expect((await p.stats()).byKind.checkpoint).toBe(2);

    // A checkpoint stored under the key of earlier versions (session, role, text) stays readable and is not archived twice.
    const text = "The train leaves at nine";
    const legacyId = `ckpt-${createHash("sha256").update(`s2\u0000user\u0000${text}`).digest("hex").slice(0, 32)}`;
    await p.importItems([
      {
        id: legacyId,
        namespace: p.namespaceFor(),
        content: `User: ${text}`,
        metadata: {
          kind: "checkpoint",
          created_at: new Date().toISOString(),
          session_id: "s2",
          user_id: "local",
          role: "user",
          digest: "0".repeat(64),
        },
      },
    ]);
    await p.onPreCompress([{ role: "user", content: text }], { requireCheckpoint: true });
    const found = await p.search("train leaves nine", { kind: "checkpoint" });
    expect(found.filter((h) => h.content === `User: ${text}`).map((h) => h.id)).toEqual([legacyId]);
    expect((await p.stats()).byKind.checkpoint).toBe(3);
  });

  it("mirrors a built-in write as a fact of its target, and a remove without previousContent removes the fact of the content", async () => {
    const p = await open({ hybrid: false });
    p.onMemoryWrite("add", "memory", " Prefers window seats ", {});
    await p.flush();
    const [fact] = await p.search("window seats", { kind: "fact" });
    expect(fact).toMatchObject({ content: "Prefers window seats", tags: ["memory"], metadata: { source: "builtin", target: "memory" } });
    p.onMemoryWrite("remove", "memory", "Prefers window seats", {});
    await p.flush();
    expect((await p.stats()).items).toBe(0);
  });

  it("recalls prefetch_limit memories within prefetch_max_chars (defaults 5 and 2000)", async () => {
    const defaults = await open();
    expect(defaults.resolvedConfig).toMatchObject({ prefetchLimit: 5, prefetchMaxChars: 2000 });
    const p = await open({ prefetchLimit: 2 });
    for (let i = 0; i < 10; i++) p.remember({ content: `garden note ${i}: tomatoes and basil` });
    await p.flush();
    await p.prefetch("garden tomatoes basil", { sessionId: "s1" });
    expect(p.recallStatus()).toEqual({ providerLabel: "vector", count: 2 });
  });

  it("reads config.yaml's prefetch_chars as prefetch_max_chars, warning once", async () => {
    const home = tempHome();
    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  vector:\n    prefetch_chars: 700\n");
    const warnings: string[] = [];
    const logger = { debug: () => {}, info: () => {}, warn: (message: string) => warnings.push(message), error: () => {} };
    const p = await open({ logger }, {}, home);
    expect(p.resolvedConfig.prefetchMaxChars).toBe(700);
    const renamed = warnings.filter((w) => w.includes("prefetch_chars is the old name of prefetch_max_chars"));
    expect(renamed).toHaveLength(1);
    await open({ logger }, {}, home);
    expect(warnings.filter((w) => w.includes("prefetch_chars is the old name"))).toHaveLength(1);
  });
});

describe("vector provider onSessionSwitch when queued writes cannot be stored", () => {
  it("switches, keeps the writes, throws STORAGE_FAILED, and succeeds on the retry once they are stored", async () => {
    const fake = await PineconeFake.start({ dimension: 128, indexName: "mem" });
    cleanups.push(() => fake.close());
    const p = await open({
      store: "pinecone",
      pineconeIndex: "mem",
      pineconeControllerUrl: fake.url,
      env: { PINECONE_API_KEY: "test-key" },
      maxRetries: 0,
      hybrid: false,
    });
    fake.failNext(500, 10_000);
    p.syncTurn("written before the switch", "ok", { sessionId: "s1" });
    const failed = await p
      .onSessionSwitch("s2", { parentSessionId: "s1", reset: true, rewound: false, reason: "new_session" })
      .catch((e: unknown) => e);
    expect(HermesMemoryError.hasCode(failed, "STORAGE_FAILED")).toBe(true);
    expect(p.undeliveredWrites).toBe(1);
    fake.clearFaults();
    p.syncTurn("written after the switch", "ok");
    expect(await p.onSessionSwitch("s2", { parentSessionId: "s1", reset: true, rewound: false, reason: "new_session" })).toBe(true);
    expect(p.undeliveredWrites).toBe(0);
    const sessions = Object.fromEntries(
      (await p.search("written switch", { limit: 5 })).map((h) => [h.content.split("\n")[0], h.sessionId]),
    );
    expect(sessions).toEqual({ "User: written before the switch": "s1", "User: written after the switch": "s2" });
  });
});
