import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { MemoryHit, MemoryKind } from "@hermes/memory-core";
import { uniqueTerms } from "@hermes/memory-provider-kit";
import {
  NEIGHBOUR_WEIGHTS,
  SECOND_PREVIOUS_WEIGHT,
  SPEAKER_BOOST,
  asksQuestion,
  nextTurnShare,
  quoteTerm,
  speakerNamed,
} from "@hermes/memory-provider-kit/sqlite";
import { BM25_WEIGHTS, openDatabase, type Db } from "./database.js";
import { MemoryStore, type NewItem } from "./memory-store.js";
import { clampLimit, topScored, type Scored, type StoreSearchOptions } from "./store-search.js";
import { seededRandom } from "@hermes/test-support";

/**
 * The search as it was before its statements were reworked for speed (one statement per step,
 * a row object per candidate), kept as the reference the store's results must equal exactly:
 * same hits, same order, same scores, same fields. Small stores only (FTS5 bm25() ranking).
 */
function referenceSearch(db: Db, query: string, options: StoreSearchOptions, halfLifeDays: number, now: number): MemoryHit[] {
  // A word in at least half the items (counted against the largest id) carries no BM25 weight: it is
  // left out unless every word found is one, and added back only when fewer than `limit` hits remain.
  const terms = uniqueTerms(query);
  const total = Number(db.prepare(`SELECT COALESCE(MAX(id), 0) FROM items`).pluck().get());
  const df = (t: string) => Number(db.prepare(`SELECT COUNT(*) FROM items_fts WHERE items_fts MATCH ?`).pluck().get(quoteTerm(t)));
  const found = terms.filter((t) => df(t) > 0);
  const weighted = found.filter((t) => 2 * df(t) < total);
  if (weighted.length === 0 || weighted.length === found.length) return referenceRanking(db, query, found, options, halfLifeDays, now);
  const limit = clampLimit(options.limit, 10, 1000);
  const hits = referenceRanking(db, query, weighted, options, halfLifeDays, now);
  return hits.length < limit ? referenceRanking(db, query, found, options, halfLifeDays, now) : hits;
}

