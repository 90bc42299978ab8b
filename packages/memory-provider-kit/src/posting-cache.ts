import type BetterSqlite3 from "better-sqlite3";
import type { SqliteDb as Db } from "./sqlite-store.js";

/** Default memory for kept lists (4 bytes per id: 16 million ids, the lists of a few hundred common words of a million-item store). */
export const POSTING_CACHE_BYTES = 64 * 1024 * 1024;
/**
 * Bytes counted per kept list besides its ids (the entry and its key), so that many short lists
 * (rare words: a few ids each) count against the budget too.
 */
const ENTRY_BYTES = 96;
/** Lists asked for and not yet answered, at most (a ranking asks for at most eight). */
const MAX_PENDING = 32;
/** A list longer than this share of the budget is not kept (it would evict most others). */
const MAX_LIST_SHARE = 1 / 8;
/**
 * After a drop, no list is asked for until this long has passed without another (ms): a store
 * another process writes every few seconds would otherwise have the helper read every list again
 * after each of its commits, for lists dropped before they are used.
 */
const REQUEST_PAUSE_MS = 5_000;

/** One word's list as the reading thread returns it: ids in ascending order, read in one snapshot whose largest row id was `seenTo`. */
export interface PostingList {
  ids: Int32Array;
  seenTo: number;
}

/** Reads a word's complete list off the calling thread (the pool helper); `false` when it cannot take the request. */
export type PostingReader = (read: { sql: string; args: readonly unknown[]; maxSql: string }, done: (list: PostingList | null) => void) => boolean;

interface Entry {
  /** Ids in ascending order; only the first `length` are valid (room is kept for rows appended later). */
  ids: Int32Array;
  length: number;
  /** Every row up to this id is reflected; rows above it were appended since and are read on next use. */
  seenTo: number;
}

/**
 * The complete, ascending id lists of query words (the rows holding them in the pooled columns),
 * kept in memory so that a pair pool (`t_i AND t_j`, the first ids in id order) is an intersection
 * of two arrays instead of an FTS5 query: at a million items a pair of words each in a few percent
 * of the rows costs 1–2.5 ms through FTS5 and about 0.1–0.3 ms here, with the same ids.
 *
 * Lists are read in full by the pool helper thread (tens of milliseconds for a common word at a
 * million items), never on the calling thread; until a word's list arrives its pools are read
 * through FTS5 as before. Kept lists are trusted only while this is known:
 * - `sync()` at the start of every ranking: a commit by another connection (`PRAGMA data_version`)
 *   or a change by this connection not made through `writing` (`total_changes()`) drops them all;
 * - `writing(write, appendedOnly)` around a write of this connection that only appended rows keeps
 *   them: rows above a list's `seenTo` are read (newest first, stopping at `seenTo`) when the list
 *   is next used.
 * A list that arrives after a drop it did not see is discarded. After a drop, lists are asked for
 * again only once no other drop has happened for `REQUEST_PAUSE_MS`. Memory is bounded by
 * `maxBytes`, least recently used lists going first.
 */
export class PostingCache {
  private readonly entries = new Map<string, Entry>();
  /** Words asked for, with the `epoch` they were asked in. */
  private readonly pending = new Map<string, number>();
  private bytes = 0;
  /** Lists `list` has returned (for tests and diagnostics). */
  private used = 0;
  /** Bumped by every drop: an answer to an earlier request is discarded. */
  private epoch = 0;
  private dataVersion = -1;
  private totalChanges = -1;
  /** The largest row id at the last look (-1: look again). */
  private tableMax = -1;
  /** When `sync` last dropped lists (kept or asked for) because something else was written (`performance.now()`; -Infinity: never). */
  private droppedAt = -Infinity;
  private readonly stmts: { versions: BetterSqlite3.Statement; max: BetterSqlite3.Statement; newest: BetterSqlite3.Statement };

  /**
   * `listSql` returns a word's ids in ascending order given `matchOf(word)`; `newestSql` the same
   * ids in descending order; `maxSql` the largest row id of the table.
   */
  constructor(
    db: Db,
    private readonly listSql: string,
    newestSql: string,
    private readonly maxSql: string,
    private readonly matchOf: (word: string) => string,
    private readonly maxBytes = POSTING_CACHE_BYTES,
  ) {
    this.stmts = {
      versions: db.prepare(`SELECT data_version, total_changes() FROM pragma_data_version`).raw(true),
      max: db.prepare(maxSql).pluck(),
      newest: db.prepare(newestSql).pluck(),
    };
  }

  /** Drop every list unless nothing but this connection's reported appends changed the file since the last look. */
  sync(): void {
    const [dataVersion, totalChanges] = this.stmts.versions.get() as [number, number];
    if (dataVersion === this.dataVersion && totalChanges === this.totalChanges) return;
    // Only dropping lists kept or asked for starts the pause: a write while none are (before the
    // first request, or between a drop and the end of its pause) must not keep them from being asked for.
    if (this.dataVersion !== -1 && (this.entries.size > 0 || this.pending.size > 0)) this.droppedAt = performance.now();
    this.clear();
    this.dataVersion = dataVersion;
    this.totalChanges = totalChanges;
  }

