/**
 * The sidecar's index of filter terms: one row per tag and per scalar value of the caller's
 * metadata (top-level fields, and the elements of top-level lists) of every record, so that a
 * filter on a tag or a metadata value finds the items holding it without reading every row of the
 * namespace. The index narrows the rows a filter is evaluated on; it never decides alone.
 */
import type { Database as SqliteDatabase, Statement } from "better-sqlite3";
import type { MetadataNode, ParsedMemoryFilter } from "@hermes/memory-provider-kit";

/** What a term is: a tag, a text or number value of a metadata field, or a boolean value (1/0) of one. */
const TAG = 0;
const VALUE = 1;
const BOOLEAN = 2;

/** One term: a tag (`field` ''), or a field's value as SQLite compares it (text, number, or 1/0 for booleans). */
type Term = readonly [kind: number, field: string, value: string | number];

/**
 * A filter is narrowed through the index only when its most selective condition holds for at most
 * this many rows; past it, reading each candidate row by key costs more than the namespace scan
 * of the covering filter index.
 */
export const TERM_INDEX_MAX_CANDIDATES = 5_000;

// `doc` as a JSON value json_each can read, or `fallback` (values other programs stored that are not
// JSON match no filter term; a filter's own evaluation reports them).
const jsonOr = (doc: string, fallback: string, type?: string): string =>
  `CASE WHEN json_valid(${doc})${type ? ` AND json_type(${doc}) = '${type}'` : ""} THEN ${doc} ELSE '${fallback}' END`;

const SCALAR_TYPES = `('text', 'integer', 'real', 'true', 'false')`;
const termKind = (type: string): string => `CASE WHEN ${type} IN ('true', 'false') THEN ${BOOLEAN} ELSE ${VALUE} END`;
const termValue = (type: string, value: string): string => `CASE ${type} WHEN 'true' THEN 1 WHEN 'false' THEN 0 ELSE ${value} END`;

/**
 * SELECTs of the terms of the row `r` (`new` in a trigger, or the alias of `records` that `from`
 * names) as (namespace, kind, field, value, key). Tags are the text elements of `tags`, as the tag
 * filters read them; metadata terms are the scalar values of `user_meta`'s top-level fields and of
 * their lists' elements, as the metadata equality filters read them.
 */
function termSelects(r: string, from = ""): string[] {
  const meta = jsonOr(`${r}.user_meta`, "{}", "object");
  return [
    `SELECT ${r}.namespace, ${TAG}, '', t.value, ${r}.key FROM ${from}json_each(${jsonOr(`${r}.tags`, "[]")}) t WHERE t.type = 'text'`,
    `SELECT ${r}.namespace, ${termKind("m.type")}, m.key, ${termValue("m.type", "m.value")}, ${r}.key
      FROM ${from}json_each(${meta}) m WHERE m.type IN ${SCALAR_TYPES}`,
    `SELECT ${r}.namespace, ${termKind("e.type")}, m.key, ${termValue("e.type", "e.value")}, ${r}.key
      FROM ${from}json_each(${meta}) m, json_each(m.value) e WHERE m.type = 'array' AND e.type IN ${SCALAR_TYPES}`,
  ];
}

const INSERT_TERMS = `INSERT OR IGNORE INTO record_terms (namespace, kind, field, value, key)`;

/**
 * The term table and the triggers keeping it exact on every write (insert, update of a row's
 * namespace, tags or caller metadata, delete), whichever connection writes. Rows are keyed by
 * namespace first: a search reads one namespace's terms.
 */
export const FILTER_TERMS_SCHEMA = `
  CREATE TABLE IF NOT EXISTS record_terms (
    namespace TEXT NOT NULL,
    kind INTEGER NOT NULL,
    field TEXT NOT NULL,
    value NOT NULL,
    key INTEGER NOT NULL,
    PRIMARY KEY (namespace, kind, field, value, key)
  ) WITHOUT ROWID;
  CREATE INDEX IF NOT EXISTS record_terms_by_key ON record_terms (key);
  CREATE TRIGGER IF NOT EXISTS record_terms_ai AFTER INSERT ON records BEGIN
    ${INSERT_TERMS} ${termSelects("new").join(" UNION ALL ")};
  END;
  CREATE TRIGGER IF NOT EXISTS record_terms_ad AFTER DELETE ON records BEGIN
    DELETE FROM record_terms WHERE key = old.key;
  END;
  CREATE TRIGGER IF NOT EXISTS record_terms_au AFTER UPDATE OF key, namespace, tags, user_meta ON records
    WHEN old.key IS NOT new.key OR old.namespace IS NOT new.namespace OR old.tags IS NOT new.tags OR old.user_meta IS NOT new.user_meta BEGIN
    DELETE FROM record_terms WHERE key = old.key;
    ${INSERT_TERMS} ${termSelects("new").join(" UNION ALL ")};
  END;
`;

/** Fill the term table from every existing row (the migration that adds it). */
export function fillFilterTerms(db: SqliteDatabase): void {
  db.exec(
    `DELETE FROM record_terms; ${termSelects("r", "records r, ")
      .map((select) => `${INSERT_TERMS} ${select};`)
      .join("\n")}`,
  );
}