/** The reference ranking of `query` with these words matched. */
function referenceRanking(
  db: Db,
  query: string,
  matchTerms: readonly string[],
  options: StoreSearchOptions,
  halfLifeDays: number,
  now: number,
): MemoryHit[] {
  interface LinkedRow {
    id: number;
    kind: MemoryKind;
    session_id: string | null;
    user_id: string | null;
    speaker: string;
    created_at: number;
    next1: number | null;
    next2: number | null;
    prev: number | null;
    prev2: number | null;
    content: string | null;
  }
  const terms = uniqueTerms(query);
  if (matchTerms.length === 0) return [];
  const match = matchTerms.map(quoteTerm).join(" OR ");
  // Schema v3: a turn's FTS document also holds its two previous turns and its date, each column
  // with its own weight; the rest of the reference ranking is unchanged.
  const bm25 = `bm25(items_fts, ${BM25_WEIGHTS.content}, ${BM25_WEIGHTS.speaker}, ${BM25_WEIGHTS.prev1}, ${BM25_WEIGHTS.prev2}, ${BM25_WEIGHTS.date})`;
  const limit = clampLimit(options.limit, 10, 1000);
  // The best max(2 × limit, 40) matches are ranked and pass context on.
  const candidates = Math.max(2 * limit, 40);
  const filtered = options.kind !== undefined || options.sessionId !== undefined || options.userId !== undefined;
  const ranked = (
    filtered
      ? db
          .prepare(
            `SELECT i.id AS id, ${bm25} AS rank FROM items_fts JOIN items i ON i.id = items_fts.rowid
         WHERE items_fts MATCH @q AND (@kind IS NULL OR i.kind = @kind) AND (@session IS NULL OR i.session_id = @session)
           AND (@user IS NULL OR i.user_id = @user)
         ORDER BY rank LIMIT @limit`,
          )
          .all({
            q: match,
            kind: options.kind ?? null,
            session: options.sessionId ?? null,
            user: options.userId ?? null,
            limit: candidates,
          })
      : db
          .prepare(`SELECT rowid AS id, ${bm25} AS rank FROM items_fts WHERE items_fts MATCH ? ORDER BY rank LIMIT ?`)
          .all(match, candidates)
  ) as Array<{ id: number; rank: number }>;
  const linkedRows = db.prepare(
    `SELECT i.id, i.kind, i.session_id, i.user_id, i.speaker, i.created_at,
       (SELECT n.id FROM items n WHERE n.session_id = i.session_id AND n.id > i.id AND n.kind = 'turn' ORDER BY n.id LIMIT 1) AS next1,
       (SELECT n.id FROM items n WHERE n.session_id = i.session_id AND n.id > i.id AND n.kind = 'turn' ORDER BY n.id LIMIT 1 OFFSET 1) AS next2,
       (SELECT n.id FROM items n WHERE n.session_id = i.session_id AND n.id < i.id AND n.kind = 'turn' ORDER BY n.id DESC LIMIT 1) AS prev,
       (SELECT n.id FROM items n WHERE n.session_id = i.session_id AND n.id < i.id AND n.kind = 'turn' ORDER BY n.id DESC LIMIT 1 OFFSET 1) AS prev2,
       i.content AS content
     FROM json_each(?) c JOIN items i ON i.id = c.value`,
  );
  const scoringRows = db.prepare(
    `SELECT id, kind, session_id, user_id, speaker, created_at, NULL AS next1, NULL AS next2, NULL AS prev, NULL AS prev2, NULL AS content FROM items WHERE id IN (SELECT value FROM json_each(?))`,
  );
  const linked = new Map<number, LinkedRow>();
  for (const row of linkedRows.all(JSON.stringify(ranked.map((r) => r.id))) as LinkedRow[]) linked.set(row.id, row);
  const rows = new Map<number, LinkedRow>();
  const scores = new Map<number, number>();
  const add = (row: LinkedRow, score: number) => {
    rows.set(row.id, row);
    scores.set(row.id, (scores.get(row.id) ?? 0) + score);
  };
  const matched: Array<[LinkedRow, number]> = [];
  for (const { id, rank } of ranked) {
    const row = linked.get(id);
    if (!row) continue;
    add(row, -rank);
    matched.push([row, -rank]);
  }
  const [, wNext2, wPrev] = NEIGHBOUR_WEIGHTS;
  if (options.kind === undefined || options.kind === "turn") {
    const missing = new Set<number>();
    for (const [row] of matched)
      for (const n of [row.next1, row.next2, row.prev, row.prev2]) if (n !== null && !linked.has(n)) missing.add(n);
    if (missing.size > 0) for (const row of scoringRows.all(JSON.stringify([...missing])) as LinkedRow[]) linked.set(row.id, row);
    const accept = (row: LinkedRow | undefined): row is LinkedRow =>
      row !== undefined && (options.userId === undefined || row.user_id === options.userId);
    for (const [row, score] of matched) {
      if (row.kind !== "turn" || row.session_id === null) continue;
      const next = row.next1 === null ? undefined : linked.get(row.next1);
      const next2 = row.next2 === null ? undefined : linked.get(row.next2);
      const prev = row.prev === null ? undefined : linked.get(row.prev);
      const prev2 = row.prev2 === null ? undefined : linked.get(row.prev2);
      // A turn that asks no question passes a smaller share to its next turn.
      if (accept(next)) add(next, nextTurnShare(NEIGHBOUR_WEIGHTS, asksQuestion(row.content ?? "")) * score);
      if (accept(next2)) add(next2, wNext2 * score);
      if (accept(prev)) add(prev, wPrev * score);
      if (accept(prev2)) add(prev2, SECOND_PREVIOUS_WEIGHT * score);
    }
  }
  const names = new Set(
    db.prepare(`SELECT name FROM speakers WHERE name IN (SELECT value FROM json_each(?))`).pluck().all(JSON.stringify(terms)) as string[],
  );
  const scored: Array<{ row: LinkedRow; score: number }> = [];
  for (const [id, raw] of scores) {
    const row = rows.get(id)!;
    let score = raw;
    if (names.size > 0 && row.speaker && speakerNamed(row.speaker, names)) score *= SPEAKER_BOOST;
    if (halfLifeDays > 0) {
      const ageDays = Math.max(0, now - row.created_at) / 86_400_000;
      score *= 1 - 0.25 + 0.25 * Math.pow(0.5, ageDays / halfLifeDays);
    }
    scored.push({ row, score });
  }
  scored.sort((a, b) => b.score - a.score || a.row.id - b.row.id);
  const top = scored.slice(0, limit);
  const text = new Map<number, { content: string; metadata: string }>();
  for (const row of db
    .prepare(`SELECT id, content, metadata FROM items WHERE id IN (SELECT value FROM json_each(?))`)
    .all(JSON.stringify(top.map((h) => h.row.id))) as Array<{
    id: number;
    content: string;
    metadata: string;
  }>)
    text.set(row.id, row);
  return top
    .filter(({ row }) => text.has(row.id))
    .map(({ row, score }) => {
      const t = text.get(row.id)!;
      let metadata: Record<string, unknown>;
      try {
        metadata = (JSON.parse(t.metadata) as Record<string, unknown>) ?? {};
      } catch {
        // Unreadable metadata reads as {} holding the original text (what a repair stores).
        metadata = { hermesUnreadable: { metadata: { text: t.metadata } } };
      }
      const hit: MemoryHit = {
        id: String(row.id),
        content: t.content,
        kind: row.kind,
        score,
        createdAt: new Date(row.created_at).toISOString(),
        metadata,
      };
      if (row.session_id !== null) hit.sessionId = row.session_id;
      if (row.user_id !== null) hit.userId = row.user_id;
      return hit;
    });
}

