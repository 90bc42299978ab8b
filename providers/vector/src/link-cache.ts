/**
 * The conversational links of turns a search read (their neighbours' keys and whether they ask a
 * question), kept between searches so that the turns found again by the next search need no
 * look-up in the session index.
 */

/** What a search reads about a turn that passes context on (see `Sidecar.linkedRefs`). */
export interface TurnLinks {
  key: number;
  namespace: string;
  id: string;
  /** Keys of the next two turns of its namespace and session, nearest first. */
  next: number[];
  /** Keys of the previous two turns of its namespace and session, nearest first. */
  previous: number[];
  asksQuestion: boolean;
}

/** Turns whose links a `LinkCache` keeps by default (about 150 bytes each); past it, it starts over. */
export const LINKS_KEPT = 50_000;

/**
 * The links of turns with a text session, as one connection read them. A turn's links change when
 * a turn of its session is inserted, updated or deleted, or when any row changes its text or
 * session, so entries are trusted only while this is known:
 * - `sync(dataVersion, totalChanges)` before every read: any commit by another connection
 *   (`PRAGMA data_version`) or any change by this one not reported through `inserted`
 *   (`total_changes()`) drops every entry;
 * - `inserted(sessions, totalChanges)` right after this connection committed a transaction that
 *   only inserted new rows: the entries of those sessions are dropped, the others stay.
 * A failed or rolled-back write changes `total_changes()` too, so it never leaves a stale entry.
 */
export class LinkCache {
  private readonly byKey = new Map<number, TurnLinks & { session: string }>();
  /** Keys kept per session (namespace and session id, NUL-separated). */
  private readonly keysOf = new Map<string, number[]>();
  private dataVersion = -1;
  private totalChanges = -1;

  constructor(private readonly maxEntries = LINKS_KEPT) {}

  /** Drop everything unless `dataVersion` and `totalChanges` are those last seen. */
  sync(dataVersion: number, totalChanges: number): void {
    if (dataVersion !== this.dataVersion || totalChanges !== this.totalChanges) this.clear();
    this.dataVersion = dataVersion;
    this.totalChanges = totalChanges;
  }

  /**
   * This connection committed new rows only (after a `sync`, with nothing else written since):
   * drop the links of turns in `sessions` (each `[namespace, session id]`), and take `totalChanges`
   * as the count that includes them.
   */
  inserted(sessions: Iterable<readonly [string, string]>, totalChanges: number): void {
    for (const [namespace, session] of sessions) {
      const group = groupOf(namespace, session);
      for (const key of this.keysOf.get(group) ?? []) this.byKey.delete(key);
      this.keysOf.delete(group);
    }
    this.totalChanges = totalChanges;
  }

  /** The links kept for the row `key` of `namespace`, or `undefined`. */
  get(namespace: string, key: number): TurnLinks | undefined {
    const links = this.byKey.get(key);
    return links !== undefined && links.namespace === namespace ? links : undefined;
  }

  /** Keep the links of a turn of `session` (a text session id), as just read. */
  set(links: TurnLinks, session: string): void {
    if (this.byKey.has(links.key)) return;
    if (this.byKey.size >= this.maxEntries) this.clear();
    this.byKey.set(links.key, { ...links, session });
    const group = groupOf(links.namespace, session);
    const keys = this.keysOf.get(group);
    if (keys) keys.push(links.key);
    else this.keysOf.set(group, [links.key]);
  }

  /** How many turns' links are kept. */
  get size(): number {
    return this.byKey.size;
  }

  clear(): void {
    this.byKey.clear();
    this.keysOf.clear();
  }
}

function groupOf(namespace: string, session: string): string {
  return `${namespace}\u0000${session}`;
}
