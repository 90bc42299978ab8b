import fs from "node:fs";
import path from "node:path";
import { describeError } from "../errors.js";
import { MANIFEST_OPEN_FLAGS, MAX_PACKAGE_JSON_BYTES, notRegularFile, tooLarge } from "./bounded-read.js";
import { ManifestCache, type ManifestCacheCounters } from "./manifest-cache.js";

/** The package.json field that marks a package as a memory provider. */
export const MANIFEST_FIELD = "hermesMemoryProvider";

/**
 * A dependency's package.json as found from a root: where it is and its text (or why not). `text`
 * is left out for manifests that cannot declare a provider (the field name does not appear).
 */
export interface DependencyManifest {
  file: string;
  text?: string;
  error?: string;
  /** False when the manifest does not mention the field, so it cannot declare a provider. */
  mentionsField: boolean;
}

const FIELD_NEEDLE = Buffer.from(`"${MANIFEST_FIELD}"`);
// Reused read buffer: most package.json files are a few KB; larger ones are read whole.
const READ_BUFFER = Buffer.allocUnsafe(64 * 1024);

/** One manifest as `readManifestText` read it, with the fstat of the file when one was taken. */
interface ManifestText {
  text?: string;
  mentionsField: boolean;
  stat?: fs.Stats;
}

/**
 * Read one manifest with open/read/close into a shared buffer and look for the field name in the
 * raw bytes: for thousands of small files this skips an allocation and a UTF-8 decode per file
 * that does not mention the field. The open is non-blocking, so a FIFO never blocks the
 * (synchronous) read; a file that fills the buffer or reads empty is checked with fstat, so a
 * device (a symlink to /dev/zero), a FIFO or a file over `MAX_PACKAGE_JSON_BYTES` is refused
 * (thrown, and reported by the caller) instead of read forever. With `identify` the fstat comes
 * first, always: its identity is what the read is remembered under.
 */
function readManifestText(file: string, identify: boolean): ManifestText {
  const fd = fs.openSync(file, MANIFEST_OPEN_FLAGS);
  try {
    let stat: fs.Stats | undefined;
    const checkRegular = (): void => {
      stat ??= fs.fstatSync(fd);
      if (!stat.isFile()) throw new Error(notRegularFile(file));
      if (stat.size > MAX_PACKAGE_JSON_BYTES) throw new Error(tooLarge(file, MAX_PACKAGE_JSON_BYTES));
    };
    if (identify) checkRegular();
    let length: number;
    try {
      length = fs.readSync(fd, READ_BUFFER, 0, READ_BUFFER.length, 0);
    } catch (error) {
      checkRegular(); // ESPIPE / EAGAIN / EISDIR: say what the file is rather than the errno
      throw error;
    }
    if (length === 0 || length === READ_BUFFER.length) checkRegular();
    if (length === READ_BUFFER.length) {
      const text = readRestSync(fd, file).toString("utf8");
      return { text, mentionsField: text.includes(`"${MANIFEST_FIELD}"`), stat };
    }
    const bytes = READ_BUFFER.subarray(0, length);
    if (bytes.indexOf(FIELD_NEEDLE) === -1) return { mentionsField: false, stat };
    return { text: bytes.toString("utf8"), mentionsField: true, stat };
  } finally {
    fs.closeSync(fd);
  }
}

/** The whole file from offset 0, at most `MAX_PACKAGE_JSON_BYTES` (it may have grown since fstat). */
function readRestSync(fd: number, file: string): Buffer {
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const want = Math.min(MAX_PACKAGE_JSON_BYTES + 1 - total, 1024 * 1024);
    if (want <= 0) break;
    const buffer = Buffer.allocUnsafe(want);
    const bytesRead = fs.readSync(fd, buffer, 0, want, total);
    if (bytesRead === 0) break;
    chunks.push(buffer.subarray(0, bytesRead));
    total += bytesRead;
  }
  if (total > MAX_PACKAGE_JSON_BYTES) throw new Error(tooLarge(file, MAX_PACKAGE_JSON_BYTES));
  return Buffer.concat(chunks, total);
}

