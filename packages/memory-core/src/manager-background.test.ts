import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryManager } from "./manager.js";
import { defaultHermesHome, getHermesHome, runWithProfile } from "./profile.js";
import { RecordingProvider, capturingLogger, deferred, tool } from "./test-support/recording-provider.js";

const tempDirs: string[] = [];
function tempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of tempDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function manager(options: ConstructorParameters<typeof MemoryManager>[0] = {}) {
  const logger = capturingLogger();
  return { mgr: new MemoryManager({ hermesHome: "/tmp/hermes-test-home", logger, ...options }), logger };
}

describe("syncAll", () => {
  it("returns immediately while a provider takes 2 s; the write is visible after flushPending", async () => {
    const { mgr } = manager();
    const written: string[] = [];
    mgr.addProvider(
      new RecordingProvider("ext", {
        syncTurn: (user) =>
          new Promise<void>((resolve) =>
            setTimeout(() => {
              written.push(user);
              resolve();
            }, 2000),
          ),
      }),
    );
    const started = performance.now();
    mgr.syncAll("remember this", "ok", { sessionId: "s1" });
    const elapsed = performance.now() - started;
    // Well before the provider's 2 s write: it was queued, not awaited (a bound of a few ms would
    // measure the machine's load, not the queue).
    expect(elapsed).toBeLessThan(1000);
    expect(written).toEqual([]);
    expect(await mgr.flushPending(10_000)).toBe(true);
    expect(written).toEqual(["remember this"]);
  });

  it("keeps FIFO order across turns even when earlier writes are slower", async () => {
    const { mgr } = manager();
    const order: string[] = [];
    const delays: Record<string, number> = { t1: 30, t2: 1, t3: 10 };
    mgr.addProvider(
      new RecordingProvider("builtin", {
        syncTurn: async (user) => {
          await new Promise((r) => setTimeout(r, delays[user]));
          order.push(`builtin:${user}`);
        },
      }),
    );
    mgr.addProvider(new RecordingProvider("ext", { syncTurn: (user) => void order.push(`ext:${user}`) }));
    mgr.syncAll("t1", "a1");
    mgr.syncAll("t2", "a2");
    mgr.queuePrefetchAll("next");
    mgr.syncAll("t3", "a3");
    await mgr.flushPending(5000);
    expect(order).toEqual(["builtin:t1", "ext:t1", "builtin:t2", "ext:t2", "builtin:t3", "ext:t3"]);
  });

  it("passes sessionId, messages and turnAuthor; a throwing provider does not block the other", async () => {
    const { mgr, logger } = manager();
    const builtin = new RecordingProvider("builtin", {
      syncTurn: () => {
        throw new Error("sync boom");
      },
    });
    const ext = new RecordingProvider("ext");
    mgr.addProvider(builtin);
    mgr.addProvider(ext);
    const messages = [
      { role: "user", content: "hi" },
      { role: "assistant", content: "hello" },
    ];
    mgr.syncAll("hi", "hello", { sessionId: "s2", messages, turnAuthor: { id: "u1", name: "Ann", isBot: false } });
    await mgr.flushPending();
    expect(ext.argsOf("syncTurn")).toEqual([
      ["hi", "hello", { sessionId: "s2", messages, turnAuthor: { id: "u1", name: "Ann", isBot: false } }],
    ]);
    expect(logger.at("warn")).toContain("Memory provider 'builtin' sync_turn failed: sync boom");
  });

  it("omits messages and turnAuthor when not given; does not sync a bare /skill invocation", async () => {
    const { mgr } = manager();
    const ext = new RecordingProvider("ext");
    mgr.addProvider(ext);
    mgr.syncAll("/skill deploy", "Deploying…");
    mgr.syncAll("plain", "answer");
    await mgr.flushPending();
    expect(ext.argsOf("syncTurn")).toEqual([["plain", "answer", { sessionId: "" }]]);
  });

  it("snapshots the messages array: later caller mutation does not leak into the queued write", async () => {
    const { mgr } = manager();
    const gate = deferred();
    const ext = new RecordingProvider("ext", { syncTurn: () => gate.promise });
    mgr.addProvider(ext);
    mgr.syncAll("first", "a"); // occupies the queue
    const messages = [{ role: "user", content: "one" }];
    mgr.syncAll("second", "b", { messages });
    messages.push({ role: "user", content: "added later" });
    gate.resolve();
    await mgr.flushPending();
    expect((ext.argsOf("syncTurn")[1]?.[2] as { messages: unknown[] }).messages).toHaveLength(1);
  });
});

