/**
 * Failure class: Pinecone failing (5xx, stalls, refused connections) and recovering, seen by real
 * processes. An awaited flush() or CLI command must keep the process alive until it resolves or
 * fails with a message and a documented exit code (never Node's silent exit 13), and writes
 * Pinecone did not acknowledge must survive in the outbox (also across kill -9) and arrive after
 * the next start.
 */
import fs from "node:fs";
import net from "node:net";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { PineconeFake } from "@hermes/pinecone-fake";
import { ClassFigures, runCli, runNode, tempDir, writeVectorHome, type Child } from "./support.js";

const figures = new ClassFigures("pinecone-outage");
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});
afterAll(() => figures.print());

async function fake(): Promise<PineconeFake> {
  const f = await PineconeFake.start({ dimension: 64, indexName: "chaos" });
  cleanups.push(() => f.close());
  return f;
}
function home(): string {
  const dir = tempDir("pinecone");
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}
function storedIds(f: PineconeFake): Set<string> {
  const ids = new Set<string>();
  for (const ns of f.namespaces.values()) for (const id of ns.keys()) ids.add(id);
  return ids;
}
async function finished(child: Child): Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number }> {
  const result = await child.exited;
  figures.stall(result.ms);
  return result;
}
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
function accepted(child: Child): string[] {
  const line = child.lines().find((l) => l.startsWith("ACCEPTED ") || l.startsWith("ACK "))!;
  return JSON.parse(line.slice(line.indexOf(" ") + 1)) as string[];
}

/** Outage → the write run fails loudly (exit 1, outbox named); recovery → a new process delivers every accepted id. */
async function outageThenRecovery(breakIt: (f: PineconeFake, h: string) => Promise<void> | void, expectFailure: RegExp): Promise<void> {
  const f = await fake();
  const h = home();
  writeVectorHome(h, { pineconeUrl: f.url, maxRetries: 2, requestTimeoutMs: 500 });
  await breakIt(f, h);
  const writer = runNode("vector-child.mjs", ["write", h, "40"]);
  const result = await finished(writer);
  figures.trials++;
  expect({ code: result.code, signal: result.signal }, writer.stderr).toEqual({ code: 1, signal: null });
  expect(writer.stdout).toMatch(
    /^FLUSH_FAILED STORAGE_FAILED vector memory: 40 writes are not acknowledged by Pinecone yet; they are kept in the outbox .*outbox\.sqlite/m,
  );
  expect(writer.stdout).toMatch(expectFailure);
  expect(writer.stdout).toMatch(
    /^SHUTDOWN_FAILED STORAGE_FAILED vector memory shutdown: 40 writes not acknowledged by Pinecone are kept in the outbox/m,
  );
  const ids = accepted(writer);
  expect(ids).toHaveLength(40);

  f.clearFaults();
  writeVectorHome(h, { pineconeUrl: f.url, maxRetries: 2, requestTimeoutMs: 2000 });
  const resend = runNode("vector-child.mjs", ["resend", h]);
  expect((await finished(resend)).code, resend.stdout + resend.stderr).toBe(0);
  expect(resend.stdout).toMatch(/^ACK 0$/m);
  const stored = storedIds(f);
  const lost = ids.filter((id) => !stored.has(id));
  expect(lost).toEqual([]);
}