/**
 * The `node_modules` folders Node would look in for a package required from `root`: `root`'s and
 * each ancestor's, nearest first (a folder that is itself `node_modules` adds none). Computed once
 * per root, not once per dependency.
 */
export function dependencySearchDirs(root: string): string[] {
  const dirs: string[] = [];
  for (let dir = root; ;) {
    if (path.basename(dir) !== "node_modules") dirs.push(path.join(dir, "node_modules"));
    const parent = path.dirname(dir);
    if (parent === dir) return dirs;
    dir = parent;
  }
}

/**
 * Read the package.json of `dependency` as Node would find the package from a root, in that root's
 * `dependencySearchDirs`: `<dir>/node_modules/<dependency>`, nearest first. That covers npm's flat
 * and hoisted layouts and pnpm's symlinks (`node_modules/<pkg>` → `.pnpm/…`); it never looks at
 * NODE_PATH or the global folders, and never scans a tree. Returns `null` when not installed.
 */
export function readDependencyManifest(searchDirs: readonly string[], dependency: string): DependencyManifest | null {
  // `dependency` matched the package-name pattern: no `.` or `..` segment, at most one `/`, so plain
  // concatenation gives what path.join would, without normalizing a thousand paths.
  const relative = `${path.sep}${path.sep === "/" ? dependency : dependency.replace("/", path.sep)}${path.sep}package.json`;
  for (const dir of searchDirs) {
    const found = readManifestAt(dir + relative);
    if (found) return found;
  }
  return null;
}

/** What was read from each dependency's package.json, reused while the file's identity holds. */
const dependencyManifests = new ManifestCache<DependencyManifest>();

/**
 * One package.json read as `readManifestText` reads it; `null` when there is no such file. The
 * first read of a file in this process takes no identity, so a one-shot discovery pays nothing for
 * the cache; the second takes one (an fstat) and is remembered under it. From then on the file is
 * stat-ed, and while it keeps that identity the read is reused: a repeated discovery costs one stat
 * per dependency instead of an open, a read and a close.
 */
export function readManifestAt(file: string): DependencyManifest | null {
  const readStartedAt = Date.now();
  const state = dependencyManifests.state(file);
  if (state === "remembered") {
    let stat: fs.Stats | undefined;
    let missing: boolean;
    try {
      stat = fs.statSync(file, { throwIfNoEntry: false });
      missing = stat === undefined;
    } catch (error) {
      // Anything but a missing file (no permission, a symlink loop) is said by the read below.
      missing = isMissing(error);
    }
    if (missing) {
      dependencyManifests.forget(file);
      return null;
    }
    const cached = stat === undefined ? undefined : dependencyManifests.lookup(file, stat);
    if (cached !== undefined) return cached;
  }
  let read: ManifestText;
  try {
    // One synchronous read per dependency: for thousands of tiny files this is an order of
    // magnitude faster than promise-based reads queued on the libuv thread pool.
    read = readManifestText(file, state !== "unseen");
  } catch (error) {
    dependencyManifests.forget(file);
    if (isMissing(error)) return null;
    return { file, error: describeError(error), mentionsField: true };
  }
  const found: DependencyManifest =
    read.text === undefined ? { file, mentionsField: read.mentionsField } : { file, text: read.text, mentionsField: read.mentionsField };
  if (read.stat === undefined) dependencyManifests.markSeen(file);
  else dependencyManifests.remember(file, read.stat, readStartedAt, found, found.text?.length ?? 0);
  return found;
}

function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === "ENOENT" || code === "ENOTDIR";
}

/** Hits and misses of the dependency manifest cache, for tests. */
export function dependencyManifestCacheCounters(): ManifestCacheCounters {
  return dependencyManifests.counters();
}
