import type { LanguageModelMiddleware } from "ai";
import {
  DEFAULT_EXTERNAL_PREFETCH_TIMEOUT_MS,
  HermesMemoryError,
  boundedCall,
  describeError,
  describeValue,
  fenceRecall,
  isTrivialPrompt,
  silentLogger,
  type Logger,
  type MemoryManager,
} from "@hermes/memory-core";

type TransformOptions = Parameters<NonNullable<LanguageModelMiddleware["transformParams"]>>[0];
type CallOptions = TransformOptions["params"];
type PromptMessage = CallOptions["prompt"][number];
type GenerateResult = Awaited<ReturnType<NonNullable<LanguageModelMiddleware["wrapGenerate"]>>>;
type StreamResult = Awaited<ReturnType<NonNullable<LanguageModelMiddleware["wrapStream"]>>>;
type StreamPart = StreamResult["stream"] extends ReadableStream<infer P> ? P : never;

/** Options of `memoryMiddleware`. */
export interface MemoryMiddlewareOptions {
  /** The conversation every call belongs to: a string, or a getter read at every call. */
  sessionId: string | (() => string);
  /**
   * The 1-based number of the turn a call starts, read once per new user message. Default: a
   * counter kept by this middleware instance (1, 2, 3, … per new user message).
   */
  turnNumber?: () => number;
  /**
   * Upper bound (ms) for all memory work before a call: the system-prompt block, `onTurnStart` and
   * recall. Past it the call proceeds with whatever was ready. Use the manager's
   * `externalPrefetchTimeoutMs` (default 8000) so a stuck provider costs at most one timeout.
   */
  timeoutMs?: number;
  /** Add the providers' system-prompt block to the system message. Default `true`. */
  systemPrompt?: boolean;
  /** Where failures of the memory work go. Default: silent. */
  logger?: Logger;
}

interface TurnState {
  userText: string;
  turnNumber: number;
  sessionId: string;
  systemBlock: string;
  recall: string;
}

/**
 * Throws `INVALID_ARGUMENT` unless `sessionId` is a non-empty string or a function (the option of
 * `memoryMiddleware` and `memoryTools`, checked when they are created).
 */
export function checkSessionOption(sessionId: unknown, caller: string, optional = false): void {
  if (optional && sessionId === undefined) return;
  if (typeof sessionId === "function" || (typeof sessionId === "string" && sessionId !== "")) return;
  throw new HermesMemoryError({
    code: "INVALID_ARGUMENT",
    message: `${caller}: sessionId must be a non-empty string or a function returning one, got ${describeValue(sessionId)}; pass the id of the conversation the calls belong to, e.g. { sessionId: "chat-42" }`,
  });
}

/** The session id now: the string, or what the getter returns (which must be a non-empty string). */
export function readSessionId(sessionId: string | (() => string)): string {
  if (typeof sessionId !== "function") return sessionId;
  const value: unknown = sessionId();
  if (typeof value === "string" && value !== "") return value;
  throw new HermesMemoryError({
    code: "INVALID_ARGUMENT",
    message: `the sessionId getter returned ${describeValue(value)}, not a non-empty string; return the id of the current conversation from it`,
  });
}

/** The latest user message: its index in the prompt and the text of its text parts. */
function latestUserMessage(prompt: readonly PromptMessage[]): { index: number; text: string } | null {
  for (let i = prompt.length - 1; i >= 0; i--) {
    const message = prompt[i]!;
    if (message.role !== "user") continue;
    const text = message.content
      .filter((part): part is Extract<typeof part, { type: "text" }> => part.type === "text")
      .map((part) => part.text)
      .join("\n");
    return { index: i, text };
  }
  return null;
}

function withMemory(prompt: readonly PromptMessage[], userIndex: number, state: TurnState): PromptMessage[] {
  const next = [...prompt];
  if (state.recall !== "") {
    const user = next[userIndex]!;
    if (user.role === "user") {
      // Recall goes into the user message it answers, fenced, never into the system prompt: it is
      // context for this turn only and must not read as an instruction.
      next[userIndex] = { ...user, content: [...user.content, { type: "text", text: `\n\n${state.recall}` }] };
    }
  }
  if (state.systemBlock !== "") {
    const first = next.findIndex((m) => m.role === "system");
    if (first >= 0) {
      const system = next[first]!;
      if (system.role === "system") next[first] = { ...system, content: `${system.content}\n\n${state.systemBlock}` };
    } else {
      next.unshift({ role: "system", content: state.systemBlock });
    }
  }
  return next;
}

function assistantTextOf(content: GenerateResult["content"]): string {
  return content
    .filter((part): part is Extract<typeof part, { type: "text" }> => part.type === "text")
    .map((part) => part.text)
    .join("");
}

