import { describe, expect, it } from "vitest";
import { HermesMemoryError } from "./errors.js";
import { MemoryManager } from "./manager.js";
import { stripSkillScaffolding } from "./manager-turns.js";
import { MemoryProvider } from "./provider.js";
import type { MemoryWriteMetadata } from "./provider.js";
import { RESERVED_CORE_TOOL_NAMES, normalizeToolSchema } from "./tool-schema.js";
import { RecordingProvider, capturingLogger, tool } from "./test-support/recording-provider.js";

function manager(options: ConstructorParameters<typeof MemoryManager>[0] = {}) {
  const logger = capturingLogger();
  return { mgr: new MemoryManager({ hermesHome: "/tmp/hermes-test-home", logger, ...options }), logger };
}

describe("MemoryProvider contract basics", () => {
  it("a concrete subclass works and every optional hook is a callable no-op", async () => {
    class Minimal extends MemoryProvider {
      readonly name = "minimal";
      isAvailable() {
        return true;
      }
      initialize() {}
      getToolSchemas() {
        return [];
      }
      getConfigSchema() {
        return [];
      }
    }
    const p = new Minimal();
    expect(await p.systemPromptBlock()).toBe("");
    expect(await p.prefetch("q", { sessionId: "" })).toBe("");
    await p.initializeForInspection("s", { hermesHome: "/x" });
    await p.syncTurn("u", "a", { sessionId: "" });
    await p.onSessionSwitch("n", { parentSessionId: "", reset: false, rewound: false });
    expect(await p.onPreCompress([], { requireCheckpoint: false })).toBe("");
    expect(p.recallStatus()).toBeNull();
  });
});

describe("MemoryManager construction", () => {
  it("an empty manager has no providers, no schemas, an empty prompt and empty recall", async () => {
    const { mgr } = manager();
    expect(mgr.providers).toEqual([]);
    expect(mgr.getToolSchemas()).toEqual([]);
    expect(await mgr.buildSystemPrompt()).toBe("");
    expect(await mgr.prefetchAll("test")).toBe("");
    expect(mgr.describeRecall()).toBe("");
  });

  it.each([0, -1, Number.NaN])("refuses externalPrefetchTimeoutMs %s with INVALID_ARGUMENT", (value) => {
    let caught: unknown;
    try {
      new MemoryManager({ externalPrefetchTimeoutMs: value });
    } catch (error) {
      caught = error;
    }
    expect(HermesMemoryError.hasCode(caught, "INVALID_ARGUMENT")).toBe(true);
    expect((caught as Error).message).toContain("must be positive");
  });
});

describe("addProvider", () => {
  it("appends providers; getProvider finds by name and returns undefined for unknown names", () => {
    const { mgr, logger } = manager();
    const builtin = new RecordingProvider("builtin");
    expect(mgr.addProvider(builtin)).toBe(true);
    expect(mgr.providers).toEqual([builtin]);
    expect(mgr.getProvider("builtin")).toBe(builtin);
    expect(mgr.getProvider("nope")).toBeUndefined();
    expect(logger.at("info")).toContain("Memory provider 'builtin' registered (0 tools)");
  });

  it("accepts builtin + one external in order and rejects a second external with a warning", () => {
    const { mgr, logger } = manager();
    const builtin = new RecordingProvider("builtin");
    const mem0 = new RecordingProvider("mem0");
    const other = new RecordingProvider("other");
    mgr.addProvider(builtin);
    mgr.addProvider(mem0);
    expect(mgr.addProvider(other)).toBe(false);
    expect(mgr.providers.map((p) => p.name)).toEqual(["builtin", "mem0"]);
    expect(logger.at("warn")).toContain(
      "Rejected memory provider 'other' — external provider 'mem0' is already registered. Only one external memory provider is allowed at a time. Configure which one via memory.provider in config.yaml.",
    );
  });

  it("keeps builtin first even when it is registered after the external provider", () => {
    const { mgr } = manager();
    mgr.addProvider(new RecordingProvider("ext"));
    mgr.addProvider(new RecordingProvider("builtin"));
    expect(mgr.providers.map((p) => p.name)).toEqual(["builtin", "ext"]);
  });

  it("reads tool schemas before any state change: a throwing provider leaves the manager unchanged", () => {
    const { mgr } = manager();
    const broken = new RecordingProvider("broken", {
      getToolSchemas: () => {
        throw new Error("schema boom");
      },
    });
    expect(() => mgr.addProvider(broken)).toThrow("schema boom");
    expect(mgr.providers).toEqual([]);
    // The failed provider must not block the next external provider (#9948).
    expect(mgr.addProvider(new RecordingProvider("good", {}, { tools: [tool("good_tool")] }))).toBe(true);
    expect(mgr.hasTool("good_tool")).toBe(true);
  });

  it("returns a copy from `providers`", () => {
    const { mgr } = manager();
    mgr.addProvider(new RecordingProvider("ext"));
    mgr.providers.pop();
    expect(mgr.providers).toHaveLength(1);
  });
});

