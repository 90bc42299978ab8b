import type { Stats } from "node:fs";

/**
 * How old (ms) a file's last change must be, when it is read, before what was read from it may be
 * reused. A write lands a timestamp from the file system's clock, which ticks coarsely (a few ms on
 * Linux without fine-grained timestamps, 1 s on HFS+, 2 s on FAT) and may run ahead of ours on a
 * network mount: a file changed within this window of its read could be rewritten again, same size,
 * with the very same timestamps, and only its bytes would differ. Such a file is read again on the
 * next call, until its last change is older than the window.
 */
export const RACY_WINDOW_MS = 2000;
/** Most files one cache remembers by default (about 250 bytes each without text). */
export const MAX_CACHED_FILES = 20_000;
/** Most bytes of text one cache remembers by default. */
export const MAX_CACHED_TEXT_BYTES = 8 * 1024 * 1024;
/** Largest single text remembered by default: bigger manifests are read every time. */
export const MAX_CACHED_TEXT_ENTRY_BYTES = 64 * 1024;

/** How much one `ManifestCache` may hold. */
export interface ManifestCacheLimits {
  maxFiles: number;
  maxTextBytes: number;
  maxEntryTextBytes: number;
}

/**
 * One file's entry: the identity one `stat` gave (another file, or any write to it, changes one
 * of dev, ino, size, mtimeMs, ctimeMs) and what was read under it. `identified` is false for a file
 * seen once: read without an identity, so nothing of it can be reused yet.
 */
interface CacheEntry<V> {
  identified: boolean;
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  value: V | undefined;
  textBytes: number;
}

/** Whether a file is unknown to a cache, was read once without an identity, or has a read remembered. */
export type ManifestCacheState = "unseen" | "seen" | "remembered";

/** Hits and misses since the process started (or the last `clear`), for tests and diagnostics. */
export interface ManifestCacheCounters {
  hits: number;
  misses: number;
  entries: number;
  textBytes: number;
}

function sameIdentity(a: CacheEntry<unknown>, b: Stats): boolean {
  return a.ino === b.ino && a.ctimeMs === b.ctimeMs && a.size === b.size && a.mtimeMs === b.mtimeMs && a.dev === b.dev;
}

/**
 * What was read from regular files, remembered per process under each file's path and identity
 * (device, inode, size, mtime, ctime from one `stat`), so a repeated discovery stats a manifest
 * instead of opening, reading and parsing it. ctime is in the identity because installers set mtime
 * (npm stamps every file 1985-10-26) while the kernel moves ctime on every write, rename and chmod;
 * the inode catches a file renamed over the old one. A file changed within `RACY_WINDOW_MS` of its
 * read is not remembered (it is read again next time). Nothing is written to disk; the cache
 * is bounded by file count and text bytes and forgets the oldest entries first.
 */
export class ManifestCache<V> {
  private readonly entries = new Map<string, CacheEntry<V>>();
  private textBytes = 0;
  private hits = 0;
  private misses = 0;

  constructor(
    private readonly limits: ManifestCacheLimits = {
      maxFiles: MAX_CACHED_FILES,
      maxTextBytes: MAX_CACHED_TEXT_BYTES,
      maxEntryTextBytes: MAX_CACHED_TEXT_ENTRY_BYTES,
    },
  ) {}

  /**
   * The value remembered for `file` when `stat` (taken now) still shows the identity it had when it
   * was read; `undefined` otherwise (a miss: read the file, then `remember`).
   */
  lookup(file: string, stat: Stats): V | undefined {
    const entry = this.entries.get(file);
    if (entry?.identified && sameIdentity(entry, stat)) {
      this.hits++;
      return entry.value;
    }
    this.misses++;
    return undefined;
  }

  /**
   * Remember `value`, read from `file` after `stat` was taken; `readStartedAt` (`Date.now()`) is a
   * time before that stat. A file changed within `RACY_WINDOW_MS` of `readStartedAt`, one that is
   * not a regular file, or a text over the cache's `maxEntryTextBytes` is not remembered.
   */
  remember(file: string, stat: Stats, readStartedAt: number, value: V, textBytes = 0): void {
    if (
      !stat.isFile() ||
      textBytes > this.limits.maxEntryTextBytes ||
      Math.max(stat.ctimeMs, stat.mtimeMs) > readStartedAt - RACY_WINDOW_MS
    ) {
      this.forget(file);
      return;
    }
    this.store(file, true, stat, value, textBytes);
  }

  /**
   * Note that `file` was read once without taking its identity: the next read takes one and is
   * remembered. Callers that read a file once pay no fstat for a cache they never use.
   */
  markSeen(file: string): void {
    this.store(file, false, undefined, undefined, 0);
  }

  /** Set `file`'s entry in place when it has one (its age is kept), else add it and evict the oldest. */
  private store(file: string, identified: boolean, stat: Stats | undefined, value: V | undefined, textBytes: number): void {
    let entry = this.entries.get(file);
    if (entry === undefined) {
      entry = { identified, dev: 0, ino: 0, size: 0, mtimeMs: 0, ctimeMs: 0, value, textBytes: 0 };
      this.entries.set(file, entry);
    }
    entry.identified = identified;
    entry.dev = stat?.dev ?? 0;
    entry.ino = stat?.ino ?? 0;
    entry.size = stat?.size ?? 0;
    entry.mtimeMs = stat?.mtimeMs ?? 0;
    entry.ctimeMs = stat?.ctimeMs ?? 0;
    entry.value = value;
    this.textBytes += textBytes - entry.textBytes;
    entry.textBytes = textBytes;
    // Map order is insertion order: the oldest entries go first.
    for (const [oldest, old] of this.entries) {
      if (this.entries.size <= this.limits.maxFiles && this.textBytes <= this.limits.maxTextBytes) break;
      this.entries.delete(oldest);
      this.textBytes -= old.textBytes;
    }
  }

  /** Whether `file` is unknown, was read once (`markSeen`), or has a read remembered. */
  state(file: string): ManifestCacheState {
    const entry = this.entries.get(file);
    return entry === undefined ? "unseen" : entry.identified ? "remembered" : "seen";
  }

  /** True when `file` was seen (`markSeen`) or remembered. */
  has(file: string): boolean {
    return this.entries.has(file);
  }

  /** Drop what is remembered for `file`. */
  forget(file: string): void {
    const entry = this.entries.get(file);
    if (entry === undefined) return;
    this.entries.delete(file);
    this.textBytes -= entry.textBytes;
  }

  /** Drop everything and reset the counters. */
  clear(): void {
    this.entries.clear();
    this.textBytes = 0;
    this.hits = 0;
    this.misses = 0;
  }

  counters(): ManifestCacheCounters {
    return { hits: this.hits, misses: this.misses, entries: this.entries.size, textBytes: this.textBytes };
  }
}