  /**
   * Run `write`, a write of this connection that has committed when it returns. When
   * `appendedOnly(result)` holds, it only inserted rows, each with an id above every row before it
   * (and changed no pooled text of older rows): the lists stay, and the new rows are read on next
   * use. Anything else written, or a write that throws, drops them at the next `sync`.
   */
  writing<T>(write: () => T, appendedOnly: (result: T) => boolean): T {
    // Nothing kept or asked for (a store below the helper's size never has lists): nothing to keep
    // valid, and the next `sync` drops nothing.
    if (this.entries.size === 0 && this.pending.size === 0) return write();
    this.sync();
    const result = write();
    if (appendedOnly(result)) {
      const [dataVersion, totalChanges] = this.stmts.versions.get() as [number, number];
      if (dataVersion === this.dataVersion) {
        this.totalChanges = totalChanges;
        this.tableMax = -1;
      }
    }
    return result;
  }

  /** `word`'s ids in ascending order, brought up to date with rows appended since it was read; `undefined` when not kept. Call after `sync()`. */
  list(word: string): Int32Array | undefined {
    const entry = this.entries.get(word);
    if (entry === undefined) return undefined;
    this.entries.delete(word);
    if (this.tableMax < 0) this.tableMax = Number(this.stmts.max.get() ?? 0);
    if (entry.seenTo < this.tableMax) {
      // Appended rows are the newest: read from the newest down to the list's end. Rows above the
      // table's largest id as seen above were committed meanwhile; they are read next time.
      const added: number[] = [];
      for (const id of this.stmts.newest.iterate(this.matchOf(word)) as IterableIterator<number>) {
        if (id <= entry.seenTo) break;
        if (id <= this.tableMax) added.push(id);
      }
      if (added.some((id) => !Number.isInteger(id) || id > 0x7fffffff)) {
        this.bytes -= entry.ids.byteLength + ENTRY_BYTES;
        return undefined;
      }
      if (entry.length + added.length > entry.ids.length) {
        const grown = new Int32Array(Math.ceil((entry.length + added.length) * 1.25) + 16);
        grown.set(entry.ids.subarray(0, entry.length));
        this.bytes += grown.byteLength - entry.ids.byteLength;
        entry.ids = grown;
      }
      for (let i = added.length - 1; i >= 0; i--) entry.ids[entry.length++] = added[i]!;
      entry.seenTo = this.tableMax;
    }
    this.entries.set(word, entry);
    this.evict();
    this.used++;
    return entry.ids.subarray(0, entry.length);
  }

  /**
   * Ask `read` for the lists of `words` that are neither kept nor asked for (every word: a rare
   * word's list costs little, and a pair of a rare and a common word costs about a millisecond
   * through FTS5 at a million items); nothing within `REQUEST_PAUSE_MS` of the last drop by `sync`.
   */
  request(words: ReadonlyArray<{ term: string; df: number }>, read: PostingReader): void {
    if (performance.now() - this.droppedAt < REQUEST_PAUSE_MS) return;
    for (const { term, df } of words) {
      if (!(df > 0) || df * 4 + ENTRY_BYTES > this.maxBytes * MAX_LIST_SHARE) continue;
      if (this.entries.has(term) || this.pending.has(term) || this.pending.size >= MAX_PENDING) continue;
      const epoch = this.epoch;
      this.pending.set(term, epoch);
      const asked = read({ sql: this.listSql, args: [this.matchOf(term)], maxSql: this.maxSql }, (list) => {
        if (this.pending.get(term) === epoch) this.pending.delete(term);
        if (list === null || epoch !== this.epoch || this.entries.has(term)) return;
        this.entries.set(term, { ids: list.ids, length: list.ids.length, seenTo: list.seenTo });
        this.bytes += list.ids.byteLength + ENTRY_BYTES;
        this.evict();
      });
      if (!asked) {
        this.pending.delete(term);
        return;
      }
    }
  }

  /** Words kept, the bytes their lists take, and how many lists rankings have used so far. */
  status(): { words: number; bytes: number; used: number } {
    return { words: this.entries.size, bytes: this.bytes, used: this.used };
  }

  /** Drop every list, and discard answers to requests made before. */
  clear(): void {
    this.entries.clear();
    this.pending.clear();
    this.bytes = 0;
    this.epoch++;
    this.tableMax = -1;
  }

  private evict(): void {
    for (const [word, entry] of this.entries) {
      if (this.bytes <= this.maxBytes) return;
      this.entries.delete(word);
      this.bytes -= entry.ids.byteLength + ENTRY_BYTES;
    }
  }
}

/**
 * The first `max` ids present in both ascending lists, in ascending order: what FTS5 returns for
 * `a AND b … LIMIT max`.
 */
export function intersectFirst(a: Int32Array, b: Int32Array, max: number): number[] {
  const [short, long] = a.length <= b.length ? [a, b] : [b, a];
  const out: number[] = [];
  let j = 0;
  // Each id of the shorter list is found in the rest of the longer one by a galloping search (steps
  // of 1, 2, 4, … then a binary search): a few steps per id for lists of similar length, a
  // logarithmic number when one is a hundred times longer than the other.
  for (let i = 0; i < short.length && out.length < max; i++) {
    const x = short[i]!;
    if (j >= long.length) break;
    if (long[j]! < x) {
      let step = 1;
      let lo = j;
      while (lo + step < long.length && long[lo + step]! < x) {
        lo += step;
        step *= 2;
      }
      // long[lo] < x, and x <= long[hi] unless hi is past the end.
      let hi = Math.min(lo + step, long.length);
      lo++;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (long[mid]! < x) lo = mid + 1;
        else hi = mid;
      }
      j = lo;
      if (j >= long.length) break;
    }
    if (long[j] === x) {
      out.push(x);
      j++;
    }
  }
  return out;
}
