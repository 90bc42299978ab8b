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
export type PostingReader = (
  read: { sql: string; args: readonly unknown[]; maxSql: string },
  done: (list: PostingList | null) => void,
) => boolean;

/**
 * A list with at least one id per this many of the ids up to its last also keeps a bitmap of its
 * ids (one bit per id from 0 to the last, so at most about twice the list's own bytes): finding
 * an id of another list in it is then one bit test instead of a search. At a million items, pairs of
 * words in 10,000–35,000 rows each intersected about three times faster with the longer list's
 * bitmap than by galloping search.
 */
const BITMAP_SPREAD = 64;

/** A kept list as a ranking uses it: ids in ascending order, and their bitmap when the list is dense enough (see `BITMAP_SPREAD`). */
export interface KeptIds {
  ids: Int32Array;
  /** Bit `id & 31` of word `id >>> 5` is set when `id` is in `ids`; ids past the last word are not. */
  bits: Uint32Array | null;
}

interface Entry {
  /** Ids in ascending order; only the first `length` are valid (room is kept for rows appended later). */
  ids: Int32Array;
  length: number;
  /** The ids as a bitmap (see `KeptIds.bits`), for a dense list of non-negative ids; else `null`. */
  bits: Uint32Array | null;
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

  /** `word`'s ids in ascending order (with their bitmap when dense), brought up to date with rows appended since it was read; `undefined` when not kept. Call after `sync()`. */
  list(word: string): KeptIds | undefined {
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
        this.bytes -= entryBytes(entry);
        return undefined;
      }
      const before = entryBytes(entry);
      if (entry.length + added.length > entry.ids.length) {
        const grown = new Int32Array(Math.ceil((entry.length + added.length) * 1.25) + 16);
        grown.set(entry.ids.subarray(0, entry.length));
        entry.ids = grown;
      }
      for (let i = added.length - 1; i >= 0; i--) entry.ids[entry.length++] = added[i]!;
      entry.seenTo = this.tableMax;
      // `added` is newest first: its first id is the largest.
      const bits = entry.bits;
      if (added.length === 0) {
        // Nothing appended holds the word.
      } else if (bits !== null && added[0]! >>> 5 < bits.length) {
        for (const id of added) bits[id >>> 5]! |= 1 << (id & 31);
      } else {
        entry.bits = bitmapOf(entry.ids, entry.length, this.maxBytes * MAX_LIST_SHARE);
      }
      this.bytes += entryBytes(entry) - before;
    }
    this.entries.set(word, entry);
    this.evict();
    this.used++;
    return { ids: entry.ids.subarray(0, entry.length), bits: entry.bits };
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
        const entry: Entry = {
          ids: list.ids,
          length: list.ids.length,
          bits: bitmapOf(list.ids, list.ids.length, this.maxBytes * MAX_LIST_SHARE),
          seenTo: list.seenTo,
        };
        this.entries.set(term, entry);
        this.bytes += entryBytes(entry);
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
      this.bytes -= entryBytes(entry);
    }
  }
}

/**
 * The bitmap of the first `length` of `ids` (ascending), with room for ids appended later, when
 * the list is dense (see `BITMAP_SPREAD`), its ids are not negative, and the list and bitmap
 * together take at most `maxBytes`; else `null`.
 */
export function bitmapOf(ids: Int32Array, length: number, maxBytes: number): Uint32Array | null {
  if (length === 0 || ids[0]! < 0) return null;
  const last = ids[length - 1]!;
  if (length * BITMAP_SPREAD < last) return null;
  // An eighth more words than the last id needs: appended ids rebuild it once per eighth of growth.
  const words = Math.ceil(((last >>> 5) + 1) * 1.125) + 16;
  if (ids.byteLength + words * 4 + ENTRY_BYTES > maxBytes) return null;
  const bits = new Uint32Array(words);
  for (let i = 0; i < length; i++) {
    const id = ids[i]!;
    bits[id >>> 5]! |= 1 << (id & 31);
  }
  return bits;
}

/** Memory an entry is counted for. */
function entryBytes(entry: Entry): number {
  return entry.ids.byteLength + (entry.bits?.byteLength ?? 0) + ENTRY_BYTES;
}

/**
 * The first `max` ids present in both lists, in ascending order: what FTS5 returns for
 * `a AND b … LIMIT max`.
 */
export function intersectFirst(a: KeptIds, b: KeptIds, max: number): number[] {
  const [short, long] = a.ids.length <= b.ids.length ? [a.ids, b] : [b.ids, a];
  const out: number[] = [];
  const bits = long.bits;
  if (bits !== null) {
    // Each id of the shorter list is looked up in the longer one's bitmap, in ascending order.
    for (let i = 0; i < short.length; i++) {
      const x = short[i]!;
      const word = x >>> 5;
      if (x >= 0 && word < bits.length && (bits[word]! & (1 << (x & 31))) !== 0) {
        out.push(x);
        if (out.length >= max) break;
      }
    }
    return out;
  }
  const other = long.ids;
  let j = 0;
  // Each id of the shorter list is found in the rest of the longer one by a galloping search (steps
  // of 1, 2, 4, … then a binary search): a few steps per id for lists of similar length, a
  // logarithmic number when one is a hundred times longer than the other.
  for (let i = 0; i < short.length && out.length < max; i++) {
    const x = short[i]!;
    if (j >= other.length) break;
    if (other[j]! < x) {
      let step = 1;
      let lo = j;
      while (lo + step < other.length && other[lo + step]! < x) {
        lo += step;
        step *= 2;
      }
      // other[lo] < x, and x <= other[hi] unless hi is past the end.
      let hi = Math.min(lo + step, other.length);
      lo++;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (other[mid]! < x) lo = mid + 1;
        else hi = mid;
      }
      j = lo;
      if (j >= other.length) break;
    }
    if (other[j] === x) {
      out.push(x);
      j++;
    }
  }
  return out;
}
