import { Transform, type Readable, type TransformCallback, type Writable } from "node:stream";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { STDIO_DEFAULT_MAX_BUFFER_SIZE } from "@modelcontextprotocol/sdk/shared/stdio.js";
import { ErrorCode, JSONRPCMessageSchema, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { silentLogger, type Logger } from "@hermes/memory-core";

/** The largest message (one line, without its newline) the stdio transport accepts, in bytes. */
export const MAX_STDIO_MESSAGE_BYTES = STDIO_DEFAULT_MAX_BUFFER_SIZE - 1;

const NEWLINE = 0x0a;

function errorReply(id: string | number | null, code: number, message: string): JSONRPCMessage {
  // JSON-RPC 2.0: the id is null when it could not be read from the offending message.
  return { jsonrpc: "2.0", id, error: { code, message } } as unknown as JSONRPCMessage;
}

/** The id of an invalid message when it is one a JSON-RPC client can match (a string or an integer). */
function usableId(value: unknown): string | number | null {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  const id = (value as { id?: unknown }).id;
  return typeof id === "string" || Number.isSafeInteger(id) ? (id as string | number) : null;
}

/**
 * Frames stdin into lines and lets only valid JSON-RPC messages through, as parsed objects. The
 * SDK's own stdio transport drops a line that is not a JSON-RPC message without answering (a client
 * waits forever for its id), stops the server on a line over its buffer limit, and never reads a
 * last line that has no newline. Here everything else gets a JSON-RPC error (-32700 for JSON it
 * cannot parse, -32600 for anything else) through `reply`, the next line is read normally, and the
 * text after the last newline is a message of its own when the input ends.
 */
class StdioMessageGuard extends Transform {
  private chunks: Buffer[] = [];
  private size = 0;
  /** Bytes of an over-long line are dropped until its newline. */
  private skipping = false;

  constructor(
    private readonly reply: (message: JSONRPCMessage) => void,
    private readonly logger: Logger,
  ) {
    super({ readableObjectMode: true });
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    let start = 0;
    while (start < chunk.length) {
      const newline = chunk.indexOf(NEWLINE, start);
      const end = newline === -1 ? chunk.length : newline;
      if (!this.skipping) {
        if (this.size + (end - start) > MAX_STDIO_MESSAGE_BYTES) {
          this.chunks = [];
          this.size = 0;
          this.skipping = true;
        } else if (end > start) {
          this.chunks.push(chunk.subarray(start, end));
          this.size += end - start;
        }
      }
      if (newline === -1) break;
      this.endLine();
      start = newline + 1;
    }
    callback();
  }

  override _flush(callback: TransformCallback): void {
    if (this.skipping || this.size > 0) this.endLine();
    callback();
  }

  private endLine(): void {
    if (this.skipping) {
      this.skipping = false;
      this.refuse(
        null,
        ErrorCode.InvalidRequest,
        `Invalid Request: message larger than ${MAX_STDIO_MESSAGE_BYTES} bytes; send smaller arguments (one JSON-RPC message per line).`,
      );
      return;
    }
    const line = Buffer.concat(this.chunks, this.size);
    this.chunks = [];
    this.size = 0;
    this.check(line);
  }

  private check(line: Buffer): void {
    const text = line.toString("utf8").replace(/\r$/, "");
    if (text.trim() === "") return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      const reason = error instanceof Error ? ` (${error.message})` : "";
      return this.refuse(
        null,
        ErrorCode.ParseError,
        `Parse error: the line is not valid JSON${reason}. Send one JSON-RPC 2.0 message per line.`,
      );
    }
    if (Array.isArray(value)) {
      return this.refuse(null, ErrorCode.InvalidRequest, "Invalid Request: JSON-RPC batches are not supported; send one message per line.");
    }
    const parsed = JSONRPCMessageSchema.safeParse(value);
    if (!parsed.success) {
      return this.refuse(
        usableId(value),
        ErrorCode.InvalidRequest,
        'Invalid Request: not a JSON-RPC 2.0 message. A request needs "jsonrpc": "2.0", an "id" that is a string or an integer, a string "method" and, optionally, an object "params".',
      );
    }
    this.push(parsed.data);
  }

  private refuse(id: string | number | null, code: number, message: string): void {
    // The reason only goes back to the client: a parse error can quote part of the line.
    this.logger.warn(`Refused a message on stdin with JSON-RPC error ${code}${id === null ? "" : ` (id ${JSON.stringify(id)})`}`);
    this.reply(errorReply(id, code, message));
  }
}

type RequestId = string | number;

function requestId(message: JSONRPCMessage): RequestId | undefined {
  const record = message as { id?: RequestId; method?: unknown };
  return typeof record.method === "string" && record.id !== undefined ? record.id : undefined;
}

function responseId(message: JSONRPCMessage): RequestId | undefined {
  const record = message as { id?: RequestId | null; method?: unknown; result?: unknown; error?: unknown };
  if (typeof record.method === "string" || record.id === undefined || record.id === null) return undefined;
  return record.result !== undefined || record.error !== undefined ? record.id : undefined;
}

