import { Transform, type Readable, type TransformCallback, type Writable } from "node:stream";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { STDIO_DEFAULT_MAX_BUFFER_SIZE } from "@modelcontextprotocol/sdk/shared/stdio.js";
import { ErrorCode, JSONRPCMessageSchema, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { silentLogger, type Logger } from "@hermes/memory-core";

/** The largest message (one line, without its newline) the stdio transport accepts, in bytes. */
export const MAX_STDIO_MESSAGE_BYTES = STDIO_DEFAULT_MAX_BUFFER_SIZE - 1;

const NEWLINE = 0x0a;
const LINE_END = Buffer.from("\n");

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
 * What the SDK's `StdioServerTransport` leaves out: it drops a line that is not a JSON-RPC message
 * without answering (a client waits forever for its id), and a line over its buffer limit closes
 * the transport, which stops the server. This stage sits between stdin and the SDK transport,
 * frames the lines itself and lets only valid messages through; everything else gets a JSON-RPC
 * error (-32700 for JSON it cannot parse, -32600 for anything else) through `reply`, and the next
 * line is read normally.
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
    // Object mode on the readable side: every valid line reaches the transport as its own chunk.
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
      if (this.skipping) {
        this.skipping = false;
        this.refuse(null, ErrorCode.InvalidRequest, `Invalid Request: message larger than ${MAX_STDIO_MESSAGE_BYTES} bytes; send smaller arguments (one JSON-RPC message per line).`);
      } else {
        const line = Buffer.concat(this.chunks, this.size);
        this.chunks = [];
        this.size = 0;
        this.check(line);
      }
      start = newline + 1;
    }
    callback();
  }

  private check(line: Buffer): void {
    const text = line.toString("utf8").replace(/\r$/, "");
    if (text.trim() === "") return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      const reason = error instanceof Error ? ` (${error.message})` : "";
      return this.refuse(null, ErrorCode.ParseError, `Parse error: the line is not valid JSON${reason}. Send one JSON-RPC 2.0 message per line.`);
    }
    if (Array.isArray(value)) {
      return this.refuse(null, ErrorCode.InvalidRequest, "Invalid Request: JSON-RPC batches are not supported; send one message per line.");
    }
    if (!JSONRPCMessageSchema.safeParse(value).success) {
      return this.refuse(
        usableId(value),
        ErrorCode.InvalidRequest,
        'Invalid Request: not a JSON-RPC 2.0 message. A request needs "jsonrpc": "2.0", an "id" that is a string or an integer, a string "method" and, optionally, an object "params".',
      );
    }
    this.push(Buffer.concat([line, LINE_END]));
  }

  private refuse(id: string | number | null, code: number, message: string): void {
    // The reason only goes back to the client: a parse error can quote part of the line.
    this.logger.warn(`Refused a message on stdin with JSON-RPC error ${code}${id === null ? "" : ` (id ${JSON.stringify(id)})`}`);
    this.reply(errorReply(id, code, message));
  }
}

/**
 * The SDK's `StdioServerTransport` on `stdin`/`stdout`, behind a guard that answers malformed,
 * invalid and oversized lines with JSON-RPC errors instead of dropping them or stopping.
 */
export function createStdioTransport(stdin: Readable, stdout: Writable, logger: Logger = silentLogger): StdioServerTransport {
  let transport: StdioServerTransport | null = null;
  const guard = new StdioMessageGuard((message) => {
    transport?.send(message).catch(() => {});
  }, logger);
  stdin.on("error", (error) => guard.destroy(error));
  stdin.pipe(guard);
  // Each chunk is one line of at most MAX_STDIO_MESSAGE_BYTES; the SDK buffer only ever holds one.
  transport = new StdioServerTransport(guard, stdout, { maxBufferSize: STDIO_DEFAULT_MAX_BUFFER_SIZE });
  return transport;
}
