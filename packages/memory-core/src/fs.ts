import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import fsp from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { boundedName, siblingName } from "./bounded-name.js";
import { HermesMemoryError, describeError } from "./errors.js";

/** Options of `atomicWriteFile`. */
export interface AtomicWriteOptions {
  /** File mode for the written file (e.g. `0o600` for credentials). Default: keep the existing
   * file's mode, else the process umask default. */
  mode?: number;
  /** Also fsync the directory after the rename (durable against power loss). */
  fsyncDirectory?: boolean;
}

/** Most symlinks followed to a target that does not exist yet (as the OS's own limit, ELOOP past it). */
const MAX_SYMLINK_HOPS = 40;

/**
 * Resolve symlinks so an atomic replace writes the real target and keeps the link. A link whose
 * target does not exist yet (a dangling link, e.g. into a dotfiles checkout) is followed to the
 * path it names, so the write creates that file instead of replacing the link; a link cycle is
 * `ELOOP`.
 */
async function realTarget(file: string): Promise<string> {
  try {
    return await fsp.realpath(file);
  } catch {
    let current = file;
    for (let hops = 0; ; hops++) {
      let link: string;
      try {
        if (!(await fsp.lstat(current)).isSymbolicLink()) return current;
        link = await fsp.readlink(current);
      } catch {
        // Nothing at this path (or its directory is missing): the write creates it here.
        return current;
      }
      if (hops >= MAX_SYMLINK_HOPS) {
        throw Object.assign(new Error(`ELOOP: too many symbolic links to follow from ${file}`), { code: "ELOOP" });
      }
      current = path.resolve(path.dirname(current), link);
    }
  }
}

/** Longest readable part of a temporary file's name, in UTF-8 bytes. */
const TEMP_STEM_BYTES = 48;

/**
 * The name of an atomic write's temporary file for the target `name`: `.<stem>_<random>.tmp`,
 * the stem being the target's name without its extension. A target's name may be as long as the
 * file system allows, which would leave no room for the rest: a stem over 48 bytes becomes its
 * start and a hash of the whole name, so the temporary name never exceeds 66 bytes.
 */
function temporaryName(name: string): string {
  const stem = name.replace(/\.[^.]*$/, "");
  return `.${boundedName(stem, TEMP_STEM_BYTES, name)}_${randomBytes(6).toString("hex")}.tmp`;
}