/**
 * MCP over a process's stdin and stdout, one JSON-RPC message per line, that knows which requests
 * it has not answered yet. Malformed, invalid and oversized lines are answered with JSON-RPC errors
 * (see `StdioMessageGuard`). `stopInput()` stops reading and `drain(ms)` then waits until every
 * request received so far has been answered and written out, so a server that stops because its
 * client closed stdin still answers what the client sent before.
 *
 * Writes wait for the stream's own write callback, never for a `drain` listener per message: a
 * client that stops reading would otherwise pile up listeners (one per pending answer) and trip
 * Node's MaxListenersExceededWarning. When stdout fails (EPIPE: the client is gone), nothing more is
 * written and `onoutputgone` is called once.
 */
export class McpStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /** The input ended (stdin closed); every message before the end was delivered. */
  oninputend?: () => void;
  /** stdout failed; no answer can be written any more. */
  onoutputgone?: (error: Error) => void;

  private readonly guard: StdioMessageGuard;
  /** Requests received and not answered yet, by id (a count, in case a client repeats an id). */
  private readonly unanswered = new Map<RequestId, number>();
  private readonly idleWaiters = new Set<() => void>();
  private lastWrite: Promise<void> = Promise.resolve();
  private outputGone = false;
  private inputDetached = false;
  private closed = false;

  constructor(
    private readonly stdin: Readable,
    private readonly stdout: Writable,
    logger: Logger = silentLogger,
  ) {
    this.guard = new StdioMessageGuard((message) => void this.send(message), logger);
  }

  private readonly onInputError = (error: Error): void => {
    this.onerror?.(error);
    this.stopInput();
    this.oninputend?.();
  };

  private readonly onLine = (message: JSONRPCMessage): void => {
    const id = requestId(message);
    if (id !== undefined) this.unanswered.set(id, (this.unanswered.get(id) ?? 0) + 1);
    this.onmessage?.(message);
  };

  private readonly onInputEnd = (): void => {
    this.oninputend?.();
  };

  private readonly onOutputError = (error: Error): void => {
    if (this.outputGone) return;
    this.outputGone = true;
    this.notifyIfIdle();
    this.onoutputgone?.(error);
  };

  async start(): Promise<void> {
    this.guard.on("data", this.onLine);
    this.guard.once("end", this.onInputEnd);
    this.stdin.on("error", this.onInputError);
    this.stdout.on("error", this.onOutputError);
    this.stdin.pipe(this.guard);
  }

  /** Requests received and not answered yet. */
  get pendingRequests(): number {
    let count = 0;
    for (const n of this.unanswered.values()) count += n;
    return count;
  }

  send(message: JSONRPCMessage): Promise<void> {
    const id = responseId(message);
    if (id !== undefined) {
      const left = (this.unanswered.get(id) ?? 0) - 1;
      if (left > 0) this.unanswered.set(id, left);
      else this.unanswered.delete(id);
    }
    if (this.outputGone || this.stdout.destroyed || this.stdout.writableEnded) {
      this.notifyIfIdle();
      return Promise.resolve();
    }
    const written = new Promise<void>((resolve) => {
      // The callback runs once the line is handed to the OS, or with the error that stopped it.
      this.stdout.write(`${JSON.stringify(message)}\n`, () => resolve());
    });
    this.lastWrite = written;
    this.notifyIfIdle();
    return written;
  }

  /** Read no more input; messages already read are still handled and answered. */
  stopInput(): void {
    if (this.inputDetached) return;
    this.inputDetached = true;
    this.stdin.unpipe(this.guard);
    this.stdin.off("error", this.onInputError);
    // Leave a stdin someone else reads alone; otherwise stop it from holding the process open.
    if (this.stdin.listenerCount("data") === 0) this.stdin.pause();
  }

  /**
   * Wait until every request received so far has been answered and the answers written out, or
   * `timeoutMs` passed. True when nothing was left unanswered; false at the deadline. Returns at
   * once when stdout is gone (nothing can be answered).
   */
  async drain(timeoutMs: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
      timer.unref();
    });
    try {
      const idle = new Promise<true>((resolve) => {
        const done = (): void => {
          this.idleWaiters.delete(done);
          resolve(true);
        };
        this.idleWaiters.add(done);
        this.notifyIfIdle();
      });
      if (!(await Promise.race([idle, deadline]))) return false;
      if (this.outputGone) return true;
      return await Promise.race([this.lastWrite.then(() => true as const), deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  private notifyIfIdle(): void {
    if (this.unanswered.size > 0 && !this.outputGone) return;
    for (const waiter of [...this.idleWaiters]) waiter();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopInput();
    this.guard.off("data", this.onLine);
    this.guard.off("end", this.onInputEnd);
    this.stdout.off("error", this.onOutputError);
    this.guard.destroy();
    this.unanswered.clear();
    this.notifyIfIdle();
    this.onclose?.();
  }
}

/**
 * The stdio transport on `stdin`/`stdout`: answers malformed, invalid and oversized lines with
 * JSON-RPC errors instead of dropping them or stopping, and can drain its unanswered requests.
 */
export function createStdioTransport(stdin: Readable, stdout: Writable, logger: Logger = silentLogger): McpStdioTransport {
  return new McpStdioTransport(stdin, stdout, logger);
}
