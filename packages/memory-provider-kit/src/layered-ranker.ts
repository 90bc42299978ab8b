import type BetterSqlite3 from "better-sqlite3";
import type { MemoryKind } from "@hermes/memory-core";
import type { SqliteDb as Db } from "./sqlite-store.js";
import { quoteTerm } from "./fts-query.js";

/** A query word with the number of items containing it. */
export interface CountedTerm {
  term: string;
  df: number;
}

/** What `LayeredRanker.rank` needs besides the words. */
export interface LayeredRankOptions {
  /** Hits the caller shows; ranking stops early once these are settled. */
  limit: number;
  /** Ranked rows returned (the caller spreads scores to neighbours of these). */
  candidates: number;
  kind?: MemoryKind | null;
  session?: string | null;
  user?: string | null;
}

/** FTS5's BM25 constants (fts5_aux.c): k1 and b. */
const K1 = 1.2;
const B = 0.75;
/** Newest rows read per layer (items containing one word and at least one rarer-by-rank other word). */
const LAYER_ROWS = 100;
/** Newest rows read per single word, once the multi-word layers are done. */
const SINGLE_ROWS = 20;
/**
 * Stop reading further layers once the `limit`-th score beats their best possible score: the sum of
 * their words' IDF times this factor. The exact bound is k1 + 1 = 2.2 (infinite term frequency);
 * 1.5 covers a word found twice in a short item, which is as far as chat text goes in practice.
 */
const BOUND_FACTOR = 1.5;
/**
 * Multi-word layers read: those of the two rarest words. Later layers (items whose rarest query word
 * is the third or later) can only score the sum of commoner words; the single-word pass covers them.
 */
const MAX_LAYERS = 2;
/** Rarest query words considered; the rest add little to BM25 and would only cost layers. */
export const MAX_LAYERED_TERMS = 8;

interface LayerRow {
  id: number;
  content: string;
  speaker: string;
  sz: Buffer | null;
}

interface RankTerm {
  term: string;
  idf: number;
  pattern: RegExp;
}

/**
 * BM25 ranking for stores where FTS5's own `ORDER BY rank` is too slow. FTS5's bm25() walks the
 * complete document list of every query word on each call to count it (a million-item store: ~1 ms
 * per 30,000 items per word) and then scores every matching row. This ranker instead uses cached
 * document counts for the IDF and scores a bounded set of candidates in JavaScript:
 *
 * - words sorted rarest first (t1, t2, …); layer i holds the items containing t_i and at least one
 *   commoner word (`t_i AND (t_i+1 OR …)`), so every item with two or more query words is in exactly
 *   one layer (that of its rarest word), and items with rarer words come first; only the first
 *   `MAX_LAYERS` layers are read;
 * - each layer reads at most its newest `LAYER_ROWS` rows (`ORDER BY rowid DESC`, which FTS5 walks
 *   backwards and stops: a recency window), then the newest `SINGLE_ROWS` items of each word;
 * - reading stops as soon as the `limit`-th score is above what any later layer could score.
 *
 * Scores use FTS5's formula (same IDF, k1, b, column weights, document length from the FTS
 * `docsize` table and average length from its `averages` record). Term frequency is counted in the
 * item text with a light suffix match, not the porter stemmer, so it can differ from FTS5 for
 * irregular forms; an item a layer returned for a word counts that word at least once.
 * Synchronous, read-only; never throws for any word (all are quoted).
 */
export class LayeredRanker {
  private readonly weights: { content: number; speaker: number };
  private readonly stmts: { averages: BetterSqlite3.Statement; layer: BetterSqlite3.Statement };

  constructor(db: Db, weights: { content: number; speaker: number }) {
    this.weights = weights;
    this.stmts = {
      averages: db.prepare(`SELECT block FROM items_fts_data WHERE id = 1`).pluck(),
      layer: db.prepare(
        `SELECT f.rowid AS id, i.content AS content, i.speaker AS speaker, d.sz AS sz
         FROM items_fts f JOIN items i ON i.id = f.rowid LEFT JOIN items_fts_docsize d ON d.id = f.rowid
         WHERE items_fts MATCH @q AND (@kind IS NULL OR i.kind = @kind) AND (@session IS NULL OR i.session_id = @session)
           AND (@user IS NULL OR i.user_id = @user)
         ORDER BY f.rowid DESC LIMIT @limit`,
      ),
    };
  }

