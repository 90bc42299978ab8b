/**
 * JSON Lines export and import files, the same way in every provider: an export is written to a
 * temporary file (mode 0600), fsynced and renamed into place, so a crash never leaves half a file
 * under the target name; an import reads one JSON value per non-blank line and reports every line
 * that is not JSON by its number. Long runs report progress as `(done, total)`.
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import readline from "node:readline";
import path from "node:path";
import { HermesMemoryError, describeError } from "@hermes/memory-core";

/** Progress of a long operation: `done` of `total` items. */
export type ProgressCallback = (done: number, total: number) => void;

/** One line of a JSONL file: its 1-based number and the parsed value, or why it did not parse. */
export type JsonlLine = { lineNo: number; value: unknown } | { lineNo: number; error: string };

/**
 * The absolute path an export may write, checked before anything is written. The export goes to a
 * temporary file beside the target that is renamed into place, so a directory (the rename fails),
 * a device or a pipe (the rename would replace it with a plain file, e.g. `/dev/null` for root)
 * and a path whose folder does not exist are refused with `INVALID_ARGUMENT`.
 */
export function checkJsonlTarget(file: string): string {
  const target = path.resolve(file);
  // `bigint: true` throughout: on Node 20 a plain statSync of a pipe could break a later
  // require() of a native module ("Cannot find module 'bindings'").
  let stat: fs.BigIntStats | undefined;
  try {
    stat = fs.statSync(target, { bigint: true, throwIfNoEntry: false });
  } catch (error) {
    throw new HermesMemoryError({
      code: "INVALID_ARGUMENT",
      message: `Cannot export to ${target} (${describeError(error)}). Give a file path you can write.`,
      cause: error,
    });
  }
  if (stat?.isDirectory()) {
    throw new HermesMemoryError({
      code: "INVALID_ARGUMENT",
      message: `Cannot export to ${target}: it is a directory. Give a file path, e.g. ${path.join(target, "memory-export.jsonl")}.`,
    });
  }
  if (stat && !stat.isFile()) {
    throw new HermesMemoryError({
      code: "INVALID_ARGUMENT",
      message: `Cannot export to ${target}: it is not a regular file (a device, pipe or socket), and an export replaces the file it writes. Give a file path, or write to stdout.`,
    });
  }
  const folder = path.dirname(target);
  if (!stat && !fs.statSync(folder, { bigint: true, throwIfNoEntry: false })?.isDirectory()) {
    throw new HermesMemoryError({
      code: "INVALID_ARGUMENT",
      message: `Cannot export to ${target}: the folder ${folder} does not exist. Create it first or give another path.`,
    });
  }
  return target;
}

/**
 * Write `records` as JSON Lines to `file` atomically (temporary file, fsync, rename; mode 0600).
 * `total` (when known) is passed to `onProgress`. Returns the number of records written. The
 * target is checked first (`checkJsonlTarget`: `INVALID_ARGUMENT`); a failed write is
 * `STORAGE_FAILED`, leaves the target as it was and removes the temporary file. An error thrown
 * by `records` itself is passed on as it is.
 */
export function writeJsonlFile(
  file: string,
  records: Iterable<unknown>,
  options: { onProgress?: ProgressCallback; total?: number } = {},
): number {
  const target = checkJsonlTarget(file);
  // Named apart from the target: a target name as long as the file system allows would leave no
  // room for a suffix.
  const tmp = path.join(path.dirname(target), `.hermes-export-${process.pid}-${randomBytes(6).toString("hex")}.tmp`);
  const failed = (error: unknown) =>
    new HermesMemoryError({
      code: "STORAGE_FAILED",
      message: `Could not write ${target} (${describeError(error)}). Check that its folder is writable and the disk has space; nothing was written under that name.`,
      cause: error,
    });
  let count = 0;
  let fd: number;
  try {
    fd = fs.openSync(tmp, "w", 0o600);
  } catch (error) {
    throw failed(error);
  }
  let done = false;
  try {
    const iterator = records[Symbol.iterator]();
    for (;;) {
      // Only the file system's failures are STORAGE_FAILED; the records' own are passed on.
      const next = iterator.next();
      if (next.done) break;
      try {
        fs.writeSync(fd, `${JSON.stringify(next.value)}\n`);
      } catch (error) {
        throw failed(error);
      }
      count++;
      if (options.onProgress && count % 500 === 0) options.onProgress(count, Math.max(options.total ?? 0, count));
    }
    try {
      fs.fsyncSync(fd);
      fs.closeSync(fd);
      fd = -1;
      fs.renameSync(tmp, target);
    } catch (error) {
      throw failed(error);
    }
    done = true;
  } finally {
    if (!done) {
      if (fd! >= 0) fs.closeSync(fd!);
      fs.rmSync(tmp, { force: true });
    }
  }
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
    message: `Cannot read ${file} (${describeError(error)}). Pass a JSONL file written by \`${writtenBy}\`.`,
    cause: error,
  });
}

