import fs from "node:fs";
import type BetterSqlite3 from "better-sqlite3";
import {
  closeSqliteStore,
  createSqliteDriverLoader,
  isBusyError,
  isUnwritableError,
  openSqliteStore,
  openSqliteStoreAsync,
  storageError,
  withBusyTimeout,
  type SqliteDb,
  type SqliteDriver,
  type SqliteStoreSpec,
} from "@hermes/memory-provider-kit/sqlite";
import { describeError, HermesMemoryError } from "@hermes/memory-core";
import { repairUnreadableValues } from "./unreadable-values.js";
import {
  CONTEXT_CHARS,
  TURN_COLUMN_WEIGHTS,
  itemsContextSql,
  turnDateText,
  type TurnColumnWeights,
} from "@hermes/memory-provider-kit/sqlite";

/** A better-sqlite3 connection. */
export type Db = SqliteDb;

/** Schema version this code writes (`PRAGMA user_version`). */
export const SCHEMA_VERSION = 6;

/** FTS column weights for `bm25(items_fts, content, speaker, prev1, prev2, session_date)`. */
export const BM25_WEIGHTS: Readonly<TurnColumnWeights> = TURN_COLUMN_WEIGHTS;

/** The `bm25(items_fts, ...)` call with these column weights (in FTS column order). */
export function bm25Call(w: TurnColumnWeights): string {
  return `bm25(items_fts, ${Number(w.content)}, ${Number(w.speaker)}, ${Number(w.prev1)}, ${Number(w.prev2)}, ${Number(w.date)})`;
}

const driverLoader = createSqliteDriverLoader(import.meta.url, "@hermes/memory-sqlite");

/**
 * Load better-sqlite3 once, lazily, so that `isAvailable()` can report a missing or broken native
 * addon instead of the whole module failing to import. Returns `undefined` when it cannot load.
 */
export function loadDriver(): SqliteDriver | undefined {
  return driverLoader.load();
}

/** Why the driver failed to load, or `undefined` when it loaded (or was never tried). */
export function driverLoadError(): unknown {
  return driverLoader.error();
}

/** Options for `openDatabase`. */
export interface OpenDatabaseOptions {
  /** Open without write access (inspection, doctor on a read-only copy). Never migrates. */
  readonly?: boolean;
  /** `busy_timeout` in ms; at least 5000. */
  busyTimeoutMs?: number;
  /** Hears how far a schema migration run by this open has got (large stores take a while). */
  onMigrationProgress?: MigrationProgress;
}

// Rows are indexed by the store itself right after each insert (see MemoryStore): an AFTER INSERT
// trigger makes FTS5 flush its pending terms per row and costs about 3x the write time. Deletes and
// updates are rare, so triggers keep those in sync.
const SCHEMA_V1 = `
CREATE TABLE IF NOT EXISTS items (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL CHECK (kind IN ('turn', 'fact', 'checkpoint')),
  session_id TEXT,
  user_id TEXT,
  speaker TEXT NOT NULL DEFAULT '',
  content TEXT NOT NULL,
  tags TEXT NOT NULL DEFAULT '[]',
  metadata TEXT NOT NULL DEFAULT '{}',
  digest TEXT,
  created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS speakers (name TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS items_digest ON items(digest) WHERE digest IS NOT NULL;
CREATE INDEX IF NOT EXISTS items_session ON items(session_id, id);
CREATE VIRTUAL TABLE IF NOT EXISTS items_fts USING fts5(
  content, speaker,
  content = 'items', content_rowid = 'id',
  tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS items_ad AFTER DELETE ON items BEGIN
  INSERT INTO items_fts(items_fts, rowid, content, speaker) VALUES ('delete', old.id, old.content, old.speaker);
END;
CREATE TRIGGER IF NOT EXISTS items_au AFTER UPDATE OF content, speaker ON items BEGIN
  INSERT INTO items_fts(items_fts, rowid, content, speaker) VALUES ('delete', old.id, old.content, old.speaker);
  INSERT INTO items_fts(rowid, content, speaker) VALUES (new.id, new.content, new.speaker);
END;
INSERT INTO items_fts(items_fts, rank) VALUES ('rank', 'bm25(${BM25_WEIGHTS.content}, ${BM25_WEIGHTS.speaker})');
`;

