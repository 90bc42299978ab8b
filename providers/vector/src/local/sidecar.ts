import fs from "node:fs";
import { uniqueTerms, checkpointCopies, isEmptyFilter, type ParsedMemoryFilter } from "@hermes/memory-provider-kit";
import {
  openSqliteStore,
  openSqliteStoreAsync,
  planQueryRanking,
  quoteTerm,
  filterToSql,
  type FilterSqlColumns,
  type LayeredRankerOptions,
} from "@hermes/memory-provider-kit/sqlite";
import { type TurnLinks } from "../search/read-cache.js";
import { idsOfRanked } from "../search/kept-ids.js";
import { matchesMetadataFilter, type MetadataFilter, type VectorMetadata } from "../metadata-filter.js";
import { readableRecord, textOf } from "./sidecar-values.js";
import {
  decodeVector,
  isJsonError,
  LINKED_BY_ID_SQL,
  LINKED_BY_KEY_SQL,
  neighbourKeys,
  parseRefMetadata,
  toRow,
  type KeywordHit,
  type KeywordRank,
  type LinkedRef,
  type RawRow,
  type RowCondition,
  type SidecarRef,
  type SidecarRow,
  type SqlCondition,
} from "./sidecar-rows.js";
import { BM25_CALL, kindSql, sessionSql, SIDECAR_SPEC, sidecarOpenOptions, userSql } from "./sidecar-schema.js";

import { SidecarFile } from "./sidecar-file.js";
import { FilterTermIndex, hasFilterTerms } from "./filter-terms.js";

/**
 * Weight of the related words' BM25 score (the kit's `relatedTerms`) against the query words' own in
 * the keyword ranking. Lower than the SQLite provider's `RELATED_TERM_WEIGHT` (0.3): this ranking is
 * fused with the vector ranking, which already finds turns worded differently from the question.
 * Chosen on the LoCoMo development set, hybrid search with the hashing embedder: 0.1 and 0.15 gave
 * recall@50 90.0 and multi-hop recall@10 37.4; 0.2 and more lost multi-hop recall (37.0 at 0.2,
 * 36.6 at 0.3).
 */
const KEYWORD_RELATED_WEIGHT = 0.1;

/** Options of `Sidecar.open` / `openAsync`. */
export interface SidecarOpenOptions {
  /** Open an existing file without writing anything. */
  readOnly?: boolean;
  /** Options of the keyword ranker (e.g. `{ helper: false }`: never start its pool helper thread). */
  ranker?: LayeredRankerOptions;
}

/**
 * The SQLite sidecar: the source of truth for text, metadata and (for the local store) vectors,
 * with an FTS5 index for BM25. Every write bumps a generation counter so the ANN index file can
 * tell whether it is stale. One instance per database file; synchronous (better-sqlite3).
 */
export class Sidecar extends SidecarFile {
  /**
   * Open (creating if needed) the sidecar at `file`, or an in-memory one for `":memory:"`.
   * Throws `SCHEMA_TOO_NEW` for a newer schema (file untouched) and `STORAGE_FAILED` when the
   * file is not a usable database. `readOnly` opens an existing file without writing anything
   * (read-only mount, a directory the process cannot write).
   */
  static open(file: string, options: SidecarOpenOptions = {}): Sidecar {
    return new Sidecar(file, openSqliteStore(file, SIDECAR_SPEC, sidecarOpenOptions(options)), options.readOnly === true, options.ranker);
  }

  /**
   * `open` for the provider's `initialize()`: waiting for another process's lock on the file leaves
   * the event loop free (each attempt blocks the thread for a few tens of milliseconds at most).
   */
  static async openAsync(file: string, options: SidecarOpenOptions = {}): Promise<Sidecar> {
    return new Sidecar(
      file,
      await openSqliteStoreAsync(file, SIDECAR_SPEC, sidecarOpenOptions(options)),
      options.readOnly === true,
      options.ranker,
    );
  }

  /** `open(file, { readOnly: true })`. */
  static openReadOnly(file: string): Sidecar {
    return Sidecar.open(file, { readOnly: true });
  }

  /** Rows by integer key (used to resolve ANN results). Missing keys are left out. */
  getByKeys(keys: number[], withVectors = false): Map<number, SidecarRow> {
    const out = new Map<number, SidecarRow>();
    const cols = withVectors ? "*" : "key, namespace, id, text, metadata, NULL AS vector";
    for (let i = 0; i < keys.length; i += 500) {
      const chunk = keys.slice(i, i + 500);
      const sql = `SELECT ${cols} FROM records WHERE key IN (${chunk.map(() => "?").join(",")})`;
      for (const raw of this.prepare(sql).all(...chunk) as RawRow[]) out.set(raw.key, toRow(raw));
    }
    return out;
  }