describe("Pinecone outages", () => {
  it("HTTP 500 on every request, then recovery: flush rejects naming the outbox, the next start delivers all", async () => {
    await outageThenRecovery((f) => f.failNext(500, 1_000_000), /HTTP 500/);
  });

  it("stalled responses (longer than the request timeout), then recovery", async () => {
    await outageThenRecovery((f) => f.delayNext(3_000, 1_000_000), /timed out after 500 ms/);
  });

  it("connection refused, then a server on another port: the outbox is re-sent there", async () => {
    await outageThenRecovery(
      async (_f, h) => writeVectorHome(h, { pineconeUrl: `http://127.0.0.1:${await freePort()}`, maxRetries: 2, requestTimeoutMs: 500 }),
      /failed \(.*\) after retries/,
    );
  });

  it("failures that clear within the retries: the awaiting process stays alive and flush() resolves (not exit 13)", async () => {
    for (let trial = 0; trial < 3; trial++) {
      const f = await fake();
      const h = home();
      writeVectorHome(h, { pineconeUrl: f.url, maxRetries: 4, requestTimeoutMs: 400 });
      if (trial === 2) f.delayNext(1_000, 2);
      else f.failNext(trial === 0 ? 503 : 500, 3);
      const writer = runNode("vector-child.mjs", ["write", h, "10"]);
      const result = await finished(writer);
      figures.trials++;
      expect({ code: result.code, stderr: writer.stderr }).toEqual({ code: 0, stderr: "" });
      const ids = accepted(writer);
      const stored = storedIds(f);
      expect(ids.filter((id) => !stored.has(id))).toEqual([]);
    }
  });

  it("kill -9 while Pinecone flaps, 5 times: every acknowledged id reaches Pinecone after a restart", async () => {
    for (let trial = 0; trial < 5; trial++) {
      const f = await fake();
      const h = home();
      writeVectorHome(h, { pineconeUrl: f.url, maxRetries: 1, requestTimeoutMs: 300 });
      const writer = runNode("vector-child.mjs", ["loop", h]);
      const acks = (): number => writer.lines().filter((l) => l.startsWith("ACK ")).length;
      const deadline = Date.now() + 60_000;
      // Alternate outages (500s, then stalls) with healthy periods until enough flushes succeeded.
      let phase = 0;
      while (acks() < 4 + trial) {
        if (Date.now() > deadline) throw new Error(`writer made no progress: ${writer.stdout.slice(-500)} ${writer.stderr.slice(-500)}`);
        f.clearFaults();
        if (phase % 3 === 1) f.failNext(500, 6);
        if (phase % 3 === 2) f.delayNext(600, 3);
        phase++;
        const target = acks() + 1;
        const stepEnd = Date.now() + 1_500;
        while (acks() < target && Date.now() < stepEnd) await new Promise((resolve) => setTimeout(resolve, 10));
      }
      // Kill in the middle of an outage, with writes in flight.
      f.failNext(500, 1_000_000);
      await writer.waitForLine(/^FLUSH_FAILED/, 30_000).catch(() => undefined);
      writer.proc.kill("SIGKILL");
      await writer.exited;
      const acked = writer
        .lines()
        .filter((l) => l.startsWith("ACK "))
        .flatMap((l) => JSON.parse(l.slice(4)) as string[]);
      f.clearFaults();
      const resend = runNode("vector-child.mjs", ["resend", h]);
      expect((await finished(resend)).code, resend.stdout + resend.stderr).toBe(0);
      figures.trials++;
      const stored = storedIds(f);
      const lost = acked.filter((id) => !stored.has(id));
      figures.acknowledgedLost += lost.length;
      expect(lost).toEqual([]);
      // Writes accepted but never acknowledged were in the outbox and arrived too.
      expect(stored.size).toBeGreaterThanOrEqual(acked.length);
    }
  });

  it("CLI `vector search` and `vector reindex`: exit 1 with the reason while Pinecone is down, 0 once it answers (through retries)", async () => {
    const f = await fake();
    const h = home();
    writeVectorHome(h, { pineconeUrl: f.url, maxRetries: 3, requestTimeoutMs: 400 });
    const seed = runNode("vector-child.mjs", ["seed", h, "20"]);
    expect((await finished(seed)).code, seed.stderr).toBe(0);
    const env = { HERMES_HOME: h };

    f.failNext(500, 1_000_000);
    for (const args of [
      ["vector", "search", "zq7x"],
      ["vector", "reindex"],
    ]) {
      const down = runCli(args, env);
      const result = await finished(down);
      figures.trials++;
      expect({ code: result.code, signal: result.signal }, `${args.join(" ")}: ${down.stdout}${down.stderr}`).toEqual({
        code: 1,
        signal: null,
      });
      expect(down.stderr).toMatch(/Pinecone (query|upsert) on index "chaos" failed \(HTTP 500\) after retries/);
    }

    f.clearFaults();
    f.failNext(503, 2);
    const search = runCli(["vector", "search", "zq7x"], env);
    expect((await finished(search)).code, search.stderr).toBe(0);
    expect(search.stdout).toContain("chaos item 7 marker zq7x");
    f.delayNext(600, 1);
    const reindex = runCli(["vector", "reindex"], env);
    expect((await finished(reindex)).code, reindex.stderr).toBe(0);
    expect(reindex.stdout).toMatch(/Reindexed 20 items/);
    figures.trials += 2;
  });
});