  /**
   * The best `candidates` item ids for `terms` (words found in at least one item), best first, with
   * their BM25 score as a negative `rank` (FTS5's convention). `[]` when no word is given.
   */
  rank(terms: readonly CountedTerm[], options: LayeredRankOptions): Array<{ id: number; rank: number }> {
    const { rows, avgLength } = this.averages();
    if (terms.length === 0 || rows === 0) return [];
    const ranked: RankTerm[] = [...terms]
      .filter((t) => t.df > 0)
      .sort((a, b) => a.df - b.df || (a.term < b.term ? -1 : 1))
      .slice(0, MAX_LAYERED_TERMS)
      .map((t) => ({ term: t.term, idf: idf(rows, t.df), pattern: termPattern(t.term) }));
    if (ranked.length === 0) return [];
    // Words in most items add nothing (IDF ≈ 0) but would make a layer match nearly everything.
    const useful = ranked.filter((t) => t.idf > 1e-3);
    const layered = useful.length > 0 ? useful : ranked.slice(0, 1);

    const scores = new Map<number, number>();
    const limit = Math.max(1, options.limit);
    const settled = (bound: number): boolean => {
      if (scores.size < limit) return false;
      const top = [...scores.values()].sort((a, b) => b - a);
      return (top[limit - 1] ?? -Infinity) >= bound * BOUND_FACTOR;
    };
    const read = (match: string, rowsWanted: number, required: RankTerm) => {
      const found = this.stmts.layer.all({
        q: match,
        kind: options.kind ?? null,
        session: options.session ?? null,
        user: options.user ?? null,
        limit: rowsWanted,
      }) as LayerRow[];
      for (const row of found) {
        if (!scores.has(row.id)) scores.set(row.id, this.score(row, ranked, required, avgLength));
      }
    };

    for (let i = 0; i < Math.min(layered.length - 1, MAX_LAYERS); i++) {
      const rest = layered.slice(i + 1);
      const bound = layered[i]!.idf + rest.reduce((sum, t) => sum + t.idf, 0);
      if (settled(bound)) break;
      read(`${quoteTerm(layered[i]!.term)} AND (${rest.map((t) => quoteTerm(t.term)).join(" OR ")})`, Math.max(LAYER_ROWS, options.candidates), layered[i]!);
    }
    for (const t of layered) {
      if (settled(t.idf)) break;
      read(quoteTerm(t.term), Math.max(SINGLE_ROWS, options.candidates), t);
    }
    return [...scores]
      .sort((a, b) => b[1] - a[1] || b[0] - a[0])
      .slice(0, options.candidates)
      .map(([id, score]) => ({ id, rank: -score }));
  }

  /** FTS5's BM25 of one row over all ranked words. */
  private score(row: LayerRow, terms: readonly RankTerm[], required: RankTerm, avgLength: number): number {
    const length = row.sz ? sumVarints(row.sz) : 0;
    const norm = K1 * (1 - B + (B * length) / (avgLength || 1));
    let score = 0;
    for (const t of terms) {
      let freq = this.weights.content * countMatches(t.pattern, row.content) + this.weights.speaker * countMatches(t.pattern, row.speaker);
      if (freq === 0 && t === required) freq = this.weights.content;
      if (freq > 0) score += (t.idf * (freq * (K1 + 1))) / (freq + norm);
    }
    return score;
  }

  /** Row count and average row length (all columns, in tokens) from FTS5's `averages` record. */
  private averages(): { rows: number; avgLength: number } {
    const block = this.stmts.averages.get() as Buffer | undefined;
    if (!block) return { rows: 0, avgLength: 0 };
    const [rows = 0, ...columns] = readVarints(block);
    const tokens = columns.reduce((sum, n) => sum + n, 0);
    return { rows, avgLength: rows > 0 ? tokens / rows : 0 };
  }
}

/** FTS5's IDF: ln((N − n + 0.5) / (n + 0.5)), floored at 1e-6. */
export function idf(rows: number, df: number): number {
  const value = Math.log((rows - df + 0.5) / (df + 0.5));
  return value > 0 ? value : 1e-6;
}

/** SQLite varints (big-endian groups of 7 bits; the 9th byte carries 8) as used in FTS5 records. */
export function readVarints(buf: Uint8Array): number[] {
  const out: number[] = [];
  let i = 0;
  while (i < buf.length) {
    let value = 0;
    for (let n = 0; i < buf.length; n++) {
      const byte = buf[i++]!;
      if (n === 8) {
        value = value * 256 + byte;
        break;
      }
      value = value * 128 + (byte & 0x7f);
      if ((byte & 0x80) === 0) break;
    }
    out.push(value);
  }
  return out;
}

function sumVarints(buf: Uint8Array): number {
  return readVarints(buf).reduce((sum, n) => sum + n, 0);
}

const SUFFIXES = ["ings", "ing", "ed", "es", "s", "ly"];

/**
 * A case- and accent-insensitive pattern for the forms of `term` the porter tokenizer would mostly
 * fold together: the word minus one common suffix, plus any of those suffixes.
 */
export function termPattern(term: string): RegExp {
  let base = foldDiacritics(term.toLowerCase());
  for (const suffix of SUFFIXES) {
    if (base.length > suffix.length + 2 && base.endsWith(suffix) && !(suffix === "s" && base.endsWith("ss"))) {
      base = base.slice(0, -suffix.length);
      break;
    }
  }
  const escaped = base.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`(?<![\\p{L}\\p{N}\\p{M}])${escaped}(?:${SUFFIXES.join("|")})?(?![\\p{L}\\p{N}\\p{M}])`, "giu");
}

function foldDiacritics(text: string): string {
  return text.normalize("NFD").replace(/\p{M}/gu, "");
}

function countMatches(pattern: RegExp, text: string): number {
  if (text.length === 0) return 0;
  // Diacritics are folded only when present: normalising every row would double the scoring cost.
  const haystack = /[^\u0020-\u007e\s]/.test(text) ? foldDiacritics(text) : text;
  pattern.lastIndex = 0;
  let n = 0;
  while (pattern.exec(haystack) !== null) n++;
  return n;
}