describe("queuePrefetchAll and flushPending", () => {
  it("reaches every provider in the background with the session id", async () => {
    const { mgr } = manager();
    const builtin = new RecordingProvider("builtin");
    const ext = new RecordingProvider("ext", {
      queuePrefetch: () => {
        throw new Error("warm failed");
      },
    });
    mgr.addProvider(builtin);
    mgr.addProvider(ext);
    mgr.queuePrefetchAll("next topic", { sessionId: "s5" });
    expect(builtin.argsOf("queuePrefetch")).toEqual([]);
    expect(await mgr.flushPending(1000)).toBe(true);
    expect(builtin.argsOf("queuePrefetch")).toEqual([["next topic", { sessionId: "s5" }]]);
    expect(ext.argsOf("queuePrefetch")).toEqual([["next topic", { sessionId: "s5" }]]);
  });

  it("flushPending is true with nothing queued and false when a task outlives the timeout", async () => {
    const { mgr } = manager();
    expect(await mgr.flushPending()).toBe(true);
    const gate = deferred();
    mgr.addProvider(new RecordingProvider("ext", { syncTurn: () => gate.promise }));
    mgr.syncAll("u", "a");
    expect(await mgr.flushPending(20)).toBe(false);
    gate.resolve();
    expect(await mgr.flushPending(1000)).toBe(true);
  });
});

describe("commitSessionBoundary", () => {
  it("queues session end then the reset switch, after earlier writes, without blocking the caller", async () => {
    const { mgr } = manager();
    const log: string[] = [];
    const ext = new RecordingProvider("ext", {}, { log });
    mgr.addProvider(ext);
    mgr.syncAll("last turn", "ok");
    const transcript = [{ role: "user", content: "last turn" }];
    mgr.commitSessionBoundary(transcript, { newSessionId: "new-1", parentSessionId: "old-1" });
    expect(log).toEqual([]);
    await mgr.flushPending();
    expect(log).toEqual(["ext.syncTurn", "ext.onSessionEnd", "ext.onSessionSwitch"]);
    expect(ext.argsOf("onSessionEnd")).toEqual([[transcript]]);
    expect(ext.argsOf("onSessionSwitch")).toEqual([["new-1", { parentSessionId: "old-1", reset: true, reason: "new_session" }]]);
  });

  it("does nothing without providers", async () => {
    const { mgr } = manager();
    mgr.commitSessionBoundary([], { newSessionId: "x" });
    expect(await mgr.flushPending()).toBe(true);
  });
});

