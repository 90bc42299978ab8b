import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { MemoryHit } from "@hermes/memory-core";
import { PineconeFake } from "@hermes/pinecone-fake";
import { CONCEPT_DIMENSIONS } from "../test-support/concept-embedder.js";
import { TSX } from "../test-support/run-script.js";

const CHILD = fileURLToPath(new URL("../test-support/pinecone-remote-child.ts", import.meta.url));

type Reply = { ok: true; result: unknown } | { ok: false; code: string; message: string };

/** One agent process with its own $HERMES_HOME, driven over stdin/stdout. */
class Agent {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly replies: Array<(reply: Reply) => void> = [];
  stderr = "";

  constructor(
    readonly home: string,
    fakeUrl: string,
  ) {
    this.child = spawn(process.execPath, ["--import", TSX, CHILD], {
      env: { ...process.env, HERMES_HOME: home, PINECONE_FAKE_URL: fakeUrl },
    });
    this.child.stderr.on("data", (d: Buffer) => (this.stderr += d.toString()));
    readline.createInterface({ input: this.child.stdout }).on("line", (line) => this.replies.shift()?.(JSON.parse(line) as Reply));
  }

  call(op: string, ...args: unknown[]): Promise<Reply> {
    return new Promise((resolve) => {
      this.replies.push(resolve);
      this.child.stdin.write(`${JSON.stringify({ op, args })}\n`);
    });
  }

  async ok<T>(op: string, ...args: unknown[]): Promise<T> {
    const reply = await this.call(op, ...args);
    if (!reply.ok) throw new Error(`${op} failed in ${this.home}: ${reply.code} ${reply.message} ${this.stderr}`);
    return reply.result as T;
  }

  async ids(query: string, options: Record<string, unknown> = {}): Promise<string[]> {
    return (await this.ok<MemoryHit[]>("search", query, { limit: 5, ...options })).map((h) => h.id);
  }

  /** Close the store and let the process exit. */
  async stop(): Promise<void> {
    await this.ok("close");
    this.child.stdin.end();
    await new Promise((resolve) => (this.child.exitCode !== null ? resolve(null) : this.child.on("exit", resolve)));
  }

  /** Kill -9: no close, no flush. */
  async kill(): Promise<void> {
    this.child.kill("SIGKILL");
    await new Promise((resolve) =>
      this.child.exitCode !== null || this.child.signalCode !== null ? resolve(null) : this.child.on("exit", resolve),
    );
  }
}

/** Every file under `dir`, relative to it. */
function filesUnder(dir: string): string[] {
  return (fs.readdirSync(dir, { recursive: true, withFileTypes: true }) as fs.Dirent[])
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
    .sort();
}

let fake: PineconeFake;
let root: string;
const agents: Agent[] = [];

function agent(name: string): Agent {
  const home = path.join(root, name);
  fs.mkdirSync(home, { recursive: true });
  const a = new Agent(home, fake.url);
  agents.push(a);
  return a;
}

beforeEach(async () => {
  fake = await PineconeFake.start({ dimension: CONCEPT_DIMENSIONS, indexName: "shared", metric: "dotproduct" });
  root = fs.mkdtempSync(path.join(os.tmpdir(), "pinecone-two-process-"));
});
afterEach(async () => {
  for (const a of agents.splice(0)) await a.kill();
  await fake.close();
  fs.rmSync(root, { recursive: true, force: true });
});

describe("two agent processes with separate homes sharing one Pinecone index (remote layout)", () => {
  it(
    "a write from one is found by the other by keyword and by meaning; an erasure by user from the other removes it for the first",
    { timeout: 60_000 },
    async () => {
      const one = agent("machine-1");
      const two = agent("machine-2");
      const fact = "Alice's locker combination is 4711 and she parks her sedan on level three";
      const id = await one.ok<string>("remember", { content: fact, kind: "fact", userId: "alice", sessionId: "s-alice" });
      const noise = await one.ok<string>("remember", { content: "Bob had pasta for dinner", kind: "fact", userId: "bob" });
      // Closer to "locker combination" by meaning than the fact (the test embedder places both on the
      // same axes), so only the keyword signal ranks the fact first.
      const lookalike = await one.ok<string>("remember", { content: "banana pomegranates", kind: "fact", userId: "bob" });
      await one.ok("flush");
      expect(await one.ok<number>("pending")).toBe(0);

      // Keyword: "combination" and "locker" (sparse); meaning: "automobile" shares no word with the fact (dense).
      expect((await two.ids("locker combination")).slice(0, 2)).toEqual([id, lookalike]);
      const [byMeaning] = await two.ok<MemoryHit[]>("search", "automobile", { limit: 1 });
      expect(byMeaning!.id).toBe(id);
      expect(byMeaning!.score).toBeGreaterThan(0.3); // no shared term: all of it is the dense part
      expect((await two.ids("automobile", { userId: "alice" }))[0]).toBe(id);
      expect((await two.ids("automobile", { userId: "bob" })).sort()).toEqual([noise, lookalike].sort());
      expect((await two.ok<MemoryHit>("get", id)).content).toBe(fact);
      expect((await one.ids("locker combination"))[0]).toBe(id);

      expect(await two.ok<number>("forgetWhere", { userId: "alice" })).toBe(1);
      expect(await one.ids("locker combination")).not.toContain(id);
      expect(await one.ids("automobile")).not.toContain(id);
      expect(await one.ok("get", id)).toBeNull();
      expect((await one.ids("pasta dinner"))[0]).toBe(noise);

      // The only local state on either machine is the outbox.
      await one.stop();
      await two.stop();
      for (const home of [one.home, two.home]) expect(filesUnder(home)).toEqual([path.join("memory", "vector", "remote-outbox.sqlite")]);
    },
  );

  it(
    "a write made during an outage is reported, survives kill -9, and reaches the other machine after a restart",
    { timeout: 60_000 },
    async () => {
      const one = agent("machine-1");
      const two = agent("machine-2");
      fake.failNext(503, 1_000_000, "/vectors/upsert");
      const id = await one.ok<string>("remember", { content: "The harbour gate code is 2580", userId: "carol" });
      const flushed = await one.call("flush");
      expect(flushed).toMatchObject({ ok: false, code: "STORAGE_FAILED" });
      expect((flushed as { message: string }).message).toMatch(
        /1 writes are not acknowledged by Pinecone yet; they are kept in the outbox .*remote-outbox\.sqlite/,
      );
      await one.kill();
      expect(fake.count("team-profile")).toBe(0);

      fake.clearFaults();
      const restarted = agent("machine-1");
      expect(await restarted.ok<number>("pending")).toBe(1);
      await restarted.ok("flush");
      expect(await restarted.ok<number>("pending")).toBe(0);
      expect((await two.ids("harbour gate code"))[0]).toBe(id);
    },
  );
});
