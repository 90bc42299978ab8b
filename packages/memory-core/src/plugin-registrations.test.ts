import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HermesMemoryError } from "./errors.js";
import { loadMemoryProvider } from "./loader.js";
import type { Logger } from "./logger.js";
import { openMemory } from "./open-memory.js";
import { callPluginFunction, pluginRegistrationsOf, runPluginHook } from "./plugin-registrations.js";
import { makeTempDir, providerSource, writeFiles } from "./test-support/temp-tree.js";

let tmp: ReturnType<typeof makeTempDir>;
let home: string;
let cwd: string;
let warnings: string[];
let logger: Logger;

beforeEach(() => {
  tmp = makeTempDir("hermes-registrations-");
  home = path.join(tmp.dir, "home");
  cwd = path.join(tmp.dir, "work");
  writeFiles(cwd, { "package.json": { name: "host" } });
  warnings = [];
  logger = { debug() {}, info() {}, warn: (m: string) => warnings.push(m), error: (m: string) => warnings.push(m) };
});
afterEach(() => tmp.cleanup());

const opts = () => ({ hermesHome: home, cwd, env: {}, logger });

function plugin(name: string, afterRegister: string): void {
  writeFiles(path.join(home, "plugins", name), { "plugin.yaml": `name: ${name}\n`, "index.js": providerSource(name, { afterRegister }) });
}

// What a plugin written for the original's richer context registers beside its provider.
const REGISTERS = `
  globalThis.__hookCalls = [];
  ctx.registerHook("on_session_end", (o) => { globalThis.__hookCalls.push(o); return "ended"; });
  ctx.register_hook("pre_llm_call", () => { throw new Error("hook broke"); });
  ctx.registerHook("on_session_end", () => new Promise(() => {}));
  ctx.registerTool("notes_lookup", "notes", { name: "notes_lookup", parameters: {} }, (args) => JSON.stringify({ echo: args }));
  ctx.register_tool({ name: "notes_count", handler: () => "3", description: "count" });
  ctx.registerCommand("notes", () => "listed", "list notes");
  ctx.register_auxiliary_task("summarise", "Summarise", "aux");
  ctx.registerPlatform({ id: "x" });
`;

describe("register(ctx)'s other registrations", () => {
  it("are collected beside the provider, in both spellings, frozen", async () => {
    plugin("notes", REGISTERS);
    const provider = await loadMemoryProvider("notes", opts());
    const r = pluginRegistrationsOf(provider);
    expect(r.provider).toBe("notes");
    expect(r.hooks.map((h) => h.name)).toEqual(["on_session_end", "pre_llm_call", "on_session_end"]);
    expect(r.tools.map((t) => [t.name, t.toolset, t.description])).toEqual([
      ["notes_lookup", "notes", ""],
      ["notes_count", null, "count"],
    ]);
    expect(r.commands).toEqual([{ name: "notes", handler: expect.any(Function), description: "list notes" }]);
    expect(r.other).toEqual([
      { method: "registerAuxiliaryTask", args: ["summarise", "Summarise", "aux"] },
      { method: "registerPlatform", args: [{ id: "x" }] },
    ]);
    expect(Object.isFrozen(r.hooks)).toBe(true);
    expect(() => (r.hooks as unknown[]).push({})).toThrow(TypeError);
    expect(warnings).toEqual([]);
  });

  it("are offered by openMemory's manager, and runPluginHook / callPluginFunction bound every call", async () => {
    plugin("notes", REGISTERS);
    writeFiles(home, { "config.yaml": "memory:\n  provider: notes\n" });
    const manager = await openMemory({ sessionId: "s", hermesHome: home, cwd, logger });
    try {
      const registrations = manager.pluginRegistrations();
      expect(Object.keys(registrations).sort()).toEqual(["builtin", "notes"]);
      expect(registrations.builtin!.hooks).toEqual([]);
      const outcomes = await runPluginHook(registrations, "on_session_end", [{ sessionId: "s" }], { timeoutMs: 200, logger });
      expect(outcomes.map((o) => o.outcome.status)).toEqual(["ok", "timeout"]);
      expect((globalThis as Record<string, unknown>).__hookCalls).toEqual([{ sessionId: "s" }]);
      expect(warnings.join("\n")).toContain("Memory provider 'notes' hook 'on_session_end' did not finish within");
      const failed = await runPluginHook(registrations, "pre_llm_call", [], { timeoutMs: 200, logger });
      expect(failed[0]!.outcome.status).toBe("error");
      expect(warnings.join("\n")).toContain("hook broke");
      const tool = registrations.notes!.tools[0]!;
      const result = await callPluginFunction("notes", `tool '${tool.name}'`, tool.handler, [{ q: 1 }], { timeoutMs: 200 });
      expect(result).toEqual({ status: "ok", value: JSON.stringify({ echo: { q: 1 } }) });
    } finally {
      await manager.shutdownAll();
    }
  });

  it("a registration with bad arguments is dropped with a warning and never costs the provider", async () => {
    plugin(
      "shaky",
      `ctx.registerHook("on_session_end"); ctx.register_tool(42, "set", {}, () => "{}"); ctx.registerCommand("ok", () => 1); globalThis.__shakyDone = true;`,
    );
    const provider = await loadMemoryProvider("shaky", opts());
    expect(provider.name).toBe("shaky");
    expect((globalThis as Record<string, unknown>).__shakyDone).toBe(true);
    expect(warnings).toEqual([
      "Memory provider 'shaky' failed to registerHook: the hook callback must be a function (got undefined)",
      "Memory provider 'shaky' failed to register_tool: the tool name must be a non-empty string (got 42)",
    ]);
    expect(pluginRegistrationsOf(provider).commands.map((c) => c.name)).toEqual(["ok"]);
  });

  it("reading a ctx member that does not exist fails loudly, naming it", async () => {
    writeFiles(path.join(home, "plugins", "typo"), {
      "plugin.yaml": "name: typo\n",
      "index.js": providerSource("typo", { style: "register" }).replace(
        "ctx.registerMemoryProvider",
        "void ctx.hermesHom; ctx.registerMemoryProvider",
      ),
    });
    const error = await loadMemoryProvider("typo", opts()).catch((e: unknown) => e);
    expect(HermesMemoryError.isInstance(error)).toBe(true);
    expect((error as HermesMemoryError).message).toContain("ctx.hermesHom, which does not exist. Did you mean 'hermesHome'?");
  });

  it("timeoutMs must be positive", async () => {
    await expect(runPluginHook([], "x", [], { timeoutMs: 0 })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  });
});
