import { describe, expect, it } from "vitest";
import { CheckpointUnavailableError } from "./errors.js";
import { MemoryManager } from "./manager.js";
import { RecordingProvider, capturingLogger } from "./test-support/recording-provider.js";

// Hostile provider instances: whatever a provider's hooks return or throw, the manager's
// "never throws" methods never throw, the built-in provider keeps working, and every call into
// the external provider stays bounded.

const BOUND_MS = 100;

function manager() {
  const logger = capturingLogger();
  const mgr = new MemoryManager({
    hermesHome: "/tmp/hermes-test-home",
    logger,
    hookTimeoutMs: BOUND_MS,
    externalPrefetchTimeoutMs: BOUND_MS,
    drainTimeoutMs: BOUND_MS,
  });
  return { mgr, logger };
}

/** An Error whose `message` getter throws (so does `describeError` on it). */
function badError(): Error {
  const error = new Error("x");
  Object.defineProperty(error, "message", {
    get() {
      throw new Error("message getter");
    },
  });
  return error;
}

function builtinAndExternal(hooks: ConstructorParameters<typeof RecordingProvider>[1], tools: unknown[] = []) {
  const { mgr, logger } = manager();
  const builtin = new RecordingProvider("builtin");
  const external = new RecordingProvider("ext", hooks, { tools });
  mgr.addProvider(builtin);
  mgr.addProvider(external);
  return { mgr, logger, builtin, external };
}

describe("errors whose message cannot be read", () => {
  it("handleToolCall returns a JSON error instead of throwing", async () => {
    const { mgr } = builtinAndExternal(
      {
        handleToolCall: (name) => {
          if (name === "throws") throw badError();
          return {
            toJSON: () => {
              throw badError();
            },
          };
        },
      },
      [{ name: "throws" }, { name: "bad_result" }],
    );
    for (const tool of ["throws", "bad_result"]) {
      const result = JSON.parse(await mgr.handleToolCall(tool, {})) as { error: string };
      expect(result.error).toContain(`Memory tool '${tool}' failed`);
    }
  });

  it("lifecycle fan-outs never throw and still reach the built-in provider", async () => {
    const { mgr, builtin } = builtinAndExternal({
      initialize: () => {
        throw badError();
      },
      onTurnStart: () => Promise.reject(badError()),
      onSessionSwitch: () => {
        throw badError();
      },
      onSessionEnd: () => {
        throw badError();
      },
    });
    const reports = await mgr.initializeAll("s1");
    expect(reports).toMatchObject([{ name: "ext", hook: "initialize", outcome: "error" }]);
    await mgr.onTurnStart(1, "hi");
    expect(await mgr.onSessionSwitch("s2")).toBe(false);
    await mgr.onSessionEnd([]);
    expect(builtin.calls.map((c) => c.hook)).toEqual(["initialize", "onTurnStart", "onSessionSwitch", "onSessionEnd"]);
  });

  it("shutdownAll resolves, reports the provider, and still shuts the built-in down", async () => {
    const { mgr, builtin } = builtinAndExternal({
      shutdown: () => {
        throw badError();
      },
    });
    const state = await mgr.shutdownAll();
    expect(state.failedProviders).toMatchObject([{ name: "ext", hook: "shutdown", outcome: "error" }]);
    expect(builtin.calls.map((c) => c.hook)).toContain("shutdown");
  });

  it("describeRecall survives a throwing recallStatus and a malformed status", () => {
    const { mgr: m1 } = builtinAndExternal({
      recallStatus: () => {
        throw badError();
      },
    });
    expect(m1.describeRecall()).toBe("");
    const { mgr: m2 } = builtinAndExternal({
      recallStatus: () => ({
        providerLabel: {
          toString: () => {
            throw new Error("label");
          },
        } as unknown as string,
        count: 2,
      }),
    });
    expect(() => m2.describeRecall()).not.toThrow();
  });
});

describe("a provider name that changes after registration", () => {
  it("a name getter that starts throwing does not break the manager", async () => {
    const { mgr } = manager();
    const builtin = new RecordingProvider("builtin", { prefetch: () => "builtin recall" });
    const external = new RecordingProvider("ext");
    let reads = 0;
    Object.defineProperty(external, "name", {
      get() {
        if (++reads > 1) throw new Error("name getter");
        return "ext";
      },
    });
    mgr.addProvider(builtin);
    expect(mgr.addProvider(external)).toBe(true);
    expect(await mgr.initializeAll("s1")).toEqual([]);
    expect(await mgr.prefetchAll("what tea?")).toBe("builtin recall");
    expect(await mgr.buildSystemPrompt()).toBe("");
    await mgr.onSessionEnd([]);
    expect(mgr.getProvider("ext")).toBe(external);
    expect(mgr.removeProvider("ext")).toBe(true);
    await expect(mgr.shutdownAll()).resolves.toMatchObject({ failedProviders: [], stuckProviders: [] });
  });

  it("an external provider that later calls itself 'builtin' stays bounded and removable", async () => {
    const { mgr } = manager();
    mgr.addProvider(new RecordingProvider("builtin"));
    const external = new RecordingProvider(
      "ext",
      { handleToolCall: () => new Promise<never>(() => {}) },
      { tools: [{ name: "ext_tool" }] },
    );
    let reads = 0;
    Object.defineProperty(external, "name", { get: () => (++reads > 1 ? "builtin" : "ext") });
    mgr.addProvider(external);
    const started = performance.now();
    const result = JSON.parse(await mgr.handleToolCall("ext_tool", {})) as { error: string };
    expect(performance.now() - started).toBeLessThan(BOUND_MS + 1000);
    expect(result.error).toContain("timed out");
    expect(result.error).toContain("provider 'ext'");
    expect(mgr.removeProvider("ext")).toBe(true);
  });
});

