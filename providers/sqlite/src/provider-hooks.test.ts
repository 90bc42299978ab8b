/**
 * The hooks whose rules both providers share (the kit's provider-hooks): the item of a turn, the
 * checkpoint key, mirrored built-in writes, the session switch when queued writes cannot be
 * stored, and the renamed write batch setting.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HermesMemoryError } from "@hermes/memory-core";
import { SqliteMemoryProvider, type SqliteMemoryProviderOptions } from "./sqlite-memory-provider.js";
import { loadSqliteConfig } from "./config.js";

let home: string;
const open: SqliteMemoryProvider[] = [];

async function makeProvider(options: SqliteMemoryProviderOptions = {}, ctx: Record<string, unknown> = {}): Promise<SqliteMemoryProvider> {
  const provider = new SqliteMemoryProvider(options);
  await provider.initialize("s1", { hermesHome: home, ...ctx });
  open.push(provider);
  return provider;
}

beforeEach(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), "sqlite-hooks-"));
});
afterEach(async () => {
  for (const p of open.splice(0)) await p.shutdown().catch(() => undefined);
  fs.rmSync(home, { recursive: true, force: true });
});

describe("sqlite provider hooks", () => {
  it("archives a message once per user across sessions (compression, resume and branch start new ones)", async () => {
    const p = await makeProvider({}, { userId: "alice" });
    const evidence = [{ role: "user", content: "Book the Sintra day trip" }];
    expect(await p.onPreCompress(evidence, { requireCheckpoint: true })).toMatch(/archived 1 message\(s\) .*\(1 new\)/);
    await p.onSessionSwitch("s2", { parentSessionId: "s1", reset: false, rewound: false, reason: "compression" });
    expect(await p.onPreCompress([...evidence, { role: "assistant", content: "Booked." }], { requireCheckpoint: true })).toMatch(
      /\(1 new\)/,
    );
    expect(p.stats().byKind.checkpoint).toBe(2);
  });

  it("mirrors a built-in write as a fact of its target and session; a remove without previousContent removes the fact of the content", async () => {
    const p = await makeProvider({}, { userId: "alice" });
    p.onMemoryWrite("add", "memory", " Prefers window seats ", { sessionId: "s5" });
    const [fact] = p.search("window seats", { kind: "fact" });
    expect(fact).toMatchObject({
      content: "Prefers window seats",
      sessionId: "s5",
      userId: "alice",
      tags: ["memory"],
      metadata: { source: "builtin", target: "memory" },
    });
    p.onMemoryWrite("remove", "memory", "Prefers window seats", {});
    expect(p.stats().items).toBe(0);
  });
});

describe("sqlite provider onSessionSwitch when queued writes cannot be stored", () => {
  it("switches, keeps the writes, throws STORAGE_FAILED, and succeeds on the retry once they are stored", async () => {
    const p = await makeProvider({ flushIntervalMs: 60_000 });
    p.syncTurn("written before the switch", "ok", { sessionId: "s1" });
    const db = p.memoryStore!.db;
    db.pragma("query_only = ON"); // what SQLite reports for a read-only disk
    const failed = await p
      .onSessionSwitch("s2", { parentSessionId: "s1", reset: true, rewound: false, reason: "new_session" })
      .catch((e: unknown) => e);
    expect(HermesMemoryError.hasCode(failed, "STORAGE_FAILED")).toBe(true);
    expect(p.stats().pending).toBe(1);
    db.pragma("query_only = OFF");
    p.syncTurn("written after the switch", "ok");
    expect(await p.onSessionSwitch("s2", { parentSessionId: "s1", reset: true, rewound: false, reason: "new_session" })).toBe(true);
    expect(p.stats().pending).toBe(0);
    const sessions = Object.fromEntries(p.list().map((item) => [item.content.split("\n")[0], item.sessionId]));
    expect(sessions).toEqual({ "User: written before the switch": "s1", "User: written after the switch": "s2" });
  });
});

describe("write_batch_size", () => {
  it("reads config.yaml's batch_size as write_batch_size with a warning, and refuses both at once", async () => {
    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  sqlite:\n    batch_size: 512\n");
    const { config, warnings } = await loadSqliteConfig({}, home);
    expect(config.writeBatchSize).toBe(512);
    expect(warnings).toEqual([
      `memory.sqlite in ${path.join(home, "config.yaml")}: batch_size is the old name of write_batch_size and is read as write_batch_size; rename it to write_batch_size.`,
    ]);
    expect((await loadSqliteConfig({}, home)).warnings).toEqual([]);
    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  sqlite:\n    batch_size: 512\n    write_batch_size: 64\n");
    await expect(loadSqliteConfig({}, home)).rejects.toMatchObject({
      code: "INVALID_CONFIG",
      message: expect.stringMatching(/sets both batch_size and write_batch_size/),
    });
  });

  it("reads the batchSize option as writeBatchSize", async () => {
    const { config } = await loadSqliteConfig({ batchSize: 8 } as never, home);
    expect(config.writeBatchSize).toBe(8);
  });
});
