import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { generateText, jsonSchema, stepCountIs, streamText, tool, wrapLanguageModel } from "ai";
import { MockLanguageModelV3, convertArrayToReadableStream } from "ai/test";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { BuiltinMemoryProvider, MemoryManager, MemoryProvider, type ToolSchema } from "@hermes/memory-core";
import { SqliteMemoryProvider } from "@hermes/memory-sqlite";
import { memoryMiddleware } from "./middleware.js";
import { memoryTools } from "./tools.js";

type GenerateResult = Awaited<ReturnType<MockLanguageModelV3["doGenerate"]>>;
type StreamPart = Awaited<ReturnType<MockLanguageModelV3["doStream"]>>["stream"] extends ReadableStream<infer P> ? P : never;

const usage = {
  inputTokens: { total: 3, noCache: 3, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 2, text: 2, reasoning: undefined },
};

function textResult(text: string): GenerateResult {
  return { content: [{ type: "text", text }], finishReason: { unified: "stop", raw: "stop" }, usage, warnings: [] };
}

/** Two model steps: a call of `toolName` with `input`, then the answer `text`. */
function toolCallThenText(toolName: string, input: unknown, text: string): GenerateResult[] {
  return [
    {
      content: [{ type: "tool-call", toolCallId: "call-1", toolName, input: JSON.stringify(input) }],
      finishReason: { unified: "tool-calls", raw: "tool_calls" },
      usage,
      warnings: [],
    },
    textResult(text),
  ];
}

function textStream(...deltas: string[]): StreamPart[] {
  return [
    { type: "stream-start", warnings: [] },
    { type: "text-start", id: "t1" },
    ...deltas.map((delta): StreamPart => ({ type: "text-delta", id: "t1", delta })),
    { type: "text-end", id: "t1" },
    { type: "finish", finishReason: { unified: "stop", raw: "stop" }, usage },
  ];
}

/** Everything the model saw in one call, as one string. */
function promptText(call: { prompt: Array<{ role: string; content: unknown }> }): string {
  return call.prompt
    .map((m) => (typeof m.content === "string" ? m.content : (m.content as Array<{ text?: string }>).map((p) => p.text ?? "").join("")))
    .join("\n");
}

let home: string;

beforeEach(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-ai-sdk-"));
});

afterEach(() => {
  fs.rmSync(home, { recursive: true, force: true });
});

async function openManager(sessionId: string, extra: MemoryProvider[] = [], prefetchTimeoutMs = 8000): Promise<MemoryManager> {
  const manager = new MemoryManager({ hermesHome: home, externalPrefetchTimeoutMs: prefetchTimeoutMs });
  manager.addProvider(new BuiltinMemoryProvider());
  for (const provider of extra) manager.addProvider(provider);
  await manager.initializeAll(sessionId, { hermesHome: home });
  return manager;
}

/** A provider with no tools, no settings and nothing to open: the tests' providers add the hooks they need. */
abstract class TestProvider extends MemoryProvider {
  isAvailable(): boolean {
    return true;
  }
  initialize(): void {}
  getToolSchemas(): ToolSchema[] {
    return [];
  }
  getConfigSchema() {
    return [];
  }
}

/** A provider whose every hook never settles. */
class StuckProvider extends TestProvider {
  readonly name: string = "stuck";
  override prefetch(): Promise<string> {
    return new Promise(() => {});
  }
  override onTurnStart(): Promise<void> {
    return new Promise(() => {});
  }
  override systemPromptBlock(): Promise<string> {
    return new Promise(() => {});
  }
}

/** A provider whose every hook throws. */
class ThrowingProvider extends StuckProvider {
  override readonly name = "throwing";
  override prefetch(): Promise<string> {
    return Promise.reject(new Error("prefetch exploded"));
  }
  override onTurnStart(): Promise<void> {
    return Promise.reject(new Error("turn start exploded"));
  }
  override systemPromptBlock(): Promise<string> {
    return Promise.reject(new Error("system prompt exploded"));
  }
  override syncTurn(): Promise<void> {
    return Promise.reject(new Error("sync exploded"));
  }
  override queuePrefetch(): Promise<void> {
    return Promise.reject(new Error("queue prefetch exploded"));
  }
}