// v3: context columns on items, and an FTS table over them. The FTS table is recreated (FTS5 cannot
// add columns) and rebuilt from items after the new columns are filled. Deleting or editing a turn
// refills the context of the next two turns of its session, so forgotten or replaced text does not
// stay searchable there.
const SCHEMA_V3_COLUMNS = `
DROP TRIGGER IF EXISTS items_ad;
DROP TRIGGER IF EXISTS items_au;
ALTER TABLE items ADD COLUMN prev1 TEXT NOT NULL DEFAULT '';
ALTER TABLE items ADD COLUMN prev2 TEXT NOT NULL DEFAULT '';
ALTER TABLE items ADD COLUMN session_date TEXT NOT NULL DEFAULT '';
`;
// The next two turns of the deleted or edited turn's session take their context again from the turns
// now before them (the trigger's \`old\` row names the session and position); from v5 on, also the ids
// of those turns.
function refillNextTurns(withIds: boolean): string {
  const before = (offset: number, column: string) =>
    `(SELECT ${column} FROM items p WHERE p.session_id = items.session_id AND p.kind = 'turn' AND p.id < items.id ORDER BY p.id DESC LIMIT 1${offset > 0 ? ` OFFSET ${offset}` : ""})`;
  const text = (offset: number) => `COALESCE(${before(offset, `substr(p.content, 1, ${CONTEXT_CHARS})`)}, '')`;
  const ids = withIds ? `,\n    prev_id = ${before(0, "p.id")},\n    prev2_id = ${before(1, "p.id")}` : "";
  return `UPDATE items SET
    prev1 = ${text(0)},
    prev2 = ${text(1)}${ids}
  WHERE id IN (SELECT n.id FROM items n WHERE n.session_id = old.session_id AND n.kind = 'turn' AND n.id > old.id ORDER BY n.id LIMIT 2);`;
}
/** The triggers that run `body` (a `refillNextTurns` statement) after a turn is deleted or its text changes. */
function contextTriggers(body: string): string {
  return `CREATE TRIGGER items_ad_context AFTER DELETE ON items WHEN old.kind = 'turn' AND old.session_id <> '' BEGIN
  ${body}
END;
CREATE TRIGGER items_au_context AFTER UPDATE OF content ON items WHEN old.kind = 'turn' AND old.session_id <> '' AND new.content IS NOT old.content BEGIN
  ${body}
END;`;
}
const SCHEMA_V3_FTS = `
CREATE VIRTUAL TABLE items_fts USING fts5(
  content, speaker, prev1, prev2, session_date,
  content = 'items', content_rowid = 'id',
  tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER items_ad AFTER DELETE ON items BEGIN
  INSERT INTO items_fts(items_fts, rowid, content, speaker, prev1, prev2, session_date)
    VALUES ('delete', old.id, old.content, old.speaker, old.prev1, old.prev2, old.session_date);
END;
CREATE TRIGGER items_au AFTER UPDATE OF content, speaker, prev1, prev2, session_date ON items BEGIN
  INSERT INTO items_fts(items_fts, rowid, content, speaker, prev1, prev2, session_date)
    VALUES ('delete', old.id, old.content, old.speaker, old.prev1, old.prev2, old.session_date);
  INSERT INTO items_fts(rowid, content, speaker, prev1, prev2, session_date)
    VALUES (new.id, new.content, new.speaker, new.prev1, new.prev2, new.session_date);
END;
${contextTriggers(refillNextTurns(false))}
INSERT INTO items_fts(items_fts, rank) VALUES ('rank', '${bm25Call(BM25_WEIGHTS).replace("items_fts, ", "")}');
`;

// v4: an optional expiry time per item (epoch ms; NULL = never) with a partial index that finds
// expired items without scanning the table, and a partial index on user_id so that erasing one
// user's items does not scan the table either (items without a user add nothing to it).
const SCHEMA_V4 = `
ALTER TABLE items ADD COLUMN expires_at INTEGER;
CREATE INDEX IF NOT EXISTS items_expires ON items(expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS items_user ON items(user_id) WHERE user_id IS NOT NULL;
`;