describe("tool schemas and routing", () => {
  it("collects schemas from builtin and external, routes each call to its owner", async () => {
    const { mgr } = manager();
    const builtin = new RecordingProvider("builtin", {}, { tools: [tool("memory")] });
    const ext = new RecordingProvider("ext", {}, { tools: [tool("ext_search"), tool("ext_add")] });
    mgr.addProvider(builtin);
    mgr.addProvider(ext);
    expect(mgr.getToolSchemas().map((s) => s.name)).toEqual(["memory", "ext_search", "ext_add"]);
    expect(mgr.getToolNames()).toEqual(new Set(["memory", "ext_search", "ext_add"]));
    const out = JSON.parse(await mgr.handleToolCall("ext_add", { content: "x" }));
    expect(out).toEqual({ ok: true, provider: "ext", tool: "ext_add" });
    expect(builtin.argsOf("handleToolCall")).toEqual([]);
  });

  it("first registered wins on a name conflict, with a warning; the schema is advertised once", async () => {
    const { mgr, logger } = manager();
    mgr.addProvider(new RecordingProvider("builtin", {}, { tools: [tool("shared", "from builtin")] }));
    const ext = new RecordingProvider("ext", {}, { tools: [tool("shared", "from ext")] });
    mgr.addProvider(ext);
    expect(logger.at("warn")).toContain("Memory tool name conflict: 'shared' already registered by builtin, ignoring from ext");
    const schemas = mgr.getToolSchemas();
    expect(schemas).toHaveLength(1);
    expect(schemas[0]?.description).toBe("from builtin");
    expect(JSON.parse(await mgr.handleToolCall("shared", {})).provider).toBe("builtin");
    expect(ext.argsOf("handleToolCall")).toEqual([]);
  });

  it("an unrouted tool returns a JSON error naming the tool", async () => {
    const { mgr } = manager();
    mgr.addProvider(new RecordingProvider("ext", {}, { tools: [tool("ext_tool")] }));
    expect(JSON.parse(await mgr.handleToolCall("terminal", { command: "ls" }))).toEqual({
      error: "No memory provider handles tool 'terminal'",
    });
  });

  it("a throwing tool becomes an error string and is logged; a non-string result is JSON-encoded", async () => {
    const { mgr, logger } = manager();
    mgr.addProvider(
      new RecordingProvider(
        "ext",
        {
          handleToolCall: (name) => {
            if (name === "bad") throw new Error("db locked");
            return { hits: [1, 2] };
          },
        },
        { tools: [tool("bad"), tool("obj")] },
      ),
    );
    expect(JSON.parse(await mgr.handleToolCall("bad", {}))).toEqual({ error: "Memory tool 'bad' failed: db locked" });
    expect(logger.at("error")).toContain("Memory provider 'ext' handle_tool_call(bad) failed: db locked");
    expect(await mgr.handleToolCall("obj", {})).toBe('{"hits":[1,2]}');
  });

  it("has_tool: true for provider tools, false for core tools and unknown names", () => {
    const { mgr } = manager();
    mgr.addProvider(new RecordingProvider("ext", {}, { tools: [tool("ext_search")] }));
    expect(mgr.hasTool("ext_search")).toBe(true);
    for (const name of ["terminal", "memory", "todo", "session_search", "unknown"]) {
      expect(mgr.hasTool(name)).toBe(false);
    }
  });

  it("never routes or advertises an external tool that shadows a core tool; keeps the legitimate one", () => {
    const { mgr, logger } = manager();
    mgr.addProvider(
      new RecordingProvider("ext", {}, { tools: [tool("clarify"), tool("delegate_task"), tool("memory"), tool("ext_recall")] }),
    );
    expect(mgr.getToolSchemas().map((s) => s.name)).toEqual(["ext_recall"]);
    expect(mgr.hasTool("clarify")).toBe(false);
    expect(mgr.hasTool("delegate_task")).toBe(false);
    expect(mgr.hasTool("memory")).toBe(false);
    expect(logger.at("warn")).toContain(
      "Memory provider 'ext' tool 'clarify' shadows a reserved core tool name; registration ignored. Core tools always win — rename the provider's tool to something unique.",
    );
  });

  it("lets the built-in provider own the reserved `memory` tool", () => {
    const { mgr } = manager();
    mgr.addProvider(new RecordingProvider("builtin", {}, { tools: [tool("memory")] }));
    expect(mgr.hasTool("memory")).toBe(true);
    expect(RESERVED_CORE_TOOL_NAMES.has("memory")).toBe(true);
  });

  it("unwraps wrapped schemas and drops nameless ones; a provider whose schemas later throw is skipped", () => {
    const { mgr, logger } = manager();
    let fail = false;
    mgr.addProvider(
      new RecordingProvider("ext", {
        getToolSchemas: () => {
          if (fail) throw new Error("gone");
          return [
            { type: "function", function: { name: "wrapped", description: "d", parameters: { type: "object" } } },
            { type: "function", function: { description: "nameless" } },
          ];
        },
      }),
    );
    expect(mgr.getToolSchemas()).toEqual([{ name: "wrapped", description: "d", parameters: { type: "object" } }]);
    expect(mgr.hasTool("wrapped")).toBe(true);
    expect(logger.at("warn")).toContain("Memory provider 'ext' returned a tool schema without a name; skipping it");
    fail = true;
    expect(mgr.getToolSchemas()).toEqual([]);
    expect(logger.at("warn")).toContain("Memory provider 'ext' get_tool_schemas() failed: gone");
  });
});

