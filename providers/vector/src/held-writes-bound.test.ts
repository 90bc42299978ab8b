/**
 * Writes kept in memory while the store refuses them are bounded, as the SQLite provider bounds its
 * queue (100,000, the kit's DEFAULT_MAX_QUEUE): past it the oldest are dropped, one warning says
 * what was dropped and why, and the next flush() rejects naming how many were lost; the bound holds
 * in the sidecar layout (a read-only home) and in the remote layout (an outbox on a full disk).
 * Real files: a tmpfs remounted read-only or filled, so these tests need root (CI runs as root).
 */
import path from "node:path";
import { describe, expect, it } from "vitest";
import { HermesMemoryError, type Logger } from "@hermes/memory-core";
import { DEFAULT_MAX_QUEUE } from "@hermes/memory-provider-kit";
import { PineconeFake } from "@hermes/pinecone-fake";
import { fillDisk, mountTmpfs, until } from "@hermes/test-support";
import { VectorMemoryProvider, type VectorMemoryProviderOptions } from "./index.js";
import { cleanupsAfterEach } from "./test-support/layouts.js";

const cleanups = cleanupsAfterEach();

const isRoot = process.getuid?.() === 0;
const OVER = 7;

/** Warnings and errors the provider logged (debug lines are not kept: a failing store logs one per turn). */
function recordingLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const ignore = (): void => undefined;
  return {
    logger: { debug: ignore, info: ignore, warn: (m: string) => void lines.push(m), error: (m: string) => void lines.push(m) },
    lines,
  };
}

async function open(home: string, logger: Logger, options: VectorMemoryProviderOptions = {}): Promise<VectorMemoryProvider> {
  const provider = new VectorMemoryProvider({ env: {}, dimensions: 16, logger, ...options });
  await provider.initialize("s1", { hermesHome: home, agentIdentity: "team", userId: "alice" });
  cleanups.push(() => provider.shutdown().catch(() => undefined));
  return provider;
}

async function rejection(call: Promise<unknown>): Promise<string> {
  const thrown = await call.then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(HermesMemoryError.hasCode(thrown, "STORAGE_FAILED"), `expected STORAGE_FAILED, got ${String(thrown)}`).toBe(true);
  return (thrown as HermesMemoryError).message;
}

const dropWarning = /more than 100,000 accepted writes wait in memory .*refuses them .*the oldest \d+ were dropped and are lost/;

describe.skipIf(!isRoot)("writes held in memory are bounded", () => {
  it("sidecar layout on a read-only home: keeps the newest 100,000, drops the oldest with one warning, and the next flush() names them once", async (ctx) => {
    const mount = mountTmpfs("16m");
    if ("reason" in mount) return ctx.skip(mount.reason);
    cleanups.push(() => mount.unmount());
    const home = path.join(mount.dir, "home");
    const first = await open(home, recordingLogger().logger);
    first.remember({ content: "stored before the home turned read-only", kind: "fact" });
    await first.shutdown();
    mount.remount("ro");

    const { logger, lines } = recordingLogger();
    const p = await open(home, logger);
    p.syncTurn("the first turn on a read-only home", "noted", { sessionId: "s1" });
    await until(() => lines.some((l) => /storing 1 items failed/.test(l)));
    for (let i = 1; i < DEFAULT_MAX_QUEUE + OVER; i++) p.syncTurn(`turn ${i}`, "noted", { sessionId: "s1" });
    expect((await p.stats()).pendingWrites).toBe(DEFAULT_MAX_QUEUE);
    const drops = lines.filter((l) => dropWarning.test(l));
    expect(drops).toHaveLength(1);
    expect(drops[0]).toMatch(/read-only/);

    const failed = await rejection(p.flush());
    expect(failed).toMatch(/100000 accepted writes are not stored yet/);
    expect(failed).toMatch(new RegExp(`${OVER} accepted writes were dropped and are lost`));
    // Reported once: the next flush() names only what is still kept.
    expect(await rejection(p.flush())).not.toMatch(/dropped/);
    expect(await rejection(p.shutdown())).toMatch(/100000 accepted writes could not be stored and are lost/);
  }, 120_000);

  it("remote layout with its outbox on a full disk: keeps the newest 100,000 turns, and flush() names the dropped ones", async (ctx) => {
    const mount = mountTmpfs("4m");
    if ("reason" in mount) return ctx.skip(mount.reason);
    cleanups.push(() => mount.unmount());
    const fake = await PineconeFake.start({ dimension: 16, indexName: "mem", metric: "dotproduct" });
    cleanups.push(() => fake.close());
    const remote = {
      env: { PINECONE_API_KEY: "test-key" },
      store: "pinecone",
      pineconeLayout: "remote",
      pineconeIndex: "mem",
      pineconeControllerUrl: fake.url,
      maxRetries: 0,
    } as const;
    const { logger, lines } = recordingLogger();
    const p = await open(path.join(mount.dir, "home"), logger, remote);
    p.syncTurn("a turn before the disk filled", "stored", { sessionId: "s1" });
    await p.flush();

    fillDisk(mount.dir);
    for (let i = 0; i < DEFAULT_MAX_QUEUE + OVER; i++) p.syncTurn(`turn ${i}`, "noted", { sessionId: "s1" });
    const drops = lines.filter((l) => dropWarning.test(l));
    expect(drops).toHaveLength(1);
    expect(drops[0]).toMatch(/Pinecone outbox/);
    const failed = await rejection(p.flush());
    expect(failed).toMatch(/100000 accepted writes are not stored yet: the Pinecone outbox could not take them/);
    expect(failed).toMatch(new RegExp(`${OVER} accepted writes were dropped and are lost`));
    expect(await rejection(p.flush())).not.toMatch(/dropped/);
  }, 120_000);
});
