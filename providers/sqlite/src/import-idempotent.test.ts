import { fork } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { importCommand, statsCommand, withProvider, type CommandContext, type ImportResult } from "./commands.js";

const IMPORT_CHILD = fileURLToPath(new URL("./test-support/import-child.ts", import.meta.url));

let home: string;
let ctx: CommandContext;
beforeEach(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), "sqlite-import-"));
  ctx = { hermesHome: home, providerName: "sqlite", io: { stdout: () => {}, stderr: () => {}, isTTY: false } };
});
afterEach(() => {
  fs.rmSync(home, { recursive: true, force: true });
});

function writeJsonl(name: string, records: unknown[]): string {
  const file = path.join(home, name);
  fs.writeFileSync(file, records.map((r) => JSON.stringify(r)).join("\n") + "\n");
  return file;
}

describe("sqlite import", () => {
  it("re-importing hand-written turns without createdAt stores nothing again; identical lines stay distinct turns", async () => {
    const file = writeJsonl("hand.jsonl", [
      { kind: "turn", sessionId: "s1", speaker: "ann", content: "shall we sail at noon?" },
      { kind: "turn", sessionId: "s1", speaker: "bob", content: "yes" },
      { kind: "turn", sessionId: "s1", speaker: "ann", content: "and back by six" },
      // Said twice in the same session: two turns, not one.
      { kind: "turn", sessionId: "s1", speaker: "bob", content: "yes" },
      // The same text in another session, or with other metadata, is another turn.
      { kind: "turn", sessionId: "s2", speaker: "bob", content: "yes" },
      { kind: "turn", sessionId: "s1", speaker: "bob", content: "yes", metadata: { mood: "glad" } },
    ]);
    expect(await importCommand(ctx, file, { json: true })).toMatchObject({ imported: 6, skipped: 0, invalid: 0 });
    expect(await importCommand(ctx, file, { json: true })).toMatchObject({ imported: 0, skipped: 6, invalid: 0 });
    // The same turns written with their keys in another order are the same records.
    const reordered = writeJsonl("reordered.jsonl", [
      { metadata: { mood: "glad" }, content: "yes", speaker: "bob", sessionId: "s1", kind: "turn" },
    ]);
    expect(await importCommand(ctx, reordered, { json: true })).toMatchObject({ imported: 0, skipped: 1 });
    expect(await statsCommand(ctx)).toMatchObject({ byKind: { turn: 6 } });
    await withProvider(ctx, (p) => {
      expect(p.list({ limit: 10, sessionId: "s1" }).filter((i) => i.content === "yes")).toHaveLength(3);
    });
  });

  it("two processes importing the same file at once report, together, each record imported exactly once", async () => {
    const records: unknown[] = [];
    for (let i = 0; i < 300; i++) {
      records.push({ kind: "fact", content: `fact number ${i} about the harbour` });
      records.push({
        kind: "turn",
        sessionId: `s${i % 7}`,
        content: `turn ${i} on deck`,
        createdAt: new Date(1_700_000_000_000 + i).toISOString(),
      });
      records.push({ kind: "turn", sessionId: `s${i % 7}`, content: `hand-written turn ${i}` });
    }
    const file = writeJsonl("shared.jsonl", records);
    // Create the database, then hold its write lock while both children start and check what is
    // stored, so that both find nothing yet and their writes overlap.
    let dbFile = "";
    await withProvider(ctx, (p) => {
      dbFile = p.memoryStore!.file;
    });
    const lock = new Database(dbFile);
    // WAL, as the provider runs it (a closed database is left in rollback-journal mode): readers
    // are not blocked by the held write lock.
    lock.pragma("journal_mode = WAL");
    lock.exec("BEGIN IMMEDIATE");
    const children = [0, 1].map(() => {
      const child = fork(IMPORT_CHILD, [home, file], { execArgv: ["--import", "tsx"], stdio: ["ignore", "ignore", "pipe", "ipc"] });
      const started = new Promise<void>((resolve) => child.on("message", (m) => (m as { type: string }).type === "started" && resolve()));
      const result = new Promise<ImportResult>((resolve, reject) => {
        child.on("message", (m) => {
          const message = m as { type: string; result?: ImportResult; message?: string };
          if (message.type === "done") resolve(message.result!);
          if (message.type === "error") reject(new Error(message.message));
        });
        child.on("exit", (code) => reject(new Error(`import child exited with ${code} before reporting`)));
      });
      return { started, result };
    });
    await Promise.all(children.map((c) => c.started));
    // Both children read the file and the stored digests while the lock is held; their inserts
    // wait for it (busy timeout).
    await new Promise((resolve) => setTimeout(resolve, 1500));
    lock.exec("COMMIT");
    lock.close();
    const results = await Promise.all(children.map((c) => c.result));

    expect(results[0]!.imported + results[1]!.imported).toBe(records.length);
    for (const r of results) expect(r.imported + r.skipped).toBe(records.length);
    expect((await statsCommand(ctx)).items).toBe(records.length);
  }, 60_000);
});
