import { fork } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ticksDuring, until } from "@hermes/test-support";
import { SqliteMemoryProvider } from "./sqlite-memory-provider.js";
import { CONTEXT_COLUMNS } from "./test-support/context-columns.js";

const CHILD = fileURLToPath(new URL("./test-support/erase-child.ts", import.meta.url));

let home: string;
let file: string;
const open: SqliteMemoryProvider[] = [];

async function makeProvider(): Promise<SqliteMemoryProvider> {
  const provider = new SqliteMemoryProvider({ path: file });
  await provider.initialize("steps", { hermesHome: home });
  open.push(provider);
  return provider;
}

beforeEach(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), "sqlite-erase-steps-"));
  file = path.join(home, "memory.db");
});
afterEach(async () => {
  for (const p of open.splice(0)) await p.shutdown();
  fs.rmSync(home, { recursive: true, force: true });
});

/**
 * `sessions` sessions of `turnsPerSession` turns each; every third session is user "gone"'s, the
 * others "kept"'s. Turn i says the unique word `w<i>x`; each of "gone"'s sessions also has a
 * checkpoint copy of its first turn's user message. Returns how many items are "gone"'s.
 */
function seed(provider: SqliteMemoryProvider, sessions: number, turnsPerSession: number): number {
  const items = [];
  let gone = 0;
  for (let s = 0; s < sessions; s++) {
    const userId = s % 3 === 0 ? "gone" : "kept";
    for (let t = 0; t < turnsPerSession; t++) {
      const i = s * turnsPerSession + t;
      items.push({ kind: "turn" as const, content: `User: note w${i}x about topic ${i % 17}\nAssistant: ok`, sessionId: `s${s}`, userId });
      if (userId === "gone") gone++;
    }
    if (userId === "gone") {
      items.push({
        kind: "checkpoint" as const,
        content: `User: note w${s * turnsPerSession}x about topic ${(s * turnsPerSession) % 17}`,
        sessionId: `s${s}`,
      });
      gone++;
    }
  }
  provider.memoryStore!.insertMany(items);
  return gone;
}

function count(db: Database.Database, sql: string, ...params: unknown[]): number {
  return Number(
    db
      .prepare(sql)
      .pluck()
      .get(...params),
  );
}

