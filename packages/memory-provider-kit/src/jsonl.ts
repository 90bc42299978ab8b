/**
 * JSON Lines export and import files, the same way in every provider: an export is written to a
 * temporary file (mode 0600), fsynced and renamed into place, so a crash never leaves half a file
 * under the target name; an import reads one JSON value per non-blank line and reports every line
 * that is not JSON by its number. Long runs report progress as `(done, total)`.
 */
import fs from "node:fs";
import readline from "node:readline";
import path from "node:path";
import { HermesMemoryError } from "@hermes/memory-core";

/** Progress of a long operation: `done` of `total` items. */
export type ProgressCallback = (done: number, total: number) => void;

/** One line of a JSONL file: its 1-based number and the parsed value, or why it did not parse. */
export type JsonlLine = { lineNo: number; value: unknown } | { lineNo: number; error: string };

/**
 * Write `records` as JSON Lines to `file` atomically (temporary file, fsync, rename; mode 0600).
 * `total` (when known) is passed to `onProgress`. Returns the number of records written.
 */
export function writeJsonlFile(file: string, records: Iterable<unknown>, options: { onProgress?: ProgressCallback; total?: number } = {}): number {
  const target = path.resolve(file);
  const tmp = `${target}.${process.pid}.tmp`;
  let count = 0;
  const fd = fs.openSync(tmp, "w", 0o600);
  try {
    for (const record of records) {
      fs.writeSync(fd, `${JSON.stringify(record)}\n`);
      count++;
      if (options.onProgress && count % 500 === 0) options.onProgress(count, Math.max(options.total ?? 0, count));
    }
    fs.fsyncSync(fd);
  } catch (error) {
    fs.closeSync(fd);
    fs.rmSync(tmp, { force: true });
    throw error;
  }
  fs.closeSync(fd);
  fs.renameSync(tmp, target);
  options.onProgress?.(count, Math.max(options.total ?? 0, count));
  return count;
}

function parseLine(line: string, lineNo: number): JsonlLine {
  try {
    return { lineNo, value: JSON.parse(line) as unknown };
  } catch {
    return { lineNo, error: "not valid JSON" };
  }
}

function readError(file: string, error: unknown, writtenBy: string): HermesMemoryError {
  return new HermesMemoryError({
    code: "INVALID_ARGUMENT",
    message: `Cannot read ${file} (${(error as Error).message}). Pass a JSONL file written by \`${writtenBy}\`.`,
    cause: error,
  });
}

/**
 * Every non-blank line of the JSONL `file`, parsed. Throws `INVALID_ARGUMENT` naming `writtenBy`
 * (the command that writes such files) when the file cannot be read.
 */
export function readJsonlFileSync(file: string, writtenBy: string): JsonlLine[] {
  let text: string;
  try {
    text = fs.readFileSync(path.resolve(file), "utf8");
  } catch (error) {
    throw readError(file, error, writtenBy);
  }
  const out: JsonlLine[] = [];
  text.split(/\r?\n/).forEach((line, i) => {
    if (line.trim() !== "") out.push(parseLine(line, i + 1));
  });
  return out;
}

/** `readJsonlFileSync` as a stream, for files too large to hold in memory. */
export async function* readJsonlFile(file: string, writtenBy: string): AsyncGenerator<JsonlLine> {
  let stream: fs.ReadStream;
  try {
    fs.accessSync(path.resolve(file), fs.constants.R_OK);
    stream = fs.createReadStream(path.resolve(file), "utf8");
  } catch (error) {
    throw readError(file, error, writtenBy);
  }
  const rl = readline.createInterface({ input: stream, crlfDelay: Infinity });
  let lineNo = 0;
  for await (const line of rl) {
    lineNo++;
    if (line.trim() !== "") yield parseLine(line, lineNo);
  }
}

/** Number of non-blank lines of `file` (the `total` of an import's progress). */
export function countJsonlRecords(file: string): number {
  let n = 0;
  for (const line of fs.readFileSync(path.resolve(file), "utf8").split("\n")) if (line.trim() !== "") n++;
  return n;
}
