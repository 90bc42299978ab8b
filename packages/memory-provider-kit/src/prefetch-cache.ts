/**
 * The small cache between `queuePrefetch` (computes the next turn's recall in the background) and
 * `prefetch` (serves it). Entries are keyed by session AND query text: a query from another
 * session is never served a result computed for a different session.
 */

/** How many queued queries a cache keeps by default; the oldest is dropped beyond that. */
export const PREFETCH_CACHE_SIZE = 8;

/** Least-recently-set cache of prefetch results keyed by `(sessionId, query)`. */
export class PrefetchCache<T> {
  private readonly entries = new Map<string, T>();

  /** `capacity`: most entries kept (default `PREFETCH_CACHE_SIZE`). */
  constructor(private readonly capacity = PREFETCH_CACHE_SIZE) {}

  /** The cache key for one session's query. */
  static key(sessionId: string | undefined, query: string): string {
    return `${sessionId ?? ""}\u0000${query}`;
  }

  /** Store `value` for this session's query (replacing an older one), evicting the oldest entries. */
  set(sessionId: string | undefined, query: string, value: T): void {
    const key = PrefetchCache.key(sessionId, query);
    this.entries.delete(key);
    this.entries.set(key, value);
    while (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
  }

  /** The value cached for this session's query, left in the cache. */
  get(sessionId: string | undefined, query: string): T | undefined {
    return this.entries.get(PrefetchCache.key(sessionId, query));
  }

  /** The value cached for this session's query, removed from the cache (served once). */
  take(sessionId: string | undefined, query: string): T | undefined {
    const key = PrefetchCache.key(sessionId, query);
    const value = this.entries.get(key);
    this.entries.delete(key);
    return value;
  }

  /** Drop every entry (after a write that changes results, a session switch or close). */
  clear(): void {
    this.entries.clear();
  }

  /** Number of cached entries. */
  get size(): number {
    return this.entries.size;
  }
}
