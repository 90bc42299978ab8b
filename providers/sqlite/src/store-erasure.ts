/**
 * Erasure of every item in a scope (`forgetWhere`), in two forms over one rule set:
 *
 * - `eraseAtOnce`: one IMMEDIATE transaction (`forget(id)`, a handful of rows);
 * - `eraseInSteps`: the same erasure in short steps with the event loop served between them, so
 *   erasing one user's thousands of turns in a large store never holds up the host's timers and
 *   I/O for long. Each step is one IMMEDIATE transaction sized by measured time (`StepPacer`), and
 *   deletes whole items: a row, its FTS entry, the refilled context of the turns after it (delete
 *   triggers) and the checkpoint copies of an erased turn's messages go in the same transaction.
 *   A process killed between steps leaves every item either erased or intact; running the
 *   erasure again finishes it. Items written meanwhile are erased only when they match the scope
 *   at the step that reaches them, or kept.
 *
 * While steps run, the FTS index's own merges are paused (`automerge` 0, `crisismerge` 1000):
 * each small transaction adds a segment, and FTS5 merged them with the store's large segments
 * inside whichever step came next, one step rewriting megabytes (0.6 s at 100,000 items). When the
 * last erasure of the connection has deleted its items, the segments are merged in paced steps
 * (FTS5's `merge` command, a bounded number of pages per step) and the settings are put back. A
 * store left with merges paused by a killed process gets them back at the next open
 * (`resumeIndexMerges`).
 */
import { checkpointCopies, checkWholeStoreErasure, StepPacer, yieldToEventLoop, type ParsedForgetScope } from "@hermes/memory-provider-kit";
import { filterToSql, isBusyError, withBusyTimeout } from "@hermes/memory-provider-kit/sqlite";
import type { Db } from "./database.js";
import { FILTER_COLUMNS, FILTER_OPTIONS, parseId } from "./store-search.js";

/** What an erasure needs of the store it runs in. */
export interface ErasureHost {
  readonly db: Db;
  /** Run a step that deletes, with freed pages and cells zeroed (`secure_delete`). */
  erasing<T>(fn: () => T): T;
  /** Run a read or delete that evaluates SQLite's JSON functions over stored values, naming unreadable items when they fail. */
  naming<T>(fn: () => T): T;
  /** Called after every step, committed (with how many items it erased) or rolled back (0): caches of rows go stale. */
  afterStep(erased: number): void;
}

/** How the steps of `eraseInSteps` are paced (tests and benches; the defaults suit a host). */
export interface ErasurePacing {
  /** Time one step aims at (ms). */
  targetMs?: number;
  /** Items in the first delete step. */
  initialItems?: number;
}

/** How long one step waits on the thread for another connection's write lock before trying again on a timer (ms). */
const STEP_LOCK_WAIT_MS = 25;
/** How long a step keeps trying to take a write lock another connection holds before failing as busy (ms). */
const STEP_LOCK_DEADLINE_MS = 10_000;

interface Condition {
  sql: string;
  params: unknown[];
}

interface TurnRow {
  session: string;
  speaker: string;
  content: string;
}

/** FTS5's merge settings while no erasure runs (its defaults), and while erasures run. */
const MERGES_ON = { automerge: 4, crisismerge: 16 };
const MERGES_PAUSED = { automerge: 0, crisismerge: 1000 };
/** Erasures running in steps per connection: the last one to end resumes the index's merges. */
const pausedMerges = new WeakMap<Db, number>();

/**
 * Set FTS5's merge settings; a write lock another connection holds past `STEP_LOCK_WAIT_MS` leaves
 * them as they were (they change only when merge work is done, never what is stored).
 */
function setMerges(db: Db, settings: { automerge: number; crisismerge: number }): void {
  try {
    withBusyTimeout(db, STEP_LOCK_WAIT_MS, () =>
      db.transaction(() => {
        for (const [key, value] of Object.entries(settings)) db.exec(`INSERT INTO items_fts(items_fts, rank) VALUES ('${key}', ${value})`);
      })(),
    );
  } catch (error) {
    if (!isBusyError(error)) throw error;
  }
}

/**
 * Put back the FTS index's merges when they are paused and no erasure of this connection runs (a
 * process killed during an erasure leaves them paused). One read when they are not.
 */
export function resumeIndexMerges(db: Db): void {
  if (db.readonly || (pausedMerges.get(db) ?? 0) > 0) return;
  const automerge = db.prepare(`SELECT v FROM items_fts_config WHERE k = 'automerge'`).pluck().get();
  if (automerge !== undefined && Number(automerge) === MERGES_PAUSED.automerge) setMerges(db, MERGES_ON);
}

