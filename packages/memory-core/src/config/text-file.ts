import { isUtf8 } from "node:buffer";
import { readBoundedFile } from "../discovery/bounded-read.js";

/** What `readUtf8File` found: the text, no file, or bytes that are not UTF-8. */
export type Utf8FileContent = { kind: "text"; text: string } | { kind: "missing" } | { kind: "not-utf8"; offset: number };

/** Offset of the first byte that does not start or continue a valid UTF-8 sequence. */
function firstInvalidUtf8Byte(bytes: Buffer): number {
  let lo = 0;
  let hi = bytes.length;
  // Binary search on the longest valid prefix; `isUtf8` is native and linear.
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    let valid = isUtf8(bytes.subarray(0, mid));
    // A prefix may end inside a multi-byte sequence; allow up to 3 more bytes to complete it.
    for (let extra = 1; !valid && extra <= 3 && mid + extra <= bytes.length; extra++) valid = isUtf8(bytes.subarray(0, mid + extra));
    if (valid) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/**
 * Largest shared text file read (MEMORY.md, USER.md): far above any real one, below what a string
 * can hold. config.yaml and `.env` have their own, smaller caps.
 */
export const MAX_SHARED_TEXT_BYTES = 256 * 1024 * 1024;

/** Why a file could not be read: a refused (non-regular or oversized) file, or the OS error. */
function readFailure(file: string, read: { refused: string } | { error: NodeJS.ErrnoException }): Error {
  if ("error" in read) return read.error;
  return Object.assign(new Error(read.refused), { code: "EINVAL", path: file });
}

/**
 * Read a text file shared with the Python agent, for a read-modify-write. Unlike
 * `fs.readFile(file, "utf8")`, bytes that are not UTF-8 are reported instead of being replaced by
 * U+FFFD, which the write would then store: a file saved in another encoding must never be
 * rewritten lossily. The read never blocks (a FIFO in place of the file is refused, not waited
 * on) and stops at `maxBytes`. A missing file is `missing`; any other failure (permissions, a
 * directory, a FIFO or device, a symlink loop, a file over the cap) is thrown as an Error with
 * the OS's `code` (`EINVAL` for a refused file).
 */
export async function readUtf8File(file: string, maxBytes = MAX_SHARED_TEXT_BYTES): Promise<Utf8FileContent> {
  const read = await readBoundedFile(file, maxBytes);
  if ("missing" in read) return { kind: "missing" };
  if (!("bytes" in read)) throw readFailure(file, read);
  if (!isUtf8(read.bytes)) return { kind: "not-utf8", offset: firstInvalidUtf8Byte(read.bytes) };
  return { kind: "text", text: read.bytes.toString("utf8") };
}

/**
 * A shared text file as text, read leniently (invalid bytes become U+FFFD; for reading only,
 * never for a rewrite), "" when it does not exist. Never blocks; throws like `readUtf8File`.
 */
export async function readTextLenient(file: string, maxBytes = MAX_SHARED_TEXT_BYTES): Promise<string> {
  const read = await readBoundedFile(file, maxBytes);
  if ("missing" in read) return "";
  if (!("bytes" in read)) throw readFailure(file, read);
  return read.bytes.toString("utf8");
}

/** The sentence every "not UTF-8" refusal uses. */
export function notUtf8Message(file: string, offset: number): string {
  return `${file} is not valid UTF-8 text (first invalid byte at offset ${offset}); it was probably saved in another encoding. Re-save it as UTF-8 (for example \`iconv -f latin1 -t utf-8\`), then retry`;
}