// v5: each turn keeps the ids of the two turns before it in its session (NULL: none) and whether
// its text asks a question (the kit's `asksQuestion` rule), written with the turn, so a search reads
// them with the row instead of looking each up per candidate. Deleting or editing a turn re-points
// the next two turns of its session, in the same statement that refills their context text.
const SCHEMA_V5_COLUMNS = `
ALTER TABLE items ADD COLUMN prev_id INTEGER;
ALTER TABLE items ADD COLUMN prev2_id INTEGER;
ALTER TABLE items ADD COLUMN asks INTEGER NOT NULL DEFAULT 0;
`;
const SCHEMA_V5_TRIGGERS = `
DROP TRIGGER IF EXISTS items_ad_context;
DROP TRIGGER IF EXISTS items_au_context;
${contextTriggers(refillNextTurns(true))}
`;

/**
 * Schema v5 on a v4 store: add the columns, fill them for every existing turn (a window over each
 * session's turns, in steps of sessions, as v3 fills context) and replace the context triggers.
 * Nothing else changes: the FTS index and every item stay as they are.
 */
function migrateToV5(db: Db, sessions: ReadonlyArray<[string, number]>, step: (units: number) => void): void {
  db.exec(SCHEMA_V5_COLUMNS);
  const fill = db.prepare(
    sessionWindowFill([
      ["prev_id", "lag(id, 1) OVER session_turns"],
      ["prev2_id", "lag(id, 2) OVER session_turns"],
      ["asks", "instr(content, '?') > 0 OR instr(content, '？') > 0"],
    ]),
  );
  bySessionRanges(sessions, fill, step);
  // Turns outside any session have no previous turns; they still ask questions or not.
  db.exec(
    `UPDATE items SET asks = 1 WHERE kind = 'turn' AND (session_id IS NULL OR session_id = '') AND (instr(content, '?') > 0 OR instr(content, '？') > 0)`,
  );
  db.exec(SCHEMA_V5_TRIGGERS);
}

/**
 * An UPDATE setting `columns` of the turns of a range of sessions (bound to the range's first and
 * last session id) to window expressions over each session's turns in id order (`session_turns`),
 * for the migrations that fill per-turn columns from the turns before it.
 */
function sessionWindowFill(columns: ReadonlyArray<readonly [column: string, expression: string]>): string {
  return `
    UPDATE items SET ${columns.map(([column]) => `${column} = c.${column}`).join(", ")}
    FROM (
      SELECT id, ${columns.map(([column, expression]) => `${expression} AS ${column}`).join(", ")}
      FROM items
      WHERE kind = 'turn' AND session_id >= ? AND session_id <= ?
      WINDOW session_turns AS (PARTITION BY session_id ORDER BY id)
    ) AS c
    WHERE items.id = c.id`;
}

/**
 * Run `statement` (bound to the first and last session id of a range) over consecutive ranges of
 * `sessions` (sorted by id, with their turn counts) holding about `MIGRATION_STEP` turns each, so a
 * store of millions of turns is filled in steps; `step` hears each range's turns.
 */
function bySessionRanges(
  sessions: ReadonlyArray<[string, number]>,
  statement: BetterSqlite3.Statement,
  step: (units: number) => void,
): void {
  for (let i = 0; i < sessions.length;) {
    let turns = 0;
    let j = i;
    while (j < sessions.length && (j === i || turns + sessions[j]![1] <= MIGRATION_STEP)) turns += sessions[j++]![1];
    statement.run(sessions[i]![0], sessions[j - 1]![0]);
    step(turns);
    i = j;
  }
}

/** Progress of a schema migration: `done` of `total` work units (rows dated, contexted, indexed). */
export type MigrationProgress = (done: number, total: number) => void;

// Rows per step of a migration (one progress report each).
const MIGRATION_STEP = 20_000;

/**
 * Schema v3 on a v2 store: add the context columns, fill them for every existing turn (the two
 * previous turns of its session, in id order, and its date from metadata or creation time), then
 * index every item again. Nothing is deleted from items. The filling runs inside SQLite (a window
 * over each session's turns) in steps, so a store of millions of turns never sits in memory and
 * `progress` hears after each step.
 */