describe("memoryMiddleware with generateText", () => {
  it("puts recall from an earlier session into the prompt the model receives", async () => {
    const first = await openManager("session-1", [new SqliteMemoryProvider()]);
    const model1 = new MockLanguageModelV3({ doGenerate: textResult("Noted: genmaicha from Kyoto.") });
    await generateText({
      model: wrapLanguageModel({ model: model1, middleware: memoryMiddleware(first, { sessionId: "session-1" }) }),
      prompt: "My favourite tea is genmaicha from Kyoto.",
    });
    expect(await first.flushPending(10_000)).toBe(true);
    await first.shutdownAll();

    const second = await openManager("session-2", [new SqliteMemoryProvider()]);
    const model2 = new MockLanguageModelV3({ doGenerate: textResult("Genmaicha.") });
    const result = await generateText({
      model: wrapLanguageModel({ model: model2, middleware: memoryMiddleware(second, { sessionId: "session-2" }) }),
      system: "You are a helpful assistant.",
      prompt: "Which tea do I like?",
    });
    expect(result.text).toBe("Genmaicha.");
    const call = model2.doGenerateCalls[0]!;
    const user = call.prompt.find((m) => m.role === "user")!;
    const userText = promptText({ prompt: [user] });
    expect(userText).toContain("Which tea do I like?");
    expect(userText).toContain("<memory-context>");
    expect(userText).toContain("genmaicha");
    // The system message is kept and the providers' block is merged into it, not added twice.
    expect(call.prompt.filter((m) => m.role === "system")).toHaveLength(1);
    expect(promptText({ prompt: [call.prompt[0]!] })).toMatch(/^You are a helpful assistant\./);
    await second.shutdownAll();
  });

  it("round-trips a tool call through the memory tool into MEMORY.md", async () => {
    const manager = await openManager("session-tools");
    const model = new MockLanguageModelV3({
      doGenerate: toolCallThenText("memory", { action: "add", target: "memory", content: "The user deploys on Fridays." }, "Saved."),
    });
    const result = await generateText({
      model: wrapLanguageModel({ model, middleware: memoryMiddleware(manager, { sessionId: "session-tools" }) }),
      tools: memoryTools(manager, { sessionId: "session-tools" }),
      stopWhen: stepCountIs(3),
      prompt: "Remember that I deploy on Fridays.",
    });
    expect(result.text).toBe("Saved.");
    const toolResult = result.steps[0]!.toolResults[0]!;
    expect(JSON.parse(String(toolResult.output))).toMatchObject({ success: true });
    expect(fs.readFileSync(path.join(home, "memories", "MEMORY.md"), "utf8")).toContain("The user deploys on Fridays.");
    // Both steps answer the same user message: one turn, not two.
    expect(model.doGenerateCalls).toHaveLength(2);
    await manager.shutdownAll();
  });

  it("does not delay the response past the timeout when a provider hangs", async () => {
    const manager = await openManager("session-stuck", [new StuckProvider()], 150);
    const model = new MockLanguageModelV3({ doGenerate: textResult("Still here.") });
    const started = performance.now();
    const result = await generateText({
      model: wrapLanguageModel({ model, middleware: memoryMiddleware(manager, { sessionId: "session-stuck", timeoutMs: 300 }) }),
      prompt: "What did we discuss yesterday about the release?",
    });
    const elapsed = performance.now() - started;
    expect(result.text).toBe("Still here.");
    expect(elapsed).toBeLessThan(2_000);
    expect(model.doGenerateCalls).toHaveLength(1);
  });

  it("answers normally when every provider hook throws", async () => {
    const manager = await openManager("session-throwing", [new ThrowingProvider()]);
    const model = new MockLanguageModelV3({ doGenerate: textResult("Fine.") });
    const wrapped = wrapLanguageModel({ model, middleware: memoryMiddleware(manager, { sessionId: "session-throwing" }) });
    expect((await generateText({ model: wrapped, prompt: "What is on the agenda for the release?" })).text).toBe("Fine.");
    const streamModel = new MockLanguageModelV3({ doStream: { stream: convertArrayToReadableStream(textStream("Also fine.")) } });
    const streamed = streamText({
      model: wrapLanguageModel({ model: streamModel, middleware: memoryMiddleware(manager, { sessionId: "session-throwing" }) }),
      prompt: "And after that?",
    });
    expect(await streamed.text).toBe("Also fine.");
    expect(await manager.flushPending(5_000)).toBe(true);
    await manager.shutdownAll();
  });

  it("passes the caller's session id and turn number to the providers", async () => {
    const manager = await openManager("s-turns");
    const onTurnStart = vi.spyOn(manager, "onTurnStart");
    const syncAll = vi.spyOn(manager, "syncAll");
    const model = new MockLanguageModelV3({ doGenerate: textResult("Answer.") });
    let turn = 41;
    const wrapped = wrapLanguageModel({
      model,
      middleware: memoryMiddleware(manager, { sessionId: () => "s-turns", turnNumber: () => ++turn }),
    });
    await generateText({ model: wrapped, prompt: "First question about the build." });
    await generateText({ model: wrapped, prompt: "Second question about the build." });
    expect(onTurnStart.mock.calls.map((c) => [c[0], c[1], c[2]])).toEqual([
      [42, "First question about the build.", { sessionId: "s-turns" }],
      [43, "Second question about the build.", { sessionId: "s-turns" }],
    ]);
    expect(syncAll.mock.calls.map((c) => [c[0], c[1], c[2]])).toEqual([
      ["First question about the build.", "Answer.", { sessionId: "s-turns" }],
      ["Second question about the build.", "Answer.", { sessionId: "s-turns" }],
    ]);
    await manager.shutdownAll();
  });

  it("syncs nothing when the model call fails", async () => {
    const manager = await openManager("s-fail");
    const syncAll = vi.spyOn(manager, "syncAll");
    const model = new MockLanguageModelV3({
      doGenerate: async () => {
        throw new Error("model unavailable");
      },
    });
    await expect(
      generateText({
        model: wrapLanguageModel({ model, middleware: memoryMiddleware(manager, { sessionId: "s-fail" }) }),
        prompt: "Hello there, how is it going?",
        maxRetries: 0,
      }),
    ).rejects.toThrow(/model unavailable/);
    expect(syncAll).not.toHaveBeenCalled();
    await manager.shutdownAll();
  });
});