  /** Key, id and vector of every row that has a vector (rebuilding the index). */
  vectorRows(): Array<{ key: number; id: string; vector: Float32Array }> {
    const rows = this.prepare(`SELECT key, id, vector FROM records WHERE vector IS NOT NULL`).all() as Array<{
      key: number;
      id: unknown;
      vector: Buffer;
    }>;
    return rows.map((r) => ({ key: r.key, id: textOf(r.id), vector: decodeVector(r.vector)! }));
  }

  /**
   * Visit the key, id and stored vector bytes (float32, little-endian) of every row of `namespace`
   * that has a vector, streaming: no row objects or vector copies are kept (a 100k-row namespace
   * holds 150 MB of vectors). `bytes` is only valid during the call.
   */
  eachVector(namespace: string, visit: (key: number, id: string, bytes: Buffer) => void): void {
    const rows = this.prepare(`SELECT key, id, vector FROM records WHERE namespace = ? AND vector IS NOT NULL`)
      .raw(true)
      .iterate(namespace) as IterableIterator<[number, unknown, Buffer]>;
    for (const [key, id, bytes] of rows) visit(key, textOf(id), bytes);
  }

  /** Key, id and vector of the rows with these keys that have a vector. */
  vectorsByKeys(keys: readonly number[]): Array<{ key: number; id: string; vector: Float32Array }> {
    if (keys.length === 0) return [];
    const sql = `SELECT key, id, vector FROM records WHERE key IN (SELECT value FROM json_each(?)) AND vector IS NOT NULL`;
    const rows = this.prepare(sql).all(JSON.stringify(keys)) as Array<{ key: number; id: unknown; vector: Buffer }>;
    return rows.map((r) => ({ key: r.key, id: textOf(r.id), vector: decodeVector(r.vector)! }));
  }

  /** Number of rows with a vector, optionally in one namespace. */
  countVectors(namespace: string | null = null): number {
    const row = (
      namespace === null
        ? this.prepare(`SELECT COUNT(*) AS n FROM records WHERE vector IS NOT NULL`).get()
        : this.prepare(`SELECT COUNT(*) AS n FROM records WHERE namespace = ? AND vector IS NOT NULL`).get(namespace)
    ) as { n: number };
    return row.n;
  }

  /** Run `read` in one read transaction: every statement in it sees the same snapshot of the file. */
  inOneRead<T>(read: () => T): T {
    return this.db.transaction(read)();
  }