function migrateToV3(
  db: Db,
  idRanges: ReadonlyArray<IdRange>,
  sessions: ReadonlyArray<[string, number]>,
  step: (units: number) => void,
): void {
  // The old FTS table and its triggers go first, so filling the columns touches no index.
  dropOldIndex(db);
  db.exec(SCHEMA_V3_COLUMNS);
  db.function("hermes_turn_date", { deterministic: true }, (metadata: unknown, createdAt: unknown) => {
    let meta: Record<string, unknown> | undefined;
    try {
      const parsed = JSON.parse(String(metadata)) as unknown;
      if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) meta = parsed as Record<string, unknown>;
    } catch {
      // Unreadable metadata: the date falls back to the creation time.
    }
    return turnDateText("turn", meta, Number(createdAt));
  });
  const date = db.prepare(
    `UPDATE items SET session_date = hermes_turn_date(metadata, created_at) WHERE kind = 'turn' AND id > ? AND id <= ?`,
  );
  for (const [from, to, rows] of idRanges) {
    date.run(from, to);
    step(rows);
  }

  const context = db.prepare(
    sessionWindowFill([
      ["prev1", `substr(lag(content, 1, '') OVER session_turns, 1, ${CONTEXT_CHARS})`],
      ["prev2", `substr(lag(content, 2, '') OVER session_turns, 1, ${CONTEXT_CHARS})`],
    ]),
  );
  bySessionRanges(sessions, context, step);

  db.exec(SCHEMA_V3_FTS);
  const index = db.prepare(
    `INSERT INTO items_fts(rowid, content, speaker, prev1, prev2, session_date)
     SELECT id, content, speaker, prev1, prev2, session_date FROM items WHERE id > ? AND id <= ?`,
  );
  for (const [from, to, rows] of idRanges) {
    index.run(from, to);
    step(rows);
  }
}

/** Ids `from` (exclusive) to `to` (inclusive) holding `rows` items. */
type IdRange = readonly [from: bigint | number, to: bigint, rows: number];

/**
 * Consecutive id ranges covering every item, about `MIGRATION_STEP` items each, for the migrations
 * that touch every row in steps. Ranges follow the rows, not the id values: ids may have gaps of any
 * size (up to the largest rowid), which steps of fixed id width would walk through one by one.
 * Ids are read as bigints, since those beyond 2^53 are not exact as numbers.
 */
function itemIdRanges(db: Db): IdRange[] {
  const ends = db
    .prepare(
      `SELECT id, n FROM (SELECT id, row_number() OVER (ORDER BY id) AS n, COUNT(*) OVER () AS total FROM items) WHERE n % ${MIGRATION_STEP} = 0 OR n = total`,
    )
    .safeIntegers(true)
    .raw(true)
    .all() as Array<[bigint, bigint]>;
  const ranges: IdRange[] = [];
  // Below every id, the smallest rowid included (ids may be zero or negative).
  let from: bigint | number = -1e19;
  let counted = 0n;
  for (const [to, n] of ends) {
    ranges.push([from, to, Number(n - counted)]);
    from = to;
    counted = n;
  }
  return ranges;
}

// The tables FTS5 keeps an index in (`items_fts_data`, ...).
const FTS_SHADOW_TABLES = ["data", "idx", "content", "docsize", "config"].map((t) => `items_fts_${t}`);

/**
 * Drop the pre-v3 FTS table, which v3 rebuilds from items anyway. A damaged one (a shadow table
 * missing or unreadable, e.g. its config) cannot be dropped by FTS5 itself: its schema entry is
 * removed instead. Shadow tables left without their FTS table go too, so the new one can be created.
 * Runs inside the migration's transaction: a failure rolls all of it back.
 */
function dropOldIndex(db: Db): void {
  try {
    db.exec(`DROP TABLE IF EXISTS items_fts`);
  } catch {
    db.unsafeMode(true);
    try {
      const cookie = Number(db.pragma("schema_version", { simple: true }));
      db.pragma("writable_schema = ON");
      db.prepare(`DELETE FROM sqlite_master WHERE type = 'table' AND name = 'items_fts'`).run();
      db.pragma("writable_schema = OFF");
      // A new schema cookie makes the connection read the schema again, now without the table.
      db.pragma(`schema_version = ${cookie + 1}`);
      for (const table of FTS_SHADOW_TABLES) db.exec(`DROP TABLE IF EXISTS ${table}`);
    } finally {
      db.unsafeMode(false);
    }
  }
  for (const table of FTS_SHADOW_TABLES) db.exec(`DROP TABLE IF EXISTS ${table}`);
}

// v6: items no longer store their context text. A turn's FTS document still holds the first
// CONTEXT_CHARS characters of its two previous turns, derived from their ids (`prev_id`,
// `prev2_id`: `itemsContextSql`), and the FTS table is contentless: it keeps only the index, so
// removing a row from it needs the exact values that were indexed. A contentless table with
// `contentless_delete=1` is not used: FTS5 never lowers its document count and average lengths on
// such deletes, so BM25 would drift from the items actually stored.
const INDEXED_COLUMNS = "content, speaker, prev1, prev2, session_date";