describe("memoryMiddleware with streamText", () => {
  it("syncs the stream's text once, when it finishes", async () => {
    const manager = await openManager("s-stream");
    const syncAll = vi.spyOn(manager, "syncAll");
    const model = new MockLanguageModelV3({ doStream: { stream: convertArrayToReadableStream(textStream("Hello", ", ", "world.")) } });
    const result = streamText({
      model: wrapLanguageModel({ model, middleware: memoryMiddleware(manager, { sessionId: "s-stream" }) }),
      prompt: "Say hello to the world.",
    });
    let seen = "";
    for await (const delta of result.textStream) seen += delta;
    expect(seen).toBe("Hello, world.");
    expect(syncAll).toHaveBeenCalledTimes(1);
    expect(syncAll.mock.calls[0]!.slice(0, 2)).toEqual(["Say hello to the world.", "Hello, world."]);
    await manager.shutdownAll();
  });

  it("syncs nothing half-written when the stream is aborted", async () => {
    const manager = await openManager("s-abort");
    const syncAll = vi.spyOn(manager, "syncAll");
    const controller = new AbortController();
    let cancelled = false;
    const model = new MockLanguageModelV3({
      // Like a real provider: the HTTP body errors when the call's abort signal fires.
      doStream: async ({ abortSignal }) => ({
        stream: new ReadableStream<StreamPart>({
          start(c) {
            for (const part of textStream("Partial answer")) if (part.type !== "text-end" && part.type !== "finish") c.enqueue(part);
            abortSignal?.addEventListener("abort", () => c.error(abortSignal.reason), { once: true });
          },
          cancel() {
            cancelled = true;
          },
        }),
      }),
    });
    const result = streamText({
      model: wrapLanguageModel({ model, middleware: memoryMiddleware(manager, { sessionId: "s-abort" }) }),
      prompt: "Write a long essay about tea.",
      abortSignal: controller.signal,
      onError: () => {},
    });
    let seen = "";
    try {
      for await (const delta of result.textStream) {
        seen += delta;
        controller.abort();
      }
    } catch {
      // An aborted stream may end with an abort error; either way nothing is synced.
    }
    expect(seen).toBe("Partial answer");
    expect(controller.signal.aborted || cancelled).toBe(true);
    expect(await manager.flushPending(5_000)).toBe(true);
    expect(syncAll).not.toHaveBeenCalled();
    await manager.shutdownAll();
  });

  it("syncs nothing when the stream errors", async () => {
    const manager = await openManager("s-error");
    const syncAll = vi.spyOn(manager, "syncAll");
    const model = new MockLanguageModelV3({
      doStream: {
        stream: convertArrayToReadableStream<StreamPart>([
          { type: "stream-start", warnings: [] },
          { type: "text-start", id: "t1" },
          { type: "text-delta", id: "t1", delta: "Half" },
          { type: "error", error: new Error("upstream broke") },
          { type: "finish", finishReason: { unified: "error", raw: "error" }, usage },
        ]),
      },
    });
    const result = streamText({
      model: wrapLanguageModel({ model, middleware: memoryMiddleware(manager, { sessionId: "s-error" }) }),
      prompt: "Tell me about the weather.",
      onError: () => {},
    });
    for await (const _ of result.fullStream) void _;
    expect(syncAll).not.toHaveBeenCalled();
    await manager.shutdownAll();
  });
});

