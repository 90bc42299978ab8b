/**
 * A write that cannot be stored is never acknowledged: turns and mirrored built-in writes on a
 * read-only $HERMES_HOME or a full disk make `flush()` reject with STORAGE_FAILED, and the provider
 * says so in one warning, not one per turn. Real files: a read-only directory (chmod for a normal
 * user; root ignores permission bits, so as root a tmpfs remounted read-only) and a full tmpfs.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { HermesMemoryError, type Logger } from "@hermes/memory-core";
import { PineconeFake } from "@hermes/pinecone-fake";
import { fillDisk, mountTmpfs, until } from "@hermes/test-support";
import { VectorMemoryProvider, type VectorMemoryProviderOptions } from "./vector-memory-provider.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

const isRoot = process.getuid?.() === 0;

/** Every line the provider logged, with its level. */
function recordingLogger(): { logger: Logger; lines: Array<{ level: string; message: string }> } {
  const lines: Array<{ level: string; message: string }> = [];
  const at = (level: string) => (message: string) => void lines.push({ level, message });
  return { logger: { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") }, lines };
}

async function open(home: string, logger?: Logger, options: VectorMemoryProviderOptions = {}): Promise<VectorMemoryProvider> {
  const provider = new VectorMemoryProvider({ env: {}, dimensions: 64, ...(logger ? { logger } : {}), ...options });
  await provider.initialize("s1", { hermesHome: home, agentIdentity: "team", userId: "alice" });
  cleanups.push(() => provider.shutdown().catch(() => undefined));
  return provider;
}

/** A home that `readOnly()` makes unwritable for this process; `{ reason }` when this machine cannot. */
function homeThatTurnsReadOnly(): { home: string; readOnly(): void } | { reason: string } {
  if (!isRoot) {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-vector-ro-"));
    const dirs = [home, path.join(home, "memory"), path.join(home, "memory", "vector")];
    cleanups.push(() => {
      for (const dir of dirs) if (fs.existsSync(dir)) fs.chmodSync(dir, 0o700);
      fs.rmSync(home, { recursive: true, force: true });
    });
    return {
      home,
      readOnly() {
        for (const file of fs.readdirSync(dirs[2]!)) fs.chmodSync(path.join(dirs[2]!, file), 0o400);
        for (const dir of dirs) fs.chmodSync(dir, 0o500);
      },
    };
  }
  const mount = mountTmpfs("16m");
  if ("reason" in mount) return mount;
  cleanups.push(() => mount.unmount());
  return { home: path.join(mount.dir, "home"), readOnly: () => mount.remount("ro") };
}

async function rejection(call: Promise<unknown>): Promise<HermesMemoryError> {
  const thrown = await call.then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(HermesMemoryError.hasCode(thrown, "STORAGE_FAILED"), `expected STORAGE_FAILED, got ${String(thrown)}`).toBe(true);
  return thrown as HermesMemoryError;
}

const storing = /vector memory: storing \d+ items failed/;

describe("a write that cannot be stored is not acknowledged", () => {
  it("read-only home: turns and mirrored writes make flush() reject naming them, with one warning for all of them", async (ctx) => {
    const place = homeThatTurnsReadOnly();
    if ("reason" in place) return ctx.skip(place.reason);
    const writer = await open(place.home);
    writer.remember({ content: "the spare key is under the blue flowerpot", kind: "fact" });
    writer.onMemoryWrite("add", "memory", "Prefers tea in the morning", {});
    await writer.flush();
    await writer.shutdown();
    place.readOnly();

    const { logger, lines } = recordingLogger();
    const p = await open(place.home, logger);
    expect((await p.search("where is the spare key", { limit: 1 }))[0]?.content).toContain("blue flowerpot");
    for (let i = 0; i < 5; i++) {
      p.syncTurn(`question ${i} on a read-only home`, `answer ${i}`, { sessionId: "s1" });
      // Each turn is tried on its own (and fails), before the next one is queued.
      await until(() => lines.filter((l) => storing.test(l.message)).length === i + 1);
    }
    // Replacing a mirrored fact: removing the old one fails too, and the new one is still counted.
    p.onMemoryWrite("replace", "memory", "Prefers coffee in the morning", { previousContent: "Prefers tea in the morning" });

    const failed = await rejection(p.flush());
    expect(failed.message).toMatch(/6 accepted writes are not stored yet/);
    expect(failed.message).toMatch(/read-only/);
    // Still not stored: still rejected.
    expect((await rejection(p.flush())).message).toMatch(/6 accepted writes are not stored yet/);
    expect(lines.filter((l) => l.level === "warn" && storing.test(l.message))).toHaveLength(1);
    expect(lines.filter((l) => l.level === "warn" && storing.test(l.message))[0]!.message).toMatch(/read-only/);
    expect((await rejection(p.shutdown())).message).toMatch(/6 accepted writes could not be stored and are lost/);
  });

  it.skipIf(!isRoot)(
    "full disk: turns make flush() reject until space is back, with one warning per run of failures",
    async (ctx) => {
      const mount = mountTmpfs("4m");
      if ("reason" in mount) return ctx.skip(mount.reason);
      cleanups.push(() => mount.unmount());
      const { logger, lines } = recordingLogger();
      const p = await open(path.join(mount.dir, "home"), logger);
      for (let i = 0; i < 40; i++) p.remember({ content: `seed fact ${i} ${"w".repeat(2000)}`, kind: "fact" });
      await p.flush();
      const warnings = () => lines.filter((l) => l.level === "warn" && storing.test(l.message));

      let filler = fillDisk(mount.dir);
      for (let i = 0; i < 5; i++) {
        p.syncTurn(`question ${i} on a full disk ${"x".repeat(3000)}`, `answer ${i}`, { sessionId: "s1" });
        await until(() => lines.filter((l) => storing.test(l.message)).length === i + 1);
      }
      const failed = await rejection(p.flush());
      expect(failed.message).toMatch(/5 accepted writes are not stored yet.*disk is full/);
      expect(warnings()).toHaveLength(1);
      fs.rmSync(filler);
      await p.flush();
      expect((await p.stats()).byKind.turn).toBe(5);

      // Stored again, so the next run of failures is worth a warning of its own.
      filler = fillDisk(mount.dir);
      for (let i = 0; i < 2; i++) {
        p.syncTurn(`later question ${i} ${"y".repeat(3000)}`, `answer ${i}`, { sessionId: "s1" });
        await until(() => warnings().length === 2 && lines.filter((l) => storing.test(l.message)).length === 7 + i);
      }
      expect(warnings()).toHaveLength(2);
      fs.rmSync(filler);
      await p.flush();
      expect((await p.stats()).byKind.turn).toBe(7);
    },
    30_000,
  );

  it.skipIf(!isRoot)(
    "remote layout, full disk: turns and mirrored facts the outbox cannot take make flush() reject until space is back, with one warning",
    async (ctx) => {
      const mount = mountTmpfs("4m");
      if ("reason" in mount) return ctx.skip(mount.reason);
      cleanups.push(() => mount.unmount());
      const fake = await PineconeFake.start({ dimension: 64, indexName: "mem", metric: "dotproduct" });
      cleanups.push(() => fake.close());
      const { logger, lines } = recordingLogger();
      const remote = {
        env: { PINECONE_API_KEY: "test-key" },
        store: "pinecone",
        pineconeLayout: "remote",
        pineconeIndex: "mem",
        pineconeControllerUrl: fake.url,
        maxRetries: 0,
      } as const;
      const p = await open(path.join(mount.dir, "home"), logger, remote);
      p.syncTurn("a turn before the disk filled", "stored", { sessionId: "s1" });
      await p.flush();
      const queuedFor = /could not be queued for Pinecone/;

      const filler = fillDisk(mount.dir);
      for (let i = 0; i < 3; i++) p.syncTurn(`question ${i} on a full disk ${"x".repeat(3000)}`, `answer ${i}`, { sessionId: "s1" });
      p.onMemoryWrite("add", "memory", "Prefers green tea", {});
      const failed = await rejection(p.flush());
      expect(failed.message).toMatch(/4 accepted writes are not stored yet: the Pinecone outbox could not take them.*full/);
      expect(lines.filter((l) => l.level === "warn" && queuedFor.test(l.message))).toHaveLength(1);
      expect(fake.count("team")).toBe(1);

      fs.rmSync(filler);
      await p.flush();
      expect(fake.count("team")).toBe(5);
      expect(lines.filter((l) => l.level === "warn" && queuedFor.test(l.message))).toHaveLength(1);
    },
    30_000,
  );
});