/** The values indexed for the items row `row` (an alias, or `old` / `new` in a trigger), in FTS column order. */
function indexedValues(row: string): string {
  return `${row}.content, ${row}.speaker, ${itemsContextSql(`${row}.prev_id`)}, ${itemsContextSql(`${row}.prev2_id`)}, ${row}.session_date`;
}

/** The next two turns of the session of the trigger's `old` row (those whose context is derived from it). */
const NEXT_TWO_TURNS = `SELECT n.id FROM items n WHERE n.session_id = old.session_id AND n.kind = 'turn' AND n.id > old.id ORDER BY n.id LIMIT 2`;
/** Remove the FTS rows of the next two turns of `old`'s session, with the values they were indexed with. */
const DELETE_NEXT_TURNS = `INSERT INTO items_fts(items_fts, rowid, ${INDEXED_COLUMNS})
    SELECT 'delete', n.id, ${indexedValues("n")} FROM items n WHERE n.id IN (${NEXT_TWO_TURNS});`;
/** Index the next two turns of `old`'s session again, with their context as it is now. */
const INSERT_NEXT_TURNS = `INSERT INTO items_fts(rowid, ${INDEXED_COLUMNS})
    SELECT n.id, ${indexedValues("n")} FROM items n WHERE n.id IN (${NEXT_TWO_TURNS});`;
/** Point the next two turns of `old`'s session at the turns now before them (NULL: none). */
const REPOINT_NEXT_TURNS = (() => {
  const before = (offset: number) =>
    `(SELECT p.id FROM items p WHERE p.session_id = items.session_id AND p.kind = 'turn' AND p.id < items.id ORDER BY p.id DESC LIMIT 1${offset > 0 ? ` OFFSET ${offset}` : ""})`;
  return `UPDATE items SET prev_id = ${before(0)}, prev2_id = ${before(1)} WHERE id IN (${NEXT_TWO_TURNS});`;
})();

const SCHEMA_V6_FTS = `
CREATE VIRTUAL TABLE items_fts USING fts5(
  ${INDEXED_COLUMNS},
  content = '',
  tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO items_fts(items_fts, rank) VALUES ('rank', '${bm25Call(BM25_WEIGHTS).replace("items_fts, ", "")}');
`;

// The index follows every delete and every change of indexed text through triggers (rows are
// indexed on insert by the store itself). Before the change, while the old text is still readable,
// the row's own FTS entry and those of the next two turns of its session (whose context is its
// text) are removed with the values they were indexed with; after it, the next turns are pointed
// at the turns now before them and everything is indexed again. The ids of a turn's previous
// turns are written only by the store and these triggers, so no trigger watches them.
const SCHEMA_V6_TRIGGERS = `
CREATE TRIGGER items_bd BEFORE DELETE ON items BEGIN
  INSERT INTO items_fts(items_fts, rowid, ${INDEXED_COLUMNS}) VALUES ('delete', old.id, ${indexedValues("old")});
END;
CREATE TRIGGER items_bd_context BEFORE DELETE ON items WHEN old.kind = 'turn' AND old.session_id <> '' BEGIN
  ${DELETE_NEXT_TURNS}
END;
CREATE TRIGGER items_ad_context AFTER DELETE ON items WHEN old.kind = 'turn' AND old.session_id <> '' BEGIN
  ${REPOINT_NEXT_TURNS}
  ${INSERT_NEXT_TURNS}
END;
CREATE TRIGGER items_bu BEFORE UPDATE OF content, speaker, session_date ON items BEGIN
  INSERT INTO items_fts(items_fts, rowid, ${INDEXED_COLUMNS}) VALUES ('delete', old.id, ${indexedValues("old")});
END;
CREATE TRIGGER items_au AFTER UPDATE OF content, speaker, session_date ON items BEGIN
  INSERT INTO items_fts(rowid, ${INDEXED_COLUMNS}) VALUES (new.id, ${indexedValues("new")});
END;
CREATE TRIGGER items_bu_context BEFORE UPDATE OF content ON items WHEN old.kind = 'turn' AND old.session_id <> '' AND new.content IS NOT old.content BEGIN
  ${DELETE_NEXT_TURNS}
END;
CREATE TRIGGER items_au_context AFTER UPDATE OF content ON items WHEN old.kind = 'turn' AND old.session_id <> '' AND new.content IS NOT old.content BEGIN
  ${INSERT_NEXT_TURNS}
END;
`;