/** Run `work` (writes in steps) with the index's merges paused, then merge in paced steps and resume them (see the module comment). */
export async function withMergesPaused<T>(host: ErasureHost, pacing: ErasurePacing, work: () => Promise<T>): Promise<T> {
  const { db } = host;
  const running = pausedMerges.get(db) ?? 0;
  if (running === 0) setMerges(db, MERGES_PAUSED);
  pausedMerges.set(db, running + 1);
  try {
    return await work();
  } finally {
    const left = (pausedMerges.get(db) ?? 1) - 1;
    pausedMerges.set(db, left);
    if (left === 0 && db.open) {
      try {
        await mergeInSteps(host, pacing);
      } finally {
        if ((pausedMerges.get(db) ?? 0) === 0 && db.open) setMerges(db, MERGES_ON);
      }
    }
  }
}

/** Merge the FTS index's segments a bounded number of pages per step until FTS5 has nothing left to merge. */
async function mergeInSteps(host: ErasureHost, pacing: ErasurePacing): Promise<void> {
  const { db } = host;
  const changes = db.prepare("SELECT total_changes()").pluck();
  const pacer = new StepPacer({ targetMs: pacing.targetMs, initial: 16, min: 4, max: 4096 });
  for (;;) {
    // Another erasure of this connection started meanwhile: it merges when it ends.
    if ((pausedMerges.get(db) ?? 0) > 0 || !db.open) return;
    const pages = pacer.size;
    let done = 0;
    await writeStep(host, pacer, pages, () => {
      const before = Number(changes.get());
      db.exec(`INSERT INTO items_fts(items_fts, rank) VALUES ('merge', ${pages})`);
      done = Number(changes.get()) - before;
      return 0;
    });
    // FTS5 writes fewer than two rows when no level has enough segments to merge.
    if (done < 2) return;
    await yieldToEventLoop();
  }
}

/** The checkpoint texts that copy the erased turns' messages, by session. */
function copiesBySession(turns: Iterable<TurnRow>): Map<string, Set<string>> {
  const copies = new Map<string, Set<string>>();
  for (const turn of turns) {
    let texts = copies.get(turn.session);
    if (!texts) copies.set(turn.session, (texts = new Set()));
    for (const text of checkpointCopies(turn.content, turn.speaker)) texts.add(text);
  }
  return copies;
}

const ERASE_COPIES = `DELETE FROM items WHERE kind = 'checkpoint' AND session_id = ? AND content IN (SELECT value FROM json_each(?))`;

/**
 * Erase every item in `scope` in one IMMEDIATE transaction and return how many were erased. The
 * store's size is read in the same transaction: an unconfirmed erasure of every item is rolled
 * back and refused (`checkWholeStoreErasure`).
 */
export function eraseAtOnce(host: ErasureHost, scope: ParsedForgetScope): number {
  const { db } = host;
  const condition = filterToSql(scope.filter, FILTER_COLUMNS, FILTER_OPTIONS);
  const erase = db.prepare(`DELETE FROM items WHERE id IN (SELECT i.id FROM items i WHERE ${condition.sql})`);
  // An erased turn's messages may also be archived as checkpoint items of its session (by
  // onPreCompress): those copies go too.
  const turns = db.prepare(
    `SELECT i.session_id AS session, i.speaker AS speaker, i.content AS content FROM items i
     WHERE i.kind = 'turn' AND i.session_id IS NOT NULL AND ${condition.sql}`,
  );
  const eraseCopies = db.prepare(ERASE_COPIES);
  let erased = 0;
  try {
    host.erasing(() =>
      host.naming(() =>
        db
          .transaction(() => {
            const total = Number(db.prepare("SELECT COUNT(*) FROM items").pluck().get());
            const copies = copiesBySession(turns.iterate(...condition.params) as Iterable<TurnRow>);
            erased = erase.run(...condition.params).changes;
            for (const [session, texts] of copies) erased += eraseCopies.run(session, JSON.stringify([...texts])).changes;
            checkWholeStoreErasure(scope, erased, total);
          })
          .immediate(),
      ),
    );
  } finally {
    host.afterStep(erased);
  }
  return erased;
}

/**
 * Erase every item in `scope` in steps (see the module comment) and return how many this call
 * erased. First the matching ids are read in ranges of ids, and the store's other items counted
 * in the same reads; an unconfirmed scope that leaves no other item (its erased turns' checkpoint
 * copies aside) is refused before anything is erased (`checkWholeStoreErasure`). Then the items
 * are erased in order of id, each step checking the scope again.
 */