describe("the sessionId and timeoutMs options", () => {
  it("refuses a missing or empty sessionId and a timeoutMs that would leave memory unbounded, when created", async () => {
    const manager = await openManager("s-options");
    for (const sessionId of [undefined, "", 5, null, {}]) {
      expect(() => memoryMiddleware(manager, { sessionId } as never)).toThrow(
        expect.objectContaining({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/sessionId/) }),
      );
    }
    for (const sessionId of ["", 5, null]) {
      expect(() => memoryTools(manager, { sessionId } as never)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    }
    expect(() => memoryTools(manager)).not.toThrow();
    for (const timeoutMs of [Number.NaN, 0, -5, "5000"]) {
      expect(() => memoryMiddleware(manager, { sessionId: "s", timeoutMs } as never)).toThrow(
        expect.objectContaining({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/timeoutMs/) }),
      );
    }
    expect(() => memoryMiddleware(manager, { sessionId: "s", timeoutMs: Number.POSITIVE_INFINITY })).not.toThrow();
    await manager.shutdownAll();
  });

  it("calls the model without memory when the session getter throws or returns no id, and logs why", async () => {
    const manager = await openManager("s-getter");
    const warnings: string[] = [];
    const logger = { debug() {}, info() {}, warn: (m: string) => void warnings.push(m), error() {} };
    const syncAll = vi.spyOn(manager, "syncAll");
    for (const getter of [
      () => {
        throw new Error("no current chat");
      },
      () => "" as string,
      () => 42 as unknown as string,
    ]) {
      const model = new MockLanguageModelV3({ doGenerate: textResult("Still answered.") });
      const wrapped = wrapLanguageModel({ model, middleware: memoryMiddleware(manager, { sessionId: getter, logger }) });
      expect((await generateText({ model: wrapped, prompt: "What did we decide about the release?" })).text).toBe("Still answered.");
      // The prompt went to the model as the caller wrote it.
      expect(promptText(model.doGenerateCalls[0]!)).toBe("What did we decide about the release?");
    }
    expect(syncAll).not.toHaveBeenCalled();
    expect(warnings).toHaveLength(3);
    expect(warnings.join("\n")).toMatch(/no current chat/);
    expect(warnings.join("\n")).toMatch(/empty string/);
    await manager.shutdownAll();
  });

  it("a tool whose session getter throws returns a JSON error to the model instead of throwing", async () => {
    const manager = await openManager("s-tool-getter");
    const tools = memoryTools(manager, {
      sessionId: () => {
        throw new Error("no current chat");
      },
    });
    const execute = tools.memory!.execute as (input: unknown, options: unknown) => Promise<string>;
    const result = JSON.parse(
      await execute({ action: "add", target: "memory", content: "Uses pnpm." }, { toolCallId: "t1", messages: [] }),
    ) as { error?: string };
    expect(result.error).toMatch(/no current chat/);
    expect(
      fs.existsSync(path.join(home, "memories", "MEMORY.md")) ? fs.readFileSync(path.join(home, "memories", "MEMORY.md"), "utf8") : "",
    ).not.toContain("Uses pnpm.");
    await manager.shutdownAll();
  });
});

/** A provider whose recall names the query it was asked for, counting the asks. */
class EchoRecallProvider extends TestProvider {
  readonly name: string = "echo";
  readonly queries: string[] = [];
  override prefetch(query: string): string {
    this.queries.push(query);
    return `recalled for: ${query}`;
  }
}

type PromptPart = { type: string; text?: string };
type PromptEntry = { role: string; content: string | PromptPart[] };
const fences = (prompt: PromptEntry[]): number =>
  prompt.map((m) => JSON.stringify(m.content).split("<memory-context>").length - 1).reduce((a, b) => a + b, 0);

