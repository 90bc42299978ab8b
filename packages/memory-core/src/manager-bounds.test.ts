import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { BuiltinMemoryProvider } from "./builtin/builtin-provider.js";
import { boundedCall, detachedCallCount } from "./bounded-call.js";
import { DEFAULT_EXTERNAL_PREFETCH_TIMEOUT_MS, DEFAULT_HOOK_TIMEOUT_MS, MemoryManager } from "./manager.js";
import { RecordingProvider, capturingLogger, deferred, tool } from "./test-support/recording-provider.js";

const never = <T = void>(): Promise<T> => new Promise<T>(() => {});

/** Settle-state probe for a promise under fake timers. */
function track<T>(promise: Promise<T>): { done: () => boolean; value: () => T } {
  let settled = false;
  let result: T;
  void promise.then((v) => {
    settled = true;
    result = v;
  });
  return { done: () => settled, value: () => result };
}

function deepArgs(levels: number): Record<string, unknown> {
  let value: Record<string, unknown> = { leaf: "x" };
  for (let i = 0; i < levels; i++) value = { nested: value };
  return value;
}

describe("boundedCall", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("times out exactly at the bound, not before, and counts the detached call until it settles", async () => {
    const late = deferred<string>();
    const onLate = vi.fn();
    const call = track(boundedCall(() => late.promise, 1000, { onLate }));
    await vi.advanceTimersByTimeAsync(999);
    expect(call.done()).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(call.done()).toBe(true);
    expect(call.value()).toEqual({ status: "timeout", timeoutMs: 1000 });
    expect(detachedCallCount()).toBe(1);
    late.resolve("late");
    await vi.advanceTimersByTimeAsync(0);
    expect(detachedCallCount()).toBe(0);
    expect(onLate).toHaveBeenCalledWith({ status: "ok", value: "late" });
  });

  it("a fast call leaves no timer behind", async () => {
    expect(await boundedCall(() => Promise.resolve(7), 60_000)).toEqual({ status: "ok", value: 7 });
    expect(await boundedCall(() => 8, 60_000)).toEqual({ status: "ok", value: 8 });
    expect(vi.getTimerCount()).toBe(0);
  });

  it("settles a synchronous result without arming a timer, and awaits only real thenables", async () => {
    const setTimer = vi.spyOn(globalThis, "setTimeout");
    const plain = { then: 5 };
    expect(await boundedCall(() => undefined, 60_000)).toEqual({ status: "ok", value: undefined });
    expect(await boundedCall(() => plain, 60_000)).toEqual({ status: "ok", value: plain });
    expect(setTimer).not.toHaveBeenCalled();
    const hostile = Object.defineProperty({}, "then", {
      get() {
        throw new Error("then getter");
      },
    });
    const outcome = await boundedCall(() => hostile, 60_000);
    expect(outcome.status).toBe("error");
    const thenable = { then: (ok: (v: number) => void) => ok(9) } as unknown as PromiseLike<number>;
    expect(await boundedCall(() => thenable, 60_000)).toEqual({ status: "ok", value: 9 });
    setTimer.mockRestore();
  });

  it("turns a synchronous throw and a rejection into an error outcome", async () => {
    const boom = new Error("boom");
    expect(
      await boundedCall(() => {
        throw boom;
      }, 10),
    ).toEqual({ status: "error", error: boom });
    expect(await boundedCall(() => Promise.reject(boom), 10)).toEqual({ status: "error", error: boom });
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe("MemoryManager hook bounds (fake timers)", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  function setup(hooks: ConstructorParameters<typeof RecordingProvider>[1], options: ConstructorParameters<typeof MemoryManager>[0] = {}) {
    const logger = capturingLogger();
    const mgr = new MemoryManager({ hermesHome: "/tmp/none", logger, hookTimeoutMs: 1000, ...options });
    mgr.addProvider(new RecordingProvider("builtin"));
    const ext = new RecordingProvider("ext", hooks, { tools: [tool("ext_search")] });
    mgr.addProvider(ext);
    return { mgr, logger, ext };
  }

  it("initializeAll returns at the bound and reports the stuck provider and hook", async () => {
    const { mgr, logger } = setup({ initialize: () => never() });
    const call = track(mgr.initializeAll("s1"));
    await vi.advanceTimersByTimeAsync(999);
    expect(call.done()).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(call.done()).toBe(true);
    expect(call.value()).toEqual([{ name: "ext", hook: "initialize", outcome: "timeout", reason: "did not settle within 1s" }]);
    expect(logger.at("warn").some((l) => l.includes("Memory provider 'ext' initialize timed out after 1s"))).toBe(true);
  });

  it("initializeAll reports a throwing initialize as an error", async () => {
    const { mgr } = setup({
      initialize: () => {
        throw new Error("no API key");
      },
    });
    expect(await mgr.initializeAll("s1")).toEqual([{ name: "ext", hook: "initialize", outcome: "error", reason: "no API key" }]);
  });

  it("handleToolCall returns a JSON error at the bound", async () => {
    const { mgr, logger } = setup({ handleToolCall: () => never() });
    const call = track(mgr.handleToolCall("ext_search", { q: "x" }));
    await vi.advanceTimersByTimeAsync(999);
    expect(call.done()).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(call.done()).toBe(true);
    expect(JSON.parse(call.value()).error).toContain("Memory tool 'ext_search' timed out after 1s (provider 'ext')");
    expect(logger.at("warn").some((l) => l.includes("Memory provider 'ext' handle_tool_call(ext_search) timed out"))).toBe(true);
  });

  it("onSessionEnd returns at the bound and still reaches the other providers", async () => {
    const log: string[] = [];
    const logger = capturingLogger();
    const mgr = new MemoryManager({ hermesHome: "/tmp/none", logger, hookTimeoutMs: 500 });
    mgr.addProvider(new RecordingProvider("builtin", {}, { log }));
    mgr.addProvider(new RecordingProvider("ext", { onSessionEnd: () => never() }, { log }));
    const call = track(mgr.onSessionEnd([{ role: "user", content: "hi" }]));
    await vi.advanceTimersByTimeAsync(499);
    expect(call.done()).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(call.done()).toBe(true);
    expect(log).toEqual(["builtin.onSessionEnd", "ext.onSessionEnd"]);
    expect(logger.at("warn").some((l) => l.includes("Memory provider 'ext' on_session_end timed out after 0.5s"))).toBe(true);
  });

  it("shutdownAll returns at the bound and its drain report names the stuck and the failing provider", async () => {
    const logger = capturingLogger();
    const mgr = new MemoryManager({ hermesHome: "/tmp/none", logger, hookTimeoutMs: 2000 });
    mgr.addProvider(
      new RecordingProvider("builtin", {
        shutdown: () => {
          throw new Error("disk gone");
        },
      }),
    );
    mgr.addProvider(new RecordingProvider("ext", { shutdown: () => never() }));
    const call = track(mgr.shutdownAll());
    await vi.advanceTimersByTimeAsync(1999);
    expect(call.done()).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(call.done()).toBe(true);
    const state = call.value();
    expect(state.status).toBe("drained");
    expect(state.stuckProviders).toEqual([{ name: "ext", hook: "shutdown", outcome: "timeout", reason: "did not settle within 2s" }]);
    expect(state.failedProviders).toEqual([{ name: "builtin", hook: "shutdown", outcome: "error", reason: "disk gone" }]);
    expect(mgr.shutdownDrainState.stuckProviders[0]?.name).toBe("ext");
    expect(logger.at("warn").some((l) => l.includes("Memory provider 'ext' shutdown timed out after 2s"))).toBe(true);
  });

  it("a background sync_turn past the bound holds the provider's next write until it settles (writes never overlap)", async () => {
    const first = deferred();
    const { mgr, logger, ext } = setup({ syncTurn: (u) => (u === "first" ? first.promise : undefined) });
    mgr.syncAll("first", "a");
    mgr.syncAll("second", "a");
    const flushed = track(mgr.flushPending());
    await vi.advanceTimersByTimeAsync(999);
    expect(logger.at("warn").some((l) => l.includes("sync_turn timed out"))).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(
      logger.at("warn").some((l) => l.includes("Memory provider 'ext' sync_turn timed out after 1s; the background queue waits for it")),
    ).toBe(true);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(flushed.done()).toBe(false);
    expect(ext.argsOf("syncTurn").map((a) => a[0])).toEqual(["first"]);
    first.resolve();
    await vi.advanceTimersByTimeAsync(0);
    expect(flushed.done()).toBe(true);
    expect(ext.argsOf("syncTurn").map((a) => a[0])).toEqual(["first", "second"]);
  });

  it("the default hook bound is 15 s", async () => {
    expect(DEFAULT_HOOK_TIMEOUT_MS).toBe(15_000);
    const logger = capturingLogger();
    const mgr = new MemoryManager({ hermesHome: "/tmp/none", logger });
    mgr.addProvider(new RecordingProvider("ext", { initialize: () => never() }));
    const call = track(mgr.initializeAll("s"));
    await vi.advanceTimersByTimeAsync(14_999);
    expect(call.done()).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(call.done()).toBe(true);
  });

  it("never bounds the built-in provider", async () => {
    const release = deferred<void>();
    const mgr = new MemoryManager({ hermesHome: "/tmp/none", hookTimeoutMs: 10 });
    mgr.addProvider(new RecordingProvider("builtin", { initialize: () => release.promise }));
    const call = track(mgr.initializeAll("s"));
    await vi.advanceTimersByTimeAsync(10_000);
    expect(call.done()).toBe(false);
    release.resolve();
    await vi.advanceTimersByTimeAsync(0);
    expect(call.value()).toEqual([]);
  });

  it("external prefetch is cut off exactly at externalPrefetchTimeoutMs (default 8 s)", async () => {
    expect(DEFAULT_EXTERNAL_PREFETCH_TIMEOUT_MS).toBe(8000);
    const logger = capturingLogger();
    const mgr = new MemoryManager({ hermesHome: "/tmp/none", logger });
    mgr.addProvider(new RecordingProvider("builtin", { prefetch: () => "builtin memory" }));
    mgr.addProvider(new RecordingProvider("ext", { prefetch: () => never() }));
    const call = track(mgr.prefetchAll("what do I like"));
    await vi.advanceTimersByTimeAsync(7999);
    expect(call.done()).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(call.done()).toBe(true);
    expect(call.value()).toBe("builtin memory");
  });

  it("leaves no timer behind after fast calls (prefetch, tools, lifecycle, shutdown)", async () => {
    const { mgr } = setup({ prefetch: () => Promise.resolve("fast"), handleToolCall: () => Promise.resolve("ok") });
    await mgr.initializeAll("s");
    expect(await mgr.prefetchAll("what do I like")).toBe("fast");
    expect(await mgr.handleToolCall("ext_search", {})).toBe("ok");
    await mgr.onTurnStart(1, "hello");
    await mgr.onSessionEnd([]);
    await mgr.buildSystemPrompt();
    await mgr.shutdownAll();
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe("MemoryManager leaves no handle open (real timers)", () => {
  it("a fast prefetch and tool call leave no live Timeout in the process", async () => {
    const timeouts = () => process.getActiveResourcesInfo().filter((t) => t === "Timeout").length;
    const before = timeouts();
    const mgr = new MemoryManager({ hermesHome: "/tmp/none" });
    mgr.addProvider(new RecordingProvider("ext", { prefetch: () => "fast", handleToolCall: () => "ok" }, { tools: [tool("ext_search")] }));
    await mgr.initializeAll("s");
    expect(await mgr.prefetchAll("what do I like")).toBe("fast");
    expect(await mgr.handleToolCall("ext_search", {})).toBe("ok");
    await mgr.shutdownAll();
    expect(timeouts()).toBe(before);
  });
});

describe("deeply nested arguments never throw", () => {
  const deep = deepArgs(20_000);

  function setup() {
    const logger = capturingLogger();
    const mgr = new MemoryManager({ hermesHome: "/tmp/none", logger });
    const ext = new RecordingProvider("ext", {}, { tools: [tool("ext_search")] });
    mgr.addProvider(ext);
    return { mgr, logger, ext };
  }

  it("handleToolCall returns a JSON error and does not call the provider", async () => {
    const { mgr, ext } = setup();
    const result = await mgr.handleToolCall("ext_search", deep);
    expect(JSON.parse(result).error).toContain("Memory tool 'ext_search' arguments rejected");
    expect(ext.argsOf("handleToolCall")).toEqual([]);
  });

  it("a deeply nested tool result becomes a JSON error", async () => {
    const { mgr } = setup();
    (mgr.getProvider("ext") as RecordingProvider).hooks.handleToolCall = () => deep as never;
    expect(JSON.parse(await mgr.handleToolCall("ext_search", {})).error).toContain("Memory tool 'ext_search' failed");
  });

  it("syncAll drops the turn with a warning", async () => {
    const { mgr, logger, ext } = setup();
    expect(() => mgr.syncAll("u", "a", { messages: [deep as never] })).not.toThrow();
    await mgr.flushPending();
    expect(ext.argsOf("syncTurn")).toEqual([]);
    expect(logger.at("warn").some((l) => l.includes("could not scrub a turn"))).toBe(true);
  });

  it("the built-in memory tool with deeply nested arguments returns a JSON result, never throws", async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-deep-builtin-"));
    try {
      const mgr = new MemoryManager({ hermesHome: home });
      const ext = new RecordingProvider("ext");
      mgr.addProvider(new BuiltinMemoryProvider());
      mgr.addProvider(ext);
      await mgr.initializeAll("s");
      const result = JSON.parse(await mgr.handleToolCall("memory", { action: "add", target: "memory", content: deep as never }));
      expect(result.success).not.toBe(true);
      const batch = JSON.parse(await mgr.handleToolCall("memory", { target: "memory", operations: [deep] }));
      expect(batch.success).not.toBe(true);
      expect(ext.argsOf("onMemoryWrite")).toEqual([]);
      await mgr.shutdownAll();
    } finally {
      fs.rmSync(home, { recursive: true, force: true });
    }
  });

  it("onSessionEnd skips the transcript with a warning", async () => {
    const { mgr, logger, ext } = setup();
    await expect(mgr.onSessionEnd([deep as never])).resolves.toBeUndefined();
    expect(ext.argsOf("onSessionEnd")).toEqual([]);
    expect(logger.at("warn").some((l) => l.includes("could not scrub the session transcript"))).toBe(true);
  });
});

describe("tool arguments are plain data", () => {
  it("an own __proto__ key is passed on as an ordinary key and pollutes nothing", async () => {
    const mgr = new MemoryManager({ hermesHome: "/tmp/none" });
    const ext = new RecordingProvider("ext", {}, { tools: [tool("ext_search")] });
    mgr.addProvider(ext);
    const args = JSON.parse('{"q": "x", "__proto__": {"polluted": "yes"}}') as Record<string, unknown>;
    await mgr.handleToolCall("ext_search", args);
    const [, received] = ext.argsOf("handleToolCall")[0] as [string, Record<string, unknown>];
    expect(Object.getPrototypeOf(received)).toBe(Object.prototype);
    expect(Object.hasOwn(received, "__proto__")).toBe(true);
    expect((received as { polluted?: unknown }).polluted).toBeUndefined();
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
  });

  it("inherited values are not passed to the provider nor mirrored", async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-proto-"));
    try {
      const mgr = new MemoryManager({ hermesHome: home });
      const ext = new RecordingProvider("ext", {}, { tools: [tool("ext_search")] });
      mgr.addProvider(new BuiltinMemoryProvider());
      mgr.addProvider(ext);
      await mgr.initializeAll("s");
      const inherited = Object.create({ secret: "inherited" }) as Record<string, unknown>;
      inherited.q = "x";
      await mgr.handleToolCall("ext_search", inherited);
      const [, received] = ext.argsOf("handleToolCall")[0] as [string, Record<string, unknown>];
      expect(received).toEqual({ q: "x" });
      expect("secret" in received).toBe(false);
      // Mirroring reads only own keys: an inherited action/content is not a write.
      await mgr.notifyMemoryToolWrite({ success: true }, Object.create({ action: "add", content: "sneaky" }) as Record<string, unknown>);
      expect(ext.argsOf("onMemoryWrite")).toEqual([]);
      await mgr.shutdownAll();
    } finally {
      fs.rmSync(home, { recursive: true, force: true });
    }
  });
});

describe("the built-in memory tool stores what the model wrote", () => {
  it("keeps credential-like text as given, can replace and remove it, and mirrors scrubbed", async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-unscrubbed-"));
    try {
      const mgr = new MemoryManager({ hermesHome: home });
      const ext = new RecordingProvider("ext");
      mgr.addProvider(new BuiltinMemoryProvider());
      mgr.addProvider(ext);
      await mgr.initializeAll("s");
      const fact = "Staging DB_PASSWORD=hunter2-staging-2024 rotates monthly";
      expect(JSON.parse(await mgr.handleToolCall("memory", { action: "add", target: "memory", content: fact })).success).toBe(true);
      const file = path.join(home, "memories", "MEMORY.md");
      expect(fs.readFileSync(file, "utf8")).toContain(fact);
      const replaced = JSON.parse(
        await mgr.handleToolCall("memory", {
          action: "replace",
          target: "memory",
          old_text: "DB_PASSWORD=hunter2-staging-2024",
          content: "Staging DB password is in the vault",
        }),
      );
      expect(replaced.success).toBe(true);
      expect(fs.readFileSync(file, "utf8")).not.toContain("hunter2");
      const [action, , content] = ext.argsOf("onMemoryWrite")[0] as [string, string, string];
      expect(action).toBe("add");
      expect(content).not.toContain("hunter2-staging-2024");
      expect(content).toContain("[redacted]");
      const replaceMeta = ext.argsOf("onMemoryWrite")[1]![3] as { oldText?: string; previousContent?: string };
      expect(replaceMeta.oldText).not.toContain("hunter2-staging-2024");
      expect(replaceMeta.previousContent).not.toContain("hunter2-staging-2024");
      await mgr.shutdownAll();
    } finally {
      fs.rmSync(home, { recursive: true, force: true });
    }
  });
});

describe("the external gate", () => {
  function setup(options: ConstructorParameters<typeof MemoryManager>[0] = {}) {
    const mgr = new MemoryManager({ hermesHome: "/tmp/none", ...options });
    mgr.addProvider(new RecordingProvider("builtin", { systemPromptBlock: () => "BUILTIN BLOCK" }, { tools: [tool("memory")] }));
    const ext = new RecordingProvider("ext", { systemPromptBlock: () => "EXT BLOCK" }, { tools: [tool("ext_search")] });
    mgr.addProvider(ext);
    return { mgr, ext };
  }

  it("withholds the external tools and system-prompt block together; the built-in stays", async () => {
    const { mgr, ext } = setup();
    expect(mgr.externalEnabled).toBe(true);
    mgr.setExternalEnabled(false);
    expect(mgr.externalEnabled).toBe(false);
    expect(mgr.getToolSchemas().map((s) => s.name)).toEqual(["memory"]);
    expect([...mgr.getToolNames()]).toEqual(["memory"]);
    expect(mgr.hasTool("ext_search")).toBe(false);
    expect(await mgr.buildSystemPrompt()).toBe("BUILTIN BLOCK");
    expect(JSON.parse(await mgr.handleToolCall("ext_search", {})).error).toContain("No memory provider handles tool 'ext_search'");
    expect(ext.argsOf("handleToolCall")).toEqual([]);
    mgr.setExternalEnabled(true);
    expect(mgr.getToolSchemas().map((s) => s.name)).toEqual(["memory", "ext_search"]);
    expect(await mgr.buildSystemPrompt()).toBe("BUILTIN BLOCK\n\nEXT BLOCK");
  });

  it("externalEnabled: false in the options starts gated", async () => {
    const { mgr } = setup({ externalEnabled: false });
    expect(mgr.hasTool("ext_search")).toBe(false);
    expect(await mgr.buildSystemPrompt()).toBe("BUILTIN BLOCK");
  });
});

describe("removeProvider", () => {
  it("drops an external provider and its tools; the built-in cannot be removed", () => {
    const mgr = new MemoryManager({ hermesHome: "/tmp/none" });
    mgr.addProvider(new RecordingProvider("builtin", {}, { tools: [tool("memory")] }));
    mgr.addProvider(new RecordingProvider("ext", {}, { tools: [tool("ext_search")] }));
    expect(mgr.removeProvider("builtin")).toBe(false);
    expect(mgr.removeProvider("ext")).toBe(true);
    expect(mgr.providers.map((p) => p.name)).toEqual(["builtin"]);
    expect(mgr.hasTool("ext_search")).toBe(false);
    expect(mgr.removeProvider("ext")).toBe(false);
    // Another external provider may register now.
    expect(mgr.addProvider(new RecordingProvider("other"))).toBe(true);
  });
});
