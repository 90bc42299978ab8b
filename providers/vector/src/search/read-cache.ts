/**
 * What searches read about rows (a turn's conversational links; a row's id, metadata and text), kept
 * between searches so that the rows found again by the next search need no look-up.
 */
import type { VectorMetadata } from "../metadata-filter.js";

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

/** A row's id and metadata as stored (see `Sidecar.refsByKeys`); the metadata is frozen. */
export interface KeptRef {
  key: number;
  id: string;
  metadata: Readonly<VectorMetadata>;
}

/**
 * Turns whose links a `ReadCache` keeps by default (measured: about 7 MB with their ids and session
 * ids); past it, the links start over.
 */
export const LINKS_KEPT = 10_000;
/**
 * Characters of metadata (as stored JSON) and text a `ReadCache` keeps in all by default (measured:
 * about 7 MB for chat turns, parsed metadata included); past it, both start over.
 */
export const CHARS_KEPT = 4_000_000;
/**
 * Row ids a `ReadCache` keeps apart from refs by default (the ids of keyword hits, which a hybrid
 * search needs only to fuse them with the vector hits; about 100 bytes each); past it, they start over.
 */
export const IDS_KEPT = 50_000;
/** A longer text or metadata is never kept (reading it again costs little next to what it holds). */
const LONGEST_KEPT = 4000;

/**
 * A turn's kept links, flat (neighbour keys as numbers, NaN for none): an object with two arrays
 * per turn took about four times the memory.
 */
class KeptLinks {
  constructor(
    readonly namespace: string,
    readonly id: string,
    readonly next1: number,
    readonly next2: number,
    readonly previous1: number,
    readonly previous2: number,
    readonly asksQuestion: boolean,
  ) {}
}

/**
 * Rows as one connection read them. A row's id, metadata and text change only when it is replaced,
 * repaired or deleted; a turn's links also change when a turn of its session is inserted. So
 * entries are trusted only while this is known:
 * - `sync(dataVersion, totalChanges)` before every read: any commit by another connection
 *   (`PRAGMA data_version`) or any change by this one not reported through `inserted`
 *   (`total_changes()`) drops every entry;
 * - `inserted(sessions, totalChanges)` right after this connection committed a transaction that
 *   only inserted new rows: the links of turns in those sessions are dropped, the rest stays.
 * A failed or rolled-back write changes `total_changes()` too, so it never leaves a stale entry.
 */
export class ReadCache {
  private readonly links = new Map<number, KeptLinks>();
  /** Keys whose links are kept, per session (namespace and session id, NUL-separated). */
  private readonly linkedIn = new Map<string, number[]>();
  private readonly refs = new Map<number, KeptRef>();
  private readonly texts = new Map<number, string>();
  /** Ids of rows whose ref is not kept (a row's id changes only when the row is replaced or repaired). */
  private readonly ids = new Map<number, string>();
  /** What every search reads and only a write changes (the largest key, which namespaces rows are in), by name. */
  private readonly facts = new Map<string, unknown>();
  /** Set while one search's reads run (`hold`): they trust the check made before them. */
  private held = false;
  /** Characters held by `refs` (their stored metadata JSON) and `texts`. */
  private chars = 0;
  private dataVersion = -1;
  private totalChanges = -1;

  constructor(
    private readonly maxLinks = LINKS_KEPT,
    private readonly maxChars = CHARS_KEPT,
    private readonly maxIds = IDS_KEPT,
  ) {}

  /** Drop everything unless `dataVersion` and `totalChanges` are those last seen. */
  sync(dataVersion: number, totalChanges: number): void {
    if (dataVersion !== this.dataVersion || totalChanges !== this.totalChanges) this.clear();
    this.dataVersion = dataVersion;
    this.totalChanges = totalChanges;
  }

  /**
   * This connection committed new rows only (after a `sync`, with nothing else written since):
   * drop the links of turns in `sessions` (each `[namespace, session id]`), and take `totalChanges`
   * as the count that includes them. Kept ids, metadata and texts stay: inserting changes no other row.
   */
  inserted(sessions: Iterable<readonly [string, string]>, totalChanges: number): void {
    this.facts.clear();
    for (const [namespace, session] of sessions) {
      const group = groupOf(namespace, session);
      for (const key of this.linkedIn.get(group) ?? []) this.links.delete(key);
      this.linkedIn.delete(group);
    }
    this.totalChanges = totalChanges;
  }

  /**
   * Run `reads` (one search's synchronous reads, right after a `sync`) trusting that check for all
   * of them: `holding` is true meanwhile, and the connection checks the versions again only after.
   * A search's statements outside a read transaction each see the file as it is when they run;
   * what is kept reflects it as of the check, a moment earlier, like a statement run then.
   */
  hold<T>(reads: () => T): T {
    const before = this.held;
    this.held = true;
    try {
      return reads();
    } finally {
      this.held = before;
    }
  }