/** `file`'s sibling `siblingName(basename, suffix)`: a name beside it that never grows past the limit. */
function besideFile(file: string, suffix: string): string {
  return path.join(path.dirname(file), siblingName(path.basename(file), suffix));
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
  const tmp = path.join(dir, temporaryName(path.basename(target)));
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

/** Options of `atomicJsonWrite`: those of `atomicWriteFile` plus the JSON indent. */
export interface AtomicJsonWriteOptions extends AtomicWriteOptions {
  indent?: number;
}

/** `JSON.stringify` + `atomicWriteFile` (trailing newline). */
export async function atomicJsonWrite(file: string, data: unknown, options: AtomicJsonWriteOptions = {}): Promise<void> {
  const text = JSON.stringify(data, null, options.indent ?? 2) + "\n";
  await atomicWriteFile(file, text, options);
}

/**
 * Turn Windows (`\r\n`) and old Mac (lone `\r`) line endings into `\n`. Every text file shared
 * with the Python agent (MEMORY.md, USER.md, .env, config.yaml, plugin.yaml) is parsed after this,
 * as Python's universal-newline reader does; otherwise a CRLF file parses differently here.
 */
export function normalizeNewlines(text: string): string {
  return text.indexOf("\r") === -1 ? text : text.replace(/\r\n?/g, "\n");
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

/** Options of `withFileLock`. */
export interface FileLockOptions {
  /** Give up after this long (default 10 s) with a `LOCK_TIMEOUT` error. */
  timeoutMs?: number;
  /**
   * pid-file mode only: an owner record whose holder cannot be checked (another host, or a pid
   * that is alive again under a new process) is abandoned after this long (default 30 s). A
   * holder on this host whose pid is gone is taken over at once. Ignored in flock mode.
   */
  staleMs?: number;
}

/**
 * How `withFileLock` excludes other processes:
 * - `flock`: flock(2) on the persistent `<file>.lock` (never deleted), the lock the Python agent
 *   takes on the same files. Needs the optional dependency `fs-ext`.
 * - `pidfile`: fallback when `fs-ext` cannot load (or `HERMES_FILE_LOCK=pidfile`): an owner
 *   record at `<file>.lock.owner`. Excludes other processes of this package only, not the
 *   Python agent.
 */
export type FileLockMode = "flock" | "pidfile";

interface FsExt {
  flockSync(fd: number, flags: "exnb" | "un"): void;
}

let fsExtModule: FsExt | null | undefined;

/** `fs-ext` when it is installed and its addon loads; `null` otherwise (no compiler, Windows…). */
function loadFsExt(): FsExt | null {
  if (fsExtModule !== undefined) return fsExtModule;
  try {
    const mod = createRequire(import.meta.url)("fs-ext") as Partial<FsExt>;
    fsExtModule = typeof mod.flockSync === "function" ? (mod as FsExt) : null;
  } catch {
    fsExtModule = null;
  }
  return fsExtModule;
}

/** The mode `withFileLock` uses in this process (see `FileLockMode`). */
export function fileLockMode(): FileLockMode {
  if (process.env.HERMES_FILE_LOCK === "pidfile") return "pidfile";
  return loadFsExt() ? "flock" : "pidfile";
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const noop = () => undefined;

function errnoCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | null)?.code;
}

function lockFailed(target: string, lockPath: string, error: unknown): HermesMemoryError {
  if (HermesMemoryError.isInstance(error)) return error;
  return new HermesMemoryError({
    code: "LOCK_FAILED",
    message: `Cannot take the lock on ${target} (${lockPath}): ${describeError(error)}. Check that ${path.dirname(lockPath)} is writable and its disk has free space, then retry.`,
    cause: error,
  });
}

/**
 * Callers in this process queue per lock path instead of polling the OS lock against each other.
 * Resolves to the release function; throws `onTimeout()` if the queue does not reach us in time.
 */
const inProcessQueues = new Map<string, Promise<void>>();

async function queueInProcess(key: string, deadline: number, onTimeout: () => HermesMemoryError): Promise<() => void> {
  const previous = inProcessQueues.get(key) ?? Promise.resolve();
  let release!: () => void;
  const mine = new Promise<void>((resolve) => (release = resolve));
  // The next caller waits for `previous` as well, so giving up early never lets it overtake.
  const tail = previous.then(() => mine);
  inProcessQueues.set(key, tail);
  const done = () => {
    release();
    if (inProcessQueues.get(key) === tail) inProcessQueues.delete(key);
  };
  let timer: NodeJS.Timeout | undefined;
  const timedOut = await Promise.race([
    previous.then(() => false),
    new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), Math.max(0, deadline - Date.now())))),
  ]);
  clearTimeout(timer);
  if (timedOut) {
    done();
    throw onTimeout();
  }
  return done;
}

interface HeldLock {
  release(): Promise<void>;
}

/**
 * The descriptors of the flock locks this process holds. Node closes a `FileHandle` that becomes
 * unreachable, and closing the descriptor drops its flock: a holder whose critical section waits
 * on something nothing else references (its promise chain then unreachable too) would lose the
 * lock at the next garbage collection while still inside it. Held here until released.
 */
const HELD_FLOCKS = new Set<fsp.FileHandle>();

/**
 * What an empty lock file is given to read, so that a user who finds `config.yaml.lock` or
 * `.env.lock` in `$HERMES_HOME` learns what it is instead of taking it for litter.
 */
function lockFileNote(target: string): string {
  return `Lock file of ${path.basename(target)}: Hermes (this package and the Python agent) takes flock(2) on it while rewriting that file. It holds no data. Leave it in place: deleting it while an agent runs can let two writers in at once.\n`;
}