  /** Row counts per namespace (all rows, with or without vectors). */
  namespaceCounts(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const r of this.db.prepare(`SELECT namespace, COUNT(*) AS n FROM records GROUP BY namespace`).all() as Array<{
      namespace: string;
      n: number;
    }>) {
      out[r.namespace] = r.n;
    }
    return out;
  }

  /**
   * BM25 keyword search in one namespace. The query is sanitised (never an FTS syntax error).
   * With a filter, more candidates are read and filtered in JS.
   */
  keywordSearch(namespace: string, query: string, limit: number, filter?: MetadataFilter): KeywordHit[] {
    const ranks = this.keywordRanks(namespace, query, limit, filter);
    const rows = this.getByKeys(ranks.map((r) => r.key));
    const hits: KeywordHit[] = [];
    for (const rank of ranks) {
      const row = rows.get(rank.key);
      if (row) hits.push({ key: rank.key, id: rank.id, score: rank.score, text: row.text, metadata: row.metadata });
    }
    return hits;
  }

  /**
   * `keywordSearch` without text or metadata: the best `limit` rows' keys, ids and BM25 scores,
   * best first. With a filter, more candidates are read and their metadata filtered in JS. A row
   * `condition` is part of the ranking query itself (FTS5's bm25() query, or the layered ranker's
   * candidate pools), so the best `limit` passing rows are returned, not a filtered remainder.
   * Words found in half the rows or more carry no BM25 weight and are left out of the ranking;
   * rows holding only such words fill the list when fewer rows match, unless `fill` is false (a
   * hybrid search, whose vector ranking orders those rows better than a score of about 0).
   * `knownIds` (key → id) names rows the caller knows to exist (e.g. the vector hits): their ids
   * need not be looked up.
   */
  keywordRanks(
    namespace: string,
    query: string,
    limit: number,
    filter?: MetadataFilter,
    condition?: RowCondition | null,
    fill = true,
    knownIds?: ReadonlyMap<number, string>,
  ): KeywordRank[] {
    return this.namingUnreadableItems("keyword search", () =>
      this.rankKeywords(namespace, query, limit, filter, condition, fill, knownIds),
    );
  }

  private rankKeywords(
    namespace: string,
    query: string,
    limit: number,
    filter: MetadataFilter | undefined,
    condition: RowCondition | null | undefined,
    fill: boolean,
    knownIds: ReadonlyMap<number, string> | undefined,
  ): KeywordRank[] {
    if (limit <= 0 || typeof query !== "string") return [];
    this.syncKept();
    const total = this.kept.fact(
      "max key",
      () => (this.prepare(`SELECT COALESCE(MAX(key), 0) AS n FROM records`).get() as { n: number }).n,
    );
    const terms = uniqueTerms(query);
    // The query words' related words (rare ones only: cheap at any size) are ranked on their own.
    const planned = planQueryRanking(terms, total, this.frequencies);
    if (!planned) return [];
    const { plan, related } = planned;
    const fetchLimit = filter ? Math.max(limit * 10, 200) : limit;
    const cols = filter ? "r.metadata, r.text" : "NULL AS metadata, NULL AS text";
    type Raw = { key: number; id: unknown; metadata: unknown; text: unknown; rank: number };
    const words = plan.mode === "bm25" ? plan.terms : plan.terms.map((t) => t.term);
    // FTS5's own bm25() over every matching row of the namespace that passes `condition`.
    // Rows are read as arrays (cheaper than a row object each), in rank order.
    const exact = (matched: readonly string[]): Raw[] =>
      (!filter && !condition && this.holdsOnly(namespace)
        ? this.exactUnjoined(matched.map(quoteTerm).join(" OR "), fetchLimit, knownIds)
        : undefined) ??
      (
        this.prepare(
          `SELECT r.key, r.id, ${cols}, ${this.contextColumns ? BM25_CALL : "bm25(records_fts)"} AS rank
           FROM records_fts JOIN records r ON r.key = records_fts.rowid
           WHERE records_fts MATCH ? AND r.namespace = ?${condition ? ` AND ${condition.sql}` : ""} ORDER BY rank LIMIT ?`,
        )
          .raw(true)
          .all(matched.map(quoteTerm).join(" OR "), namespace, ...(condition?.params ?? []), fetchLimit) as Array<
          [number, unknown, unknown, unknown, number]
        >
      ).map(([key, id, metadata, text, rank]) => ({ key, id, metadata, text, rank }));
    let raws: Raw[];
    if (plan.mode === "bm25") {
      raws = exact(words);
    } else {
      // A word in more than 0.2 % of a large store: FTS5's bm25() would walk its whole document
      // list, so the kit's layered ranker scores a bounded candidate set with the same formula,
      // pooling only rows that pass the condition.
      const where = condition ? this.conditionSql(condition.filter, condition.now, "i") : null;
      const ranked = this.layeredRanker().rank(plan.terms, { limit, candidates: fetchLimit, user: namespace, where });
      if (condition && ranked.length < limit) {
        // The ranker skips words found in most rows; when the passing rows hold only such words it
        // finds fewer than `limit`, and FTS5's exact ranking over the passing rows gives them instead.
        raws = exact(words);
      } else {
        const rows = new Map<number, { key: number; id: unknown; metadata: unknown; text: unknown }>();
        const sql = `SELECT r.key AS key, r.id AS id, ${cols} FROM records r WHERE r.key IN (SELECT value FROM json_each(?))`;
        for (const row of this.prepare(sql).all(JSON.stringify(ranked.map((r) => r.id))) as Array<{
          key: number;
          id: unknown;
          metadata: unknown;
          text: unknown;
        }>) {
          rows.set(row.key, row);
        }
        raws = [];
        for (const r of ranked) {
          const row = rows.get(r.id);
          if (row) raws.push({ ...row, rank: r.rank });
        }
      }
    }
    // A related word's match counts `KEYWORD_RELATED_WEIGHT` of its BM25 score, added to the row's own.
    const relatedRaws = related.length > 0 ? exact(related) : [];
    const withRelated = (own: readonly Raw[]): Raw[] => {
      if (relatedRaws.length === 0) return [...own];
      const merged = new Map<number, Raw>();
      for (const raw of own) merged.set(raw.key, { ...raw });
      for (const raw of relatedRaws) {
        const entry = merged.get(raw.key);
        if (entry === undefined) merged.set(raw.key, { ...raw, rank: raw.rank * KEYWORD_RELATED_WEIGHT });
        else entry.rank += raw.rank * KEYWORD_RELATED_WEIGHT;
      }
      // Best (lowest rank) first; equal ranks by key, so the order never depends on the merge.
      return [...merged.values()].sort((a, b) => a.rank - b.rank || a.key - b.key);
    };
    const toHits = (ranked: readonly Raw[]): KeywordRank[] => {
      const raws = withRelated(ranked);
      const hits: KeywordRank[] = [];
      for (const raw of raws) {
        // Filters see the metadata as stored rows carry it (text included).
        if (filter && !matchesMetadataFilter(toRow({ ...raw, namespace, vector: null }).metadata, filter)) continue;
        hits.push({ key: raw.key, id: textOf(raw.id), score: -raw.rank });
        if (hits.length >= limit) break;
      }
      return hits;
    };
    const hits = toHits(raws);
    // Rows holding only words found in half the rows or more score about 0 and come after every
    // other match; they are ranked (with those words added) only to fill a short list.
    if (fill && hits.length < limit && plan.floored.length > 0) return toHits(exact([...words, ...plan.floored]));
    return hits;
  }

  /** Whether every row of the sidecar is in `namespace` (two seeks in the (namespace, id) index). */
  private holdsOnly(namespace: string): boolean {
    const sql = `SELECT (SELECT namespace FROM records ORDER BY namespace LIMIT 1) = @namespace AND (SELECT namespace FROM records ORDER BY namespace DESC LIMIT 1) = @namespace`;
    return this.kept.fact(`holds only\u0000${namespace}`, () => this.prepare(sql).pluck().get({ namespace }) === 1);
  }

  /**
   * FTS5's bm25() ranking of `match` over every row, best `limit` first, when every row is in the
   * searched namespace: the ranking reads the full-text index only, and the rows are looked up
   * for the ids of the best `limit` alone (not those in `knownIds`). `undefined` when a ranked row
   * has no stored row (the ranking joined with the rows gives the answer then).
   */
  private exactUnjoined(
    match: string,
    limit: number,
    knownIds: ReadonlyMap<number, unknown> = new Map(),
  ): Array<{ key: number; id: unknown; metadata: null; text: null; rank: number }> | undefined {
    const ranked = this.prepare(
      `SELECT rowid, ${this.contextColumns ? BM25_CALL : "bm25(records_fts)"} AS rank FROM records_fts WHERE records_fts MATCH ? ORDER BY rank LIMIT ?`,
    )
      .raw(true)
      .all(match, limit) as Array<[number, number]>;
    this.syncKept();
    const ids = idsOfRanked(
      this.kept,
      ranked,
      knownIds,
      (keys) =>
        this.prepare(`SELECT key, id FROM records WHERE key IN (SELECT value FROM json_each(?))`)
          .raw(true)
          .all(JSON.stringify(keys)) as Array<[number, unknown]>,
    );
    if (ids === undefined) return undefined;
    return ranked.map(([key, rank]) => ({ key, id: ids.get(key) ?? knownIds.get(key), metadata: null, text: null, rank }));
  }

  /** The links kept for the turn `key` of `namespace` (nothing else wrote since they were read), or `undefined`. */
  keptLinks(namespace: string, key: number): TurnLinks | undefined {
    this.syncKept();
    return this.kept.linksOf(namespace, key);
  }

  /**
   * Key, id and metadata of the rows with these ids in `namespace` (by id), in one statement; the
   * first `linkFirst` ids in `ids` order that are turns also get the keys of their neighbours (the
   * next two and previous two turns of their namespace and session, in key order) and whether they
   * ask a question. Only the first `metadataFirst` ids (default all) get their metadata read. No text is returned (SQL only tests
   * it for a question mark). `keys`, when every id's key is known (same order), makes each
   * look-up one by key.
   */
  linkedRefs(
    namespace: string,
    ids: readonly string[],
    linkFirst: number,
    metadataFirst = ids.length,
    keys?: readonly number[],
  ): Map<string, LinkedRef> {
    return this.namingUnreadableItems("search", () => this.linkedRefsKeptOrRead(namespace, ids, linkFirst, metadataFirst, keys));
  }

  private linkedRefsKeptOrRead(
    namespace: string,
    ids: readonly string[],
    linkFirst: number,
    metadataFirst: number,
    keys?: readonly number[],
  ): Map<string, LinkedRef> {
    // Links only, by key: the turns whose links are kept need no look-up.
    if (keys === undefined || metadataFirst > 0 || linkFirst < ids.length || ids.length === 0)
      return this.readLinkedRefs(namespace, ids, linkFirst, metadataFirst, keys);
    this.syncKept();
    const found: Array<LinkedRef | undefined> = [];
    const missingIds: string[] = [];
    const missingKeys: number[] = [];
    for (let i = 0; i < keys.length; i++) {
      const links = this.kept.linksOf(namespace, keys[i]!);
      if (links) {
        found.push({
          key: links.key,
          id: links.id,
          metadata: {},
          hasMetadata: false,
          next: links.next,
          previous: links.previous,
          asksQuestion: links.asksQuestion,
          sessionTurn: true,
        });
      } else {
        found.push(undefined);
        missingIds.push(ids[i]!);
        missingKeys.push(keys[i]!);
      }
    }
    const read = new Map<number, LinkedRef>();
    for (const ref of this.readLinkedRefs(namespace, missingIds, missingIds.length, 0, missingKeys, (links, session) =>
      this.kept.keepLinks(links, session),
    ).values())
      read.set(ref.key, ref);
    // In the order asked, as when every row is read.
    const out = new Map<string, LinkedRef>();
    for (let i = 0; i < keys.length; i++) {
      const ref = found[i] ?? read.get(keys[i]!);
      if (ref) out.set(ref.id, ref);
    }
    return out;
  }

  /**
   * `linkedRefs` read from the file. `keep` receives the links of each turn with a text session
   * read as stored (not repaired on the way), with its session.
   */
  private readLinkedRefs(
    namespace: string,
    ids: readonly string[],
    linkFirst: number,
    metadataFirst: number,
    keys?: readonly number[],
    keep?: (links: TurnLinks, session: string) => void,
  ): Map<string, LinkedRef> {
    const out = new Map<string, LinkedRef>();
    if (ids.length === 0) return out;
    // CROSS JOIN keeps the id list outside, so each id is one look-up in the (namespace, id) index.
    // The rows come back as one JSON text of [key, id, metadata, next keys, previous keys, asks,
    // stored as text, session turn] arrays: building a row object per candidate in JavaScript cost
    // more than the look-ups. Text values are cast, as JSON cannot hold a BLOB (another program may
    // have written one); rows holding one, or metadata that is not a JSON object, are read again whole.
    const json = this.prepare(keys ? LINKED_BY_KEY_SQL : LINKED_BY_ID_SQL)
      .pluck()
      .get({ link: linkFirst, meta: metadataFirst, ids: JSON.stringify(keys ?? ids), namespace }) as string;
    type Linked = [
      key: number,
      id: string,
      metadata: string | null,
      next: [number | null, number | null] | null,
      previous: [number | null, number | null] | null,
      asks: number | null,
      stored: number,
      sessionTurn: number | null,
      session: string | null,
    ];
    const rows = JSON.parse(json) as Linked[];
    const metadataOf = new Map<number, VectorMetadata>();
    const unread: number[] = [];
    for (const [key, , rawMetadata, , , , stored] of rows) {
      const metadata = rawMetadata === null ? undefined : parseRefMetadata(rawMetadata);
      if (metadata) metadataOf.set(key, metadata);
      if (stored !== 1 || (rawMetadata !== null && metadata === undefined)) unread.push(key);
    }
    const reread = this.readableRefs(unread);
    for (const [key, castId, rawMetadata, next, previous, asks, , sessionTurn, session] of rows) {
      const whole = reread.get(key);
      const id = whole ? whole.id : castId;
      const metadata = whole ? whole.metadata : (metadataOf.get(key) ?? {});
      // A row read again whole: its kind and session as the readable metadata holds them.
      const turn = whole
        ? sessionTurn !== null && whole.metadata.kind === "turn" && typeof whole.metadata.session_id === "string"
        : sessionTurn === 1;
      const ref: LinkedRef = {
        key,
        id,
        metadata,
        hasMetadata: whole !== undefined || rawMetadata !== null,
        next: neighbourKeys(next, "next"),
        previous: neighbourKeys(previous, "prev"),
        asksQuestion: asks === 1,
        sessionTurn: turn,
      };
      out.set(id, ref);
      if (keep && turn && !whole && typeof session === "string")
        keep({ key, namespace, id, next: ref.next, previous: ref.previous, asksQuestion: ref.asksQuestion }, session);
    }
    return out;
  }

  /** Id and namespace (no text, metadata `{}`) of the rows with these keys, in one statement. */
  idsByKeys(keys: readonly number[]): Map<number, { key: number; id: string; namespace: string; metadata: VectorMetadata }> {
    const out = new Map<number, { key: number; id: string; namespace: string; metadata: VectorMetadata }>();
    if (keys.length === 0) return out;
    const sql = `SELECT key, id, namespace FROM records WHERE key IN (SELECT value FROM json_each(?))`;
    for (const raw of this.prepare(sql).all(JSON.stringify(keys)) as Array<{ key: number; id: unknown; namespace: unknown }>) {
      out.set(raw.key, { key: raw.key, id: textOf(raw.id), namespace: textOf(raw.namespace), metadata: {} });
    }
    return out;
  }

  /**
   * Key, id and metadata (no text, no vector) of the rows with these keys, in one statement for
   * those not kept from an earlier read. The metadata of a row read as stored is kept, frozen:
   * never change it (copy what a caller may change).
   */
  refsByKeys(keys: readonly number[]): Map<number, SidecarRef> {
    const out = new Map<number, SidecarRef>();
    if (keys.length === 0) return out;
    this.syncKept();
    const missing: number[] = [];
    for (const key of keys) {
      const ref = this.kept.refOf(key);
      if (ref) out.set(key, ref);
      else missing.push(key);
    }
    if (missing.length === 0) return out;
    // Rows as [key, id, metadata, stored as text] arrays (cheaper than a row object per row, and
    // than one JSON text holding the metadata as JSON strings, parsed twice); text cast, and
    // unreadable rows read again whole, as above.
    const sql = `SELECT key, CAST(id AS TEXT), CAST(metadata AS TEXT), typeof(id) = 'text' AND typeof(text) = 'text' AND typeof(metadata) = 'text'
      FROM records WHERE key IN (SELECT value FROM json_each(?))`;
    const unread: number[] = [];
    for (const [key, id, text, stored] of this.prepare(sql).raw(true).all(JSON.stringify(missing)) as Array<
      [number, string, string, number]
    >) {
      const metadata = stored === 1 ? parseRefMetadata(text) : undefined;
      if (metadata) out.set(key, this.kept.keepRef(key, id, metadata, text.length));
      else unread.push(key);
    }
    for (const [key, ref] of this.readableRefs(unread)) out.set(key, ref);
    return out;
  }

  /** Key, readable id and metadata (`readableRecord`, with the originals it keeps) of the rows with these keys. */
  private readableRefs(keys: readonly number[]): Map<number, SidecarRef> {
    const out = new Map<number, SidecarRef>();
    if (keys.length === 0) return out;
    const sql = `SELECT key, namespace, id, text, metadata FROM records WHERE key IN (SELECT value FROM json_each(?))`;
    for (const raw of this.prepare(sql).all(JSON.stringify(keys)) as RawRow[]) {
      const { id, metadata } = readableRecord(raw);
      out.set(raw.key, { key: raw.key, id, metadata });
    }
    return out;
  }

  /** The text of the rows with these keys, in one statement for those not kept from an earlier read. */
  textsByKeys(keys: readonly number[]): Map<number, string> {
    const out = new Map<number, string>();
    if (keys.length === 0) return out;
    this.syncKept();
    const missing: number[] = [];
    for (const key of keys) {
      const text = this.kept.textOf(key);
      if (text === undefined) missing.push(key);
      else out.set(key, text);
    }
    if (missing.length === 0) return out;
    const sql = `SELECT key, text FROM records WHERE key IN (SELECT value FROM json_each(?))`;
    for (const [key, stored] of this.prepare(sql).raw(true).all(JSON.stringify(missing)) as Array<[number, unknown]>) {
      const text = textOf(stored);
      out.set(key, text);
      // Only text stored as text is kept (a value read through `textOf` is shown as a repair would store it).
      if (typeof stored === "string") this.kept.keepText(key, text);
    }
    return out;
  }

  /**
   * `filter` (parsed by the kit) as a condition over `records r`, with `now` (epoch ms) leaving out
   * the items expired at that time (`null`: expired items are included, e.g. for erasure). `null`
   * when nothing is left out.
   */
  condition(filter: ParsedMemoryFilter, now: number | null): RowCondition | null {
    const compiled = this.conditionSql(filter, now, "r");
    return compiled === null ? null : { ...compiled, filter, now };
  }

  /** `condition` as SQL over `records` under the alias `a`; `null` when nothing is left out. */
  private conditionSql(filter: ParsedMemoryFilter, now: number | null, a: string): { sql: string; params: unknown[] } | null {
    const columns: FilterSqlColumns = this.filterColumns
      ? {
          id: `${a}.id`,
          kind: kindSql(a),
          sessionId: sessionSql(a),
          userId: userSql(a),
          tags: `${a}.tags`,
          metadata: `${a}.user_meta`,
          createdAt: `${a}.created_ms`,
        }
      : {
          id: `${a}.id`,
          kind: kindSql(a),
          sessionId: sessionSql(a),
          userId: userSql(a),
          tags: `hermes_tags(${a}.metadata)`,
          metadata: `hermes_user_meta(${a}.metadata)`,
          createdAt: `hermes_created_ms(${a}.metadata)`,
        };
    const parts: string[] = [];
    const params: unknown[] = [];
    if (!isEmptyFilter(filter)) {
      // Tags and user metadata are stored by `filterColumnsOf` (JSON.stringify), on every path.
      const compiled = filterToSql(filter, columns, { stringifiedJson: true });
      parts.push(`(${compiled.sql})`);
      params.push(...compiled.params);
    }
    if (now !== null) {
      const expires = this.filterColumns ? `${a}.expires_at` : `hermes_expires_at(${a}.metadata)`;
      parts.push(`(${expires} IS NULL OR ${expires} > ?)`);
      params.push(now);
    }
    return parts.length === 0 ? null : { sql: parts.join(" AND "), params };
  }

  /**
   * Keys of the rows of `namespace` (every namespace when null) passing `condition`, in key order;
   * `null` when there are more than `cap` (the caller then filters another way).
   */
  passingKeys(namespace: string | null, condition: SqlCondition | null, cap = Number.MAX_SAFE_INTEGER): number[] | null {
    const filter = (condition as Partial<RowCondition> | null)?.filter;
    const terms = namespace !== null && filter ? this.filterTermIndex()?.narrowest(namespace, filter) : null;
    if (terms) {
      // Only the rows holding the filter's rarest tag or value are read, and the whole condition is checked on them.
      const keys = this.namingUnreadableItems("filter", () => this.filterTermIndex()!.passingAmong(terms, namespace!, condition!));
      return keys.length > cap ? null : keys;
    }
    const where = [namespace === null ? "1" : "r.namespace = ?", condition ? condition.sql : "1"].join(" AND ");
    const params = [...(namespace === null ? [] : [namespace]), ...(condition?.params ?? [])];
    const limit = Math.min(cap, Number.MAX_SAFE_INTEGER - 1) + 1;
    const keys = this.namingUnreadableItems(
      "filter",
      () =>
        this.prepare(`SELECT r.key FROM records r WHERE ${where} ORDER BY r.key LIMIT ?`)
          .pluck()
          .all(...params, limit) as number[],
    );
    return keys.length > cap ? null : keys;
  }

  /** The filter term index, when the file has one (a read-only file of an older version has not). */
  private filterTermIndex(): FilterTermIndex | null {
    if (this.termIndex === undefined)
      this.termIndex = hasFilterTerms(this.db) ? new FilterTermIndex(this.db, (sql) => this.prepare(sql)) : null;
    return this.termIndex;
  }

  private termIndex: FilterTermIndex | null | undefined;

  /** The keys among `keys` whose rows pass `condition` (all existing ones when it is null). */
  filterKeys(keys: readonly number[], condition: SqlCondition | null): Set<number> {
    const out = new Set<number>();
    if (keys.length === 0) return out;
    const sql = `SELECT r.key FROM records r WHERE r.key IN (SELECT value FROM json_each(?)) AND ${condition ? condition.sql : "1"}`;
    for (const key of this.namingUnreadableItems(
      "filter",
      () =>
        this.prepare(sql)
          .pluck()
          .all(JSON.stringify(keys), ...(condition?.params ?? [])) as number[],
    ))
      out.add(key);
    return out;
  }

  /**
   * The checkpoint rows holding an archived copy of a message of one of the turn rows with these
   * keys (same namespace and session; the texts the kit's `checkpointCopies` gives), so erasing a
   * turn erases those copies too.
   */
  checkpointCopyRows(keys: readonly number[]): Array<{ key: number; namespace: string; id: string }> {
    return this.namingUnreadableItems("erasure", () => this.findCheckpointCopies(keys));
  }

  private findCheckpointCopies(keys: readonly number[]): Array<{ key: number; namespace: string; id: string }> {
    if (keys.length === 0) return [];
    const turns = this.prepare(
      `SELECT r.namespace AS namespace, ${sessionSql("r")} AS session, r.text AS text FROM records r
       WHERE r.key IN (SELECT value FROM json_each(?)) AND ${kindSql("r")} = 'turn' AND ${sessionSql("r")} IS NOT NULL`,
    ).all(JSON.stringify(keys)) as Array<{ namespace: unknown; session: string; text: unknown }>;
    const groups = new Map<string, { namespace: string; session: string; texts: Set<string> }>();
    for (const turn of turns) {
      const namespace = textOf(turn.namespace);
      const group = `${namespace}\u0000${turn.session}`;
      let entry = groups.get(group);
      if (!entry) groups.set(group, (entry = { namespace, session: turn.session, texts: new Set() }));
      for (const text of checkpointCopies(textOf(turn.text))) entry.texts.add(text);
    }
    const copies = this.prepare(
      `SELECT r.key AS key, r.namespace AS namespace, r.id AS id FROM records r
       WHERE r.namespace = ? AND ${kindSql("r")} = 'checkpoint' AND ${sessionSql("r")} = ? AND r.text IN (SELECT value FROM json_each(?))`,
    );
    const out: Array<{ key: number; namespace: string; id: string }> = [];
    for (const { namespace, session, texts } of groups.values()) {
      for (const row of copies.all(namespace, session, JSON.stringify([...texts])) as Array<{
        key: number;
        namespace: unknown;
        id: unknown;
      }>) {
        out.push({ key: row.key, namespace: textOf(row.namespace), id: textOf(row.id) });
      }
    }
    return out;
  }

  /** Namespace, id and key of the rows passing `condition` (in every namespace, or one). */
  rowsWhere(namespace: string | null, condition: SqlCondition | null): Array<{ key: number; namespace: string; id: string }> {
    const where = [namespace === null ? "1" : "r.namespace = ?", condition ? condition.sql : "1"].join(" AND ");
    const params = [...(namespace === null ? [] : [namespace]), ...(condition?.params ?? [])];
    const rows = this.namingUnreadableItems("filter", () =>
      this.prepare(`SELECT r.key AS key, r.namespace AS namespace, r.id AS id FROM records r WHERE ${where} ORDER BY r.key`).all(...params),
    ) as Array<{
      key: number;
      namespace: unknown;
      id: unknown;
    }>;
    return rows.map((r) => ({ key: r.key, namespace: textOf(r.namespace), id: textOf(r.id) }));
  }

  /** Whether any row of `namespace` (any namespace when null) has expired at `now`. Served by the expiry index. */
  hasExpired(namespace: string | null, now: number): boolean {
    if (!this.filterColumns) {
      const sql = `SELECT 1 FROM records r WHERE ${namespace === null ? "1" : "r.namespace = ?"} AND hermes_expires_at(r.metadata) <= ? LIMIT 1`;
      return this.prepare(sql).get(...(namespace === null ? [now] : [namespace, now])) !== undefined;
    }
    // `+r.namespace`: the expiry index must drive the look-up, not the namespace (which holds every row).
    const sql = `SELECT 1 FROM records r WHERE r.expires_at IS NOT NULL AND r.expires_at <= ? ${namespace === null ? "" : "AND +r.namespace = ?"} LIMIT 1`;
    return this.prepare(sql).get(...(namespace === null ? [now] : [now, namespace])) !== undefined;
  }

  /** Keys of the rows of `namespace` expired at `now` (served by the expiry index). */
  expiredKeys(namespace: string, now: number): number[] {
    if (!this.filterColumns) return [];
    return this.prepare(`SELECT r.key FROM records r WHERE r.expires_at IS NOT NULL AND r.expires_at <= ? AND +r.namespace = ?`)
      .pluck()
      .all(now, namespace) as number[];
  }

  /** Database file size in bytes (0 in memory). */
  sizeBytes(): number {
    if (this.file === ":memory:") return 0;
    let total = 0;
    for (const suffix of ["", "-wal"]) {
      try {
        total += fs.statSync(this.file + suffix).size;
      } catch {
        // missing -wal is normal
      }
    }
    return total;
  }

  /** Stored records per `metadata.kind`. */
  kindCounts(): Record<string, number> {
    const out: Record<string, number> = {};
    const rows = this.tolerantRead(`SELECT json_extract(metadata, '$.kind') AS kind, COUNT(*) AS n FROM records GROUP BY kind`) as Array<{
      kind: string | null;
      n: number;
    }>;
    for (const r of rows) {
      if (typeof r.kind === "string") out[r.kind] = r.n;
    }
    return out;
  }

  /** Number of distinct sessions the records belong to. */
  sessionCount(): number {
    return (this.tolerantRead(`SELECT COUNT(DISTINCT json_extract(metadata, '$.session_id')) AS n FROM records`)[0] as { n: number }).n;
  }

  /**
   * The rows of `sql`, a read over every row's metadata. When SQLite's JSON functions refuse some
   * row's metadata (a BLOB or non-JSON text another program wrote), it runs again reading such
   * metadata as `{}`, as a repair stores it; the first form uses the session index.
   */
  private tolerantRead(sql: string): unknown[] {
    try {
      return this.prepare(sql).all();
    } catch (error) {
      if (!isJsonError(error)) throw error;
      const readable = `CASE WHEN typeof(metadata) = 'text' AND json_valid(metadata) AND json_type(metadata) = 'object' THEN metadata ELSE '{}' END`;
      return this.prepare(sql.replace(/json_extract\(metadata,/g, `json_extract(${readable},`)).all();
    }
  }
}