/**
 * Empty the FTS index and index every item again (its text, speaker, date and derived context),
 * in steps of about `MIGRATION_STEP` items by id range; `step` hears each range's items. The
 * contentless index has no 'rebuild': the v6 migration and `vacuum` both refill it through this.
 * Call inside a transaction, so a failure leaves the old index.
 */
export function refillIndex(db: Db, step: (rows: number) => void = () => {}, idRanges: ReadonlyArray<IdRange> = itemIdRanges(db)): void {
  db.exec(`INSERT INTO items_fts(items_fts) VALUES ('delete-all')`);
  const fill = db.prepare(
    `INSERT INTO items_fts(rowid, ${INDEXED_COLUMNS}) SELECT i.id, ${indexedValues("i")} FROM items i WHERE i.id > ? AND i.id <= ?`,
  );
  for (const [from, to, rows] of idRanges) {
    fill.run(from, to);
    step(rows);
  }
}

/**
 * Schema v6 on a v5 store: the old index and its triggers go, the contentless index is created and
 * filled from items (context derived from the previous-turn ids), then the stored context columns
 * are dropped and the v6 triggers created. Items keep every other column.
 */
function migrateToV6(db: Db, idRanges: ReadonlyArray<IdRange>, step: (rows: number) => void): void {
  for (const trigger of ["items_ad", "items_au", "items_ad_context", "items_au_context"]) db.exec(`DROP TRIGGER IF EXISTS ${trigger}`);
  dropOldIndex(db);
  db.exec(SCHEMA_V6_FTS);
  refillIndex(db, step, idRanges);
  db.exec(`ALTER TABLE items DROP COLUMN prev1; ALTER TABLE items DROP COLUMN prev2;`);
  db.exec(SCHEMA_V6_TRIGGERS);
}

function storeSpec(progress?: MigrationProgress): SqliteStoreSpec {
  return {
    driver: loadDriver(),
    // An addon that was never built is thrown as the loader's NATIVE_MODULE_MISSING, with its fix.
    driverError: driverLoadError(),
    unavailable: `better-sqlite3 could not be loaded (${describeError(driverLoadError())}). Reinstall @hermes/memory-sqlite so its native addon is built (pnpm needs "onlyBuiltDependencies: [better-sqlite3]").`,
    label: "SQLite memory database",
    packageName: "@hermes/memory-sqlite",
    schemaVersion: SCHEMA_VERSION,
    migrate(db, current) {
      if (current < 1) db.exec(SCHEMA_V1);
      // v2: early v1 databases indexed inserts through a trigger; the store now does it directly.
      if (current < 2) db.exec("DROP TRIGGER IF EXISTS items_ai");
      // Progress covers every step, measured up front: v3 dates and indexes every row and fills
      // every turn of a session; v5 fills those turns again; v6 indexes every row again.
      const idRanges = current < 6 ? itemIdRanges(db) : [];
      const rows = idRanges.reduce((sum, [, , n]) => sum + n, 0);
      const sessions = db
        .prepare(`SELECT session_id, COUNT(*) FROM items WHERE kind = 'turn' AND session_id <> '' GROUP BY session_id ORDER BY session_id`)
        .raw(true)
        .all() as Array<[string, number]>;
      const inSessions = sessions.reduce((sum, [, n]) => sum + n, 0);
      const total = (current < 3 ? 2 * rows + inSessions : 0) + (current < 5 ? inSessions : 0) + (current < 6 ? rows : 0);
      let done = 0;
      const step = (units: number) => {
        done += units;
        progress?.(Math.min(done, total), total);
      };
      if (current < 6) progress?.(0, total);
      // v3: each turn's FTS document also holds the two previous turns of its session and its date.
      if (current < 3) migrateToV3(db, idRanges, sessions, step);
      // v4: expires_at, and the indexes for expiry and for erasure by user.
      if (current < 4) db.exec(SCHEMA_V4);
      // v5: the ids of each turn's two previous turns and whether it asks a question, stored with it.
      if (current < 5) migrateToV5(db, sessions, step);
      // v6: context derived from those ids instead of stored twice; a contentless FTS index.
      if (current < 6) migrateToV6(db, idRanges, step);
      // Every migration also makes values the JSON functions cannot read (BLOBs, non-JSON metadata
      // or tags, written by older versions or other programs) readable, keeping their originals.
      // Last, so the final triggers index and re-contextualise each rewritten turn.
      repairUnreadableValues(db);
    },
  };
}