  /** Whether a `hold` runs (the versions were just checked). */
  get holding(): boolean {
    return this.held;
  }

  /** The fact `name` as kept since the last write, else as `compute` finds it now (then kept). */
  fact<T>(name: string, compute: () => T): T {
    if (this.facts.has(name)) return this.facts.get(name) as T;
    const value = compute();
    this.facts.set(name, value);
    return value;
  }

  /** The links kept for the row `key` of `namespace`, or `undefined`. */
  linksOf(namespace: string, key: number): TurnLinks | undefined {
    const links = this.links.get(key);
    if (links === undefined || links.namespace !== namespace) return undefined;
    const next: number[] = [];
    const previous: number[] = [];
    if (!Number.isNaN(links.next1)) next.push(links.next1);
    if (!Number.isNaN(links.next2)) next.push(links.next2);
    if (!Number.isNaN(links.previous1)) previous.push(links.previous1);
    if (!Number.isNaN(links.previous2)) previous.push(links.previous2);
    return { key, namespace, id: links.id, next, previous, asksQuestion: links.asksQuestion };
  }

  /** Keep the links of a turn of `session` (a text session id), as just read (at most two keys each way). */
  keepLinks(links: TurnLinks, session: string): void {
    if (this.links.has(links.key) || links.next.length > 2 || links.previous.length > 2) return;
    if (this.links.size >= this.maxLinks) {
      this.links.clear();
      this.linkedIn.clear();
    }
    const [next1 = Number.NaN, next2 = Number.NaN] = links.next;
    const [previous1 = Number.NaN, previous2 = Number.NaN] = links.previous;
    this.links.set(links.key, new KeptLinks(links.namespace, links.id, next1, next2, previous1, previous2, links.asksQuestion));
    const group = groupOf(links.namespace, session);
    const keys = this.linkedIn.get(group);
    if (keys) keys.push(links.key);
    else this.linkedIn.set(group, [links.key]);
  }

  /** The id and metadata kept for the row `key`, or `undefined`. */
  refOf(key: number): KeptRef | undefined {
    return this.refs.get(key);
  }

  /**
   * Keep a row's id and metadata as just read (`chars`: the length of the metadata's stored JSON);
   * the kept metadata is frozen, as later reads share it. Metadata longer than a few thousand
   * characters is not kept (nor frozen). Returns the ref to hand out.
   */
  keepRef(key: number, id: string, metadata: VectorMetadata, chars: number): KeptRef {
    if (chars > LONGEST_KEPT) return { key, id, metadata };
    const kept = this.refs.get(key);
    if (kept) return kept;
    this.makeRoom(chars);
    const ref: KeptRef = { key, id, metadata: deepFreeze(metadata) };
    this.refs.set(key, ref);
    this.chars += chars;
    return ref;
  }

  /** The id kept for the row `key` (with its ref, or on its own), or `undefined`. */
  idOf(key: number): string | undefined {
    return this.refs.get(key)?.id ?? this.ids.get(key);
  }

  /** Keep a row's id (stored as text), as just read, unless it is longer than a few thousand characters. */
  keepId(key: number, id: string): void {
    if (id.length > LONGEST_KEPT || this.ids.has(key)) return;
    if (this.ids.size >= this.maxIds) this.ids.clear();
    this.ids.set(key, id);
  }

  /** The text kept for the row `key`, or `undefined`. */
  textOf(key: number): string | undefined {
    return this.texts.get(key);
  }

  /** Keep a row's text, as just read (unless it is longer than a few thousand characters). */
  keepText(key: number, text: string): void {
    if (text.length > LONGEST_KEPT || this.texts.has(key)) return;
    this.makeRoom(text.length);
    this.texts.set(key, text);
    this.chars += text.length;
  }

  /** Drop every kept metadata and text when `chars` more would pass the budget. */
  private makeRoom(chars: number): void {
    if (this.chars + chars <= this.maxChars) return;
    this.refs.clear();
    this.texts.clear();
    this.chars = 0;
  }

  /** How many rows' links, refs and texts are kept. */
  get size(): { links: number; refs: number; texts: number } {
    return { links: this.links.size, refs: this.refs.size, texts: this.texts.size };
  }

  /** How many rows' ids are kept apart from their refs. */
  get idsKept(): number {
    return this.ids.size;
  }

  clear(): void {
    this.links.clear();
    this.linkedIn.clear();
    this.refs.clear();
    this.texts.clear();
    this.ids.clear();
    this.facts.clear();
    this.chars = 0;
  }
}

function groupOf(namespace: string, session: string): string {
  return `${namespace}\u0000${session}`;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}
