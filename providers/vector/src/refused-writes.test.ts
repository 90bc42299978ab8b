import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HermesMemoryError } from "@hermes/memory-core";
import { PineconeFake } from "@hermes/pinecone-fake";
import { runRefused, type CliIo } from "./cli.js";
import { deliverIsolating, Outbox, type OutboxEntry } from "./pinecone/outbox.js";
import { markContentRefusal } from "./retry-policy.js";
import { VectorMemoryProvider, type VectorMemoryProviderOptions } from "./vector-memory-provider.js";

let dir: string;
let fake: PineconeFake;
const providers: VectorMemoryProvider[] = [];

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "vector-refused-"));
  fake = await PineconeFake.start({ dimension: 128, indexName: "mem", metric: "dotproduct" });
});
afterEach(async () => {
  for (const p of providers.splice(0)) await p.shutdown().catch(() => undefined);
  await fake.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function write(id: string, text = `text of ${id}`) {
  return { id, namespace: "ns", text, metadata: { kind: "fact" } };
}

/** A store refusing the content of the entries whose id is in `refused` (HTTP 400), as Pinecone refuses a whole request. */
function refusingSend(refused: ReadonlySet<string>, sent: string[][]) {
  return async (entries: OutboxEntry[]): Promise<void> => {
    sent.push(entries.map((e) => e.id));
    const bad = entries.find((e) => refused.has(e.id));
    if (bad) throw markContentRefusal(new HermesMemoryError({ code: "STORAGE_FAILED", message: `refused ${bad.id}` }), 400);
  };
}

describe("Outbox: writes set aside", () => {
  it("moves refused entries out of the queue, lists them, queues them again (a newer write of the id wins) or drops them", () => {
    const outbox = Outbox.open(path.join(dir, "outbox.sqlite"));
    try {
      const [a, b] = outbox.put([write("a"), write("b"), write("c")]);
      outbox.setAside([a!, b!], "HTTP 400: too odd", 1_000);
      expect(outbox.list(10).map((e) => e.id)).toEqual(["c"]);
      expect(outbox.refusedCount()).toBe(2);
      expect(outbox.refused()).toEqual([
        { seq: a, id: "a", namespace: "ns", text: "text of a", metadata: { kind: "fact" }, reason: "HTTP 400: too odd", refusedAt: 1_000 },
        { seq: b, id: "b", namespace: "ns", text: "text of b", metadata: { kind: "fact" }, reason: "HTTP 400: too odd", refusedAt: 1_000 },
      ]);
      // "a" was written again since it was refused: the newer version stays, the refused one goes.
      outbox.put([write("a", "a, fixed")]);
      expect(outbox.retryRefused()).toBe(1);
      expect(outbox.list(10).map((e) => [e.id, e.text])).toEqual([
        ["c", "text of c"],
        ["a", "a, fixed"],
        ["b", "text of b"],
      ]);
      expect(outbox.refusedCount()).toBe(0);
      const [d] = outbox.put([write("d")]);
      outbox.setAside([d!], "refused");
      expect(outbox.dropRefused([12345])).toBe(0);
      expect(outbox.dropRefused()).toBe(1);
      expect(outbox.refusedCount()).toBe(0);
      expect(outbox.list(10).map((e) => e.id)).toEqual(["c", "a", "b"]);
    } finally {
      outbox.close();
    }
  });

  it("a newer write of a set-aside id replaces it, also once delivered (a retry never restores the old version); set-aside rows keep their own numbers", () => {
    const outbox = Outbox.open(path.join(dir, "outbox.sqlite"));
    try {
      const [v1] = outbox.put([write("a", "v1, refused")]);
      outbox.setAside([v1!], "refused");
      const [v2] = outbox.put([write("a", "v2")]);
      expect(outbox.refusedCount()).toBe(0);
      outbox.remove([v2!]); // delivered
      expect(outbox.retryRefused()).toBe(0);
      expect(outbox.list(10)).toEqual([]);
      // The outbox reuses the number of its newest row once it is gone; set-aside rows do not clash.
      const [b] = outbox.put([write("b")]);
      outbox.setAside([b!], "refused b");
      const [c] = outbox.put([write("c")]);
      expect(c).toBe(b);
      outbox.setAside([c!], "refused c");
      expect(outbox.refused().map((e) => [e.id, e.reason])).toEqual([
        ["b", "refused b"],
        ["c", "refused c"],
      ]);
      expect(outbox.count()).toBe(0);
    } finally {
      outbox.close();
    }
  });

  it("adds its table to an outbox of schema version 1 without changing the version (an older release still opens it)", () => {
    const file = path.join(dir, "outbox.sqlite");
    const old = new Database(file);
    old.exec(
      `CREATE TABLE outbox (seq INTEGER PRIMARY KEY, namespace TEXT NOT NULL, id TEXT NOT NULL, text TEXT NOT NULL, metadata TEXT NOT NULL, UNIQUE (namespace, id))`,
    );
    old.pragma("user_version = 1");
    old.prepare("INSERT INTO outbox (namespace, id, text, metadata) VALUES ('ns', 'kept', 'waiting', '{}')").run();
    old.close();
    const outbox = Outbox.open(file);
    expect(outbox.refusedCount()).toBe(0);
    expect(outbox.count()).toBe(1);
    outbox.close();
    const check = new Database(file, { readonly: true });
    expect(check.pragma("user_version", { simple: true })).toBe(1);
    check.close();
  });
});

describe("deliverIsolating", () => {
  it("sets aside only the entries refused on their own and delivers the rest, in order", async () => {
    const outbox = Outbox.open(path.join(dir, "outbox.sqlite"));
    try {
      outbox.put(["a", "b", "c", "d", "e"].map((id) => write(id)));
      const sent: string[][] = [];
      const result = await deliverIsolating(outbox, outbox.list(10), refusingSend(new Set(["d"]), sent));
      expect(result.delivered.map((e) => e.id)).toEqual(["a", "b", "c", "e"]);
      expect(result.refused.map((e) => e.id)).toEqual(["d"]);
      expect(outbox.count()).toBe(0);
      expect(outbox.refused().map((e) => [e.id, e.reason])).toEqual([["d", "refused d"]]);
      // Halves, not one request per entry.
      expect(sent).toEqual([["a", "b", "c", "d", "e"], ["a", "b", "c"], ["d", "e"], ["d"], ["e"]]);
    } finally {
      outbox.close();
    }
  });

  it("keeps everything queued and throws when every entry is refused (a wrong dimension or index refuses them all)", async () => {
    const outbox = Outbox.open(path.join(dir, "outbox.sqlite"));
    try {
      outbox.put(["a", "b", "c"].map((id) => write(id)));
      const error = await deliverIsolating(outbox, outbox.list(10), refusingSend(new Set(["a", "b", "c"]), [])).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: "STORAGE_FAILED", message: "refused a" });
      expect(outbox.count()).toBe(3);
      expect(outbox.refusedCount()).toBe(0);
    } finally {
      outbox.close();
    }
  });

  it("throws any other failure at once and sets nothing aside (an outage is re-sent later)", async () => {
    const outbox = Outbox.open(path.join(dir, "outbox.sqlite"));
    try {
      outbox.put(["a", "b"].map((id) => write(id)));
      const down = async () => {
        throw new HermesMemoryError({ code: "STORAGE_FAILED", message: "HTTP 503 after retries" });
      };
      await expect(deliverIsolating(outbox, outbox.list(10), down)).rejects.toThrow(/503/);
      expect(outbox.count()).toBe(2);
      expect(outbox.refusedCount()).toBe(0);
    } finally {
      outbox.close();
    }
  });
});

