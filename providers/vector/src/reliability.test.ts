import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { HermesMemoryError, MemoryManager } from "@hermes/memory-core";
import { VectorMemoryProvider, type VectorMemoryProviderOptions } from "./vector-memory-provider.js";
import { PineconeFake } from "@hermes/pinecone-fake";
import { holdWriteLock, stopWriteLockHolders } from "@hermes/test-support";
import Database from "better-sqlite3";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  stopWriteLockHolders();
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

function tempHome(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-vector-reliability-"));
  cleanups.push(() => {
    fs.chmodSync(dir, 0o700);
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

async function open(home: string, options: VectorMemoryProviderOptions = {}): Promise<VectorMemoryProvider> {
  const provider = new VectorMemoryProvider({ env: {}, dimensions: 64, ...options });
  await provider.initialize("s1", { hermesHome: home });
  cleanups.push(() => provider.shutdown().catch(() => undefined));
  return provider;
}

async function startFake(): Promise<PineconeFake> {
  const fake = await PineconeFake.start({ dimension: 64, indexName: "mem" });
  cleanups.push(() => fake.close());
  return fake;
}

const pinecone = (fake: PineconeFake): VectorMemoryProviderOptions => ({
  store: "pinecone",
  pineconeIndex: "mem",
  pineconeHost: fake.url,
  env: { PINECONE_API_KEY: "test-key" },
  maxRetries: 1,
  requestTimeoutMs: 2000,
});

function breakSidecar(provider: VectorMemoryProvider, broken: boolean): void {
  // A query-only connection refuses every write, as a full disk does.
  (provider as unknown as { backend: { sidecar: { db: { pragma(s: string): unknown } } } }).backend.sidecar.db.pragma(
    `query_only = ${broken ? "ON" : "OFF"}`,
  );
}

describe("accepted writes are stored, or flush() says they are not", () => {
  it("local store: writes that fail stay pending, flush rejects naming how many, and they are stored once writing works", async () => {
    const home = tempHome();
    const p = await open(home);
    breakSidecar(p, true);
    for (let i = 0; i < 300; i++) p.remember({ content: `fact number ${i} about the harbour`, kind: "fact" });
    const failed = await p.flush().catch((e: unknown) => e);
    expect(HermesMemoryError.hasCode(failed, "STORAGE_FAILED")).toBe(true);
    expect((failed as Error).message).toMatch(/300 accepted writes are not stored yet/);
    // Still failing: still rejected, nothing dropped.
    expect(HermesMemoryError.hasCode(await p.flush().catch((e: unknown) => e), "STORAGE_FAILED")).toBe(true);
    breakSidecar(p, false);
    await p.flush();
    expect((await p.stats()).items).toBe(300);
    await p.shutdown();
    const again = await open(home);
    expect((await again.stats()).items).toBe(300);
    expect((await again.search("fact number 123", { limit: 1 }))[0]!.content).toBe("fact number 123 about the harbour");
  });

  it("local store: shutdown() with writes it could not store throws STORAGE_FAILED naming them", async () => {
    const home = tempHome();
    const p = await open(home);
    breakSidecar(p, true);
    p.remember({ content: "cannot be written", kind: "fact" });
    const error = await p.shutdown().catch((e: unknown) => e);
    expect(HermesMemoryError.hasCode(error, "STORAGE_FAILED")).toBe(true);
    expect((error as Error).message).toMatch(/1 accepted writes could not be stored and are lost/);
  });

  it("pinecone store: writes Pinecone did not acknowledge survive a restart in the outbox and are re-sent (same ids)", async () => {
    const fake = await startFake();
    const home = tempHome();
    const p = await open(home, pinecone(fake));
    fake.failNext(503, 1_000_000);
    const ids = Array.from({ length: 40 }, (_, i) => p.remember({ content: `outage note ${i}`, kind: "fact" }));
    const failed = await p.flush().catch((e: unknown) => e);
    expect(HermesMemoryError.hasCode(failed, "STORAGE_FAILED")).toBe(true);
    expect((failed as Error).message).toMatch(
      /40 writes are not acknowledged by Pinecone yet; they are kept in the outbox .*outbox\.sqlite.*HTTP 503/,
    );
    const shutdownError = await p.shutdown().catch((e: unknown) => e);
    expect(HermesMemoryError.hasCode(shutdownError, "STORAGE_FAILED")).toBe(true);
    expect((shutdownError as Error).message).toMatch(/40 writes not acknowledged by Pinecone are kept in the outbox/);
    expect(fake.count()).toBe(0);

    fake.clearFaults();
    const restarted = await open(home, pinecone(fake));
    await restarted.flush();
    const namespace = restarted.namespaceFor();
    expect([...(fake.namespaces.get(namespace)?.keys() ?? [])].sort()).toEqual([...ids].sort());
    expect((await restarted.stats()).pendingWrites).toBe(0);
  });

  it("pinecone store: when the outbox cannot take new writes, the flush that re-sends it still empties it and stores the new ones", async () => {
    const fake = await startFake();
    const home = tempHome();
    const warnings: string[] = [];
    const logger = {
      debug: () => undefined,
      info: () => undefined,
      warn: (m: string) => void warnings.push(m),
      error: (m: string) => void warnings.push(m),
    };
    const p = await open(home, { ...pinecone(fake), maxRetries: 0, logger });
    fake.failNext(503, 1_000_000);
    const waiting = Array.from({ length: 5 }, (_, i) => p.remember({ content: `kept through the outage ${i}`, kind: "fact" }));
    expect(HermesMemoryError.hasCode(await p.flush().catch((e: unknown) => e), "STORAGE_FAILED")).toBe(true);
    expect(p.undeliveredWrites).toBe(5);
    fake.clearFaults();

    // Another process holds the outbox's write lock past SQLite's 5 s busy wait, so putting the
    // next write there fails; it lets go soon after, while the same flush re-sends the outbox.
    const holder = await holdWriteLock(path.join(home, "memory", "vector", "outbox.sqlite"), 6500);
    const fresh = p.remember({ content: "written while the outbox was locked", kind: "fact" });
    await p.flush();
    await holder.release();
    const stored = new Set(fake.namespaces.get(p.namespaceFor())?.keys() ?? []);
    expect([...waiting, fresh].filter((id) => !stored.has(id))).toEqual([]);
    expect(p.undeliveredWrites).toBe(0);
    expect(warnings.filter((w) => /Could not write the outbox .*locked/.test(w))).toHaveLength(1);
    await p.shutdown();
    const check = new Database(path.join(home, "memory", "vector", "outbox.sqlite"), { readonly: true });
    expect(check.prepare("SELECT COUNT(*) FROM outbox").pluck().get()).toBe(0);
    check.close();
  }, 40_000);

  it("pinecone store: a retry backoff keeps an awaiting process alive until flush() settles", async () => {
    const fake = await startFake();
    const home = tempHome();
    // Every request fails twice before it succeeds: flush() must wait through two backoffs.
    fake.failNext(503, 2);
    const script = `
      const { VectorMemoryProvider } = await import(${JSON.stringify(pathToFileURL(fileURLToPath(new URL("./vector-memory-provider.ts", import.meta.url))).href)});
      const p = new VectorMemoryProvider({ env: { PINECONE_API_KEY: "test-key" }, dimensions: 64, store: "pinecone", pineconeIndex: "mem", pineconeHost: ${JSON.stringify(fake.url)}, maxRetries: 3 });
      await p.initialize("s1", { hermesHome: ${JSON.stringify(home)} });
      p.remember({ content: "kept alive through the retry", kind: "fact" });
      await p.flush();
      await p.shutdown();
      console.log("FLUSHED");
    `;
    const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx/esm")).href;
    const child = spawn(process.execPath, ["--import", tsx, "--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    expect({ code, out: out.trim(), err }).toEqual({ code: 0, out: "FLUSHED", err: "" });
    expect(fake.count(fake.namespaces.keys().next().value as string)).toBe(1);
  });
});

describe("the manager's shutdown report", () => {
  it("shows writes Pinecone never acknowledged (count and outbox) instead of a clean shutdown", async () => {
    const fake = await startFake();
    const home = tempHome();
    const warnings: string[] = [];
    const logger = {
      debug: () => undefined,
      info: () => undefined,
      warn: (m: string) => void warnings.push(m),
      error: (m: string) => void warnings.push(m),
    };
    const manager = new MemoryManager({ hermesHome: home, logger });
    const provider = new VectorMemoryProvider({ ...pinecone(fake) });
    manager.addProvider(provider);
    await manager.initializeAll("s1", { hermesHome: home });
    fake.failNext(500, 1_000_000);
    for (let i = 0; i < 3; i++) manager.syncAll(`question ${i} during the outage`, `answer ${i}`, { sessionId: "s1" });
    await manager.shutdownAll();
    expect(warnings.join("\n")).toMatch(
      /Memory provider 'vector' shutdown failed: vector memory shutdown: 3 writes not acknowledged by Pinecone are kept in the outbox .*outbox\.sqlite and re-sent on the next start/,
    );
    expect(fake.count()).toBe(0);
  });
});

describe("read-only $HERMES_HOME", () => {
  const isRoot = process.getuid?.() === 0;
  // root ignores permission bits; the chaos suite covers root with a read-only mount.
  it.skipIf(isRoot)("opens read-only: search and prefetch work, writes fail with STORAGE_FAILED", async () => {
    const home = tempHome();
    const writer = await open(home);
    writer.remember({ content: "the spare key is under the blue flowerpot", kind: "fact" });
    await writer.shutdown();
    for (const dir of [path.join(home, "memory", "vector"), path.join(home, "memory"), home]) fs.chmodSync(dir, 0o500);
    for (const file of fs.readdirSync(path.join(home, "memory", "vector"))) fs.chmodSync(path.join(home, "memory", "vector", file), 0o400);
    const reader = await open(home);
    expect((await reader.search("where is the spare key", { limit: 1 }))[0]!.content).toContain("blue flowerpot");
    expect(await reader.prefetch("spare key", { sessionId: "s1" })).toContain("blue flowerpot");
    let error: unknown;
    try {
      reader.remember({ content: "cannot be saved", kind: "fact" });
    } catch (e) {
      error = e;
    }
    expect(HermesMemoryError.hasCode(error, "STORAGE_FAILED")).toBe(true);
    expect((error as Error).message).toMatch(/read-only.*search works/);
    expect(JSON.parse(await reader.handleToolCall("vector_memory_remember", { content: "x" })).error).toMatch(/read-only/);
    await reader.shutdown();
  });
});
