import { describe, expect, it, vi } from "vitest";
import { HermesMemoryError } from "./errors.js";
import { MemoryManager } from "./manager.js";
import { RecordingProvider, capturingLogger, tool } from "./test-support/recording-provider.js";

// The scrubber may refuse a value (e.g. nested beyond its maximum depth) by throwing a typed
// error instead of overflowing the stack; the manager must treat that like any unscrubbable value.
vi.mock("./scrub.js", async (importOriginal) => {
  const actual = await importOriginal<typeof import("./scrub.js")>();
  return {
    ...actual,
    scrubSecrets: <T>(value: T): T => {
      if (JSON.stringify(value)?.includes("REFUSE-ME")) {
        throw new HermesMemoryError({ code: "INVALID_ARGUMENT", message: "value nested too deeply to scrub" });
      }
      return actual.scrubSecrets(value);
    },
  };
});

function setup() {
  const logger = capturingLogger();
  const mgr = new MemoryManager({ hermesHome: "/tmp/none", logger });
  const ext = new RecordingProvider("ext", {}, { tools: [tool("ext_search")] });
  mgr.addProvider(ext);
  return { mgr, logger, ext };
}

describe("a scrubber that refuses a value with a typed error", () => {
  it("handleToolCall returns a JSON error naming the reason", async () => {
    const { mgr, ext } = setup();
    const result = JSON.parse(await mgr.handleToolCall("ext_search", { q: "REFUSE-ME" }));
    expect(result.error).toContain("value nested too deeply to scrub");
    expect(ext.argsOf("handleToolCall")).toEqual([]);
  });

  it("syncAll, onSessionEnd, onTurnStart, prefetchAll, onMemoryWrite and onDelegation skip the value with a warning", async () => {
    const { mgr, logger, ext } = setup();
    mgr.syncAll("REFUSE-ME", "a");
    await mgr.flushPending();
    await mgr.onSessionEnd([{ role: "user", content: "REFUSE-ME" }]);
    await mgr.onTurnStart(1, "REFUSE-ME");
    expect(await mgr.prefetchAll("REFUSE-ME please")).toBe("");
    await mgr.onMemoryWrite("add", "memory", "REFUSE-ME");
    await mgr.onDelegation("REFUSE-ME", "done");
    expect(ext.calls.map((c) => c.hook)).toEqual([]);
    expect(logger.at("warn").filter((l) => l.includes("value nested too deeply to scrub")).length).toBe(6);
  });

  it("onPreCompress returns empty, or throws CheckpointUnavailableError when a checkpoint is required", async () => {
    const { mgr } = setup();
    expect(await mgr.onPreCompress([{ role: "user", content: "REFUSE-ME" }])).toBe("");
    await expect(mgr.onPreCompress([{ role: "user", content: "REFUSE-ME" }], { requireCheckpoint: true })).rejects.toMatchObject({
      code: "CHECKPOINT_UNAVAILABLE",
    });
  });
});