/**
 * flock mode. The lock file is opened (created 0600 when missing) and never deleted, not even
 * when this process created it: deleting it is never provably safe, because any process may
 * have it open and be waiting for its lock. That waiter would then lock the deleted file while a
 * newcomer locks a new one at the same path; this package re-checks the inode after locking
 * (below), but the Python agent, which takes the same lock, does not. So the file stays, and an
 * empty one is given a line saying what it is (`lockFileNote`). The kernel drops the lock when the
 * holder exits, however it dies, so nothing is ever stale. The non-blocking form is polled: the
 * blocking one would pin a libuv thread for the wait.
 */
async function takeFlock(
  fsExt: FsExt,
  target: string,
  lockPath: string,
  deadline: number,
  timeout: () => HermesMemoryError,
): Promise<HeldLock> {
  let delay = 1;
  for (;;) {
    let handle: fsp.FileHandle | undefined;
    let locked = false;
    try {
      handle = await fsp.open(lockPath, fs.constants.O_RDWR | fs.constants.O_CREAT, 0o600);
      for (;;) {
        try {
          fsExt.flockSync(handle.fd, "exnb");
          locked = true;
          break;
        } catch (error) {
          const code = errnoCode(error);
          if (code !== "EAGAIN" && code !== "EWOULDBLOCK") throw error;
        }
        if (Date.now() >= deadline) throw timeout();
        await sleep(delay);
        delay = Math.min(delay * 2, 16);
      }
      // The locked file must still be the one at lockPath: if something deleted or replaced it
      // meanwhile (an older release of this package deleted its lock files), a second writer
      // could lock the new file, so start over on the new one.
      const [held, current] = await Promise.all([handle.stat(), fsp.stat(lockPath).catch(() => null)]);
      if (current !== null && current.ino === held.ino && current.dev === held.dev) {
        const owned = handle;
        handle = undefined;
        HELD_FLOCKS.add(owned);
        // Written under the lock, so two writers never interleave it; a full disk only leaves it empty.
        if (held.size === 0) await owned.write(lockFileNote(target), 0).catch(noop);
        return {
          async release() {
            try {
              fsExt.flockSync(owned.fd, "un");
            } catch {
              // Closing the descriptor below releases the lock as well.
            }
            await owned.close().catch(noop);
            HELD_FLOCKS.delete(owned);
          },
        };
      }
    } catch (error) {
      throw lockFailed(target, lockPath, error);
    } finally {
      if (handle) {
        if (locked) {
          try {
            fsExt.flockSync(handle.fd, "un");
          } catch {
            // close() releases it anyway.
          }
        }
        await handle.close().catch(noop);
      }
    }
  }
}

/** pid-file mode: the record a holder publishes (one JSON line). */
interface OwnerRecord {
  text: string;
  pid?: number;
  host?: string;
  nonce?: string;
  mtimeMs: number;
}

/**
 * Nonces of the owner records this process currently holds. Shared through a global symbol, so a
 * second copy of this package in the same process (duplicate installs) never mistakes a live
 * record of the first copy, which carries the same pid, for one left by a dead process.
 */
const heldNonces: Set<string> = ((globalThis as Record<symbol, unknown>)[Symbol.for("@hermes/memory.file-lock-nonces")] ??=
  new Set<string>()) as Set<string>;

function newOwnerText(nonce: string): string {
  return `${JSON.stringify({ pid: process.pid, host: os.hostname(), nonce, since: new Date().toISOString() })}\n`;
}

/**
 * Create `file` holding `text`, only if it does not exist: written to a temp file first and
 * hard-linked into place, so the record is never seen empty or half-written. `false` when the
 * file exists. The temp file is removed on every path.
 */
async function publishExclusive(file: string, text: string): Promise<boolean> {
  const tmp = besideFile(file, `.${randomBytes(6).toString("hex")}.tmp`);
  let handle: fsp.FileHandle | undefined;
  try {
    handle = await fsp.open(tmp, "wx", 0o600);
    await handle.writeFile(text);
    await handle.close();
    handle = undefined;
    try {
      await fsp.link(tmp, file);
      return true;
    } catch (error) {
      const code = errnoCode(error);
      if (code === "EEXIST") return false;
      if (code !== "EPERM" && code !== "ENOTSUP" && code !== "EOPNOTSUPP" && code !== "ENOSYS") throw error;
    }
  } finally {
    if (handle) await handle.close().catch(noop);
    await fsp.rm(tmp, { force: true }).catch(noop);
  }
  return createExclusive(file, text);
}