export async function eraseInSteps(host: ErasureHost, scope: ParsedForgetScope, pacing: ErasurePacing = {}): Promise<number> {
  const condition = filterToSql(scope.filter, FILTER_COLUMNS, FILTER_OPTIONS);
  const checked = !scope.confirmAll && scope.filter.ids === undefined;
  const scan = await scanMatches(host, condition, scope, checked, pacing);
  if (scan.ids.length === 0) return 0;
  if (checked && scan.keptOther === 0) {
    const copies = scan.keptCheckpoints > 0 ? await countUnmatchedCopies(host, scan, pacing) : 0;
    checkWholeStoreErasure(scope, scan.ids.length + copies, scan.ids.length + scan.keptCheckpoints);
  }
  return withMergesPaused(host, pacing, () => deleteInSteps(host, condition, scan.ids, pacing));
}

interface Scan {
  /** Ids of the items in scope, ascending. */
  ids: number[];
  /** The largest id when the scan started: later items were not read. */
  top: number;
  /** Items out of scope that are not checkpoints (any one keeps the store from being emptied). */
  keptOther: number;
  /** Checkpoint items out of scope (they may be the erased turns' copies). */
  keptCheckpoints: number;
}

/** Read the ids in scope, a range of ids per step; with `checked`, count the items out of scope in the same reads. */
async function scanMatches(
  host: ErasureHost,
  condition: Condition,
  scope: ParsedForgetScope,
  checked: boolean,
  pacing: ErasurePacing,
): Promise<Scan> {
  const { db } = host;
  const top = Number(db.prepare("SELECT COALESCE(MAX(id), 0) FROM items").pluck().get());
  const scan: Scan = { ids: [], top, keptOther: 0, keptCheckpoints: 0 };
  const [first, high] = idBounds(scope.filter.ids, top);
  let low = first;
  const matching = db
    .prepare(`SELECT i.id, i.kind = 'checkpoint' FROM items i WHERE i.id > ? AND i.id <= ? AND (${condition.sql})`)
    .raw(true);
  const counting = db.prepare(`SELECT COUNT(*), COALESCE(SUM(kind = 'checkpoint'), 0) FROM items WHERE id > ? AND id <= ?`).raw(true);
  // One read transaction per range: its items and its count come from one snapshot.
  const readRange = db.transaction((from: number, to: number) => {
    let checkpoints = 0;
    let found = 0;
    for (const [id, isCheckpoint] of matching.iterate(from, to, ...condition.params) as Iterable<[number, number]>) {
      scan.ids.push(id);
      found++;
      checkpoints += isCheckpoint;
    }
    if (!checked) return;
    const [rows, allCheckpoints] = counting.get(from, to) as [number, number];
    scan.keptCheckpoints += allCheckpoints - checkpoints;
    scan.keptOther += rows - found - (allCheckpoints - checkpoints);
  });
  const pacer = new StepPacer({ targetMs: pacing.targetMs, initial: 4096, max: 10_000_000 });
  while (low < high) {
    pacer.timed((size) => {
      const to = Math.min(high, low + size);
      host.naming(() => readRange(low, to));
      const width = to - low;
      low = to;
      return width;
    });
    if (low < high) await yieldToEventLoop();
  }
  // Items written since the scan began are kept (unless a step finds them in scope).
  if (checked && db.prepare("SELECT EXISTS (SELECT 1 FROM items WHERE id > ?)").pluck().get(top) === 1) scan.keptOther++;
  return scan;
}

/** The id range (exclusive low, inclusive high) holding the items a scope can reach: the named ids', else every item's. */
function idBounds(ids: readonly string[] | undefined, top: number): [number, number] {
  if (ids === undefined) return [0, top];
  const numbers = ids.map((id) => parseId(id)).filter((n): n is number => n !== null);
  if (numbers.length !== ids.length || numbers.length === 0) return numbers.length === 0 ? [0, 0] : [0, top];
  return [Math.min(...numbers) - 1, Math.min(top, Math.max(...numbers))];
}