/** True when the file has the term table (a read-only file of an older version has not). */
export function hasFilterTerms(db: SqliteDatabase): boolean {
  return db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'record_terms'`).get() !== undefined;
}

// A field the metadata filter reads through the JSON path `$."<field>"`: one with a quote or a
// backslash would be read under another path, so it is never looked up in the index.
const indexableField = (field: string): boolean => !/["\\]/.test(field);

function valueTerm(field: string, value: string | number | boolean): Term {
  return typeof value === "boolean" ? [BOOLEAN, field, value ? 1 : 0] : [VALUE, field, value];
}

/** The terms of equality with any of `values`; `null` when one of them is never a stored value (a non-finite number). */
function valueTerms(field: string, values: ReadonlyArray<string | number | boolean>): Term[] | null {
  if (!indexableField(field) || values.some((v) => typeof v === "number" && !Number.isFinite(v))) return null;
  return values.map((v) => valueTerm(field, v));
}

/**
 * Terms of which every row passing `node` holds at least one (`null` when no such list is known):
 * an equality or `in` holds one of its values; `and` the shortest list of its conditions; `or` the
 * lists of all of its conditions together. Negations, ranges and `exists` give none.
 */
function metadataTerms(node: MetadataNode): Term[] | null {
  switch (node.type) {
    case "eq":
      return valueTerms(node.field, [node.value]);
    case "in":
      return valueTerms(node.field, node.values);
    case "and": {
      let best: Term[] | null = null;
      for (const child of node.nodes) {
        const terms = metadataTerms(child);
        if (terms !== null && (best === null || terms.length < best.length)) best = terms;
      }
      return best;
    }
    case "or": {
      const all: Term[] = [];
      for (const child of node.nodes) {
        const terms = metadataTerms(child);
        if (terms === null) return null;
        all.push(...terms);
      }
      return all;
    }
    default:
      return null;
  }
}

/**
 * The filter's conditions that the index answers, each as the terms of which every passing row
 * holds at least one (any tag of `tagsAny`; each tag of `tagsAll`; the metadata condition's terms).
 */
export function necessaryTerms(filter: ParsedMemoryFilter): Term[][] {
  const out: Term[][] = [];
  if (filter.tagsAny) out.push(filter.tagsAny.map((tag): Term => [TAG, "", tag]));
  for (const tag of filter.tagsAll ?? []) out.push([[TAG, "", tag]]);
  // Each condition of a top-level `and` is a condition of its own (the most selective one is used).
  const metadata = filter.metadata?.type === "and" ? filter.metadata.nodes : filter.metadata ? [filter.metadata] : [];
  for (const node of metadata) {
    const terms = metadataTerms(node);
    if (terms !== null) out.push(terms);
  }
  return out;
}

// The keys of a namespace's rows holding any of the terms given as a JSON list of [kind, field, value].
const TERM_KEYS = `SELECT t.key FROM json_each(?) a CROSS JOIN record_terms t
  ON t.namespace = ? AND t.kind = json_extract(a.value, '$[0]') AND t.field = json_extract(a.value, '$[1]') AND t.value = json_extract(a.value, '$[2]')`;

/** Reads of the term index on one connection. */
export class FilterTermIndex {
  private readonly count: Statement;

  constructor(
    db: SqliteDatabase,
    private readonly prepare: (sql: string) => Statement,
  ) {
    this.count = db.prepare(`SELECT count(*) FROM (${TERM_KEYS} LIMIT ?)`).pluck();
  }

  /**
   * The terms of the filter's most selective indexed condition (as JSON for `TERM_KEYS`), when at
   * most `TERM_INDEX_MAX_CANDIDATES` rows of the namespace hold one of them; `null` otherwise.
   */
  narrowest(namespace: string, filter: ParsedMemoryFilter): string | null {
    let best: { json: string; rows: number } | null = null;
    for (const terms of necessaryTerms(filter)) {
      const json = JSON.stringify(terms);
      // Counted only up to the best so far: a common term costs no more than the rare one found.
      const limit = best === null ? TERM_INDEX_MAX_CANDIDATES + 1 : best.rows;
      const rows = this.count.get(json, namespace, limit) as number;
      if (rows < limit) best = { json, rows };
      if (best?.rows === 0) break;
    }
    return best === null ? null : best.json;
  }

  /**
   * Keys (in key order) of the rows of `namespace` holding one of `terms` and passing `condition`
   * (SQL over `records r`), reading only those rows by key.
   */
  passingAmong(terms: string, namespace: string, condition: { sql: string; params: unknown[] }): number[] {
    const sql = `SELECT r.key FROM (SELECT DISTINCT c.key FROM (${TERM_KEYS}) c) k CROSS JOIN records r ON r.key = k.key
      WHERE r.namespace = ? AND ${condition.sql} ORDER BY r.key`;
    return this.prepare(sql)
      .pluck()
      .all(terms, namespace, namespace, ...condition.params) as number[];
  }
}
