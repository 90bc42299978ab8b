/**
 * The local store's file handling: durable writes (fsync), checksums of the saved index file,
 * whether the process that left a temporary file still runs, the error a failed write gives, and
 * whether the vector memory directory can be written.
 */
import { createHash } from "node:crypto";
import fs from "node:fs";
import { HermesMemoryError, describeError } from "@hermes/memory-core";
import { isBusyError } from "@hermes/memory-provider-kit/sqlite";

/** Whether the process `pid` still runs (a process of another user counts). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Size and SHA-256 of a file, read in 1 MiB steps. */
export function fileSha256(file: string): { bytes: number; sha256: string } {
  const hash = createHash("sha256");
  const fd = fs.openSync(file, "r");
  let bytes = 0;
  try {
    const buffer = Buffer.allocUnsafe(1 << 20);
    for (;;) {
      const n = fs.readSync(fd, buffer, 0, buffer.length, null);
      if (n === 0) break;
      hash.update(buffer.subarray(0, n));
      bytes += n;
    }
  } finally {
    fs.closeSync(fd);
  }
  return { bytes, sha256: hash.digest("hex") };
}

/**
 * Size and SHA-256 of a file, read in 1 MiB steps on the thread pool: the event loop only hashes
 * one step at a time (a 100,000-item index file is hundreds of MiB).
 */
export async function fileSha256InSteps(file: string): Promise<{ bytes: number; sha256: string }> {
  const hash = createHash("sha256");
  const handle = await fs.promises.open(file, "r");
  let bytes = 0;
  try {
    const buffer = Buffer.allocUnsafe(1 << 20);
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
      if (bytesRead === 0) break;
      hash.update(buffer.subarray(0, bytesRead));
      bytes += bytesRead;
    }
  } finally {
    await handle.close();
  }
  return { bytes, sha256: hash.digest("hex") };
}

/** fsync a file or directory on the thread pool (the event loop runs while the disk syncs). */
export async function fsyncPathInSteps(target: string): Promise<void> {
  const handle = await fs.promises.open(target, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** fsync a file or directory, so what was written to it survives a crash. */
export function fsyncPath(target: string): void {
  const fd = fs.openSync(target, "r");
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** A typed error for a failed index/sidecar write, saying what to do (disk full is the usual cause). */
export function storageWriteError(what: string, error: unknown): HermesMemoryError {
  if (HermesMemoryError.isInstance(error)) return error;
  const code = (error as NodeJS.ErrnoException | null)?.code ?? "";
  const raw = describeError(error);
  const full =
    code === "ENOSPC" || code === "SQLITE_FULL" || /no space|disk is full|database or disk is full|serialize into stream/i.test(raw);
  const readOnly =
    code === "EROFS" || code === "EACCES" || code === "EPERM" || code.startsWith("SQLITE_READONLY") || /read-?only/i.test(raw);
  const hint = full
    ? "the disk is full: free space on it and call flush() again (nothing accepted is dropped while the process runs; what the sidecar holds is kept)"
    : readOnly
      ? "the directory is read-only or not writable: make $HERMES_HOME writable, then restart"
      : isBusyError(error)
        ? "another process (a second agent on this $HERMES_HOME, an import) held its write lock too long: retry once it is done"
        : "check free disk space and write permission on $HERMES_HOME/memory/vector, then call flush() again";
  return new HermesMemoryError({ code: "STORAGE_FAILED", message: `Could not write ${what} (${raw}): ${hint}.`, cause: error });
}

/** Whether this process may write `target` (also false on a read-only mount, even for root). */
function writableDirectory(target: string): boolean {
  try {
    fs.accessSync(target, fs.constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Create the vector memory directory `dir` when missing and say whether it is read-only (a
 * read-only mount, `dir` or `sidecarFile` not writable by this user). A read-only home still serves
 * recall from what is there; writes then fail with STORAGE_FAILED instead of initialise failing.
 * Throws `STORAGE_FAILED` when `dir` cannot be created, or is read-only and holds no sidecar yet.
 */
export function prepareVectorDirectory(dir: string, sidecarFile: string): { readOnly: boolean } {
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (error) {
    if (!fs.existsSync(dir)) throw storageWriteError(`the vector memory directory ${dir} (it cannot be created)`, error);
  }
  const readOnly = !writableDirectory(dir) || (fs.existsSync(sidecarFile) && !writableDirectory(sidecarFile));
  if (readOnly && !fs.existsSync(sidecarFile)) {
    throw new HermesMemoryError({
      code: "STORAGE_FAILED",
      message: `The vector memory directory ${dir} is read-only and holds no sidecar.sqlite yet, so there is nothing to recall and nothing can be saved. Make $HERMES_HOME writable.`,
    });
  }
  return { readOnly };
}