describe("profile isolation of background work", () => {
  it("two profiles scoped concurrently never write into each other's home (shared and separate managers)", async () => {
    const homeA = tempDir("hermes-profile-a-");
    const homeB = tempDir("hermes-profile-b-");
    const writer = (name: string) =>
      new RecordingProvider(name, {
        syncTurn: async (user) => {
          // Yield to the other profile's work between resolving the home and writing.
          await new Promise((r) => setTimeout(r, 1));
          const dir = path.join(getHermesHome(), "turns");
          await fs.promises.mkdir(dir, { recursive: true });
          await fs.promises.writeFile(path.join(dir, `${name}-${user}.txt`), user);
        },
      });

    const shared = new MemoryManager();
    shared.addProvider(writer("shared"));
    const managerA = runWithProfile(homeA, () => new MemoryManager());
    const managerB = runWithProfile(homeB, () => new MemoryManager());
    managerA.addProvider(writer("own"));
    managerB.addProvider(writer("own"));

    await Promise.all([
      runWithProfile(homeA, async () => {
        for (let i = 0; i < 5; i++) {
          shared.syncAll(`a${i}`, "x");
          managerA.syncAll(`a${i}`, "x");
          await new Promise((r) => setTimeout(r, 0));
        }
      }),
      runWithProfile(homeB, async () => {
        for (let i = 0; i < 5; i++) {
          shared.syncAll(`b${i}`, "x");
          managerB.syncAll(`b${i}`, "x");
          await new Promise((r) => setTimeout(r, 0));
        }
      }),
    ]);
    await Promise.all([shared.flushPending(5000), managerA.flushPending(5000), managerB.flushPending(5000)]);

    const filesA = fs.readdirSync(path.join(homeA, "turns")).sort();
    const filesB = fs.readdirSync(path.join(homeB, "turns")).sort();
    expect(filesA).toHaveLength(10);
    expect(filesB).toHaveLength(10);
    expect(filesA.every((f) => /-a\d\.txt$/.test(f))).toBe(true);
    expect(filesB.every((f) => /-b\d\.txt$/.test(f))).toBe(true);
  });

  it("a task scheduled outside any profile does not inherit the scope of the task before it", async () => {
    const home = tempDir("hermes-profile-c-");
    const { mgr } = manager();
    const seen: string[] = [];
    mgr.addProvider(new RecordingProvider("ext", { syncTurn: () => void seen.push(getHermesHome()) }));
    runWithProfile(home, () => mgr.syncAll("scoped", "x"));
    mgr.syncAll("unscoped", "x");
    await mgr.flushPending();
    expect(seen).toEqual([path.resolve(home), defaultHermesHome()]);
  });
});

describe("shutdownAll", () => {
  it("drains queued work, then shuts providers down in reverse order; idempotent", async () => {
    const { mgr } = manager();
    const log: string[] = [];
    mgr.addProvider(new RecordingProvider("builtin", {}, { log }));
    mgr.addProvider(new RecordingProvider("ext", {}, { log }));
    mgr.syncAll("u", "a");
    const state = await mgr.shutdownAll();
    expect(state).toEqual({
      status: "drained",
      abandonedWrites: 0,
      abandonedPrefetches: 0,
      activeTasks: 0,
      stuckProviders: [],
      failedProviders: [],
      droppedWrites: 0,
      droppedPrefetches: 0,
    });
    expect(log).toEqual(["builtin.syncTurn", "ext.syncTurn", "ext.shutdown", "builtin.shutdown"]);
    expect(await mgr.shutdownAll()).toEqual(state);
    expect(log.filter((l) => l.endsWith(".shutdown"))).toHaveLength(2);
    expect(mgr.shutdownDrainState).toEqual(state);
  });

  it("reports drained with no queue and not_started before shutdown", async () => {
    const { mgr } = manager();
    expect(mgr.shutdownDrainState.status).toBe("not_started");
    mgr.addProvider(new RecordingProvider("ext"));
    expect((await mgr.shutdownAll()).status).toBe("drained");
  });

  it("with a stuck writer: times out, counts abandoned writes/prefetches and the detached task, warns", async () => {
    const { mgr, logger } = manager({ drainTimeoutMs: 50 });
    const stuck = deferred();
    const ext = new RecordingProvider("ext", {
      syncTurn: (user) => (user === "stuck" ? stuck.promise : undefined),
    });
    mgr.addProvider(new RecordingProvider("builtin"));
    mgr.addProvider(ext);
    mgr.syncAll("stuck", "a");
    mgr.syncAll("queued-1", "a");
    mgr.queuePrefetchAll("warm");
    mgr.syncAll("queued-2", "a");
    const pendingFlush = mgr.flushPending();

    const started = performance.now();
    const state = await mgr.shutdownAll();
    expect(performance.now() - started).toBeLessThan(2000);
    expect(state).toEqual({
      status: "timed_out",
      abandonedWrites: 2,
      abandonedPrefetches: 1,
      activeTasks: 1,
      stuckProviders: [],
      failedProviders: [],
      droppedWrites: 0,
      droppedPrefetches: 0,
    });
    expect(logger.at("warn")).toContain(
      "Memory shutdown drain timed out after 0.05s; abandoning 2 queued memory write(s) and 1 queued prefetch(es); 1 active task(s) remain detached",
    );
    expect(ext.argsOf("shutdown")).toHaveLength(1);
    expect(await pendingFlush).toBe(false);

    // Late work is rejected, and releasing the stuck writer does not run abandoned tasks.
    mgr.syncAll("late", "a");
    expect(logger.at("warn")).toContain("Memory manager is shutting down; rejecting late write task");
    stuck.resolve();
    expect(await mgr.flushPending(100)).toBe(true);
    await new Promise((r) => setTimeout(r, 10));
    expect(ext.argsOf("syncTurn").map((a) => a[0])).toEqual(["stuck"]);
    expect(mgr.shutdownDrainState).toEqual(state);
  });

  it("a throwing shutdown does not stop the others", async () => {
    const { mgr, logger } = manager();
    const builtin = new RecordingProvider("builtin");
    mgr.addProvider(builtin);
    mgr.addProvider(
      new RecordingProvider("ext", {
        shutdown: () => {
          throw new Error("close failed");
        },
      }),
    );
    await mgr.shutdownAll();
    expect(builtin.argsOf("shutdown")).toHaveLength(1);
    expect(logger.at("warn")).toContain("Memory provider 'ext' shutdown failed: close failed");
  });
});