describe("normalizeToolSchema", () => {
  it("accepts the bare form and fills defaults without mutating the input", () => {
    const input = { name: "t" };
    expect(normalizeToolSchema(input)).toEqual({ name: "t", description: "", parameters: { type: "object", properties: {} } });
    expect(input).toEqual({ name: "t" });
  });
  it("unwraps {type:function, function}", () => {
    expect(normalizeToolSchema({ type: "function", function: { name: "x", description: "y", parameters: {} } })).toEqual({
      name: "x",
      description: "y",
      parameters: {},
    });
  });
  it.each([null, "str", 3, [], {}, { name: "" }, { name: "  " }, { type: "function", function: { description: "no name" } }])(
    "returns null for %j",
    (value) => {
      expect(normalizeToolSchema(value)).toBeNull();
    },
  );
});

describe("system prompt", () => {
  it("merges blocks, skips empty ones and survives a throwing provider", async () => {
    const { mgr, logger } = manager();
    mgr.addProvider(new RecordingProvider("builtin", { systemPromptBlock: () => "Has content" }));
    mgr.addProvider(new RecordingProvider("ext", { systemPromptBlock: () => "  " }));
    expect(await mgr.buildSystemPrompt()).toBe("Has content");

    const { mgr: mgr2 } = manager();
    mgr2.addProvider(new RecordingProvider("builtin", { systemPromptBlock: () => "A" }));
    mgr2.addProvider(new RecordingProvider("ext", { systemPromptBlock: async () => "B" }));
    expect(await mgr2.buildSystemPrompt()).toBe("A\n\nB");

    const { mgr: mgr3, logger: logger3 } = manager();
    mgr3.addProvider(
      new RecordingProvider("builtin", {
        systemPromptBlock: () => {
          throw new Error("bad block");
        },
      }),
    );
    mgr3.addProvider(new RecordingProvider("ext", { systemPromptBlock: () => "works fine" }));
    expect(await mgr3.buildSystemPrompt()).toBe("works fine");
    expect(logger3.at("warn")).toContain("Memory provider 'builtin' system_prompt_block() failed: bad block");
    expect(logger.at("warn")).toEqual([]);
  });
});