/**
 * `publishExclusive` on a filesystem without hard links: create the file in place (O_EXCL). A
 * contender may see it empty for a moment; an unreadable record counts as abandoned only after
 * `staleMs`, so that is safe. A failed write removes the file it created.
 */
async function createExclusive(file: string, text: string): Promise<boolean> {
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(file, "wx", 0o600);
  } catch (error) {
    if (errnoCode(error) === "EEXIST") return false;
    throw error;
  }
  try {
    await handle.writeFile(text);
    await handle.close();
    return true;
  } catch (error) {
    await handle.close().catch(noop);
    await fsp.rm(file, { force: true }).catch(noop);
    throw error;
  }
}

async function readOwner(file: string): Promise<OwnerRecord | null> {
  try {
    const [text, stat] = await Promise.all([fsp.readFile(file, "utf8"), fsp.stat(file)]);
    const record: OwnerRecord = { text, mtimeMs: stat.mtimeMs };
    try {
      const value = JSON.parse(text) as Record<string, unknown>;
      if (typeof value.pid === "number") record.pid = value.pid;
      if (typeof value.host === "string") record.host = value.host;
      if (typeof value.nonce === "string") record.nonce = value.nonce;
    } catch {
      // Not a record of ours: judged by age alone.
    }
    return record;
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return null;
    throw error;
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return errnoCode(error) === "EPERM";
  }
}

/**
 * A holder on this host whose pid is gone (or this process, for a record it does not hold) has
 * abandoned the lock. Anything else — another host, an unreadable record, a live pid that may be
 * a reused one — only after `staleMs`.
 */
function isAbandoned(record: OwnerRecord, staleMs: number): boolean {
  if (record.host === os.hostname() && record.pid !== undefined && record.nonce !== undefined) {
    if (record.pid === process.pid) return !heldNonces.has(record.nonce);
    if (!processAlive(record.pid)) return true;
  }
  return Date.now() - record.mtimeMs > staleMs;
}

/**
 * Delete the abandoned record `record` at `file`, never anything else. Only the contender that
 * creates `<file>.break-<nonce>` (exclusively) may delete that record, and it re-reads `file`
 * first: a record is never published twice (unique nonce), so if `file` still holds exactly
 * that record, nobody can have replaced it in between. A breaker that dies leaves its marker,
 * which is itself a record and is broken the same way. `true` when progress was made.
 */
async function breakAbandoned(file: string, record: OwnerRecord, staleMs: number, depth = 0): Promise<boolean> {
  const key =
    record.nonce !== undefined && /^[0-9a-f]{8,64}$/.test(record.nonce)
      ? record.nonce
      : createHash("sha256").update(record.text).digest("hex").slice(0, 24);
  const marker = besideFile(file, `.break-${key}`);
  const nonce = randomBytes(12).toString("hex");
  const mine = newOwnerText(nonce);
  heldNonces.add(nonce);
  try {
    if (!(await publishExclusive(marker, mine))) {
      const other = await readOwner(marker);
      if (other === null) return true;
      if (depth < 3 && isAbandoned(other, staleMs)) return breakAbandoned(marker, other, staleMs, depth + 1);
      return false;
    }
    try {
      const current = await readOwner(file);
      if (current !== null && current.text === record.text) await fsp.rm(file, { force: true });
    } finally {
      await removeIfOwned(marker, mine);
    }
    return true;
  } finally {
    heldNonces.delete(nonce);
  }
}

async function removeIfOwned(file: string, text: string): Promise<void> {
  try {
    const current = await readOwner(file);
    if (current !== null && current.text === text) await fsp.rm(file, { force: true });
  } catch {
    // Left behind, it names a dead pid once this process exits and is taken over then.
  }
}

