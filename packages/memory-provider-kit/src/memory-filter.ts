/**
 * Memory filters (`MemoryFilter` / `ForgetScope` of core), parsed once and then evaluated either in
 * JavaScript or as a SQL condition over a SQLite table. Both evaluations follow the same rules, so
 * a store that filters in SQL and one that filters in memory select the same items:
 *
 * - every condition given must hold (`kind` any of a list, `tags.any` / `tags.all`, a creation-time
 *   range, metadata conditions, ids);
 * - metadata conditions look at top-level fields only. A bare value means `$eq`. On a field holding
 *   a list, `$eq` / `$in` match when any element matches and `$ne` / `$nin` when none does;
 *   `$gt $gte $lt $lte` compare numbers and never match a list; values compare by type (the
 *   number 1 is not the text "1" nor `true`); a missing or `null` field matches only `$ne`, `$nin`
 *   and `$exists: false`;
 * - malformed filters are refused with `INVALID_ARGUMENT` before any store is touched.
 */
import { HermesMemoryError, describeValue, type MemoryKind } from "@hermes/memory-core";

/** A scalar a metadata condition compares with. */
export type FilterScalar = string | number | boolean;

/** One parsed metadata condition, or a combination of them. */
export type MetadataNode =
  | { readonly type: "and" | "or"; readonly nodes: readonly MetadataNode[] }
  | { readonly type: "eq" | "ne"; readonly field: string; readonly value: FilterScalar }
  | { readonly type: "in" | "nin"; readonly field: string; readonly values: readonly FilterScalar[] }
  | { readonly type: "gt" | "gte" | "lt" | "lte"; readonly field: string; readonly value: number }
  | { readonly type: "exists"; readonly field: string; readonly value: boolean };

/** A creation-time range in epoch milliseconds. */
export interface ParsedTimeRange {
  gt?: number;
  gte?: number;
  lt?: number;
  lte?: number;
}

/** A validated filter. Empty (`isEmptyFilter`) when no condition was given. */
export interface ParsedMemoryFilter {
  ids?: readonly string[];
  kinds?: readonly MemoryKind[];
  sessionId?: string;
  userId?: string;
  tagsAny?: readonly string[];
  tagsAll?: readonly string[];
  createdAt?: ParsedTimeRange;
  metadata?: MetadataNode;
}

/** What a filter is evaluated against in JavaScript. */
export interface FilterRecord {
  id?: string;
  kind: MemoryKind;
  sessionId?: string | null | undefined;
  userId?: string | null | undefined;
  tags?: readonly string[] | undefined;
  metadata?: Readonly<Record<string, unknown>> | undefined;
  /** Creation time, epoch milliseconds. */
  createdAt: number;
}

/** Options of `parseMemoryFilter`. */
export interface ParseFilterOptions {
  /** Names the argument in error messages, e.g. `search options`. Default `filter`. */
  what?: string;
  /** Accept an `ids` list (erasure scopes). Default false. */
  allowIds?: boolean;
  /** Keys of the object that are not filter conditions and are skipped (e.g. `limit`). */
  ignore?: readonly string[];
}

/** The kinds of memory item, in the order messages list them. */
export const MEMORY_ITEM_KINDS: readonly MemoryKind[] = ["turn", "fact", "checkpoint"];
const FILTER_KEYS = new Set(["kind", "sessionId", "userId", "tags", "createdAt", "metadata", "ids"]);
/** Deepest nesting of `$and` / `$or` accepted. */
export const MAX_FILTER_DEPTH = 16;
/** Most conditions (and list elements) one filter may hold. */
export const MAX_FILTER_CONDITIONS = 1000;
/** Longest metadata field name accepted. */
export const MAX_FIELD_NAME_LENGTH = 256;
/**
 * The one metadata field name refused: JavaScript objects read and write `__proto__` as their
 * prototype, so code that copies metadata by assignment drops it or changes a prototype, and two
 * stores would find different items for a filter on it. Refused when stored and when filtered on.
 */
