import fs from "node:fs";
import fsp from "node:fs/promises";
import { describeError } from "../errors.js";

/** Largest `plugin.yaml` discovery reads (the same cap as config.yaml). */
export const MAX_PLUGIN_YAML_BYTES = 1024 * 1024;
/** Largest package.json discovery reads (a package root's or a dependency's). */
export const MAX_PACKAGE_JSON_BYTES = 4 * 1024 * 1024;

/**
 * Open flags for manifests: non-blocking, so opening a FIFO returns at once instead of waiting for
 * a writer (a blocking open would hang discovery, or freeze the whole process when synchronous).
 * Regular files read exactly as without the flag.
 */
export const MANIFEST_OPEN_FLAGS = fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0);

/** Outcome of reading one manifest (`readManifestFile`): its text, missing, or why it was refused. */
export type ManifestRead = { text: string } | { missing: true } | { refused: string } | { error: NodeJS.ErrnoException };

function sizeLabel(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${bytes} bytes`;
}

/** Why a manifest that is not a regular file is refused. */
export function notRegularFile(file: string): string {
  return `${file} is not a regular file (a FIFO, device, socket or directory); it was not read`;
}

/** Why a manifest over the cap is refused. */
export function tooLarge(file: string, maxBytes: number): string {
  return `${file} is larger than ${sizeLabel(maxBytes)}; it was not read`;
}

function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === "ENOENT" || code === "ENOTDIR";
}

/** Outcome of `readBoundedFile`: the bytes, missing, or why it was refused. */
export type BoundedRead = { bytes: Buffer } | { missing: true } | { refused: string } | { error: NodeJS.ErrnoException };

/**
 * Read a file without ever blocking on it or reading more than `maxBytes`: a FIFO, a device (a
 * symlink to /dev/zero), a socket or a directory is refused after one non-blocking open and an
 * fstat, a file over the cap before it is read. Never throws: a missing file is `{missing}`, other
 * OS errors are `{error}`. The one way core reads a file a user or another program may have put
 * in place (manifests, skills, config.yaml, `.env`, MEMORY.md / USER.md); `readBoundedFileSync` is
 * its synchronous twin.
 */
export async function readBoundedFile(file: string, maxBytes: number): Promise<BoundedRead> {
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(file, MANIFEST_OPEN_FLAGS);
  } catch (error) {
    return isMissing(error) ? { missing: true } : { error: error as NodeJS.ErrnoException };
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) return { refused: notRegularFile(file) };
    if (stat.size > maxBytes) return { refused: tooLarge(file, maxBytes) };
    // The file may grow after the fstat: read at most one byte past the cap to notice.
    const limit = maxBytes + 1;
    const chunks: Buffer[] = [];
    let total = 0;
    for (let want = Math.min(limit, stat.size + 1); want > 0; want = Math.min(limit - total, 64 * 1024)) {
      const buffer = Buffer.allocUnsafe(want);
      const { bytesRead } = await handle.read(buffer, 0, want, total);
      if (bytesRead === 0) break;
      chunks.push(buffer.subarray(0, bytesRead));
      total += bytesRead;
    }
    if (total > maxBytes) return { refused: tooLarge(file, maxBytes) };
    return { bytes: Buffer.concat(chunks, total) };
  } catch (error) {
    return { error: error as NodeJS.ErrnoException };
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/**
 * `readBoundedFile` for callers that must stay synchronous (`getEnv` inside a provider's
 * `isAvailable()`): the same non-blocking open, fstat, refusals and cap, with the same outcomes.
 * Reads in chunks of at most 1 MiB, so nothing larger than the file (or the cap) is allocated.
 */
export function readBoundedFileSync(file: string, maxBytes: number): BoundedRead {
  let fd: number;
  try {
    fd = fs.openSync(file, MANIFEST_OPEN_FLAGS);
  } catch (error) {
    return isMissing(error) ? { missing: true } : { error: error as NodeJS.ErrnoException };
  }
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) return { refused: notRegularFile(file) };
    if (stat.size > maxBytes) return { refused: tooLarge(file, maxBytes) };
    // The file may grow after the fstat: read at most one byte past the cap to notice.
    const limit = maxBytes + 1;
    const chunks: Buffer[] = [];
    let total = 0;
    for (let want = Math.min(limit, stat.size + 1); want > 0; want = Math.min(limit - total, 1024 * 1024)) {
      const buffer = Buffer.allocUnsafe(want);
      const bytesRead = fs.readSync(fd, buffer, 0, want, total);
      if (bytesRead === 0) break;
      chunks.push(buffer.subarray(0, bytesRead));
      total += bytesRead;
    }
    if (total > maxBytes) return { refused: tooLarge(file, maxBytes) };
    return { bytes: Buffer.concat(chunks, total) };
  } catch (error) {
    return { error: error as NodeJS.ErrnoException };
  } finally {
    try {
      fs.closeSync(fd);
    } catch {
      // Closing a descriptor that was only read cannot lose data.
    }
  }
}

/** `readBoundedFile` for a manifest, as UTF-8 text. */
export async function readManifestFile(file: string, maxBytes: number): Promise<ManifestRead> {
  const read = await readBoundedFile(file, maxBytes);
  return "bytes" in read ? { text: read.bytes.toString("utf8") } : read;
}

/** Human-readable reason of a refused or failed `ManifestRead`. */
export function manifestReadReason(read: ManifestRead): string {
  if ("refused" in read) return read.refused;
  if ("error" in read) return describeError(read.error);
  return "the file does not exist";
}