describe("prefetchAll (basic)", () => {
  it("merges results, passes the same query and session id to each provider", async () => {
    const { mgr } = manager();
    const builtin = new RecordingProvider("builtin", { prefetch: () => "builtin memory" });
    const ext = new RecordingProvider("ext", { prefetch: async () => "external memory" });
    mgr.addProvider(builtin);
    mgr.addProvider(ext);
    expect(await mgr.prefetchAll("what do I like?", { sessionId: "s1" })).toBe("builtin memory\n\nexternal memory");
    expect(builtin.argsOf("prefetch")).toEqual([["what do I like?", { sessionId: "s1" }]]);
    expect(ext.argsOf("prefetch")).toEqual([["what do I like?", { sessionId: "s1" }]]);
  });

  it("skips empty results and a throwing provider", async () => {
    const { mgr } = manager();
    mgr.addProvider(
      new RecordingProvider("builtin", {
        prefetch: () => {
          throw new Error("boom");
        },
      }),
    );
    mgr.addProvider(new RecordingProvider("ext", { prefetch: () => "only me" }));
    expect(await mgr.prefetchAll("q")).toBe("only me");

    const { mgr: mgr2 } = manager();
    mgr2.addProvider(new RecordingProvider("builtin", { prefetch: () => "" }));
    mgr2.addProvider(new RecordingProvider("ext", { prefetch: () => "ext" }));
    expect(await mgr2.prefetchAll("q")).toBe("ext");
  });

  it("does not recall for a bare /skill invocation", async () => {
    const { mgr } = manager();
    const ext = new RecordingProvider("ext", { prefetch: () => "x" });
    mgr.addProvider(ext);
    expect(await mgr.prefetchAll("/skill deploy")).toBe("");
    expect(ext.argsOf("prefetch")).toEqual([]);
  });
});

describe("lifecycle fan-out", () => {
  it("initializeAll passes the session id, hermesHome, platform cli and extra context; failures keep the provider", async () => {
    const { mgr, logger } = manager();
    const builtin = new RecordingProvider("builtin", {
      initialize: () => {
        throw new Error("init boom");
      },
    });
    const ext = new RecordingProvider("ext");
    mgr.addProvider(builtin);
    mgr.addProvider(ext);
    await mgr.initializeAll("sess-1", { userId: "u-7" });
    expect(ext.argsOf("initialize")).toEqual([["sess-1", { hermesHome: "/tmp/hermes-test-home", platform: "cli", userId: "u-7" }]]);
    expect(mgr.providers).toHaveLength(2);
    expect(logger.at("warn")).toContain("Memory provider 'builtin' initialize failed: init boom");
  });

  it("initializeAll keeps a caller-supplied platform and hermesHome", async () => {
    const { mgr } = manager();
    const ext = new RecordingProvider("ext");
    mgr.addProvider(ext);
    await mgr.initializeAll("s", { platform: "telegram", hermesHome: "/other" });
    expect(ext.argsOf("initialize")[0]?.[1]).toMatchObject({ platform: "telegram", hermesHome: "/other" });
  });

  it("initializeAllForInspection calls initializeForInspection, not initialize", async () => {
    const { mgr } = manager();
    const ext = new RecordingProvider("ext");
    mgr.addProvider(ext);
    await mgr.initializeAllForInspection("sess-2", { platform: "cli" });
    expect(ext.argsOf("initialize")).toEqual([]);
    expect(ext.argsOf("initializeForInspection")).toEqual([["sess-2", { hermesHome: "/tmp/hermes-test-home", platform: "cli" }]]);
  });

  it("onTurnStart delivers turn number, message and options to every provider", async () => {
    const { mgr } = manager();
    const builtin = new RecordingProvider("builtin");
    const ext = new RecordingProvider("ext", {
      onTurnStart: () => {
        throw new Error("x");
      },
    });
    mgr.addProvider(ext);
    mgr.addProvider(builtin);
    await mgr.onTurnStart(3, "hello", { model: "m1" });
    expect(builtin.argsOf("onTurnStart")).toEqual([[3, "hello", { model: "m1" }]]);
    expect(ext.argsOf("onTurnStart")).toEqual([[3, "hello", { model: "m1" }]]);
  });

  it("onSessionEnd fans out to builtin and external, and a throwing provider does not throw", async () => {
    const { mgr, logger } = manager();
    const builtin = new RecordingProvider("builtin", {
      onSessionEnd: () => {
        throw new Error("end boom");
      },
    });
    const ext = new RecordingProvider("ext");
    mgr.addProvider(builtin);
    mgr.addProvider(ext);
    const transcript = [{ role: "user", content: "hi" }];
    await expect(mgr.onSessionEnd(transcript)).resolves.toBeUndefined();
    expect(ext.argsOf("onSessionEnd")).toEqual([[transcript]]);
    expect(logger.at("warn")).toContain("Memory provider 'builtin' on_session_end failed: end boom");
  });

  it("onPreCompress is delivered and results are joined", async () => {
    const { mgr } = manager();
    mgr.addProvider(new RecordingProvider("builtin", { onPreCompress: () => "keep A" }));
    mgr.addProvider(new RecordingProvider("ext", { onPreCompress: () => "keep B" }));
    expect(await mgr.onPreCompress([{ role: "user", content: "x" }])).toBe("keep A\n\nkeep B");
  });

  it("onDelegation passes task, result and childSessionId", async () => {
    const { mgr } = manager();
    const ext = new RecordingProvider("ext");
    mgr.addProvider(ext);
    await mgr.onDelegation("research X", "found Y", { childSessionId: "child-1" });
    expect(ext.argsOf("onDelegation")).toEqual([["research X", "found Y", { childSessionId: "child-1" }]]);
  });

  it("describeRecall joins provider recall statuses", () => {
    const { mgr } = manager();
    mgr.addProvider(new RecordingProvider("builtin", { recallStatus: () => null }));
    mgr.addProvider(new RecordingProvider("ext", { recallStatus: () => ({ providerLabel: "ext", count: 2 }) }));
    expect(mgr.describeRecall()).toBe("🧠 ext — recalled 2 memories");
  });
});