function options(layout: "remote" | "sidecar"): VectorMemoryProviderOptions {
  return {
    env: { PINECONE_API_KEY: "test-key" },
    dimensions: 128,
    store: "pinecone",
    pineconeLayout: layout,
    pineconeIndex: "mem",
    pineconeControllerUrl: fake.url,
    maxRetries: 1,
  };
}

async function start(layout: "remote" | "sidecar"): Promise<VectorMemoryProvider> {
  const p = new VectorMemoryProvider(options(layout));
  providers.push(p);
  await p.initialize("s1", { hermesHome: dir, agentIdentity: "team", userId: "alice" });
  return p;
}

function io(): CliIo & { out: string; err: string } {
  const sink = { out: "", err: "", isTTY: false, stdout: (t: string) => void (sink.out += t), stderr: (t: string) => void (sink.err += t) };
  return sink;
}

/** The texts of the items stored in Pinecone (the remote layout's identity record has none). */
function storedTexts(): string[] {
  const texts: string[] = [];
  for (const records of fake.namespaces.values())
    for (const r of records.values()) if (r.metadata?.text !== undefined) texts.push(String(r.metadata.text));
  return texts.sort();
}

describe.each(["remote", "sidecar"] as const)("Pinecone %s layout: a write Pinecone refuses for its content", (layout) => {
  it("is set aside so the writes behind it are stored, reported by flush(), stats and `vector refused`, then retried", async () => {
    fake.refuseRecords((r) => String(r.metadata?.text ?? "").includes("FORBIDDEN"), "Metadata value is not allowed");
    const p = await start(layout);
    for (const content of ["alpha fact", "a FORBIDDEN fact", "gamma fact", "delta fact"]) p.remember({ content });
    const error = await p.flush().catch((e: unknown) => e);
    expect(HermesMemoryError.hasCode(error, "STORAGE_FAILED")).toBe(true);
    expect((error as Error).message).toMatch(
      /1 accepted write was refused for its content and set aside.*Metadata value is not allowed.*hermes-memory vector refused/s,
    );
    expect(storedTexts()).toEqual(["alpha fact", "delta fact", "gamma fact"]);
    const stats = await p.stats();
    expect(stats).toMatchObject({ pendingWrites: 0, refusedWrites: 1 });
    // Every flush says so until the write is retried or dropped.
    await expect(p.flush()).rejects.toThrow(/set aside/);

    const ctx = { hermesHome: dir, providerName: "vector" };
    const listed = io();
    expect(await runRefused(ctx, { json: true }, listed)).toBe(0);
    const report = JSON.parse(listed.out) as { refused: Array<{ id: string; reason: string }> };
    expect(report.refused).toHaveLength(1);
    expect(report.refused[0]!.reason).toMatch(/HTTP 400.*not allowed/);
    expect(await runRefused(ctx, { retry: true, drop: true }, io())).toBe(1);

    // The cause is fixed (here: Pinecone takes it now); queued again, the write is stored.
    await p.shutdown().catch(() => undefined);
    fake.refuseRecords(null);
    const retried = io();
    expect(await runRefused(ctx, { retry: true }, retried)).toBe(0);
    expect(retried.out).toMatch(/Queued 1 writes again/);
    const q = await start(layout);
    await q.flush();
    expect(storedTexts()).toEqual(["a FORBIDDEN fact", "alpha fact", "delta fact", "gamma fact"]);
    expect(await q.stats()).toMatchObject({ refusedWrites: 0 });
    const empty = io();
    expect(await runRefused(ctx, {}, empty)).toBe(0);
    expect(empty.out).toBe("No writes are set aside.\n");
  });

  it("sets nothing aside when Pinecone refuses every write: all stay queued and flush() names the refusal", async () => {
    // Every item refused (the remote layout's identity record, which has no text, is taken).
    fake.refuseRecords((r) => r.metadata?.text !== undefined, "Vector dimension does not match");
    const p = await start(layout);
    for (const content of ["one fact", "two fact"]) p.remember({ content });
    await expect(p.flush()).rejects.toThrow(/2 writes are not acknowledged by Pinecone yet.*does not match/s);
    expect(await p.stats()).toMatchObject({ pendingWrites: 2, refusedWrites: 0 });
    fake.refuseRecords(null);
    await p.flush();
    expect(storedTexts()).toEqual(["one fact", "two fact"]);
  });

  it("sets aside a second refusal after the first (row numbers are not reused), and never stops erasure, update or the flush of other writes", async () => {
    fake.refuseRecords((r) => String(r.metadata?.text ?? "").includes("FORBIDDEN"));
    const p = await start(layout);
    p.remember({ content: "ok one" });
    p.remember({ content: "first FORBIDDEN" });
    await expect(p.flush()).rejects.toThrow(/1 accepted write was refused/);
    p.remember({ content: "ok two" });
    p.remember({ content: "second FORBIDDEN" });
    await expect(p.flush()).rejects.toThrow(/2 accepted writes were refused/);
    expect(await p.stats()).toMatchObject({ pendingWrites: 0, refusedWrites: 2 });
    expect(storedTexts()).toEqual(["ok one", "ok two"]);
    // Erasing another item works while writes are set aside.
    const hit = (await p.search("ok two", { limit: 5 })).find((h) => h.content === "ok two")!;
    expect(await p.forget(hit.id)).toBe(true);
    expect(storedTexts()).toEqual(["ok one"]);
  });

  it("erasing a set-aside write removes it: `refused --retry` cannot bring it back", async () => {
    fake.refuseRecords((r) => String(r.metadata?.text ?? "").includes("FORBIDDEN"));
    const p = await start(layout);
    p.remember({ content: "ok fact" });
    const secret = p.remember({ content: "my FORBIDDEN secret", sessionId: "s-secret" });
    await expect(p.flush()).rejects.toThrow(/set aside/);
    expect(await p.forgetWhere({ ids: [secret] })).toBeGreaterThanOrEqual(1);
    await p.flush();
    fake.refuseRecords(null);
    const retried = io();
    expect(await runRefused({ hermesHome: dir, providerName: "vector" }, { retry: true, json: true }, retried)).toBe(0);
    expect(JSON.parse(retried.out)).toMatchObject({ refused: [], retried: 0 });
    await p.flush();
    expect(storedTexts()).toEqual(["ok fact"]);
  });

  it("sets a refused write aside in the background too: the writes queued with it reach Pinecone without a flush()", async () => {
    fake.refuseRecords((r) => String(r.metadata?.text ?? "").includes("FORBIDDEN"));
    const p = await start(layout);
    p.remember({ content: "warm up" });
    await p.flush();
    for (const content of ["good A", "x FORBIDDEN", "good B"]) p.remember({ content });
    // Pinecone holds the good writes a moment before the provider has read its answers: wait for both.
    const deadline = Date.now() + 5_000;
    const settled = async () => storedTexts().length >= 3 && (await p.stats()).pendingWrites === 0;
    while (!(await settled()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(storedTexts()).toEqual(["good A", "good B", "warm up"]);
    expect(await p.stats()).toMatchObject({ pendingWrites: 0, refusedWrites: 1 });
  });

  it("can drop what was set aside; later flushes succeed", async () => {
    fake.refuseRecords((r) => String(r.metadata?.text ?? "").includes("FORBIDDEN"));
    const p = await start(layout);
    for (const content of ["kept fact", "FORBIDDEN fact"]) p.remember({ content });
    await expect(p.flush()).rejects.toThrow(/set aside/);
    const dropped = io();
    expect(await runRefused({ hermesHome: dir, providerName: "vector" }, { drop: true, json: true }, dropped)).toBe(0);
    expect(JSON.parse(dropped.out)).toMatchObject({ dropped: 1 });
    await p.flush();
    expect(storedTexts()).toEqual(["kept fact"]);
  });
});
