import { describe, expect, it } from "vitest";
import { MemoryManager } from "./manager.js";
import { RecordingProvider, capturingLogger } from "./test-support/recording-provider.js";

function setup(extHooks: ConstructorParameters<typeof RecordingProvider>[1] = {}) {
  const logger = capturingLogger();
  const mgr = new MemoryManager({ logger, hermesHome: "/tmp/none" });
  const builtin = new RecordingProvider("builtin");
  const ext = new RecordingProvider("ext", extHooks);
  mgr.addProvider(builtin);
  mgr.addProvider(ext);
  return { mgr, builtin, ext, logger };
}

describe("onSessionSwitch", () => {
  it("fans out the new id, parent, reset and extra reason to every provider and returns true", async () => {
    const { mgr, builtin, ext } = setup();
    expect(await mgr.onSessionSwitch("new-1", { parentSessionId: "old-1", reset: false, reason: "resume" })).toBe(true);
    const expected = [["new-1", { parentSessionId: "old-1", reset: false, reason: "resume" }]];
    expect(builtin.argsOf("onSessionSwitch")).toEqual(expected);
    expect(ext.argsOf("onSessionSwitch")).toEqual(expected);
  });

  it("preserves reset=true and the reason; fills parentSessionId with an empty string", async () => {
    const { mgr, ext } = setup();
    await mgr.onSessionSwitch("fresh", { reset: true, reason: "new_session" });
    expect(ext.argsOf("onSessionSwitch")).toEqual([["fresh", { parentSessionId: "", reset: true, reason: "new_session" }]]);
  });

  it("an empty session id is a no-op that reports success", async () => {
    const { mgr, builtin, ext } = setup();
    expect(await mgr.onSessionSwitch("")).toBe(true);
    expect(builtin.argsOf("onSessionSwitch")).toEqual([]);
    expect(ext.argsOf("onSessionSwitch")).toEqual([]);
  });

  it("forwards rewound only when true", async () => {
    const { mgr, ext } = setup();
    await mgr.onSessionSwitch("same", { rewound: true });
    await mgr.onSessionSwitch("same", { rewound: false });
    const [first, second] = ext.argsOf("onSessionSwitch");
    expect(first?.[1]).toEqual({ parentSessionId: "", reset: false, rewound: true });
    expect(second?.[1]).toEqual({ parentSessionId: "", reset: false });
    expect(Object.hasOwn(second?.[1] as object, "rewound")).toBe(false);
  });

  it("a throwing provider does not block the others; returns false; retry re-invokes only the failed one", async () => {
    let fail = true;
    const { mgr, builtin, ext, logger } = setup({
      onSessionSwitch: () => {
        if (fail) throw new Error("binding lost");
      },
    });
    expect(await mgr.onSessionSwitch("s2", { parentSessionId: "s1" })).toBe(false);
    expect(builtin.argsOf("onSessionSwitch")).toHaveLength(1);
    expect(logger.at("warn")).toContain("Memory provider 'ext' on_session_switch failed: binding lost");

    expect(await mgr.retryPendingSessionSwitch()).toBe(false);
    fail = false;
    expect(await mgr.retryPendingSessionSwitch()).toBe(true);
    expect(builtin.argsOf("onSessionSwitch")).toHaveLength(1);
    expect(ext.argsOf("onSessionSwitch")).toHaveLength(3);
    expect(ext.argsOf("onSessionSwitch")[2]).toEqual(["s2", { parentSessionId: "s1", reset: false }]);
    // Nothing pending any more.
    expect(await mgr.retryPendingSessionSwitch()).toBe(true);
    expect(ext.argsOf("onSessionSwitch")).toHaveLength(3);
  });

  it("an explicit false return counts as a failure and is retried", async () => {
    let result = false;
    const { mgr, builtin, ext } = setup({ onSessionSwitch: async () => result });
    expect(await mgr.onSessionSwitch("s3")).toBe(false);
    result = true;
    expect(await mgr.retryPendingSessionSwitch()).toBe(true);
    expect(builtin.argsOf("onSessionSwitch")).toHaveLength(1);
    expect(ext.argsOf("onSessionSwitch")).toHaveLength(2);
  });

  it("a later successful switch clears the pending record", async () => {
    let fail = true;
    const { mgr, ext } = setup({
      onSessionSwitch: () => {
        if (fail) throw new Error("x");
      },
    });
    await mgr.onSessionSwitch("a");
    fail = false;
    expect(await mgr.onSessionSwitch("b")).toBe(true);
    expect(await mgr.retryPendingSessionSwitch()).toBe(true);
    expect(ext.argsOf("onSessionSwitch").map((a) => a[0])).toEqual(["a", "b"]);
  });
});

describe("session id propagation", () => {
  it("syncAll and queuePrefetchAll pass the session id", async () => {
    const { mgr, ext } = setup();
    mgr.syncAll("u", "a", { sessionId: "sess-x" });
    mgr.queuePrefetchAll("q", { sessionId: "sess-x" });
    await mgr.flushPending();
    expect((ext.argsOf("syncTurn")[0]?.[2] as { sessionId: string }).sessionId).toBe("sess-x");
    expect(ext.argsOf("queuePrefetch")).toEqual([["q", { sessionId: "sess-x" }]]);
  });
});