const OPEN_FIX = "check that the directory exists and is writable, or set memory.sqlite.path";

/**
 * Open (creating when needed) the database at `file`, check and migrate its schema, and set WAL,
 * `synchronous=NORMAL` and a busy timeout. A database whose schema is newer than this code is left
 * untouched and rejected with `SCHEMA_TOO_NEW`. Other failures throw `STORAGE_FAILED`. While
 * another process holds the file's lock the thread waits; `openDatabaseAsync` waits on timers.
 */
export function openDatabase(file: string, options: OpenDatabaseOptions = {}): Db {
  const { onMigrationProgress, ...open } = options;
  return finishOpen(openSqliteStore(file, storeSpec(onMigrationProgress), { ...open, openFix: OPEN_FIX }), file, false);
}

/**
 * `openDatabase` for the provider's `initialize()`: waiting for another process's lock leaves the
 * event loop free (a migration, once the lock is taken, still runs synchronously).
 */
export async function openDatabaseAsync(file: string, options: OpenDatabaseOptions = {}): Promise<Db> {
  const { onMigrationProgress, ...open } = options;
  return finishOpen(await openSqliteStoreAsync(file, storeSpec(onMigrationProgress), { ...open, openFix: OPEN_FIX }), file, true);
}

/**
 * The per-connection settings and the unversioned index every writable open adds. `skipWhenBusy`:
 * while another process holds the write lock, leave a missing index to a later open at once
 * instead of waiting for the lock on this thread.
 */
function finishOpen(db: Db, file: string, skipWhenBusy: boolean): Db {
  if (db.readonly) return db;
  // Deleted content is overwritten with zeros where that costs no extra I/O (a per-connection
  // setting); erasing operations turn it fully on while they run (MemoryStore), so erased text
  // does not linger in the file's free space.
  db.pragma("secure_delete = FAST");
  try {
    if (skipWhenBusy) withBusyTimeout(db, 0, () => db.exec(TURN_INDEX));
    else db.exec(TURN_INDEX);
  } catch (error) {
    // Another process holding the write lock past the busy timeout: search works without the
    // index, and a later open creates it.
    if (isBusyError(error)) return db;
    closeSqliteStore(db);
    throw storageError(
      `cannot prepare the SQLite memory database at ${file}`,
      error,
      "check free disk space and write permission on the database directory",
    );
  }
  return db;
}

/**
 * The turns of each session in id order, covering the neighbour lookups of every search (next two
 * and previous turn of a match) without reading table rows. Not part of the versioned schema:
 * created on every writable open when missing, so older versions of this package still open the
 * file, and a read-only open without it searches the same, only slower.
 */
const TURN_INDEX = `CREATE INDEX IF NOT EXISTS items_session_turns ON items(session_id, id) WHERE kind = 'turn'`;

/**
 * The schema version of the database at `file` (`PRAGMA user_version`), read without changing it;
 * 0 when there is no file yet. Throws `PROVIDER_UNAVAILABLE` when better-sqlite3 cannot load, and
 * `STORAGE_FAILED` when the file cannot be read as a database.
 */
export function readSchemaVersion(file: string): number {
  if (!fs.existsSync(file)) return 0;
  const Driver = loadDriver();
  if (Driver === undefined) throw new HermesMemoryError({ code: "PROVIDER_UNAVAILABLE", message: storeSpec().unavailable! });
  let db: Db | undefined;
  try {
    db = new Driver(file, { readonly: true, fileMustExist: true });
    return Number(db.pragma("user_version", { simple: true }));
  } catch (error) {
    throw storageError(
      `cannot read the SQLite memory database at ${file}`,
      error,
      "check that it exists, is readable and is a SQLite database",
    );
  } finally {
    db?.close();
  }
}

/**
 * Close a writable connection, first switching the file back to rollback-journal mode when no
 * other connection has it open (a read-only mount can then open it without a `-shm` file).
 */
export function closeDatabase(db: Db): void {
  closeSqliteStore(db);
}

export { isBusyError, isUnwritableError, storageError };