export const PROTO_FIELD = "__proto__";
/** Why `PROTO_FIELD` is refused, and what to do instead (the end of every refusal). */
export const PROTO_FIELD_RULE = `a metadata field may not be named "${PROTO_FIELD}" (JavaScript objects treat that name as their prototype, so it cannot be stored and filtered on alike in every store); rename it.`;

function invalid(message: string): never {
  throw new HermesMemoryError({ code: "INVALID_ARGUMENT", message });
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof Date);

/**
 * A point in time given as ISO 8601 text, a `Date` or epoch milliseconds, as epoch milliseconds.
 * Throws `INVALID_ARGUMENT` naming `what` when it is none of these or not a valid time.
 */
export function toEpochMs(value: unknown, what: string): number {
  let ms: number;
  if (value instanceof Date) ms = value.getTime();
  else if (typeof value === "number") ms = value;
  else if (typeof value === "string" && value.trim() !== "") ms = Date.parse(value);
  else ms = Number.NaN;
  if (!Number.isFinite(ms) || Math.abs(ms) > 8.64e15) {
    invalid(`${what} must be an ISO 8601 time, a Date or epoch milliseconds; got ${describeValue(value)}.`);
  }
  return Math.trunc(ms);
}

/** Hits a search returns when the caller gives no `limit`. */
export const DEFAULT_SEARCH_LIMIT = 10;
/** Most hits one search returns by default (`parseSearchLimit`'s `max`). */
export const MAX_SEARCH_LIMIT = 1000;

/**
 * The number of hits a search returns for the caller's `limit`: `fallback` (default
 * `DEFAULT_SEARCH_LIMIT`) when it is `undefined` or `null`; a number of at least 1 is rounded down
 * and capped at `max` (default `MAX_SEARCH_LIMIT`; `Infinity` means "as many as allowed").
 * Anything else (0, a negative number, `NaN`, text) is refused with `INVALID_ARGUMENT`, never
 * quietly replaced by the default.
 */
export function parseSearchLimit(value: unknown, options: { fallback?: number; max?: number; what?: string } = {}): number {
  const max = options.max ?? MAX_SEARCH_LIMIT;
  if (value === undefined || value === null) return Math.min(max, options.fallback ?? DEFAULT_SEARCH_LIMIT);
  if (typeof value !== "number" || Number.isNaN(value) || value < 1) {
    invalid(`${options.what ?? "search options"}: limit must be a number of at least 1; got ${describeValue(value)}.`);
  }
  return Math.min(max, Math.floor(value));
}

/** Longest time to live accepted (100 years), and longest accepted by `resolveExpiry` in general. */
const MAX_TTL_MS = 100 * 365 * 24 * 3600 * 1000;

/**
 * The expiry time (epoch ms) of an item from its `expiresAt` or `ttlMs`, or `null` when it has
 * neither. Throws `INVALID_ARGUMENT` when both are given, when `ttlMs` is not a positive number of
 * milliseconds, or when `expiresAt` is not a valid time. An `expiresAt` in the past is accepted:
 * the item is stored already expired and never returned.
 */
export function resolveExpiry(item: { expiresAt?: unknown; ttlMs?: unknown }, now: number = Date.now()): number | null {
  const hasAt = item.expiresAt !== undefined && item.expiresAt !== null;
  const hasTtl = item.ttlMs !== undefined && item.ttlMs !== null;
  if (hasAt && hasTtl) invalid("Give expiresAt or ttlMs, not both.");
  if (hasTtl) {
    const ttl = item.ttlMs;
    if (typeof ttl !== "number" || !Number.isFinite(ttl) || ttl <= 0 || ttl > MAX_TTL_MS) {
      invalid(`ttlMs must be a positive number of milliseconds up to ${MAX_TTL_MS}; got ${describeValue(ttl)}.`);
    }
    return now + Math.ceil(ttl);
  }
  if (hasAt) return toEpochMs(item.expiresAt, "expiresAt");
  return null;
}

class FilterParser {
  private conditions = 0;

  constructor(private readonly what: string) {}