/** How many checkpoint items out of scope (read by the scan) are copies of the erased turns' messages. */
async function countUnmatchedCopies(host: ErasureHost, scan: Scan, pacing: ErasurePacing): Promise<number> {
  const { db } = host;
  const matched = new Set(scan.ids);
  const found = new Set<number>();
  const turns = db.prepare(
    `SELECT session_id AS session, speaker, content FROM items
     WHERE id IN (SELECT value FROM json_each(?)) AND kind = 'turn' AND session_id IS NOT NULL`,
  );
  const copies = db
    .prepare(`SELECT id FROM items WHERE kind = 'checkpoint' AND session_id = ? AND content IN (SELECT value FROM json_each(?))`)
    .pluck();
  const pacer = new StepPacer({ targetMs: pacing.targetMs, initial: 256 });
  let at = 0;
  while (at < scan.ids.length) {
    pacer.timed((size) => {
      const chunk = scan.ids.slice(at, at + size);
      const bySession = copiesBySession(turns.iterate(JSON.stringify(chunk)) as Iterable<TurnRow>);
      for (const [session, texts] of bySession) {
        for (const id of copies.iterate(session, JSON.stringify([...texts])) as Iterable<number>) {
          if (id <= scan.top && !matched.has(id)) found.add(id);
        }
      }
      at += chunk.length;
      return chunk.length;
    });
    if (at < scan.ids.length) await yieldToEventLoop();
  }
  return found.size;
}

/** Erase the items `ids` still in scope, in steps of whole items; returns how many were erased. */
async function deleteInSteps(host: ErasureHost, condition: Condition, ids: readonly number[], pacing: ErasurePacing): Promise<number> {
  const { db } = host;
  const inChunk = `i.id IN (SELECT value FROM json_each(?)) AND (${condition.sql})`;
  const turns = db.prepare(
    `SELECT i.session_id AS session, i.speaker AS speaker, i.content AS content FROM items i
     WHERE ${inChunk} AND i.kind = 'turn' AND i.session_id IS NOT NULL`,
  );
  const erase = db.prepare(`DELETE FROM items WHERE id IN (SELECT i.id FROM items i WHERE ${inChunk})`);
  const eraseCopies = db.prepare(ERASE_COPIES);
  const step = db.transaction((chunk: readonly number[]): number => {
    const json = JSON.stringify(chunk);
    const copies = copiesBySession(turns.iterate(json, ...condition.params) as Iterable<TurnRow>);
    let erased = erase.run(json, ...condition.params).changes;
    for (const [session, texts] of copies) erased += eraseCopies.run(session, JSON.stringify([...texts])).changes;
    return erased;
  });
  const pacer = new StepPacer({ targetMs: pacing.targetMs, initial: pacing.initialItems ?? 32 });
  let erased = 0;
  let at = 0;
  while (at < ids.length) {
    const chunk = ids.slice(at, at + pacer.size);
    erased += await writeStep(host, pacer, chunk.length, () => step.immediate(chunk));
    at += chunk.length;
    if (at < ids.length) await yieldToEventLoop();
  }
  return erased;
}

/**
 * Run one delete step of `units` items (timed for `pacer`) and return how many items it erased.
 * Another connection's write lock is waited for at most `STEP_LOCK_WAIT_MS` on the thread, then
 * on timers (the event loop runs meanwhile), up to `STEP_LOCK_DEADLINE_MS` in all.
 */
async function writeStep(host: ErasureHost, pacer: StepPacer, units: number, run: () => number): Promise<number> {
  const deadline = Date.now() + STEP_LOCK_DEADLINE_MS;
  for (let pause = 2; ; pause = Math.min(pause * 2, 100)) {
    let erased = 0;
    const started = performance.now();
    try {
      erased = host.erasing(() => host.naming(() => withBusyTimeout(host.db, STEP_LOCK_WAIT_MS, run)));
      pacer.record(units, performance.now() - started);
      return erased;
    } catch (error) {
      if (!isBusyError(error) || Date.now() >= deadline) throw error;
    } finally {
      host.afterStep(erased);
    }
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

/**
 * Delete the items expired at `now` in steps like `eraseInSteps` (each step one IMMEDIATE
 * transaction of the oldest expired rows) and return how many were deleted.
 */
export async function purgeInSteps(host: ErasureHost, now: number, pacing: ErasurePacing = {}): Promise<number> {
  const { db } = host;
  const purge = db.prepare(`DELETE FROM items WHERE id IN (SELECT id FROM items WHERE expires_at <= ? LIMIT ?)`);
  const step = db.transaction((size: number): number => purge.run(now, size).changes);
  const pacer = new StepPacer({ targetMs: pacing.targetMs, initial: pacing.initialItems ?? 64 });
  let purged = 0;
  // Nothing expired: the index's settings are left alone.
  if (db.prepare(`SELECT EXISTS (SELECT 1 FROM items WHERE expires_at <= ?)`).pluck().get(now) !== 1) return 0;
  return withMergesPaused(host, pacing, async () => {
    for (;;) {
      const size = pacer.size;
      const deleted = await writeStep(host, pacer, size, () => step.immediate(size));
      purged += deleted;
      if (deleted < size) return purged;
      await yieldToEventLoop();
    }
  });
}