describe("egress scrub: secrets never reach a provider", () => {
  const OPENAI = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789";
  const GITHUB = "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123";
  const AWS = "AKIAIOSFODNN7EXAMPLE";
  const PEM_BODY = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun";
  const PEM = `-----BEGIN RSA PRIVATE KEY-----\n${PEM_BODY}\n-----END RSA PRIVATE KEY-----`;
  const SECRETS = [OPENAI, GITHUB, AWS, PEM_BODY];

  it("scrubs sync, prefetch, tool args, turn start, session end, pre-compress, mirrors and delegation", async () => {
    const { mgr } = manager();
    const received: unknown[] = [];
    const record = (...args: unknown[]) => void received.push(args);
    const hooks = {
      syncTurn: record,
      prefetch: (...args: unknown[]) => (record(...args), ""),
      queuePrefetch: record,
      onTurnStart: record,
      onSessionEnd: record,
      onPreCompress: (...args: unknown[]) => (record(...args), ""),
      onMemoryWrite: record,
      onDelegation: record,
      handleToolCall: (...args: unknown[]) => (record(...args), "{}"),
    };
    mgr.addProvider(new RecordingProvider("builtin", hooks));
    mgr.addProvider(new RecordingProvider("ext", hooks, { checkpointVersion: 2, tools: [tool("ext_save")] }));

    const messages = [
      { role: "user", content: `my key is ${OPENAI}` },
      { role: "tool", content: `export GITHUB_TOKEN=${GITHUB}` },
      { role: "assistant", content: `I saw ${GITHUB} and ${AWS}` },
    ];
    mgr.syncAll(`use ${OPENAI} and ${AWS}`, `here is the key:\n${PEM}`, { messages });
    mgr.queuePrefetchAll(`lookup ${GITHUB}`);
    await mgr.prefetchAll(`what about ${OPENAI}?`);
    await mgr.handleToolCall("ext_save", { content: `token ${GITHUB}`, nested: { list: [AWS] } });
    await mgr.onTurnStart(1, `deploy with ${AWS}`);
    await mgr.onSessionEnd(messages);
    await mgr.onPreCompress(messages, { evidenceMessages: messages });
    await mgr.onMemoryWrite("add", "memory", `key ${OPENAI}`, { oldText: GITHUB });
    await mgr.notifyMemoryToolWrite({ success: true }, { action: "add", content: `pem ${PEM}` });
    await mgr.onDelegation(`task with ${AWS}`, `result ${GITHUB}`);
    await mgr.flushPending();

    expect(received.length).toBeGreaterThan(15);
    const everything = JSON.stringify(received);
    for (const secret of SECRETS) expect(everything).not.toContain(secret);
    expect(everything).toContain("[redacted]");
    // The caller's objects are untouched.
    expect(messages[0]?.content).toBe(`my key is ${OPENAI}`);
  });
});