describe("hostile tool schemas", () => {
  it("a schema whose getter throws is skipped with a warning; the provider's other tools register", () => {
    const { mgr, logger } = manager();
    mgr.addProvider(new RecordingProvider("builtin", {}, { tools: [{ name: "memory" }] }));
    const hostile = {
      get name(): string {
        throw new Error("name getter");
      },
    };
    expect(mgr.addProvider(new RecordingProvider("ext", {}, { tools: [hostile, { name: "good_tool" }] }))).toBe(true);
    expect(mgr.getToolSchemas().map((s) => s.name)).toEqual(["memory", "good_tool"]);
    expect(logger.at("warn").join("\n")).toContain("name getter");
  });

  it("getToolSchemas never throws when a schema's getter starts throwing later", () => {
    const { mgr, logger } = manager();
    let calls = 0;
    const schema = {
      name: "flaky",
      get parameters(): Record<string, unknown> {
        if (++calls > 1) throw new Error("parameters getter");
        return { type: "object" };
      },
    };
    mgr.addProvider(new RecordingProvider("ext", { getToolSchemas: () => [schema, { name: "steady" }] }));
    expect(mgr.getToolSchemas().map((s) => s.name)).toEqual(["steady"]);
    expect(logger.at("warn").join("\n")).toContain("parameters getter");
  });

  it("a schemas array whose iteration throws: addProvider rethrows and leaves the manager unchanged", () => {
    const { mgr } = manager();
    mgr.addProvider(new RecordingProvider("builtin"));
    const trap = new Proxy([], {
      get() {
        throw new Error("array trap");
      },
    });
    expect(() => mgr.addProvider(new RecordingProvider("ext", { getToolSchemas: () => trap }))).toThrow("array trap");
    expect(mgr.providers.map((p) => p.name)).toEqual(["builtin"]);
    expect(() => mgr.getToolSchemas()).not.toThrow();
    expect(mgr.addProvider(new RecordingProvider("next"))).toBe(true);
  });

  it("only JSON-serialisable schemas are advertised (a cyclic or BigInt schema is skipped with a warning)", () => {
    const { mgr, logger } = manager();
    const cyclic: Record<string, unknown> = { type: "object" };
    cyclic.self = cyclic;
    mgr.addProvider(
      new RecordingProvider(
        "ext",
        {},
        { tools: [{ name: "cyclic", parameters: cyclic }, { name: "big", parameters: { type: "object", max: 1n } }, { name: "fine" }] },
      ),
    );
    const schemas = mgr.getToolSchemas();
    expect(schemas.map((s) => s.name)).toEqual(["fine"]);
    expect(() => JSON.stringify(schemas)).not.toThrow();
    expect(logger.at("warn").join("\n")).toMatch(/'cyclic'.*not JSON/);
  });
});

describe("hostile return values", () => {
  it("an external prefetch that returns a non-string is ignored with a warning, not recalled as '[object Object]'", async () => {
    for (const value of [{ a: 1 }, 42, Symbol("s")]) {
      const { mgr, logger } = builtinAndExternal({ prefetch: () => value as unknown as string });
      expect(await mgr.prefetchAll("what tea?")).toBe("");
      expect(logger.at("warn").join("\n")).toContain("prefetch returned");
    }
  });

  it("a preCompressCheckpointApiVersion getter that throws counts as no checkpoint support", async () => {
    const { mgr, external } = builtinAndExternal({});
    Object.defineProperty(external, "preCompressCheckpointApiVersion", {
      get() {
        throw new Error("version getter");
      },
    });
    expect(mgr.supportsPreCompressCheckpoint()).toBe(false);
    await expect(mgr.onPreCompress([{ role: "user", content: "x" }], { requireCheckpoint: true })).rejects.toBeInstanceOf(
      CheckpointUnavailableError,
    );
  });
});

describe("describeError never throws", () => {
  it("whatever provider code threw or returned", async () => {
    const { describeError } = await import("./errors.js");
    const e = new Error("x");
    Object.defineProperty(e, "message", {
      get() {
        throw new Error("getter");
      },
    });
    expect(describeError(e)).toBe("a thrown value whose message could not be read");
    const both = {
      toJSON() {
        throw new Error("1");
      },
      toString() {
        throw new Error("2");
      },
    };
    expect(typeof describeError(both)).toBe("string");
    const trap = new Proxy(
      {},
      {
        getPrototypeOf() {
          throw new Error("trap");
        },
      },
    );
    expect(typeof describeError(trap)).toBe("string");
  });
});