  private count(n = 1): void {
    this.conditions += n;
    if (this.conditions > MAX_FILTER_CONDITIONS) invalid(`${this.what} has more than ${MAX_FILTER_CONDITIONS} conditions.`);
  }

  text(value: unknown, path: string, maxLength = 4096): string {
    if (typeof value !== "string" || value === "" || value.length > maxLength) {
      invalid(`${this.what}: ${path} must be non-empty text of at most ${maxLength} characters; got ${describeValue(value)}.`);
    }
    return value;
  }

  textList(value: unknown, path: string): string[] {
    if (!Array.isArray(value) || value.length === 0)
      invalid(`${this.what}: ${path} must be a non-empty list of text; got ${describeValue(value)}.`);
    this.count(value.length);
    return [...new Set(value.map((v, i) => this.text(v, `${path}[${i}]`)))];
  }

  kinds(value: unknown): MemoryKind[] {
    const list = Array.isArray(value) ? value : [value];
    if (list.length === 0) invalid(`${this.what}: kind must be turn, fact or checkpoint, or a non-empty list of them.`);
    return [
      ...new Set(
        list.map((k) => {
          if (!MEMORY_ITEM_KINDS.includes(k as MemoryKind))
            invalid(`${this.what}: kind must be turn, fact or checkpoint; got ${describeValue(k)}.`);
          return k as MemoryKind;
        }),
      ),
    ];
  }

  tags(value: unknown): { any?: string[]; all?: string[] } {
    if (!isPlainObject(value)) invalid(`${this.what}: tags must be an object { any?: [...], all?: [...] }; got ${describeValue(value)}.`);
    const out: { any?: string[]; all?: string[] } = {};
    for (const [key, list] of Object.entries(value)) {
      if (list === undefined) continue;
      if (key !== "any" && key !== "all") invalid(`${this.what}: tags takes "any" and "all"; got "${key}".`);
      out[key] = this.textList(list, `tags.${key}`);
    }
    if (!out.any && !out.all) invalid(`${this.what}: tags needs "any" or "all".`);
    return out;
  }

  range(value: unknown): ParsedTimeRange {
    if (!isPlainObject(value))
      invalid(`${this.what}: createdAt must be an object with $gt, $gte, $lt or $lte; got ${describeValue(value)}.`);
    const out: ParsedTimeRange = {};
    for (const [op, bound] of Object.entries(value)) {
      if (bound === undefined) continue;
      if (op !== "$gt" && op !== "$gte" && op !== "$lt" && op !== "$lte") {
        invalid(`${this.what}: createdAt takes $gt, $gte, $lt and $lte; got "${op}".`);
      }
      out[op.slice(1) as keyof ParsedTimeRange] = toEpochMs(bound, `${this.what}: createdAt.${op}`);
    }
    if (Object.keys(out).length === 0) invalid(`${this.what}: createdAt needs at least one of $gt, $gte, $lt, $lte.`);
    return out;
  }

  private scalar(value: unknown, path: string): FilterScalar {
    if (typeof value === "string" || typeof value === "boolean") return value;
    if (typeof value === "number" && Number.isFinite(value)) return value;
    invalid(`${this.what}: ${path} must be text, a finite number or a boolean; got ${describeValue(value)}.`);
  }

