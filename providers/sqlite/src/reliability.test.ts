import { fork, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CONTEXT_COLUMNS } from "./test-support/context-columns.js";

const CHILD = fileURLToPath(new URL("./test-support/writer-child.ts", import.meta.url));

interface ChildMessage {
  type: "ready" | "flushed" | "done" | "error";
  upTo?: number;
  written?: number;
  message?: string;
  code?: string;
}

function spawnWriter(
  dbPath: string,
  label: string,
  mode: string,
): { child: ChildProcess; messages: ChildMessage[]; exited: Promise<number | null> } {
  const child = fork(CHILD, [dbPath, label, mode], { execArgv: ["--import", "tsx"], stdio: ["ignore", "ignore", "pipe", "ipc"] });
  const messages: ChildMessage[] = [];
  child.on("message", (m) => messages.push(m as ChildMessage));
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  exited.then(() => {
    if (stderr.trim()) messages.push({ type: "error", message: stderr });
  });
  return { child, messages, exited };
}

async function waitFor(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "sqlite-rel-"));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

describe("reliability (real processes, real files)", () => {
  it("survives kill -9 during sustained syncTurn traffic, 20 times, keeping every flushed turn", async () => {
    const dbPath = path.join(dir, "memory.db");
    let expected = 0;
    for (let round = 0; round < 20; round++) {
      const label = `r${round}`;
      const { child, messages, exited } = spawnWriter(dbPath, label, "forever");
      // Kill after a varying amount of flushed traffic, while the child keeps writing.
      const target = 25 * (1 + (round % 5));
      await waitFor(
        () => messages.some((m) => m.type === "error") || messages.some((m) => m.type === "flushed" && (m.upTo ?? 0) >= target),
        30_000,
        `round ${round} traffic`,
      );
      child.kill("SIGKILL");
      await exited;
      const errors = messages.filter((m) => m.type === "error");
      expect(errors).toEqual([]);
      const flushed = Math.max(...messages.filter((m) => m.type === "flushed").map((m) => m.upTo ?? 0));
      const db = new Database(dbPath);
      try {
        expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
        const rows = db.prepare(`SELECT content FROM items WHERE session_id = ?`).all(label) as Array<{ content: string }>;
        const present = new Set(rows.map((r) => Number(/question (\d+) /.exec(r.content)?.[1])));
        for (let i = 0; i < flushed; i++) expect(present.has(i)).toBe(true);
        expected += flushed;
        const total = (db.prepare(`SELECT COUNT(*) AS n FROM items`).get() as { n: number }).n;
        expect(total).toBeGreaterThanOrEqual(expected);
        // FTS stays consistent with the table after every crash.
        db.prepare(`INSERT INTO items_fts(items_fts, rank) VALUES ('integrity-check', 1)`).run();
      } finally {
        db.close();
      }
    }
  }, 90_000);

  it("4 processes writing the same profile concurrently lose no turn and surface no SQLITE_BUSY", async () => {
    const dbPath = path.join(dir, "shared.db");
    const perChild = 1000;
    const writers = [0, 1, 2, 3].map((k) => spawnWriter(dbPath, `p${k}`, String(perChild)));
    const codes = await Promise.all(writers.map((w) => w.exited));
    for (const w of writers) {
      expect(w.messages.filter((m) => m.type === "error")).toEqual([]);
      expect(w.messages.find((m) => m.type === "done")?.written).toBe(perChild);
    }
    expect(codes).toEqual([0, 0, 0, 0]);
    const db = new Database(dbPath, { readonly: true });
    try {
      expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
      for (let k = 0; k < 4; k++) {
        const rows = db.prepare(`SELECT content FROM items WHERE session_id = ? ORDER BY id`).all(`p${k}`) as Array<{ content: string }>;
        const numbers = rows.map((r) => Number(/question (\d+) /.exec(r.content)?.[1]));
        // Every turn present, and a session's turns stay in the order they were synced.
        expect(numbers).toEqual(Array.from({ length: perChild }, (_, i) => i));
      }
    } finally {
      db.close();
    }
  }, 60_000);

  it("a migration killed with SIGKILL part-way leaves the previous schema with every item, and the next open migrates", async () => {
    const { writeV2File } = await import("./test-support/v2-schema.js");
    const { openDatabase } = await import("./database.js");
    const file = path.join(dir, "v2.db");
    writeV2File(
      file,
      Array.from({ length: 100_000 }, (_, i) => ({
        kind: "turn",
        session: `s${i % 500}`,
        content: `turn ${i} of session ${i % 500}`,
        createdAt: i,
      })),
    );

    const child = fork(fileURLToPath(new URL("./test-support/migrate-child.ts", import.meta.url)), [file], {
      execArgv: ["--import", "tsx"],
      stdio: ["ignore", "ignore", "pipe", "ipc"],
    });
    const steps: Array<{ type: string; done?: number; total?: number }> = [];
    child.on("message", (m) => steps.push(m as { type: string }));
    const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
    // Kill once the columns are partly filled (after the first steps, before the last).
    await waitFor(() => steps.filter((m) => m.type === "progress").length >= 4, 60_000, "migration steps");
    child.kill("SIGKILL");
    await exited;
    const last = steps.filter((m) => m.type === "progress").at(-1)!;
    expect(last.done).toBeLessThan(last.total!);
    expect(steps.some((m) => m.type === "done")).toBe(false);

    const check = new Database(file, { readonly: true });
    expect(check.pragma("user_version", { simple: true })).toBe(2);
    expect(check.prepare(`SELECT COUNT(*) FROM items`).pluck().get()).toBe(100_000);
    expect(check.prepare(`SELECT COUNT(*) FROM pragma_table_info('items') WHERE name = 'prev1'`).pluck().get()).toBe(0);
    check.close();

    const db = openDatabase(file);
    try {
      expect(db.pragma("user_version", { simple: true })).toBe(6);
      expect(db.prepare(`SELECT COUNT(*), SUM(prev1 <> '') FROM (SELECT ${CONTEXT_COLUMNS} FROM items)`).raw(true).get()).toEqual([
        100_000, 99_500,
      ]);
      expect(db.prepare(`SELECT COUNT(*) FROM items_fts WHERE items_fts MATCH 'session'`).pluck().get()).toBe(100_000);
    } finally {
      db.close();
    }
  }, 120_000);
});