/**
 * A language-model middleware for `wrapLanguageModel` that gives any AI SDK model Hermes memory.
 * Per call it does what a host loop does per turn:
 *
 * - before the call, for a new user message: `onTurnStart`, recall for that message through
 *   `prefetchAll` (fenced with `fenceRecall` and appended to the user message) and the providers'
 *   system-prompt block (merged into the system message), all bounded by `timeoutMs`;
 * - after a successful generate, or a stream that finished: `syncAll(user, assistant)` and
 *   `queuePrefetchAll` for the next turn. Both only enqueue; nothing waits on a write.
 *
 * Follow-up calls of the same turn (tool-call steps, which end with tool results rather than a new
 * user message) reuse the turn's recall and are not a new turn. A stream that is aborted or errors,
 * and a call that throws, sync nothing. Memory failures never fail the model call (a session getter
 * that throws or returns no id included: the call then goes to the model without memory). Throws
 * `INVALID_ARGUMENT` at creation for a missing or empty `sessionId` or a `timeoutMs` that is not a
 * positive number.
 */
export function memoryMiddleware(manager: MemoryManager, options: MemoryMiddlewareOptions): LanguageModelMiddleware {
  checkSessionOption(options?.sessionId, "memoryMiddleware");
  const logger = options.logger ?? silentLogger;
  const timeoutMs = options.timeoutMs ?? DEFAULT_EXTERNAL_PREFETCH_TIMEOUT_MS;
  // NaN or text would leave the memory work unbounded: refused when the middleware is created.
  if (typeof timeoutMs !== "number" || Number.isNaN(timeoutMs) || timeoutMs <= 0) {
    throw new HermesMemoryError({
      code: "INVALID_ARGUMENT",
      message: `memoryMiddleware: timeoutMs must be a positive number of milliseconds (Infinity: unbounded), got ${describeValue(timeoutMs)}; e.g. { timeoutMs: 8000 }`,
    });
  }
  const includeSystemPrompt = options.systemPrompt !== false;
  let counter = 0;
  let current: TurnState | null = null;
  // The state of each transformed call, keyed by the params object the SDK hands back to wrap*.
  const calls = new WeakMap<CallOptions, TurnState>();

  const sessionIdNow = (): string => readSessionId(options.sessionId);

  async function startTurn(userText: string, sessionId: string): Promise<TurnState> {
    counter += 1;
    const turnNumber = options.turnNumber ? options.turnNumber() : counter;
    const state: TurnState = { userText, turnNumber, sessionId, systemBlock: "", recall: "" };
    const work = async (): Promise<void> => {
      if (includeSystemPrompt) state.systemBlock = await manager.buildSystemPrompt();
      await manager.onTurnStart(turnNumber, userText, { sessionId });
      if (isTrivialPrompt(userText)) return;
      const recalled = await manager.prefetchAll(userText, { sessionId });
      state.recall = fenceRecall(recalled, { logger });
    };
    const outcome = await boundedCall(work, timeoutMs);
    if (outcome.status !== "ok")
      logger.warn(
        `Memory before turn ${turnNumber} did not finish within ${timeoutMs} ms (or failed); calling the model with what was ready`,
      );
    // Whatever the late work fills in afterwards must not change a prompt already sent.
    return { ...state };
  }

  function afterTurn(state: TurnState, assistantText: string): void {
    try {
      if (assistantText.trim() === "") return;
      manager.syncAll(state.userText, assistantText, { sessionId: state.sessionId });
      manager.queuePrefetchAll(state.userText, { sessionId: state.sessionId });
    } catch (error) {
      logger.warn(`Memory sync after turn ${state.turnNumber} failed: ${describeError(error)}`);
    }
  }

  return {
    specificationVersion: "v3",

    async transformParams({ params }) {
      const user = latestUserMessage(params.prompt);
      if (!user || user.text.trim() === "") return params;
      let sessionId: string;
      try {
        sessionId = sessionIdNow();
      } catch (error) {
        // A failing session getter is a memory failure: the model is called without memory.
        logger.warn(`Memory before the model call skipped: ${describeError(error)}`);
        return params;
      }
      const lastRole = params.prompt[params.prompt.length - 1]?.role;
      const continuing = current !== null && lastRole !== "user" && current.userText === user.text && current.sessionId === sessionId;
      let state: TurnState;
      if (continuing && current) {
        state = current;
      } else {
        try {
          state = await startTurn(user.text, sessionId);
        } catch (error) {
          logger.warn(`Memory before the model call failed: ${describeError(error)}`);
          return params;
        }
        current = state;
      }
      const transformed: CallOptions = { ...params, prompt: withMemory(params.prompt, user.index, state) };
      calls.set(transformed, state);
      return transformed;
    },

    async wrapGenerate({ doGenerate, params }) {
      const result = await doGenerate();
      const state = calls.get(params);
      if (state) afterTurn(state, assistantTextOf(result.content));
      return result;
    },

    async wrapStream({ doStream, params }) {
      const result = await doStream();
      const state = calls.get(params);
      if (!state) return result;
      let text = "";
      let finished = false;
      let failed = false;
      const watch = new TransformStream<StreamPart, StreamPart>({
        transform(part, controller) {
          if (part.type === "text-delta") text += part.delta;
          else if (part.type === "error") failed = true;
          else if (part.type === "finish") {
            finished = true;
            if (part.finishReason.unified === "error") failed = true;
          }
          controller.enqueue(part);
        },
        flush() {
          // Only a stream that ran to its finish part is a complete turn; an aborted or failed
          // stream never reaches here with `finished` and leaves no half-written turn behind.
          if (finished && !failed) afterTurn(state, text);
        },
      });
      return { ...result, stream: result.stream.pipeThrough(watch) };
    },
  };
}
