import type { Db } from "../database.js";
import { downgradeToV5 } from "./v5-schema.js";

/**
 * The context triggers as schema version 4 of this package wrote them (frozen copy): deleting or
 * editing a turn refilled the context text of the next two turns of its session, and nothing else.
 */
const V4_REFILL = `UPDATE items SET
    prev1 = COALESCE((SELECT substr(p.content, 1, 160) FROM items p WHERE p.session_id = items.session_id AND p.kind = 'turn' AND p.id < items.id ORDER BY p.id DESC LIMIT 1), ''),
    prev2 = COALESCE((SELECT substr(p.content, 1, 160) FROM items p WHERE p.session_id = items.session_id AND p.kind = 'turn' AND p.id < items.id ORDER BY p.id DESC LIMIT 1 OFFSET 1), '')
  WHERE id IN (SELECT n.id FROM items n WHERE n.session_id = old.session_id AND n.kind = 'turn' AND n.id > old.id ORDER BY n.id LIMIT 2);`;

/**
 * Turn a store of the current schema back into what version 4 wrote, for migration tests: back to
 * v5 first (`downgradeToV5`), then the columns v5 added go (each turn's previous turn ids and question flag) and the v4 context
 * triggers come back.
 */
export function downgradeToV4(db: Db): void {
  downgradeToV5(db);
  db.exec(`
    DROP TRIGGER items_ad_context;
    DROP TRIGGER items_au_context;
    ALTER TABLE items DROP COLUMN prev_id;
    ALTER TABLE items DROP COLUMN prev2_id;
    ALTER TABLE items DROP COLUMN asks;
    CREATE TRIGGER items_ad_context AFTER DELETE ON items WHEN old.kind = 'turn' AND old.session_id <> '' BEGIN
      ${V4_REFILL}
    END;
    CREATE TRIGGER items_au_context AFTER UPDATE OF content ON items WHEN old.kind = 'turn' AND old.session_id <> '' AND new.content IS NOT old.content BEGIN
      ${V4_REFILL}
    END;
  `);
  db.pragma("user_version = 4");
}