describe("onMemoryWrite", () => {
  it("mirrors add/replace/remove to external providers only, each with its own metadata copy", async () => {
    const { mgr } = manager();
    const builtin = new RecordingProvider("builtin");
    const ext = new RecordingProvider("ext", {
      onMemoryWrite: (_a, _t, _c, metadata) => {
        metadata.mutatedByProvider = true;
      },
    });
    mgr.addProvider(builtin);
    mgr.addProvider(ext);
    const metadata: MemoryWriteMetadata = { sessionId: "s1", toolName: "memory" };
    await mgr.onMemoryWrite("add", "user", "likes tea", metadata);
    await mgr.onMemoryWrite("replace", "memory", "new", { oldText: "old" });
    await mgr.onMemoryWrite("remove", "memory", "", {});
    expect(builtin.argsOf("onMemoryWrite")).toEqual([]);
    expect(ext.argsOf("onMemoryWrite").map((a) => a.slice(0, 3))).toEqual([
      ["add", "user", "likes tea"],
      ["replace", "memory", "new"],
      ["remove", "memory", ""],
    ]);
    expect(ext.argsOf("onMemoryWrite")[1]?.[3]).toEqual({ oldText: "old", mutatedByProvider: true });
    expect(metadata).toEqual({ sessionId: "s1", toolName: "memory" });
  });

  it("a throwing provider is logged, not thrown", async () => {
    const { mgr, logger } = manager();
    mgr.addProvider(
      new RecordingProvider("ext", {
        onMemoryWrite: () => {
          throw new Error("mirror down");
        },
      }),
    );
    await expect(mgr.onMemoryWrite("add", "memory", "x")).resolves.toBeUndefined();
    expect(logger.at("warn")).toContain("Memory provider 'ext' on_memory_write failed: mirror down");
  });
});

