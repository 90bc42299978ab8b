/**
 * Failure class: a damaged `index.usearch` (truncated, same-length corruption, missing or garbled
 * checksum record, a save killed with SIGKILL). The native loader aborts the whole process on a
 * bad file, so the provider must never hand it one: every start below must exit 0 with every
 * item searchable again.
 */
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClassFigures, runNode, tempDir, writeVectorHome } from "./support.js";

// better-sqlite3 is the vector provider's dependency; borrowed from there to edit a file directly.
interface SqliteDb {
  prepare(sql: string): { run(): unknown };
  pragma(sql: string): unknown;
  close(): void;
}
const Database = createRequire(new URL("../../../providers/vector/package.json", import.meta.url))("better-sqlite3") as new (
  file: string,
) => SqliteDb;
const ITEMS = 500;
const figures = new ClassFigures("vector-index");
let template = "";
const homes: string[] = [];

function copyHome(): string {
  const home = tempDir("index");
  homes.push(home);
  fs.cpSync(template, home, { recursive: true });
  return home;
}
const indexFile = (home: string): string => path.join(home, "memory", "vector", "index.usearch");

async function startsCleanly(home: string, expectRebuild: boolean): Promise<void> {
  const child = runNode("vector-child.mjs", ["check", home, String(ITEMS)]);
  const { code, signal, ms } = await child.exited;
  figures.stall(ms);
  expect({ code, signal, stderr: expectRebuild ? "" : child.stderr }).toEqual({ code: 0, signal: null, stderr: "" });
  expect(child.stdout).toMatch(new RegExp(`^FOUND ${ITEMS}/${ITEMS} indexed=${ITEMS} items=${ITEMS}`, "m"));
  if (expectRebuild)
    expect(child.stderr).toMatch(/WARN vector memory: the index file .* was not loaded .*rebuilding it from the sidecar's 500 vectors/);
}

beforeAll(async () => {
  template = tempDir("index-template");
  homes.push(template);
  writeVectorHome(template);
  const seed = runNode("vector-child.mjs", ["seed", template, String(ITEMS)]);
  expect((await seed.exited).code).toBe(0);
  expect(fs.statSync(indexFile(template)).size).toBeGreaterThan(10_000);
});

afterAll(() => {
  for (const home of homes) fs.rmSync(home, { recursive: true, force: true });
  figures.print();
});

describe("vector index file damage", () => {
  it.each([10, 33, 50, 90, 99])("truncated to %s percent: the next start exits 0 and every item is searchable", async (percent) => {
    const home = copyHome();
    const size = fs.statSync(indexFile(home)).size;
    fs.truncateSync(indexFile(home), Math.floor((size * percent) / 100));
    figures.trials++;
    await startsCleanly(home, true);
    // The rebuilt file was saved with a fresh checksum record: the start after that loads it.
    await startsCleanly(home, false);
  });

  it("same length, different bytes (header and middle): rebuilt, never loaded", async () => {
    for (const offsets of [[0, 1, 2, 3, 8, 9], [0.5], [0.999]]) {
      const home = copyHome();
      const bytes = fs.readFileSync(indexFile(home));
      for (const o of offsets) {
        const at = o < 1 ? Math.floor(bytes.length * o) : o;
        bytes[at] = bytes[at]! ^ 0xa5;
      }
      fs.writeFileSync(indexFile(home), bytes);
      figures.trials++;
      await startsCleanly(home, true);
    }
  });

  it("missing or garbled checksum record: rebuilt, never loaded", async () => {
    for (const change of [
      (db: SqliteDb) => db.prepare("DELETE FROM meta WHERE key IN ('index_sha256', 'index_bytes')").run(),
      (db: SqliteDb) => db.prepare("UPDATE meta SET value = 'zz' || value WHERE key = 'index_sha256'").run(),
      (db: SqliteDb) => db.prepare("UPDATE meta SET value = 'twelve' WHERE key = 'index_bytes'").run(),
    ]) {
      const home = copyHome();
      const db = new Database(path.join(home, "memory", "vector", "sidecar.sqlite"));
      change(db);
      db.close();
      figures.trials++;
      await startsCleanly(home, true);
    }
  });

  it("a writer killed with SIGKILL mid-save, 5 times: every acknowledged item is there, no temp file is left", async () => {
    for (let trial = 0; trial < 5; trial++) {
      const home = tempDir("index-kill");
      homes.push(home);
      writeVectorHome(home);
      const writer = runNode("vector-child.mjs", ["loop", home]);
      const wanted = 3 + trial * 4;
      const deadline = Date.now() + 60_000;
      while (writer.lines().filter((l) => l.startsWith("ACK ")).length < wanted) {
        if (Date.now() > deadline) throw new Error(`writer made no progress: ${writer.stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      writer.proc.kill("SIGKILL");
      await writer.exited;
      const acked = writer
        .lines()
        .filter((l) => l.startsWith("ACK "))
        .flatMap((l) => JSON.parse(l.slice(4)) as string[]);
      const check = runNode("vector-child.mjs", ["has", home]);
      check.send(JSON.stringify(acked));
      const { code, ms } = await check.exited;
      figures.stall(ms);
      figures.trials++;
      expect(code, check.stderr).toBe(0);
      const missing = JSON.parse(/^MISSING (.*)$/m.exec(check.stdout)![1]!) as string[];
      figures.acknowledgedLost += missing.length;
      expect(missing).toEqual([]);
      expect(fs.readdirSync(path.join(home, "memory", "vector")).filter((f) => f.endsWith(".tmp"))).toEqual([]);
    }
  });
});
