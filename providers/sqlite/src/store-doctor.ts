import type { Db } from "./database.js";
import { unreadableItemIds, UNREADABLE_KEY } from "./unreadable-values.js";

/** Result of `checkStore` (the store's `doctor()`). */
export interface DoctorReport {
  ok: boolean;
  integrity: string;
  ftsConsistent: boolean;
  schemaVersion: number;
  journalMode: string;
  items: number;
  problems: string[];
}

/**
 * Check an open store's file and index: SQLite's `PRAGMA integrity_check`, FTS5's own
 * integrity check, one index entry per item, and stored values SQLite's JSON functions can read.
 * Each problem found says how to repair it. Never throws: a check that fails is a problem.
 */
export function checkStore(db: Db): DoctorReport {
  const problems: string[] = [];
  let integrity = "unknown";
  let ftsConsistent = false;
  let items = 0;
  try {
    const rows = db.pragma("integrity_check") as Array<{ integrity_check: string }>;
    integrity = rows.map((r) => r.integrity_check).join("; ");
    if (integrity !== "ok") problems.push(`integrity_check: ${integrity}`);
  } catch (error) {
    problems.push(`integrity_check failed: ${(error as Error).message}`);
  }
  try {
    db.prepare(`INSERT INTO items_fts(items_fts, rank) VALUES ('integrity-check', 1)`).run();
    ftsConsistent = true;
  } catch (error) {
    problems.push(`FTS index out of sync with items (${(error as Error).message}); run \`hermes-memory sqlite vacuum\` to rebuild it`);
  }
  try {
    items = (db.prepare(`SELECT COUNT(*) AS n FROM items`).get() as { n: number }).n;
    // The contentless index holds exactly one entry (a length record) per item: fewer means
    // items that no search finds, more means entries left behind by a delete.
    const entries = (db.prepare(`SELECT COUNT(*) AS n FROM items_fts_docsize`).get() as { n: number }).n;
    if (entries !== items) {
      ftsConsistent = false;
      problems.push(
        `FTS index holds ${entries} entries for ${items} items (it must hold exactly one per item); run \`hermes-memory sqlite vacuum\` to index every item again`,
      );
    }
  } catch (error) {
    problems.push(`cannot count items and index entries: ${(error as Error).message}`);
  }
  try {
    const ids = unreadableItemIds(db, 11);
    if (ids.length > 0) {
      problems.push(
        `item(s) ${ids.slice(0, 10).join(", ")}${ids.length > 10 ? " and more" : ""} hold text, tags or metadata that cannot be read as text or JSON (filtered searches fail on them); ` +
          `run \`hermes-memory sqlite vacuum\` to repair them (unreadable originals move to metadata.${UNREADABLE_KEY})`,
      );
    }
  } catch (error) {
    problems.push(`cannot check stored values: ${(error as Error).message}`);
  }
  return {
    ok: problems.length === 0,
    integrity,
    ftsConsistent,
    schemaVersion: Number(db.pragma("user_version", { simple: true })),
    journalMode: String(db.pragma("journal_mode", { simple: true })),
    items,
    problems,
  };
}
