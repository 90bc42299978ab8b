import Database from "better-sqlite3";
import { HermesMemoryError, type MemoryKind } from "@hermes/memory-core";
import { seededRandom } from "@hermes/test-support";
import { afterAll, describe, expect, it } from "vitest";
import {
  filterToSql,
  isEmptyFilter,
  matchesMemoryFilter,
  needsExtendedFilter,
  parseMemoryFilter,
  resolveExpiry,
  toEpochMs,
  type FilterRecord,
  type ParsedMemoryFilter,
} from "./memory-filter.js";

function code(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return HermesMemoryError.isInstance(error) ? error.code : `not typed: ${String(error)}`;
  }
  return undefined;
}

describe("parseMemoryFilter", () => {
  it("accepts every documented condition", () => {
    const parsed = parseMemoryFilter({
      kind: ["fact", "turn"],
      sessionId: "s1",
      userId: "u1",
      tags: { any: ["a", "b"], all: ["c"] },
      createdAt: { $gte: "2026-01-01T00:00:00Z", $lt: new Date("2026-02-01T00:00:00Z") },
      metadata: { topic: "food", score: { $gt: 2, $lte: 9 }, $or: [{ lang: { $in: ["en", "de"] } }, { lang: { $exists: false } }] },
    });
    expect(parsed.kinds).toEqual(["fact", "turn"]);
    expect(parsed.tagsAny).toEqual(["a", "b"]);
    expect(parsed.tagsAll).toEqual(["c"]);
    expect(parsed.createdAt).toEqual({ gte: Date.parse("2026-01-01T00:00:00Z"), lt: Date.parse("2026-02-01T00:00:00Z") });
    expect(parsed.metadata?.type).toBe("and");
    expect(needsExtendedFilter(parsed)).toBe(true);
    expect(needsExtendedFilter(parseMemoryFilter({ kind: "fact", userId: "u" }))).toBe(false);
    expect(isEmptyFilter(parseMemoryFilter(undefined))).toBe(true);
    expect(isEmptyFilter(parseMemoryFilter({ limit: 5 }, { ignore: ["limit"] }))).toBe(true);
  });

  it.each([
    ["a non-object", "nope"],
    ["an unknown key (a misspelling must not widen an erasure)", { session_id: "s" }],
    ["ids outside an erasure scope", { ids: ["1"] }],
    ["an unknown kind", { kind: "note" }],
    ["an empty kind list", { kind: [] }],
    ["empty text", { userId: "" }],
    ["a number as session", { sessionId: 5 }],
    ["an empty tag list", { tags: { any: [] } }],
    ["tags as a list", { tags: ["a"] }],
    ["an unknown tags key", { tags: { some: ["a"] } }],
    ["a bad time", { createdAt: { $gte: "yesterday" } }],
    ["an unknown time operator", { createdAt: { $after: 0 } }],
    ["an unknown metadata operator", { metadata: { a: { $regex: "x" } } }],
    ["a range on text", { metadata: { a: { $gt: "b" } } }],
    ["NaN", { metadata: { a: Number.NaN } }],
    ["Infinity", { metadata: { a: { $lt: Number.POSITIVE_INFINITY } } }],
    ["a nested object as value", { metadata: { a: { b: 1 } } }],
    ["a null value", { metadata: { a: null } }],
    ["$in without a list", { metadata: { a: { $in: "x" } } }],
    ["an empty $in (it would match nothing)", { metadata: { a: { $in: [] } } }],
    ["an empty $nin (it would match every item)", { metadata: { team: { $nin: [] } } }],
    ["an empty $nin inside $or", { metadata: { $or: [{ a: 1 }, { team: { $nin: [] } }] } }],
    ["a __proto__ field (JavaScript objects cannot hold it as data reliably)", { metadata: JSON.parse('{"__proto__": "x"}') }],
    ["a __proto__ field inside $and", { metadata: { $and: [JSON.parse('{"__proto__": {"$exists": true}}')] } }],
    ["$exists not boolean", { metadata: { a: { $exists: 1 } } }],
    ["an empty $or", { metadata: { $or: [] } }],
    ["a field with a quote", { metadata: { 'a"b': 1 } }],
    ["a field starting with $", { metadata: { $where: "1" } }],
    ["an empty metadata filter", { metadata: {} }],
  ])("refuses %s with INVALID_ARGUMENT", (_name, input) => {
    expect(code(() => parseMemoryFilter(input))).toBe("INVALID_ARGUMENT");
  });

  it("refuses filters nested or sized beyond the limits, without overflowing the stack", () => {
    let deep: Record<string, unknown> = { a: 1 };
    for (let i = 0; i < 10_000; i++) deep = { $and: [deep] };
    expect(code(() => parseMemoryFilter({ metadata: deep }))).toBe("INVALID_ARGUMENT");
    const wide = { metadata: { a: { $in: Array.from({ length: 5000 }, (_, i) => i) } } };
    expect(code(() => parseMemoryFilter(wide))).toBe("INVALID_ARGUMENT");
  });

  it("says which key was wrong", () => {
    expect(() => parseMemoryFilter({ metadata: { price: { $gt: "10" } } }, { what: "search options" })).toThrow(
      /search options: metadata\.price\.\$gt compares numbers/,
    );
    expect(() => parseMemoryFilter({ metadata: { team: { $nin: [] } } }, { what: "forgetWhere scope", allowIds: true })).toThrow(
      /forgetWhere scope: metadata\.team\.\$nin must be a non-empty list/,
    );
  });
});

