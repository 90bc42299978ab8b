import { randomBytes } from "node:crypto";
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";

export interface AtomicWriteOptions {
  /** File mode for the written file (e.g. `0o600` for credentials). Default: keep the existing
   * file's mode, else the process umask default. */
  mode?: number;
  /** Also fsync the directory after the rename (durable against power loss). */
  fsyncDirectory?: boolean;
}

/** Resolve symlinks so an atomic replace writes the real target and keeps the link. */
async function realTarget(file: string): Promise<string> {
  try {
    return await fsp.realpath(file);
  } catch {
    return file;
  }
}

/**
 * Write `data` to `file` atomically: a temp file in the same directory (created 0600), written,
 * fsynced, then renamed over the target. Parent directories are created. A symlinked target is
 * followed (the link survives). On any failure the temp file is removed and the target untouched.
 */
export async function atomicWriteFile(file: string, data: string | Uint8Array, options: AtomicWriteOptions = {}): Promise<void> {
  const target = await realTarget(path.resolve(file));
  const dir = path.dirname(target);
  await fsp.mkdir(dir, { recursive: true });
  let mode = options.mode;
  if (mode === undefined) {
    try {
      mode = (await fsp.stat(target)).mode & 0o7777;
    } catch {
      mode = undefined;
    }
  }
  const stem = path.basename(target).replace(/\.[^.]*$/, "");
  const tmp = path.join(dir, `.${stem}_${randomBytes(6).toString("hex")}.tmp`);
  let handle: fsp.FileHandle | undefined;
  try {
    handle = await fsp.open(tmp, "wx", 0o600);
    await handle.writeFile(data);
    if (mode !== undefined) await handle.chmod(mode);
    else await handle.chmod(0o666 & ~process.umask());
    await handle.sync();
    await handle.close();
    handle = undefined;
    await fsp.rename(tmp, target);
    if (options.fsyncDirectory) {
      const dirHandle = await fsp.open(dir, "r");
      try {
        await dirHandle.sync();
      } finally {
        await dirHandle.close();
      }
    }
  } catch (error) {
    if (handle) await handle.close().catch(() => undefined);
    await fsp.rm(tmp, { force: true }).catch(() => undefined);
    throw error;
  }
}

export interface AtomicJsonWriteOptions extends AtomicWriteOptions {
  indent?: number;
}

/** `JSON.stringify` + `atomicWriteFile` (trailing newline). */
export async function atomicJsonWrite(file: string, data: unknown, options: AtomicJsonWriteOptions = {}): Promise<void> {
  const text = JSON.stringify(data, null, options.indent ?? 2) + "\n";
  await atomicWriteFile(file, text, options);
}

/** Strip a leading UTF-8 byte-order mark. */
export function stripBom(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/**
 * Read a JSON object: `{}` when the file is missing, unreadable, malformed or not an object.
 * Tolerates a UTF-8 BOM. The read half of read → merge → `atomicJsonWrite`.
 */
export async function readJsonOrEmpty(file: string): Promise<Record<string, unknown>> {
  try {
    return parseJsonObject(await fsp.readFile(file, "utf8"));
  } catch {
    return {};
  }
}

/**
 * Read a text file: `""` when it does not exist; any other error (permissions, a directory) is
 * thrown. The read half of a locked read → modify → `atomicWriteFile`.
 */
export async function readTextOrEmpty(file: string): Promise<string> {
  try {
    return await fsp.readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return "";
    throw error;
  }
}

/** Synchronous `readJsonOrEmpty`. */
export function readJsonOrEmptySync(file: string): Record<string, unknown> {
  try {
    return parseJsonObject(fs.readFileSync(file, "utf8"));
  } catch {
    return {};
  }
}

function parseJsonObject(text: string): Record<string, unknown> {
  const value: unknown = JSON.parse(stripBom(text));
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

export interface FileLockOptions {
  /** Give up after this long (default 10 s). */
  timeoutMs?: number;
  /** A lock file older than this is considered abandoned by a crashed process (default 30 s). */
  staleMs?: number;
}

/**
 * Run `fn` while holding an exclusive lock file (`<file>.lock`, created with O_EXCL). Works across
 * processes; a lock left by a crashed process is taken over after `staleMs`.
 */
export async function withFileLock<T>(file: string, fn: () => Promise<T> | T, options: FileLockOptions = {}): Promise<T> {
  const lockPath = `${file}.lock`;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const staleMs = options.staleMs ?? 30_000;
  const deadline = Date.now() + timeoutMs;
  await fsp.mkdir(path.dirname(lockPath), { recursive: true });
  let delay = 2;
  for (;;) {
    try {
      const handle = await fsp.open(lockPath, "wx", 0o600);
      await handle.writeFile(`${process.pid}\n`);
      await handle.close();
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      try {
        const age = Date.now() - (await fsp.stat(lockPath)).mtimeMs;
        if (age > staleMs) {
          await fsp.rm(lockPath, { force: true });
          continue;
        }
      } catch {
        continue;
      }
      if (Date.now() > deadline) {
        throw Object.assign(new Error(`Timed out after ${timeoutMs} ms waiting for lock ${lockPath}; if no other process is running, delete the lock file.`), { code: "ELOCKED" });
      }
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, 50);
    }
  }
  try {
    return await fn();
  } finally {
    await fsp.rm(lockPath, { force: true }).catch(() => undefined);
  }
}

/** Create a directory (recursively) and force its mode, e.g. `0o700` for private data. */
export async function ensurePrivateDir(dir: string, mode = 0o700): Promise<void> {
  await fsp.mkdir(dir, { recursive: true, mode });
  await fsp.chmod(dir, mode);
}
