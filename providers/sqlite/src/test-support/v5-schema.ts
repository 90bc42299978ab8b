import { CONTEXT_CHARS } from "@hermes/memory-provider-kit/sqlite";
import type { Db } from "../database.js";

/** A turn's context text as schema v5 stored it: the start of the turn `idColumn` names, or ''. */
const context = (idColumn: string) =>
  `COALESCE((SELECT substr(p.content, 1, ${CONTEXT_CHARS}) FROM items p WHERE p.id = items.${idColumn}), '')`;

/** Before any row of schema v5's context triggers: the turns before `items` in its session. */
const before = (offset: number, column: string) =>
  `(SELECT ${column} FROM items p WHERE p.session_id = items.session_id AND p.kind = 'turn' AND p.id < items.id ORDER BY p.id DESC LIMIT 1${offset > 0 ? ` OFFSET ${offset}` : ""})`;
const V5_REFILL = `UPDATE items SET
    prev1 = COALESCE(${before(0, `substr(p.content, 1, ${CONTEXT_CHARS})`)}, ''),
    prev2 = COALESCE(${before(1, `substr(p.content, 1, ${CONTEXT_CHARS})`)}, ''),
    prev_id = ${before(0, "p.id")},
    prev2_id = ${before(1, "p.id")}
  WHERE id IN (SELECT n.id FROM items n WHERE n.session_id = old.session_id AND n.kind = 'turn' AND n.id > old.id ORDER BY n.id LIMIT 2);`;

/**
 * Turn a store of the current schema back into what version 5 of this package wrote, for
 * migration tests (frozen copy of the v5 schema): the context text stored in `prev1` / `prev2`, an
 * FTS table with external content over items, and the v5 triggers.
 */
export function downgradeToV5(db: Db): void {
  db.exec(`
    DROP TRIGGER items_bd;
    DROP TRIGGER items_bd_context;
    DROP TRIGGER items_ad_context;
    DROP TRIGGER items_bu;
    DROP TRIGGER items_au;
    DROP TRIGGER items_bu_context;
    DROP TRIGGER items_au_context;
    DROP TABLE items_fts;
    ALTER TABLE items ADD COLUMN prev1 TEXT NOT NULL DEFAULT '';
    ALTER TABLE items ADD COLUMN prev2 TEXT NOT NULL DEFAULT '';
    UPDATE items SET prev1 = ${context("prev_id")}, prev2 = ${context("prev2_id")};
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
    CREATE TRIGGER items_ad_context AFTER DELETE ON items WHEN old.kind = 'turn' AND old.session_id <> '' BEGIN
      ${V5_REFILL}
    END;
    CREATE TRIGGER items_au_context AFTER UPDATE OF content ON items WHEN old.kind = 'turn' AND old.session_id <> '' AND new.content IS NOT old.content BEGIN
      ${V5_REFILL}
    END;
    INSERT INTO items_fts(items_fts, rank) VALUES ('rank', 'bm25(1, 0.25, 0.3, 0.15, 0.25)');
    INSERT INTO items_fts(items_fts) VALUES ('rebuild');
  `);
  db.pragma("user_version = 5");
}