describe("where the middleware puts recall", () => {
  it("as the last text part of the latest user message: after every part of a multi-part message, never in earlier user messages", async () => {
    const echo = new EchoRecallProvider();
    const manager = await openManager("s-place", [echo]);
    const model = new MockLanguageModelV3({ doGenerate: textResult("Answered.") });
    await generateText({
      model: wrapLanguageModel({ model, middleware: memoryMiddleware(manager, { sessionId: "s-place" }) }),
      messages: [
        { role: "user", content: "Which release did we ship last week?" },
        { role: "assistant", content: "Release 4.2." },
        {
          role: "user",
          content: [
            { type: "text", text: "Compare it with the plan" },
            { type: "file", data: new Uint8Array([1, 2, 3]), mediaType: "application/octet-stream" },
            { type: "text", text: "for the database migration" },
          ],
        },
      ],
    });
    const prompt = model.doGenerateCalls[0]!.prompt as PromptEntry[];
    expect(prompt.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
    expect(prompt[0]!.content).toEqual([{ type: "text", text: "Which release did we ship last week?" }]);
    const latest = prompt[2]!.content as PromptPart[];
    expect(latest.map((p) => p.type)).toEqual(["text", "file", "text", "text"]);
    expect(latest.slice(0, 3).map((p) => p.text ?? p.type)).toEqual(["Compare it with the plan", "file", "for the database migration"]);
    expect(latest[3]!.text).toContain("<memory-context>");
    expect(latest[3]!.text).toContain("recalled for: Compare it with the plan\nfor the database migration");
    expect(echo.queries).toEqual(["Compare it with the plan\nfor the database migration"]);
    expect(fences(prompt)).toBe(1);
    await manager.shutdownAll();
  });

  it("in a tool-call follow-up step: still the last part of the turn's user message (not after the tool result), recalled once", async () => {
    const echo = new EchoRecallProvider();
    const manager = await openManager("s-steps", [echo]);
    const model = new MockLanguageModelV3({ doGenerate: toolCallThenText("lookup", { what: "owner" }, "Dana owns it.") });
    const result = await generateText({
      model: wrapLanguageModel({ model, middleware: memoryMiddleware(manager, { sessionId: "s-steps" }) }),
      tools: {
        lookup: tool({
          inputSchema: jsonSchema<{ what: string }>({ type: "object", properties: { what: { type: "string" } }, required: ["what"] }),
          execute: async () => "Dana",
        }),
      },
      stopWhen: stepCountIs(3),
      messages: [
        { role: "user", content: "Who owns the billing service?" },
        { role: "assistant", content: "Let me check." },
        { role: "user", content: "And who owns the payments service?" },
      ],
    });
    expect(result.text).toBe("Dana owns it.");
    expect(model.doGenerateCalls).toHaveLength(2);
    for (const call of model.doGenerateCalls) {
      const prompt = call.prompt as PromptEntry[];
      const lastUser = prompt.map((m) => m.role).lastIndexOf("user");
      const parts = prompt[lastUser]!.content as PromptPart[];
      expect(parts[0]!.text).toBe("And who owns the payments service?");
      expect(parts.at(-1)!.text).toContain("recalled for: And who owns the payments service?");
      expect(fences(prompt)).toBe(1);
    }
    const followUp = model.doGenerateCalls[1]!.prompt as PromptEntry[];
    expect(followUp.map((m) => m.role).slice(-3)).toEqual(["user", "assistant", "tool"]);
    expect(echo.queries).toEqual(["And who owns the payments service?"]);
    await manager.shutdownAll();
  });
});

describe("a syncAll that throws", () => {
  it("never fails the model call: generate and stream answer, and the failure is logged", async () => {
    const manager = await openManager("s-sync-throws");
    vi.spyOn(manager, "syncAll").mockImplementation(() => {
      throw new Error("sync broke");
    });
    const warnings: string[] = [];
    const logger = { debug() {}, info() {}, warn: (m: string) => void warnings.push(m), error() {} };
    const middleware = memoryMiddleware(manager, { sessionId: "s-sync-throws", logger });

    const generated = await generateText({
      model: wrapLanguageModel({ model: new MockLanguageModelV3({ doGenerate: textResult("Generated anyway.") }), middleware }),
      prompt: "Summarise the release notes for me.",
      maxRetries: 0,
    });
    expect(generated.text).toBe("Generated anyway.");

    const errors: unknown[] = [];
    const streamed = streamText({
      model: wrapLanguageModel({
        model: new MockLanguageModelV3({ doStream: { stream: convertArrayToReadableStream(textStream("Streamed ", "anyway.")) } }),
        middleware,
      }),
      prompt: "Now summarise the changelog.",
      maxRetries: 0,
      onError: ({ error }) => void errors.push(error),
    });
    let seen = "";
    for await (const delta of streamed.textStream) seen += delta;
    expect(seen).toBe("Streamed anyway.");
    expect(await streamed.finishReason).toBe("stop");
    expect(errors).toEqual([]);
    expect(warnings.filter((w) => /Memory sync after turn \d+ failed: sync broke/.test(w))).toHaveLength(2);
    await manager.shutdownAll();
  });
});