describe("notifyMemoryToolWrite", () => {
  function setup() {
    const { mgr, logger } = manager();
    const ext = new RecordingProvider("ext");
    mgr.addProvider(new RecordingProvider("builtin"));
    mgr.addProvider(ext);
    const writes = () => ext.argsOf("onMemoryWrite");
    return { mgr, ext, writes, logger };
  }

  it("mirrors nothing unless success is true and the write was not staged", async () => {
    const { mgr, writes } = setup();
    const args = { action: "add", target: "user", content: "x" };
    await mgr.notifyMemoryToolWrite('{"success": false}', args);
    await mgr.notifyMemoryToolWrite('{"success": true, "staged": true}', args);
    await mgr.notifyMemoryToolWrite("not json", args);
    await mgr.notifyMemoryToolWrite('{"success": "yes"}', args);
    await mgr.notifyMemoryToolWrite("[1]", args);
    expect(writes()).toEqual([]);
    await mgr.notifyMemoryToolWrite({ success: true }, args);
    expect(writes()).toEqual([["add", "user", "x", {}]]);
  });

  it("single replace: previousContent from replaced_entry, oldText from args, caller previousContent dropped", async () => {
    const { mgr, writes } = setup();
    await mgr.notifyMemoryToolWrite(
      JSON.stringify({ success: true, replaced_entry: "User likes coffee" }),
      { action: "replace", old_text: "coffee", content: "User likes tea" },
      { buildMetadata: () => ({ sessionId: "s9", previousContent: "forged" }) },
    );
    expect(writes()).toEqual([
      ["replace", "memory", "User likes tea", { sessionId: "s9", oldText: "coffee", previousContent: "User likes coffee" }],
    ]);
  });

  it("single remove uses removed_entry; an empty entry is not reported", async () => {
    const { mgr, writes } = setup();
    await mgr.notifyMemoryToolWrite({ success: true, removed_entry: "gone entry" }, { action: "remove", old_text: "gone" });
    await mgr.notifyMemoryToolWrite({ success: true, removed_entry: "" }, { action: "remove", old_text: "x" });
    expect(writes()).toEqual([
      ["remove", "memory", "", { oldText: "gone", previousContent: "gone entry" }],
      ["remove", "memory", "", { oldText: "x" }],
    ]);
  });

  it("batch: mirrors each op in order with per-index previous entries (string or number keys)", async () => {
    const { mgr, writes } = setup();
    await mgr.notifyMemoryToolWrite(
      { success: true, replaced_entries: { "2": "old two" }, removed_entries: { 3: "old three" } },
      {
        target: "user",
        operations: [
          { action: "add", content: "one" },
          { action: "replace", old_text: "two", content: "two!" },
          { action: "remove", old_text: "three" },
          { action: "bogus", content: "skip me" },
          "not an op",
        ],
      },
    );
    expect(writes()).toEqual([
      ["add", "user", "one", {}],
      ["replace", "user", "two!", { oldText: "two", previousContent: "old two" }],
      ["remove", "user", "", { oldText: "three", previousContent: "old three" }],
    ]);
  });

  it("the built-in `memory` tool call is mirrored to the external provider after it returns", async () => {
    const { mgr, logger } = manager();
    const builtin = new RecordingProvider(
      "builtin",
      { handleToolCall: () => JSON.stringify({ success: true, message: "Entry added." }) },
      { tools: [tool("memory")] },
    );
    const ext = new RecordingProvider("ext");
    mgr.addProvider(builtin);
    mgr.addProvider(ext);
    const result = await mgr.handleToolCall("memory", { action: "add", target: "user", content: "prefers vim" }, { sessionId: "s3" });
    expect(JSON.parse(result)).toEqual({ success: true, message: "Entry added." });
    expect(ext.argsOf("onMemoryWrite")).toEqual([
      ["add", "user", "prefers vim", { toolName: "memory", writeOrigin: "memory_tool", sessionId: "s3" }],
    ]);
    expect(logger.at("error")).toEqual([]);
  });

  it("a failing built-in memory tool call is not mirrored", async () => {
    const { mgr } = manager();
    mgr.addProvider(
      new RecordingProvider("builtin", { handleToolCall: () => '{"success": false, "error": "x"}' }, { tools: [tool("memory")] }),
    );
    const ext = new RecordingProvider("ext");
    mgr.addProvider(ext);
    await mgr.handleToolCall("memory", { action: "add", content: "x" });
    expect(ext.argsOf("onMemoryWrite")).toEqual([]);
  });
});

describe("stripSkillScaffolding", () => {
  it("keeps ordinary text and the instruction of a skill invocation; a bare invocation yields nothing", () => {
    expect(stripSkillScaffolding("plain question")).toBe("plain question");
    expect(stripSkillScaffolding("/skill deploy")).toBe("");
    expect(stripSkillScaffolding("/bundle ops")).toBe("");
    expect(stripSkillScaffolding("/skill deploy to staging please")).toBe("to staging please");
    const expanded =
      '[SYSTEM: The user has invoked the "deploy" skill, indicating they want you to follow its instructions.]\n\n# Deploy\nStep 1...\n\nThe user has provided the following instruction alongside the skill invocation: ship v2';
    expect(stripSkillScaffolding(expanded)).toBe("ship v2");
    expect(stripSkillScaffolding('[SYSTEM: The user has invoked the "deploy" skill.]\n# body only')).toBe("");
    expect(stripSkillScaffolding("/skills are fun")).toBe("/skills are fun");
  });
});