/**
 * Refuse (`INVALID_ARGUMENT`, naming `writtenBy`, the command that writes such files) an import
 * path that cannot be a JSONL file, before reading it: a missing file, a directory, or a device
 * such as `/dev/zero`, which never ends. Regular files and pipes (`<(gunzip -c dump.jsonl.gz)`)
 * are read; `regular` is false for a pipe, which can be read only once (count nothing first).
 */
export function checkJsonlSource(file: string, writtenBy: string): { regular: boolean } {
  let stat: fs.BigIntStats;
  try {
    stat = fs.statSync(path.resolve(file), { bigint: true });
  } catch (error) {
    throw readError(file, error, writtenBy);
  }
  if (stat.isFile() || stat.isFIFO()) return { regular: stat.isFile() };
  const what = stat.isDirectory() ? "a directory" : "not a regular file (a device or socket)";
  throw new HermesMemoryError({
    code: "INVALID_ARGUMENT",
    message: `Cannot read ${file}: it is ${what}. Pass a JSONL file written by \`${writtenBy}\`.`,
  });
}

/** A UTF-8 byte order mark at the start of a file (editors on Windows write one). */
const BOM = "\ufeff";

/**
 * Every non-blank line of the JSONL `file`, parsed (a leading byte order mark is skipped). Throws
 * `INVALID_ARGUMENT` naming `writtenBy` (the command that writes such files) when the file is
 * refused by `checkJsonlSource` or cannot be read.
 */
export function readJsonlFileSync(file: string, writtenBy: string): JsonlLine[] {
  checkJsonlSource(file, writtenBy);
  let text: string;
  try {
    text = fs.readFileSync(path.resolve(file), "utf8");
  } catch (error) {
    throw readError(file, error, writtenBy);
  }
  if (text.startsWith(BOM)) text = text.slice(1);
  const out: JsonlLine[] = [];
  text.split(/\r?\n/).forEach((line, i) => {
    if (line.trim() !== "") out.push(parseLine(line, i + 1));
  });
  return out;
}

/** `readJsonlFileSync` as a stream, for files too large to hold in memory. */
export async function* readJsonlFile(file: string, writtenBy: string): AsyncGenerator<JsonlLine> {
  checkJsonlSource(file, writtenBy);
  let stream: fs.ReadStream;
  try {
    fs.accessSync(path.resolve(file), fs.constants.R_OK);
    stream = fs.createReadStream(path.resolve(file), "utf8");
  } catch (error) {
    throw readError(file, error, writtenBy);
  }
  const rl = readline.createInterface({ input: stream, crlfDelay: Infinity });
  let lineNo = 0;
  for await (let line of rl) {
    lineNo++;
    if (lineNo === 1 && line.startsWith(BOM)) line = line.slice(1);
    if (line.trim() !== "") yield parseLine(line, lineNo);
  }
}

/** Number of non-blank lines of `file` (the `total` of an import's progress). */
export function countJsonlRecords(file: string): number {
  let n = 0;
  for (const line of fs.readFileSync(path.resolve(file), "utf8").split("\n")) if (line.trim() !== "") n++;
  return n;
}