  private field(name: string, path: string): string {
    if (name === "" || name.length > MAX_FIELD_NAME_LENGTH || name.startsWith("$") || /["\\]/.test(name) || /\p{Cc}/u.test(name)) {
      invalid(
        `${this.what}: ${path}: "${name.slice(0, 40)}" is not a metadata field or operator. Field names are 1–${MAX_FIELD_NAME_LENGTH} characters without a leading $, quotes, backslashes or control characters; operators are $and and $or.`,
      );
    }
    if (name === PROTO_FIELD) invalid(`${this.what}: ${path}: ${PROTO_FIELD_RULE}`);
    return name;
  }

  metadata(value: unknown, path = "metadata", depth = 0): MetadataNode {
    if (depth > MAX_FILTER_DEPTH) invalid(`${this.what}: ${path} nests $and/$or deeper than ${MAX_FILTER_DEPTH} levels.`);
    if (!isPlainObject(value)) invalid(`${this.what}: ${path} must be an object of field conditions; got ${describeValue(value)}.`);
    const nodes: MetadataNode[] = [];
    for (const [key, condition] of Object.entries(value)) {
      if (condition === undefined) continue;
      if (key === "$and" || key === "$or") {
        if (!Array.isArray(condition) || condition.length === 0)
          invalid(`${this.what}: ${path}.${key} must be a non-empty list of filters.`);
        this.count();
        nodes.push({
          type: key === "$and" ? "and" : "or",
          nodes: condition.map((c, i) => this.metadata(c, `${path}.${key}[${i}]`, depth + 1)),
        });
        continue;
      }
      const field = this.field(key, path);
      const at = `${path}.${field}`;
      if (!isPlainObject(condition)) {
        this.count();
        nodes.push({ type: "eq", field, value: this.scalar(condition, at) });
        continue;
      }
      const ops = Object.entries(condition).filter(([, v]) => v !== undefined);
      if (ops.length === 0) invalid(`${this.what}: ${at} has no operator.`);
      for (const [op, operand] of ops) {
        this.count();
        switch (op) {
          case "$eq":
          case "$ne":
            nodes.push({ type: op === "$eq" ? "eq" : "ne", field, value: this.scalar(operand, `${at}.${op}`) });
            break;
          case "$in":
          case "$nin":
            // An empty list matches no item ($in) or every item ($nin): never what a caller meant,
            // and under an erasure it would erase everything.
            if (!Array.isArray(operand) || operand.length === 0) {
              invalid(
                `${this.what}: ${at}.${op} must be a non-empty list; got ${describeValue(operand)}. An empty ${op} would match ${op === "$in" ? "no item" : "every item"}: leave the condition out or list the values.`,
              );
            }
            this.count(operand.length);
            nodes.push({ type: op === "$in" ? "in" : "nin", field, values: operand.map((v, i) => this.scalar(v, `${at}.${op}[${i}]`)) });
            break;
          case "$gt":
          case "$gte":
          case "$lt":
          case "$lte":
            if (typeof operand !== "number" || !Number.isFinite(operand))
              invalid(`${this.what}: ${at}.${op} compares numbers; got ${describeValue(operand)}.`);
            nodes.push({ type: op.slice(1) as "gt" | "gte" | "lt" | "lte", field, value: operand });
            break;
          case "$exists":
            if (typeof operand !== "boolean") invalid(`${this.what}: ${at}.$exists must be true or false; got ${describeValue(operand)}.`);
            nodes.push({ type: "exists", field, value: operand });
            break;
          default:
            invalid(`${this.what}: ${at}: unknown operator "${op.slice(0, 40)}"; use $eq $ne $in $nin $gt $gte $lt $lte $exists.`);
        }
      }
    }
    if (nodes.length === 0) invalid(`${this.what}: ${path} has no condition.`);
    return nodes.length === 1 ? nodes[0]! : { type: "and", nodes };
  }
}

/**
 * Validate a `MemoryFilter` (or a `ForgetScope` with `allowIds`) and return its parsed form.
 * `undefined` / `null` give the empty filter. Throws `INVALID_ARGUMENT` with a message naming the
 * offending key on anything malformed, including unknown keys (a misspelt key must not silently
 * widen a search or an erasure).
 */
export function parseMemoryFilter(input: unknown, options: ParseFilterOptions = {}): ParsedMemoryFilter {
  const what = options.what ?? "filter";
  if (input === undefined || input === null) return {};
  if (!isPlainObject(input)) invalid(`${what} must be an object; got ${describeValue(input)}.`);
  const parser = new FilterParser(what);
  const ignore = new Set(options.ignore ?? []);
  const out: ParsedMemoryFilter = {};
  for (const [key, value] of Object.entries(input)) {
    if (value === undefined || ignore.has(key)) continue;
    if (!FILTER_KEYS.has(key) || (key === "ids" && !options.allowIds)) {
      const allowed = [...FILTER_KEYS].filter((k) => k !== "ids" || options.allowIds).join(", ");
      invalid(`${what}: unknown key "${key.slice(0, 40)}"; use ${allowed}.`);
    }
    switch (key) {
      case "kind":
        out.kinds = parser.kinds(value);
        break;
      case "sessionId":
        out.sessionId = parser.text(value, "sessionId");
        break;
      case "userId":
        out.userId = parser.text(value, "userId");
        break;
      case "tags": {
        const tags = parser.tags(value);
        if (tags.any) out.tagsAny = tags.any;
        if (tags.all) out.tagsAll = tags.all;
        break;
      }
      case "createdAt":
        out.createdAt = parser.range(value);
        break;
      case "metadata":
        out.metadata = parser.metadata(value);
        break;
      case "ids":
        out.ids = parser.textList(value, "ids");
        break;
    }
  }
  return out;
}

/** True when the filter has no condition (it selects every item). */
export function isEmptyFilter(filter: ParsedMemoryFilter): boolean {
  return Object.keys(filter).length === 0;
}

/** True when the filter needs more than `kind` (single), `sessionId` and `userId` (the conditions every store has always supported). */
export function needsExtendedFilter(filter: ParsedMemoryFilter): boolean {
  return (
    (filter.kinds !== undefined && filter.kinds.length > 1) ||
    filter.tagsAny !== undefined ||
    filter.tagsAll !== undefined ||
    filter.createdAt !== undefined ||
    filter.metadata !== undefined ||
    filter.ids !== undefined
  );
}

// --- evaluation in JavaScript -------------------------------------------------------------------

function sameScalar(actual: unknown, expected: FilterScalar): boolean {
  return typeof actual === typeof expected && actual === expected;
}

function eqValue(actual: unknown, expected: FilterScalar): boolean {
  return Array.isArray(actual) ? actual.some((e) => sameScalar(e, expected)) : sameScalar(actual, expected);
}

function matchesNode(metadata: Readonly<Record<string, unknown>>, node: MetadataNode): boolean {
  switch (node.type) {
    case "and":
      return node.nodes.every((n) => matchesNode(metadata, n));
    case "or":
      return node.nodes.some((n) => matchesNode(metadata, n));
    default:
      break;
  }
  const actual = Object.prototype.hasOwnProperty.call(metadata, node.field) ? metadata[node.field] : undefined;
  switch (node.type) {
    case "eq":
      return eqValue(actual, node.value);
    case "ne":
      return !eqValue(actual, node.value);
    case "in":
      return node.values.some((v) => eqValue(actual, v));
    case "nin":
      return !node.values.some((v) => eqValue(actual, v));
    case "gt":
      return typeof actual === "number" && actual > node.value;
    case "gte":
      return typeof actual === "number" && actual >= node.value;
    case "lt":
      return typeof actual === "number" && actual < node.value;
    case "lte":
      return typeof actual === "number" && actual <= node.value;
    case "exists":
      return (actual !== undefined && actual !== null) === node.value;
  }
}

/** True when the metadata passes the metadata condition `node`. */
export function matchesMetadata(metadata: Readonly<Record<string, unknown>> | undefined, node: MetadataNode): boolean {
  return matchesNode(metadata ?? {}, node);
}

function inRange(t: number, r: ParsedTimeRange): boolean {
  return (
    (r.gt === undefined || t > r.gt) &&
    (r.gte === undefined || t >= r.gte) &&
    (r.lt === undefined || t < r.lt) &&
    (r.lte === undefined || t <= r.lte)
  );
}

/** True when `record` passes every condition of `filter` (a `MemoryFilter` as `parseMemoryFilter` parsed it). */
export function matchesMemoryFilter(filter: ParsedMemoryFilter, record: FilterRecord): boolean {
  if (filter.ids && (record.id === undefined || !filter.ids.includes(record.id))) return false;
  if (filter.kinds && !filter.kinds.includes(record.kind)) return false;
  if (filter.sessionId !== undefined && record.sessionId !== filter.sessionId) return false;
  if (filter.userId !== undefined && record.userId !== filter.userId) return false;
  const tags = record.tags ?? [];
  if (filter.tagsAny && !filter.tagsAny.some((t) => tags.includes(t))) return false;
  if (filter.tagsAll && !filter.tagsAll.every((t) => tags.includes(t))) return false;
  if (filter.createdAt && !inRange(record.createdAt, filter.createdAt)) return false;
  if (filter.metadata && !matchesNode(record.metadata ?? {}, filter.metadata)) return false;
  return true;
}

// --- evaluation in SQL ---------------------------------------------------------------------------

/** The SQL expressions (usually column names, optionally with a table alias) a filter is compiled over. */
export interface FilterSqlColumns {
  /** The item id; needed only for filters with `ids`. */
  id?: string;
  kind: string;
  sessionId: string;
  userId: string;
  /** A JSON array of text. */
  tags: string;
  /** A JSON object. */
  metadata: string;
  /** Creation time, epoch milliseconds. */
  createdAt: string;
}

/** A compiled condition: `sql` with `?` placeholders bound, in order, to `params`. */
export interface FilterSql {
  sql: string;
  params: unknown[];
}

/** Options of `filterToSql`. */
export interface FilterSqlOptions {
  /** The stored id value of an id of the API; `undefined` for an id that cannot exist (it matches nothing). */
  idValue?: (id: string) => unknown;
  /**
   * The tags and metadata columns hold text written by `JSON.stringify` (a provider's own columns,
   * never text from elsewhere). A text value equal to `v` then appears in that text as
   * `JSON.stringify(v)`, so an `instr` test of it is added before the JSON functions: it rules out
   * most rows without parsing their JSON, and the result is the same. Default `false`.
   */
  stringifiedJson?: boolean;
}

function jsonPath(field: string): string {
  return `$."${field}"`;
}

// Longer tag lists are matched by the JSON functions alone (one `instr` per tag would cost more).
const PREFILTERED_TAGS = 32;

// `instr(doc, JSON of text) > 0`: true for every `doc` written by JSON.stringify holding `text` as a value.
function containsSql(doc: string, text: string, params: unknown[]): string {
  params.push(JSON.stringify(text));
  return `instr(${doc}, ?) > 0`;
}

// SQL matching one scalar against a JSON value at `path` of `doc` (a scalar, or any element of a
// list), typed like `sameScalar`. Returns 0/1, never NULL.
function eqSql(doc: string, field: string, value: FilterScalar, params: unknown[], stringified: boolean): string {
  const path = jsonPath(field);
  if (typeof value === "boolean") {
    const type = value ? "true" : "false";
    params.push(path, type, path, path, type);
    return `(IFNULL(json_type(${doc}, ?) = ?, 0) OR IFNULL(json_type(${doc}, ?) = 'array', 0) AND EXISTS (SELECT 1 FROM json_each(${doc}, ?) e WHERE e.type = ?))`;
  }
  const types = typeof value === "string" ? "('text')" : "('integer', 'real')";
  // The value is compared first and its type checked only when it is equal (rare): one JSON
  // look-up per row instead of two for the common, non-matching row.
  // In text written by JSON.stringify, an equal text value is there as its JSON form: a cheap
  // necessary condition checked before any JSON is parsed.
  const prefilter = stringified && typeof value === "string" ? containsSql(doc, value, params) : null;
  params.push(path, value, path, path, path, value);
  const exact = `(IFNULL(json_extract(${doc}, ?) = ? AND json_type(${doc}, ?) IN ${types}, 0) OR IFNULL(json_type(${doc}, ?) = 'array', 0) AND EXISTS (SELECT 1 FROM json_each(${doc}, ?) e WHERE e.type IN ${types} AND e.value = ?))`;
  return prefilter === null ? exact : `(${prefilter} AND ${exact})`;
}

function metadataSql(doc: string, node: MetadataNode, params: unknown[], stringified: boolean): string {
  switch (node.type) {
    case "and":
    case "or":
      return `(${node.nodes.map((n) => metadataSql(doc, n, params, stringified)).join(node.type === "and" ? " AND " : " OR ")})`;
    case "eq":
      return eqSql(doc, node.field, node.value, params, stringified);
    case "ne":
      return `NOT ${eqSql(doc, node.field, node.value, params, stringified)}`;
    case "in":
    case "nin": {
      const any =
        node.values.length === 0 ? "0" : `(${node.values.map((v) => eqSql(doc, node.field, v, params, stringified)).join(" OR ")})`;
      return node.type === "in" ? any : `NOT ${any}`;
    }
    case "gt":
    case "gte":
    case "lt":
    case "lte": {
      const op = { gt: ">", gte: ">=", lt: "<", lte: "<=" }[node.type];
      const path = jsonPath(node.field);
      params.push(path, path, node.value);
      return `IFNULL(json_type(${doc}, ?) IN ('integer', 'real') AND json_extract(${doc}, ?) ${op} ?, 0)`;
    }
    case "exists":
      params.push(jsonPath(node.field));
      return `(IFNULL(json_type(${doc}, ?), 'null') <> 'null') = ${node.value ? 1 : 0}`;
  }
}

/**
 * Compile `filter` to a SQL condition over `columns` (SQLite with its JSON functions). The empty
 * filter compiles to `1`. Values are always bound as parameters, never spliced into the text.
 */
export function filterToSql(filter: ParsedMemoryFilter, columns: FilterSqlColumns, options: FilterSqlOptions = {}): FilterSql {
  const parts: string[] = [];
  const params: unknown[] = [];
  if (filter.ids) {
    if (!columns.id) throw new TypeError("filterToSql: the filter has ids but no id column was given");
    const values = filter.ids.map((id) => (options.idValue ? options.idValue(id) : id)).filter((v) => v !== undefined);
    params.push(JSON.stringify(values));
    parts.push(`${columns.id} IN (SELECT value FROM json_each(?))`);
  }
  if (filter.kinds) {
    params.push(...filter.kinds);
    parts.push(`${columns.kind} IN (${filter.kinds.map(() => "?").join(", ")})`);
  }
  if (filter.sessionId !== undefined) {
    params.push(filter.sessionId);
    parts.push(`${columns.sessionId} = ?`);
  }
  if (filter.userId !== undefined) {
    params.push(filter.userId);
    parts.push(`${columns.userId} = ?`);
  }
  const stringified = options.stringifiedJson === true;
  if (filter.tagsAny) {
    // Some tag's JSON form must be in the text; only the lists that pass are parsed.
    if (stringified && filter.tagsAny.length <= PREFILTERED_TAGS)
      parts.push(`(${filter.tagsAny.map((tag) => containsSql(columns.tags, tag, params)).join(" OR ")})`);
    params.push(JSON.stringify(filter.tagsAny));
    parts.push(`EXISTS (SELECT 1 FROM json_each(${columns.tags}) t WHERE t.type = 'text' AND t.value IN (SELECT value FROM json_each(?)))`);
  }
  if (filter.tagsAll) {
    if (stringified && filter.tagsAll.length <= PREFILTERED_TAGS)
      parts.push(...filter.tagsAll.map((tag) => containsSql(columns.tags, tag, params)));
    params.push(JSON.stringify(filter.tagsAll));
    parts.push(
      `NOT EXISTS (SELECT 1 FROM json_each(?) w WHERE w.value NOT IN (SELECT t.value FROM json_each(${columns.tags}) t WHERE t.type = 'text'))`,
    );
  }
  if (filter.createdAt) {
    const ops = { gt: ">", gte: ">=", lt: "<", lte: "<=" } as const;
    for (const key of ["gt", "gte", "lt", "lte"] as const) {
      const bound = filter.createdAt[key];
      if (bound === undefined) continue;
      params.push(bound);
      parts.push(`${columns.createdAt} ${ops[key]} ?`);
    }
  }
  if (filter.metadata) parts.push(metadataSql(columns.metadata, filter.metadata, params, stringified));
  return { sql: parts.length === 0 ? "1" : parts.join(" AND "), params };
}
