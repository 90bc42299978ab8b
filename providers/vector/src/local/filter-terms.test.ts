import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { matchesMemoryFilter, parseMemoryFilter, type ParsedMemoryFilter } from "@hermes/memory-provider-kit";
import { Sidecar } from "./sidecar.js";
import { FilterTermIndex, fillFilterTerms, TERM_INDEX_MAX_CANDIDATES } from "./filter-terms.js";
import { SCHEMA_VERSION } from "./sidecar-schema.js";
import type { VectorMetadata } from "../metadata-filter.js";

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const fn of cleanups.splice(0).reverse()) fn();
});

function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-vector-terms-"));
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A deterministic sequence in [0, 1) (a linear congruential generator). */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

const TAGS = ["red", "blue", "green", "a.b", 'q"uote', "ünï", ""];
const FIELDS = ["team", "n", "flag", "list", "a.b", "mixed"];
const TEXTS = ["infra", "web", "1", "true", "", "a.b"];

/** A random scalar as the caller's metadata holds it (text, integer, real or boolean). */
function scalar(next: () => number): string | number | boolean {
  const r = next();
  if (r < 0.4) return TEXTS[Math.floor(next() * TEXTS.length)]!;
  if (r < 0.6) return Math.floor(next() * 4);
  if (r < 0.7) return Math.floor(next() * 4) + 0.5;
  return next() < 0.5;
}

/** Random caller metadata: scalars, lists (of mixed scalars), nested objects and nulls. */
function callerMetadata(next: () => number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of FIELDS) {
    const r = next();
    if (r < 0.35) continue;
    if (r < 0.75) out[field] = scalar(next);
    else if (r < 0.9) out[field] = Array.from({ length: Math.floor(next() * 3) }, () => scalar(next));
    else if (r < 0.95) out[field] = { inner: scalar(next) };
    else out[field] = null;
  }
  return out;
}

interface Item {
  namespace: string;
  id: string;
  kind: "turn" | "fact";
  tags: string[];
  meta: Record<string, unknown>;
  createdAt: number;
  expiresAt?: number;
}

function randomItem(next: () => number, namespace: string, id: string): Item {
  const tags = TAGS.filter(() => next() < 0.3);
  return {
    namespace,
    id,
    kind: next() < 0.7 ? "turn" : "fact",
    tags,
    meta: callerMetadata(next),
    createdAt: Date.UTC(2026, 0, 1) + Math.floor(next() * 100) * 60_000,
    ...(next() < 0.1 ? { expiresAt: Date.UTC(2026, 0, 1) + (next() < 0.5 ? -1 : 1) * 3_600_000 } : {}),
  };
}

function stored(item: Item): VectorMetadata {
  return {
    kind: item.kind,
    tags: item.tags,
    created_at: new Date(item.createdAt).toISOString(),
    extra: JSON.stringify(item.meta),
    ...(item.expiresAt !== undefined ? { expires_at: item.expiresAt } : {}),
  };
}

/** A random filter over the tags, the caller's metadata, the kind and the creation time. */
function randomFilter(next: () => number): Record<string, unknown> {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!;
  const condition = (depth: number): Record<string, unknown> => {
    const r = next();
    if (depth < 2 && r < 0.15) return { [next() < 0.5 ? "$and" : "$or"]: [condition(depth + 1), condition(depth + 1)] };
    const field = pick(FIELDS);
    const ops = ["eq", "eq", "eq", "$in", "$ne", "$nin", "$exists", "$gt"];
    const op = pick(ops);
    if (op === "eq") return { [field]: scalar(next) };
    if (op === "$in" || op === "$nin") return { [field]: { [op]: [scalar(next), scalar(next)] } };
    if (op === "$exists") return { [field]: { $exists: next() < 0.5 } };
    if (op === "$gt") return { [field]: { $gt: Math.floor(next() * 3) } };
    return { [field]: { $ne: scalar(next) } };
  };
  const filter: Record<string, unknown> = {};
  const tags = TAGS.filter((t) => t !== ""); // a filter's tags are non-empty text
  if (next() < 0.4) filter.tags = next() < 0.6 ? { any: [pick(tags), pick(tags)] } : { all: [pick(tags), pick(tags)] };
  if (next() < 0.7 || Object.keys(filter).length === 0) {
    const parts = Array.from({ length: 1 + Math.floor(next() * 2) }, () => condition(0));
    filter.metadata = parts.length === 1 ? parts[0] : { $and: parts };
  }
  if (next() < 0.2) filter.kind = "fact";
  if (next() < 0.2) filter.createdAt = { $gte: new Date(Date.UTC(2026, 0, 1) + 50 * 60_000).toISOString() };
  return filter;
}