async function takePidLock(
  target: string,
  ownerPath: string,
  deadline: number,
  staleMs: number,
  timeout: (holder: OwnerRecord | null) => HermesMemoryError,
): Promise<HeldLock> {
  let delay = 1;
  for (;;) {
    const nonce = randomBytes(12).toString("hex");
    const text = newOwnerText(nonce);
    heldNonces.add(nonce);
    let published = false;
    try {
      published = await publishExclusive(ownerPath, text);
      if (published) {
        return {
          async release() {
            await removeIfOwned(ownerPath, text);
            heldNonces.delete(nonce);
          },
        };
      }
    } catch (error) {
      throw lockFailed(target, ownerPath, error);
    } finally {
      if (!published) heldNonces.delete(nonce);
    }
    let holder: OwnerRecord | null;
    try {
      holder = await readOwner(ownerPath);
      if (holder === null) continue;
      if (isAbandoned(holder, staleMs) && (await breakAbandoned(ownerPath, holder, staleMs))) continue;
    } catch (error) {
      throw lockFailed(target, ownerPath, error);
    }
    if (Date.now() >= deadline) throw timeout(holder);
    await sleep(delay);
    delay = Math.min(delay * 2, 16);
  }
}

/**
 * Run `fn` while holding an exclusive lock on `file`, across processes and within this one. The
 * read-modify-write of MEMORY.md, USER.md, config.yaml and .env all go through here.
 *
 * - flock mode (`fs-ext` installed): flock(2) on the persistent `<file>.lock`, the same lock the
 *   Python agent takes, so the two agents exclude each other. A holder that dies releases it.
 * - pid-file mode (fallback): an owner record `<file>.lock.owner` (pid, host, nonce), created
 *   exclusively; a holder on this host whose pid is gone is taken over at once, atomically.
 *   Does not exclude the Python agent.
 *
 * A name too long to take the suffix (past 255 bytes with it) gets lock files named by its start
 * and a hash of the whole name instead, so every valid target can be locked.
 *
 * Callers in this process queue in order. Every path — `fn` throwing, an error while taking the
 * lock — releases the lock and closes its descriptor. Errors: `LOCK_TIMEOUT` after `timeoutMs`,
 * `LOCK_FAILED` when the lock file cannot be created (no space, permissions).
 */
export async function withFileLock<T>(file: string, fn: () => Promise<T> | T, options: FileLockOptions = {}): Promise<T> {
  const target = path.resolve(file);
  // `<file>.lock` (the Python agent's lock file) for every name it fits; a longer name's lock file
  // is its start and a hash of the whole name, the same one for every process.
  const lockPath = besideFile(target, ".lock");
  const timeoutMs = options.timeoutMs ?? 10_000;
  const staleMs = options.staleMs ?? 30_000;
  const deadline = Date.now() + timeoutMs;
  const fsExt = process.env.HERMES_FILE_LOCK === "pidfile" ? null : loadFsExt();
  const ownerPath = besideFile(target, ".lock.owner");
  const timeout = (holder: OwnerRecord | null = null): HermesMemoryError => {
    const held = fsExt
      ? `another process holds ${lockPath} (this package or the Python Hermes agent, which take the same lock). Retry when it has finished; if it never does, find it with \`fuser ${lockPath}\` and stop it. Do not delete ${lockPath}: it is a permanent lock file and the lock ends with its holder.`
      : `${ownerPath} is held by ${holder?.pid !== undefined ? `pid ${holder.pid} on host ${holder.host ?? "?"}` : "another process"}. Retry when it has finished; if that process is no longer running, delete ${ownerPath}.`;
    return new HermesMemoryError({
      code: "LOCK_TIMEOUT",
      message: `Timed out after ${timeoutMs} ms waiting for the lock on ${target}: ${held}`,
    });
  };
  const leave = await queueInProcess(lockPath, deadline, () => timeout());
  try {
    try {
      await fsp.mkdir(path.dirname(lockPath), { recursive: true });
    } catch (error) {
      throw lockFailed(target, lockPath, error);
    }
    const held = fsExt
      ? await takeFlock(fsExt, target, lockPath, deadline, () => timeout())
      : await takePidLock(target, ownerPath, deadline, staleMs, timeout);
    try {
      return await fn();
    } finally {
      await held.release();
    }
  } finally {
    leave();
  }
}

/** Create a directory (recursively) and force its mode, e.g. `0o700` for private data. */
export async function ensurePrivateDir(dir: string, mode = 0o700): Promise<void> {
  await fsp.mkdir(dir, { recursive: true, mode });
  await fsp.chmod(dir, mode);
}