const WORDS = (
  "camping lake trip summer painting pottery adoption support group school music guitar concert dog cat hiking " +
  "mountain beach birthday cake friend family career counseling book library museum city park garden run race " +
  "weather report routine meeting project deadline coffee tea dinner recipe travel flight hotel photo"
).split(" ");
const SPEAKERS = ["Caroline", "Melanie", "Jon Snow", "Dr. Ada Lovelace", ""];

describe("MemoryStore search returns exactly what the statement-per-step search returned", () => {
  const NOW = Date.UTC(2026, 11, 1);
  let dir: string;
  let db: Db;
  let store: MemoryStore;

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "sqlite-equiv-"));
    db = openDatabase(path.join(dir, "m.db"));
    store = new MemoryStore(db, path.join(dir, "m.db"), { recencyHalfLifeDays: 90 });
    const random = seededRandom(42);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
    const items: NewItem[] = [];
    for (let i = 0; i < 1500; i++) {
      const r = random();
      const kind: MemoryKind = r < 0.8 ? "turn" : r < 0.93 ? "fact" : "checkpoint";
      const speaker = kind === "turn" ? pick(SPEAKERS) : undefined;
      const words = Array.from({ length: 3 + Math.floor(random() * 12) }, () => pick(WORDS)).join(" ");
      // Repeated contents give equal BM25 scores (ties); sessions interleave so neighbours are not adjacent ids.
      // About a third of the texts ask a question ("?" or the full-width "？"), which changes the share
      // a turn passes to its next turn.
      const q = random();
      const asked = `${words}${q < 0.3 ? "?" : q < 0.35 ? "？" : ""}`;
      const content = random() < 0.05 ? "Thanks, see you soon!" : `${speaker ? `${speaker} said, "` : ""}${asked}${speaker ? '"' : ""}`;
      items.push({
        kind,
        content,
        sessionId: random() < 0.9 ? `s${Math.floor(random() * 40)}` : undefined,
        userId: random() < 0.3 ? pick(["u1", "u2"]) : undefined,
        speaker,
        metadata: random() < 0.5 ? { dia_id: `D${i}`, n: i, nested: { ok: random() < 0.5 } } : undefined,
        createdAt: NOW - Math.floor(random() * 400 * 86_400_000),
      });
    }
    const ids = store.insertMany(items);
    // Gaps in ids and sessions: deleted items must not be hits or neighbours.
    for (let i = 0; i < ids.length; i += 17) store.forget(ids[i]!);
    // A metadata column that is not valid JSON (hand-edited database) reads as {} holding the original.
    db.prepare(`UPDATE items SET metadata = 'not json' WHERE id = ?`).run(Number(ids[5]));
    vi.spyOn(Date, "now").mockReturnValue(NOW);
  });
  afterAll(() => {
    vi.restoreAllMocks();
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("for generated queries, limits and filters (ids, order, scores and fields)", () => {
    const random = seededRandom(7);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
    const optionSets: StoreSearchOptions[] = [
      {},
      { kind: "turn" },
      { kind: "fact" },
      { sessionId: "s3" },
      { userId: "u1" },
      { kind: "turn", userId: "u2" },
    ];
    let compared = 0;
    for (let q = 0; q < 120; q++) {
      const words = Array.from({ length: 1 + Math.floor(random() * 5) }, () => pick(WORDS));
      if (random() < 0.5) words.push(pick(["Caroline", "Melanie", "Jon", "Ada", "Snow"]));
      // "said" is in most turns: no BM25 weight, left out unless it is the only word.
      if (random() < 0.3) words.push("said");
      const query = `What did ${words.join(" ")} do?`;
      for (const limit of [1, 5, 10, 50, 200]) {
        const options = { ...pick(optionSets), limit };
        const expected = referenceSearch(db, query, options, 90, NOW);
        expect(store.search(query, options), `${query} ${JSON.stringify(options)}`).toEqual(expected);
        compared += expected.length;
      }
    }
    expect(compared).toBeGreaterThan(5000);
    // Queries with nothing searchable, or words the store has never seen.
    for (const query of ["", "the and of", "xylophone zebra"])
      expect(store.search(query, { limit: 10 })).toEqual(referenceSearch(db, query, { limit: 10 }, 90, NOW));
  });

  it("creates the turn index on a writable open; a read-only file without it searches the same", () => {
    const indexes = () => db.prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND name = 'items_session_turns'`).pluck().all();
    expect(indexes()).toEqual(["items_session_turns"]);
    const queries = ["Caroline camping lake", "music concert Melanie", "weather report routine", "Jon guitar"];
    const before = queries.map((q) => store.search(q, { limit: 50 }));
    db.exec("DROP INDEX items_session_turns");
    const readonlyDb = openDatabase(path.join(dir, "m.db"), { readonly: true });
    try {
      const readonlyStore = new MemoryStore(readonlyDb, path.join(dir, "m.db"), { recencyHalfLifeDays: 90 });
      expect(queries.map((q) => readonlyStore.search(q, { limit: 50 }))).toEqual(before);
    } finally {
      readonlyDb.close();
    }
    // The next writable open puts it back.
    openDatabase(path.join(dir, "m.db")).close();
    expect(indexes()).toEqual(["items_session_turns"]);
  });
});

describe("topScored", () => {
  it("equals a full sort (score descending, then id) cut to the limit, ties at the cut included", () => {
    const random = seededRandom(3);
    for (let round = 0; round < 200; round++) {
      const n = 1 + Math.floor(random() * 300);
      // Few distinct scores, so that many items tie, including at the cut; -0 and 0 among them.
      const scored: Scored[] = Array.from({ length: n }, (_, i) => ({
        row: [i + 1, "turn", null, null, "", 0, null, null, null, null, null],
        score: [0, -0, 1.5, 2, 2.25, -1][Math.floor(random() * 6)]!,
      }));
      const expected = [...scored].sort((a, b) => b.score - a.score || a.row[0] - b.row[0]);
      for (const limit of [1, 2, 5, 10, 50, 1000]) expect(topScored([...scored], limit)).toEqual(expected.slice(0, limit));
    }
  });
});
