import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { holdWriteLock, rowsInFileAlone, seededRandom, stallMeter, stopWriteLockHolders, ticksDuring, until } from "./index.js";

const dirs: string[] = [];
afterEach(() => {
  stopWriteLockHolders();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

describe("test support", () => {
  it("ticksDuring counts no tick for work that holds the event loop, and several for work that yields", async () => {
    const held = await ticksDuring(async () => {
      const end = Date.now() + 30;
      let spins = 0;
      while (Date.now() < end) spins++;
      return spins > 0 ? "held" : "held (no spin)";
    });
    expect(held).toEqual({ value: "held", ticks: 0 });
    const yielding = await ticksDuring(async () => {
      for (let i = 0; i < 5; i++) await new Promise((resolve) => setTimeout(resolve, 1));
      return "yielded";
    });
    expect(yielding.value).toBe("yielded");
    expect(yielding.ticks).toBeGreaterThan(2);
  });

  it("seededRandom repeats its sequence for a seed, differs across seeds and stays in [0, 1)", () => {
    const a = seededRandom(42);
    const b = seededRandom(42);
    const first = Array.from({ length: 1000 }, () => a());
    expect(Array.from({ length: 1000 }, () => b())).toEqual(first);
    expect(seededRandom(43)()).not.toBe(first[0]);
    expect(first.every((x) => x >= 0 && x < 1)).toBe(true);
    expect(new Set(first).size).toBeGreaterThan(990);
  });

  it("until resolves once the condition holds, letting timers run meanwhile, and throws after its timeout", async () => {
    let flag = false;
    setTimeout(() => (flag = true), 20);
    const started = Date.now();
    await until(() => flag);
    expect(Date.now() - started).toBeGreaterThanOrEqual(15);
    await expect(until(() => false, 50)).rejects.toThrow("condition not met within 50 ms");
  });

  it("stallMeter sees the event loop held up by synchronous work", async () => {
    const meter = stallMeter();
    await new Promise((resolve) => setTimeout(resolve, 30));
    const spinUntil = performance.now() + 120;
    while (performance.now() < spinUntil);
    expect(meter.stop()).toBeGreaterThanOrEqual(115);
  });

  it("rowsInFileAlone counts only the rows a checkpoint has copied into the file, and -1 for a torn copy", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "test-support-rows-"));
    dirs.push(dir);
    const file = path.join(dir, "t.db");
    const db = new Database(file);
    try {
      db.pragma("journal_mode = WAL");
      db.pragma("wal_autocheckpoint = 0");
      db.exec(`CREATE TABLE t (x)`);
      db.pragma("wal_checkpoint(TRUNCATE)");
      db.exec(`INSERT INTO t VALUES (1), (2), (3)`);
      expect(rowsInFileAlone(file, "t")).toBe(0);
      db.pragma("wal_checkpoint(PASSIVE)");
      expect(rowsInFileAlone(file, "t")).toBe(3);
      expect(rowsInFileAlone(file, "missing")).toBe(-1);
    } finally {
      db.close();
    }
    fs.writeFileSync(path.join(dir, "torn.db"), Buffer.concat([fs.readFileSync(file).subarray(0, 100), Buffer.alloc(4000, 7)]));
    expect(rowsInFileAlone(path.join(dir, "torn.db"), "t")).toBe(-1);
  });

  it("holdWriteLock holds the file's write lock in another process until released", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "test-support-"));
    dirs.push(dir);
    const file = path.join(dir, "x.db");
    new Database(file).exec("CREATE TABLE t (x)");
    const holder = await holdWriteLock(file, 60_000);
    const db = new Database(file, { timeout: 0 });
    expect(() => db.exec("INSERT INTO t VALUES (1)")).toThrow(/locked|busy/i);
    await holder.release();
    db.exec("INSERT INTO t VALUES (1)");
    db.close();
  });
});