/** The items passing `filter` at `now`, as the kit's `matchesMemoryFilter` decides, by id. */
function expected(items: Iterable<Item>, namespace: string, filter: ParsedMemoryFilter, now: number): string[] {
  const out: string[] = [];
  for (const item of items) {
    if (item.namespace !== namespace || (item.expiresAt !== undefined && item.expiresAt <= now)) continue;
    const record = { id: item.id, kind: item.kind, tags: item.tags, metadata: item.meta, createdAt: item.createdAt };
    if (matchesMemoryFilter(filter, record)) out.push(item.id);
  }
  return out.sort();
}

function passingIds(sidecar: Sidecar, namespace: string, filter: ParsedMemoryFilter, now: number): string[] {
  const keys = sidecar.passingKeys(namespace, sidecar.condition(filter, now))!;
  return [...sidecar.idsByKeys(keys).values()].map((r) => r.id).sort();
}

/** Every row of the term table, in order. */
function terms(db: Database.Database): unknown[] {
  return db.prepare(`SELECT namespace, kind, field, value, typeof(value) AS type, key FROM record_terms ORDER BY 1, 2, 3, 4, 6`).all();
}

describe("the sidecar's filter term index", () => {
  it("selects exactly what matchesMemoryFilter selects, through writes, updates, deletions and namespace moves", () => {
    const sidecar = Sidecar.open(":memory:");
    cleanups.push(() => sidecar.close());
    const next = random(46);
    const items = new Map<string, Item>();
    const write = (batch: Item[]) => {
      for (const ns of new Set(batch.map((i) => i.namespace))) {
        sidecar.upsert(
          ns,
          batch.filter((i) => i.namespace === ns).map((i) => ({ id: i.id, text: `item ${i.id}`, metadata: stored(i), vector: null })),
        );
      }
      for (const item of batch) items.set(`${item.namespace}/${item.id}`, item);
    };
    write(Array.from({ length: 400 }, (_, i) => randomItem(next, i % 4 === 0 ? "other" : "ns", `i${i}`)));
    const now = Date.UTC(2026, 0, 1);
    const index = new FilterTermIndex(sidecar.db, (sql) => sidecar.db.prepare(sql));
    let narrowed = 0;
    const check = (round: string) => {
      for (let f = 0; f < 150; f++) {
        const raw = randomFilter(next);
        const filter = parseMemoryFilter(raw);
        for (const namespace of ["ns", "other"]) {
          if (index.narrowest(namespace, filter) !== null) narrowed++;
          expect(passingIds(sidecar, namespace, filter, now), `${round}: ${JSON.stringify(raw)} in ${namespace}`).toEqual(
            expected(items.values(), namespace, filter, now),
          );
        }
      }
      // The table holds exactly the terms a fill from scratch computes.
      const kept = terms(sidecar.db);
      fillFilterTerms(sidecar.db);
      expect(terms(sidecar.db), round).toEqual(kept);
    };
    check("written");
    // Updates: new tags and metadata for some items, the same for others (re-upserted unchanged).
    write(
      [...items.values()]
        .filter(() => next() < 0.3)
        .map((item) => (next() < 0.5 ? { ...item, tags: TAGS.filter(() => next() < 0.3), meta: callerMetadata(next) } : item)),
    );
    check("updated");
    // Deletions by id and by key (erasure's path).
    const gone = [...items.values()].filter((i) => i.namespace === "ns" && next() < 0.2);
    sidecar.delete("ns", { ids: gone.slice(0, 20).map((i) => i.id) });
    const keys = gone.slice(20).map((i) => sidecar.getByIds("ns", [i.id])[0]!.key);
    sidecar.deleteKeys(keys);
    for (const item of gone) items.delete(`${item.namespace}/${item.id}`);
    check("deleted");
    // A namespace move (as a user-namespace migration does it) moves the items' terms with them.
    sidecar.db.prepare(`UPDATE records SET namespace = 'ns' WHERE namespace = 'other' AND id IN ('i4', 'i8', 'i12')`).run();
    for (const id of ["i4", "i8", "i12"]) {
      const item = items.get(`other/${id}`)!;
      items.delete(`other/${id}`);
      items.set(`ns/${id}`, { ...item, namespace: "ns" });
    }
    check("moved");
    // Most filters hold an equality or a tag the index answers.
    expect(narrowed).toBeGreaterThan(600);
  });

  it("narrows only when the rarest indexed condition holds for at most TERM_INDEX_MAX_CANDIDATES rows, and picks the rarest", () => {
    const sidecar = Sidecar.open(":memory:");
    cleanups.push(() => sidecar.close());
    const n = TERM_INDEX_MAX_CANDIDATES + 100;
    sidecar.upsert(
      "ns",
      Array.from({ length: n }, (_, i) => ({
        id: `i${i}`,
        text: "",
        metadata: { kind: "fact", tags: ["common", ...(i % 100 === 0 ? ["rare"] : [])], extra: JSON.stringify({ every: "x", k: i }) },
        vector: null,
      })),
    );
    const index = new FilterTermIndex(sidecar.db, (sql) => sidecar.db.prepare(sql));
    expect(index.narrowest("ns", parseMemoryFilter({ tags: { any: ["common"] } }))).toBeNull();
    expect(index.narrowest("ns", parseMemoryFilter({ metadata: { every: "x" } }))).toBeNull();
    const both = parseMemoryFilter({ tags: { all: ["common", "rare"] }, metadata: { every: "x" } });
    expect(JSON.parse(index.narrowest("ns", both)!)).toEqual([[0, "", "rare"]]);
    expect(passingIds(sidecar, "ns", both, Date.now())).toHaveLength(Math.ceil(n / 100));
    expect(passingIds(sidecar, "ns", parseMemoryFilter({ metadata: { k: { $in: [7, 8.0, 9.5] } } }), Date.now())).toEqual(["i7", "i8"]);
  });

  it("a version 6 file opened writable migrates to the filled index; opened read-only, it is left as it is and still filters", () => {
    const dir = tempDir();
    const file = path.join(dir, "sidecar.sqlite");
    const writer = Sidecar.open(file);
    writer.upsert("ns", [
      { id: "t1", text: "one", metadata: { kind: "fact", tags: ["space"], extra: JSON.stringify({ team: "infra", n: 3 }) }, vector: null },
      { id: "t2", text: "two", metadata: { kind: "fact", tags: ["fun"], extra: JSON.stringify({ team: "web", on: true }) }, vector: null },
    ]);
    const filled = terms(writer.db);
    writer.close();
    const v6 = new Database(file);
    v6.exec(
      `DROP TRIGGER record_terms_ai; DROP TRIGGER record_terms_ad; DROP TRIGGER record_terms_au; DROP TABLE record_terms; PRAGMA user_version = 6;`,
    );
    v6.close();

    const readOnly = Sidecar.openReadOnly(file);
    try {
      expect(passingIds(readOnly, "ns", parseMemoryFilter({ metadata: { team: "infra" } }), Date.now())).toEqual(["t1"]);
      expect(passingIds(readOnly, "ns", parseMemoryFilter({ tags: { any: ["fun"] } }), Date.now())).toEqual(["t2"]);
    } finally {
      readOnly.close();
    }
    const check = new Database(file, { readonly: true });
    expect(check.pragma("user_version", { simple: true })).toBe(6);
    check.close();

    const sidecar = Sidecar.open(file);
    try {
      expect(sidecar.db.pragma("user_version", { simple: true })).toBe(SCHEMA_VERSION);
      expect(terms(sidecar.db)).toEqual(filled);
      expect(terms(sidecar.db)).toContainEqual({ namespace: "ns", kind: 2, field: "on", value: 1, type: "integer", key: 2 });
      expect(passingIds(sidecar, "ns", parseMemoryFilter({ metadata: { on: true } }), Date.now())).toEqual(["t2"]);
    } finally {
      sidecar.close();
    }
  });
});
