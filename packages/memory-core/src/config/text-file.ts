import { isUtf8 } from "node:buffer";
import fsp from "node:fs/promises";

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
 * Read a text file shared with the Python agent, for a read-modify-write. Unlike
 * `fs.readFile(file, "utf8")`, bytes that are not UTF-8 are reported instead of being replaced by
 * U+FFFD, which the write would then store: a file saved in another encoding must never be
 * rewritten lossily. A missing file is `missing`; any other error (permissions, a directory,
 * a symlink loop, a file too large) is thrown as the Node error.
 */
export async function readUtf8File(file: string): Promise<Utf8FileContent> {
  let bytes: Buffer;
  try {
    bytes = await fsp.readFile(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { kind: "missing" };
    throw error;
  }
  if (!isUtf8(bytes)) return { kind: "not-utf8", offset: firstInvalidUtf8Byte(bytes) };
  return { kind: "text", text: bytes.toString("utf8") };
}

/** The sentence every "not UTF-8" refusal uses. */
export function notUtf8Message(file: string, offset: number): string {
  return `${file} is not valid UTF-8 text (first invalid byte at offset ${offset}); it was probably saved in another encoding. Re-save it as UTF-8 (for example \`iconv -f latin1 -t utf-8\`), then retry`;
}