describe("forgetWhere in steps", () => {
  it("serves timers while a large erasure runs, erases exactly the scope from every copy and returns the exact count", async () => {
    const provider = await makeProvider();
    const gone = seed(provider, 60, 50);
    const db = provider.memoryStore!.db;
    const kept = count(db, "SELECT COUNT(*) FROM items") - gone;
    const { value: erased, ticks } = await ticksDuring(() => provider.forgetWhere({ userId: "gone" }));
    // One synchronous transaction would have let no timer fire before it returned.
    expect(ticks).toBeGreaterThan(3);
    expect(erased).toBe(gone);
    expect(provider.stats().items).toBe(kept);
    expect(count(db, "SELECT COUNT(*) FROM items WHERE user_id = 'gone'")).toBe(0);
    // The erased turns' words are in no row, no later turn's context and no FTS entry.
    for (const s of [0, 3, 30, 57]) {
      const word = `w${s * 50 + 7}x`;
      expect(count(db, "SELECT COUNT(*) FROM items WHERE content LIKE ?", `%${word}%`)).toBe(0);
      const context = `SELECT COUNT(*) FROM (SELECT ${CONTEXT_COLUMNS} FROM items) WHERE prev1 LIKE ? OR prev2 LIKE ?`;
      expect(count(db, context, `%${word}%`, `%${word}%`)).toBe(0);
      expect(count(db, "SELECT COUNT(*) FROM items_fts WHERE items_fts MATCH ?", `"${word}"`)).toBe(0);
    }
    expect(provider.search("w51x").filter((h) => h.content.includes("w51x"))).toHaveLength(1);
    expect(provider.memoryStore!.doctor()).toMatchObject({ ok: true, ftsConsistent: true });
    // FTS5's merges run again once the erasure is over.
    expect(count(db, "SELECT v FROM items_fts_config WHERE k = 'automerge'")).toBe(4);
  });

  it("keeps or erases whole items written while it runs, and counts exactly what it erased", async () => {
    const provider = await makeProvider();
    const gone = seed(provider, 30, 50);
    const db = provider.memoryStore!.db;
    let written = 0;
    const during: string[] = [];
    let erasing = true;
    const write = (): void => {
      if (!erasing) return;
      during.push(provider.remember({ content: `late fact z${written}q for gone`, userId: "gone", sessionId: "s0" }));
      provider.remember({ content: `late fact y${written}q for kept`, userId: "kept", sessionId: "s1" });
      provider.syncTurn(`late turn v${written}q`, "noted", { sessionId: "s3" });
      written++;
      setTimeout(write, 0);
    };
    setTimeout(write, 0);
    const erased = await provider.forgetWhere({ userId: "gone" });
    erasing = false;
    await provider.flush();
    expect(written).toBeGreaterThan(0);
    const left = during.filter((id) => provider.get(id) !== null);
    // Every item of the scope present before the call is gone; the late ones are erased or kept whole.
    expect(erased).toBe(gone + during.length - left.length);
    for (const id of left) {
      const item = provider.get(id)!;
      const word = /z\d+q/.exec(item.content)![0];
      expect(provider.search(word).map((h) => h.id)).toEqual([id]);
    }
    for (let i = 0; i < written; i++) expect(provider.search(`y${i}q`)).toHaveLength(1);
    expect(provider.memoryStore!.doctor()).toMatchObject({ ok: true, ftsConsistent: true });
    expect(count(db, "SELECT COUNT(*) FROM items WHERE user_id = 'gone'")).toBe(left.length);
  });

  it("killed with SIGKILL between steps leaves no half-erased item, and running it again erases the rest with an exact count", async () => {
    {
      const provider = await makeProvider();
      seed(provider, 90, 50);
      await provider.shutdown();
      open.splice(0);
    }
    const reader = new Database(file, { readonly: true });
    const goneNow = (): number => count(reader, "SELECT COUNT(*) FROM items WHERE user_id = 'gone'");
    const before = goneNow();
    const child = fork(CHILD, [file, "gone"], { execArgv: ["--import", "tsx"], stdio: ["ignore", "ignore", "pipe", "ipc"] });
    let stderr = "";
    child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
    let partly = -1;
    try {
      // Killed once some of the user's items are erased and some are left.
      await until(() => {
        const now = goneNow();
        if (now < before && now > 0) partly = now;
        return partly >= 0 || child.exitCode !== null;
      }, 60_000);
      child.kill("SIGKILL");
      await exited;
    } finally {
      reader.close();
    }
    expect(partly, `the child ended before it was killed: ${stderr}`).toBeGreaterThan(0);
    const provider = await makeProvider();
    const db = provider.memoryStore!.db;
    // The next open puts FTS5's merges back.
    expect(count(db, "SELECT v FROM items_fts_config WHERE k = 'automerge'")).toBe(4);
    expect(provider.memoryStore!.doctor()).toMatchObject({ ok: true, ftsConsistent: true });
    // Each of the user's sessions is either intact or without any erased turn's text anywhere.
    const left = db.prepare("SELECT id, content FROM items WHERE user_id = 'gone' AND kind = 'turn'").raw(true).all() as Array<
      [number, string]
    >;
    expect(left.length).toBeGreaterThan(0);
    for (const [id, content] of left) {
      const word = /w\d+x/.exec(content)![0];
      expect(provider.search(word).map((h) => h.id)).toContain(String(id));
    }
    const remaining = count(db, "SELECT COUNT(*) FROM items WHERE user_id = 'gone'");
    const copiesLeft = count(db, "SELECT COUNT(*) FROM items WHERE kind = 'checkpoint' AND user_id IS NULL");
    // A turn's checkpoint copy goes in the step that erases the turn: copies are left only for turns left.
    expect(copiesLeft).toBeLessThanOrEqual(count(db, "SELECT COUNT(DISTINCT session_id) FROM items WHERE user_id = 'gone'"));
    const firstTurnsLeft = db
      .prepare(
        "SELECT session_id FROM items i WHERE kind = 'checkpoint' AND NOT EXISTS (SELECT 1 FROM items t WHERE t.session_id = i.session_id AND t.kind = 'turn' AND substr(t.content, 1, length(i.content)) = i.content)",
      )
      .all();
    expect(firstTurnsLeft).toEqual([]);
    expect(await provider.forgetWhere({ userId: "gone" })).toBe(remaining + copiesLeft);
    expect(count(db, "SELECT COUNT(*) FROM items WHERE user_id = 'gone' OR kind = 'checkpoint'")).toBe(0);
    expect(provider.memoryStore!.doctor()).toMatchObject({ ok: true, ftsConsistent: true });
  });
});