describe("expiry", () => {
  it("resolves expiresAt or ttlMs, refusing both and bad values", () => {
    expect(resolveExpiry({}, 1000)).toBeNull();
    expect(resolveExpiry({ ttlMs: 500 }, 1000)).toBe(1500);
    expect(resolveExpiry({ expiresAt: "2030-01-01T00:00:00Z" })).toBe(Date.parse("2030-01-01T00:00:00Z"));
    expect(resolveExpiry({ expiresAt: 5 })).toBe(5);
    expect(code(() => resolveExpiry({ ttlMs: 5, expiresAt: 5 }))).toBe("INVALID_ARGUMENT");
    expect(code(() => resolveExpiry({ ttlMs: 0 }))).toBe("INVALID_ARGUMENT");
    expect(code(() => resolveExpiry({ ttlMs: -1 }))).toBe("INVALID_ARGUMENT");
    expect(code(() => resolveExpiry({ ttlMs: "5" }))).toBe("INVALID_ARGUMENT");
    expect(code(() => resolveExpiry({ expiresAt: "soon" }))).toBe("INVALID_ARGUMENT");
    expect(code(() => toEpochMs(new Date(Number.NaN), "x"))).toBe("INVALID_ARGUMENT");
  });
});

describe("filters evaluate alike in JavaScript and in SQL", () => {
  const db = new Database(":memory:");
  afterAll(() => db.close());
  db.exec(
    `CREATE TABLE items (id INTEGER PRIMARY KEY, kind TEXT, session_id TEXT, user_id TEXT, tags TEXT, metadata TEXT, created_at INTEGER)`,
  );
  const columns = {
    id: "id",
    kind: "kind",
    sessionId: "session_id",
    userId: "user_id",
    tags: "tags",
    metadata: "metadata",
    createdAt: "created_at",
  };

  const rnd = seededRandom(20261203);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)]!;
  const kinds: MemoryKind[] = ["turn", "fact", "checkpoint"];
  // A field named like a value, and values JSON escapes, so that a text test of the stored JSON
  // (`stringifiedJson`) meets keys and escapes that look like the value.
  const fields = ["a", "b", "with space", "dot.ted", "ünï", "x"];
  const scalars = ["x", "y", "1", "", 'q"x', "back\\slash", "new\nline", "\u0001", "😀", "\u2028", 1, 2, 2.5, -3, 0, true, false];
  const value = (): unknown => {
    const r = rnd();
    if (r < 0.55) return pick(scalars);
    if (r < 0.75) return Array.from({ length: Math.floor(rnd() * 3) }, () => pick(scalars));
    if (r < 0.85) return null;
    return { nested: pick(scalars) };
  };

  const records: FilterRecord[] = [];
  const insert = db.prepare(`INSERT INTO items VALUES (?, ?, ?, ?, ?, ?, ?)`);
  for (let i = 1; i <= 400; i++) {
    const metadata: Record<string, unknown> = {};
    for (const f of fields) if (rnd() < 0.6) metadata[f] = value();
    const tags = Array.from({ length: Math.floor(rnd() * 3) }, () => pick(["t1", "t2", "t3", 't"1', "t1x"]));
    const record: FilterRecord = {
      id: String(i),
      kind: pick(kinds),
      sessionId: rnd() < 0.8 ? pick(["s1", "s2"]) : null,
      userId: rnd() < 0.8 ? pick(["u1", "u2"]) : null,
      tags,
      metadata,
      createdAt: Math.floor(rnd() * 1000),
    };
    records.push(record);
    insert.run(i, record.kind, record.sessionId, record.userId, JSON.stringify(tags), JSON.stringify(metadata), record.createdAt);
  }

  const condition = (depth: number): Record<string, unknown> => {
    if (depth < 2 && rnd() < 0.25) return { [pick(["$and", "$or"])]: [condition(depth + 1), condition(depth + 1)] };
    const field = pick(fields);
    const op = pick(["bare", "$eq", "$ne", "$in", "$nin", "$gt", "$gte", "$lt", "$lte", "$exists", "two"]);
    const scalar = pick(scalars);
    const number = pick([0, 1, 2, 2.5, -3]);
    switch (op) {
      case "bare":
        return { [field]: scalar };
      case "$in":
      case "$nin":
        return { [field]: { [op]: Array.from({ length: 1 + Math.floor(rnd() * 2) }, () => pick(scalars)) } };
      case "$exists":
        return { [field]: { $exists: rnd() < 0.5 } };
      case "$gt":
      case "$gte":
      case "$lt":
      case "$lte":
        return { [field]: { [op]: number } };
      case "two":
        return { [field]: { $gte: -1, $ne: scalar } };
      default:
        return { [field]: { [op]: scalar } };
    }
  };

  const randomFilter = (): Record<string, unknown> => {
    const f: Record<string, unknown> = {};
    if (rnd() < 0.2) f.kind = rnd() < 0.5 ? pick(kinds) : [pick(kinds), pick(kinds)];
    if (rnd() < 0.2) f.sessionId = pick(["s1", "s2", "s3"]);
    if (rnd() < 0.2) f.userId = pick(["u1", "u2"]);
    if (rnd() < 0.2)
      f.tags = rnd() < 0.5 ? { any: [pick(["t1", "t2", "t9", 't"1'])] } : { all: [pick(["t1", "t1x"]), pick(["t2", "t3", 't"1'])] };
    if (rnd() < 0.2) f.createdAt = { $gte: Math.floor(rnd() * 500), $lt: 500 + Math.floor(rnd() * 500) };
    if (rnd() < 0.2) f.ids = [String(1 + Math.floor(rnd() * 400)), "nope", String(1 + Math.floor(rnd() * 400))];
    if (rnd() < 0.8) f.metadata = condition(0);
    return f;
  };

  const sqlIds = (filter: ParsedMemoryFilter, stringifiedJson = false): number[] => {
    const { sql, params } = filterToSql(filter, columns, { idValue: (id) => (/^\d+$/.test(id) ? Number(id) : undefined), stringifiedJson });
    return db
      .prepare(`SELECT id FROM items WHERE ${sql} ORDER BY id`)
      .pluck()
      .all(...params) as number[];
  };

  it.each([false, true])("on 600 random filters over 400 random records (stringifiedJson %s)", (stringifiedJson) => {
    let nonTrivial = 0;
    for (let n = 0; n < 600; n++) {
      const input = randomFilter();
      const filter = parseMemoryFilter(input, { allowIds: true });
      const expected = records.filter((r) => matchesMemoryFilter(filter, r)).map((r) => Number(r.id));
      expect(sqlIds(filter, stringifiedJson), JSON.stringify(input)).toEqual(expected);
      if (expected.length > 0 && expected.length < records.length) nonTrivial++;
    }
    // The comparison means something only when filters select some records and not others.
    expect(nonTrivial).toBeGreaterThan(300);
  });

  it("with stringifiedJson, tests the stored text for each text value before parsing it", () => {
    const filter = parseMemoryFilter({ tags: { any: ["t1", "t2"], all: ["t3"] }, metadata: { a: "x", b: { $in: ["y", 2] }, c: true } });
    const { sql, params } = filterToSql(filter, columns, { stringifiedJson: true });
    // One test per tag and per text value; numbers and booleans have no text test.
    expect(sql.match(/instr\(/g)).toHaveLength(5);
    expect(params).toEqual(expect.arrayContaining(['"t1"', '"t2"', '"t3"', '"x"', '"y"']));
    expect(filterToSql(filter, columns).sql).not.toContain("instr(");
  });

  it("follows the documented rules on lists, types and missing fields", () => {
    const rec = (metadata: Record<string, unknown>): FilterRecord => ({ kind: "fact", createdAt: 0, metadata });
    const m = (metadata: unknown) => parseMemoryFilter({ metadata });
    expect(matchesMemoryFilter(m({ a: "x" }), rec({ a: ["y", "x"] }))).toBe(true);
    expect(matchesMemoryFilter(m({ a: { $ne: "x" } }), rec({ a: ["y", "x"] }))).toBe(false);
    expect(matchesMemoryFilter(m({ a: { $gt: 1 } }), rec({ a: [5] }))).toBe(false);
    expect(matchesMemoryFilter(m({ a: 1 }), rec({ a: "1" }))).toBe(false);
    expect(matchesMemoryFilter(m({ a: 1 }), rec({ a: true }))).toBe(false);
    expect(matchesMemoryFilter(m({ a: { $ne: 1 } }), rec({}))).toBe(true);
    expect(matchesMemoryFilter(m({ a: { $nin: [1] } }), rec({}))).toBe(true);
    expect(matchesMemoryFilter(m({ a: { $exists: false } }), rec({ a: null }))).toBe(true);
    expect(matchesMemoryFilter(m({ a: { $lt: 3 } }), rec({}))).toBe(false);
    expect(matchesMemoryFilter(m({ toString: { $exists: true } }), rec({}))).toBe(false);
  });

  it("binds every value as a parameter", () => {
    const hostile = "x'); DROP TABLE items; --";
    const filter = parseMemoryFilter({ userId: hostile, tags: { any: [hostile] }, metadata: { "fi'eld": hostile } });
    const { sql } = filterToSql(filter, columns);
    expect(sql).not.toContain(hostile);
    expect(sqlIds(filter)).toEqual([]);
    expect(db.prepare(`SELECT COUNT(*) FROM items`).pluck().get()).toBe(400);
  });
});
