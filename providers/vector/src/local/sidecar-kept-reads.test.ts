import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { seededRandom } from "@hermes/test-support";
import { ReadCache } from "../search/read-cache.js";
import { Sidecar } from "./sidecar.js";
import type { LinkedRef } from "./sidecar-rows.js";

const dirs: string[] = [];
const open: Sidecar[] = [];
afterEach(() => {
  for (const s of open.splice(0)) s.close();
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function tempFile(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-sidecar-links-"));
  dirs.push(dir);
  return path.join(dir, "sidecar.sqlite");
}

function openSidecar(file: string): Sidecar {
  const sidecar = Sidecar.open(file);
  open.push(sidecar);
  return sidecar;
}

type Links = Pick<LinkedRef, "key" | "id" | "next" | "previous" | "asksQuestion" | "sessionTurn">;

function linksOf(refs: Map<string, LinkedRef>): Links[] {
  return [...refs.values()]
    .map(({ key, id, next, previous, asksQuestion, sessionTurn }) => ({ key, id, next, previous, asksQuestion, sessionTurn }))
    .sort((a, b) => a.key - b.key);
}

/**
 * Every row's links, id and metadata, and text as a search reads them (kept from earlier reads
 * where they are), next to the same read from the file (whole rows, and links asked for with the
 * metadata, are always read from the file). Each of the three kept reads must check on its own
 * that what it kept still holds, so the one read first rotates with `step`.
 */
function bothReads(sidecar: Sidecar, namespace: string, step: number): { kept: unknown[]; stored: unknown[] } {
  const rows = sidecar.rowsWhere(namespace, null);
  const ids = rows.map((r) => r.id);
  const keys = rows.map((r) => r.key);
  const byKey = <T extends { key: number }>(list: T[]): T[] => list.sort((a, b) => a.key - b.key);
  const readers = [
    () => linksOf(sidecar.linkedRefs(namespace, ids, ids.length, 0, keys)),
    () => byKey([...sidecar.refsByKeys(keys).values()].map(({ key, id, metadata }) => ({ key, id, metadata }))),
    () => byKey([...sidecar.textsByKeys(keys)].map(([key, text]) => ({ key, text }))),
  ];
  const kept: unknown[] = [];
  for (let i = 0; i < readers.length; i++) {
    const at = (step + i) % readers.length;
    kept[at] = readers[at]!();
  }
  const whole = byKey([...sidecar.getByKeys(keys).values()]);
  return {
    kept,
    stored: [
      linksOf(sidecar.linkedRefs(namespace, ids, ids.length, ids.length, keys)),
      whole.map(({ key, id, metadata: { text: _text, ...metadata } }) => ({ key, id, metadata })),
      whole.map(({ key, text }) => ({ key, text })),
    ],
  };
}

describe("Sidecar.linkedRefs and refsByKeys with kept reads", () => {
  it("answers as the file does after every kind of write: inserts, replacements, deletions, raw SQL and another connection", () => {
    const file = tempFile();
    const sidecar = openSidecar(file);
    const other = openSidecar(file);
    const next = seededRandom(17);
    const sessions = ["a", "b", "c"];
    const namespaces = ["ns", "other"];
    let n = 0;
    const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!;
    const row = (id: string) => ({
      id,
      text: next() < 0.3 ? `question ${id}?` : `statement ${id}`,
      metadata: next() < 0.15 ? { kind: "fact", session_id: pick(sessions) } : { kind: "turn", session_id: pick(sessions) },
      vector: null,
    });
    const moveNewest = () =>
      sidecar.db
        .prepare(
          `UPDATE records SET metadata = json_set(metadata, '$.session_id', ?) WHERE key = (SELECT max(key) FROM records WHERE namespace = ?)`,
        )
        .run(pick(sessions), pick(namespaces));
    for (let i = 0; i < 12; i++) sidecar.upsert(pick(namespaces), [row(`t${n++}`)]);
    const writes: Array<[string, () => void]> = [
      ["insert", () => sidecar.upsert(pick(namespaces), [row(`t${n++}`), row(`t${n++}`)])],
      [
        "replace",
        () => {
          const ns = pick(namespaces);
          const ids = sidecar.rowsWhere(ns, null).map((r) => r.id);
          if (ids.length > 0) sidecar.upsert(ns, [row(pick(ids))]);
        },
      ],
      [
        "delete",
        () => {
          const ns = pick(namespaces);
          const ids = sidecar.rowsWhere(ns, null).map((r) => r.id);
          if (ids.length > 2) sidecar.delete(ns, { ids: [pick(ids)] });
        },
      ],
      [
        "delete keys",
        () => {
          const keys = sidecar.rowsWhere(null, null).map((r) => r.key);
          if (keys.length > 2) sidecar.deleteKeys([pick(keys)]);
        },
      ],
      ["raw SQL on this connection", () => moveNewest()],
      // The insert must not count the unreported change before it as its own.
      [
        "raw SQL, then an insert",
        () => {
          moveNewest();
          sidecar.upsert(pick(namespaces), [row(`t${n++}`)]);
        },
      ],
      ["another connection", () => other.upsert(pick(namespaces), [row(`o${n++}`)])],
    ];
    const seen = new Set<string>();
    for (let step = 0; step < 300; step++) {
      // Every row's links kept first, so the write below has stale links to leave behind.
      for (const ns of namespaces) bothReads(sidecar, ns, step);
      const [what, write] = pick(writes);
      write();
      seen.add(what);
      for (const ns of namespaces) {
        const { kept, stored } = bothReads(sidecar, ns, step);
        expect(kept, `after ${what} (step ${step}, namespace ${ns})`).toEqual(stored);
      }
    }
    expect(seen.size).toBe(writes.length);
  });

  it("a turn written in one session leaves the kept links of other sessions in place, and gives its session's turns their new next turn", () => {
    const sidecar = openSidecar(tempFile());
    const turn = (id: string, session: string) => ({
      id,
      text: `text of ${id}`,
      metadata: { kind: "turn", session_id: session },
      vector: null,
    });
    const [a1, a2, b1] = sidecar.upsert("ns", [turn("a1", "a"), turn("a2", "a"), turn("b1", "b")]);
    const read = () => linksOf(sidecar.linkedRefs("ns", ["a1", "a2", "b1"], 3, 0, [a1!, a2!, b1!]));
    expect(read().map((l) => l.next)).toEqual([[a2], [], []]);
    const [a3] = sidecar.upsert("ns", [turn("a3", "a")]);
    expect(read().map((l) => l.next)).toEqual([[a2, a3], [a3], []]);
  });
});

describe("ReadCache", () => {
  const links = (key: number, namespace = "ns") => ({ key, namespace, id: `id${key}`, next: [], previous: [], asksQuestion: false });

  it("keeps reads until the data version or the change count moves, and serves links to their namespace only", () => {
    const cache = new ReadCache();
    cache.sync(1, 10);
    cache.keepLinks(links(1), "s");
    cache.keepRef(1, "id1", { kind: "turn" }, 15);
    expect(cache.linksOf("ns", 1)?.id).toBe("id1");
    expect(cache.linksOf("elsewhere", 1)).toBeUndefined();
    cache.sync(1, 10);
    cache.keepText(1, "hello");
    expect(cache.size).toEqual({ links: 1, refs: 1, texts: 1 });
    cache.sync(2, 10);
    expect(cache.size).toEqual({ links: 0, refs: 0, texts: 0 });
    cache.keepLinks(links(1), "s");
    cache.keepRef(1, "id1", { kind: "turn" }, 15);
    cache.sync(2, 11);
    expect(cache.size).toEqual({ links: 0, refs: 0, texts: 0 });
  });

  it("an insert drops only its sessions' links and no ids or metadata, and its changes count as seen", () => {
    const cache = new ReadCache();
    cache.sync(1, 10);
    cache.keepLinks(links(1), "s");
    cache.keepLinks(links(2), "t");
    cache.keepLinks(links(3, "other"), "s");
    cache.keepRef(1, "id1", { kind: "turn" }, 15);
    cache.keepText(1, "hello");
    cache.inserted([["ns", "s"]], 14);
    expect([
      cache.linksOf("ns", 1),
      cache.linksOf("ns", 2)?.key,
      cache.linksOf("other", 3)?.key,
      cache.refOf(1)?.id,
      cache.textOf(1),
    ]).toEqual([undefined, 2, 3, "id1", "hello"]);
    cache.sync(1, 14);
    expect(cache.size).toEqual({ links: 2, refs: 1, texts: 1 });
  });

  it("gives back the links it kept, whatever the keys (one neighbour, none, key 0 or below)", () => {
    const cache = new ReadCache();
    cache.sync(1, 1);
    const kept = [
      { key: 1, namespace: "ns", id: "a", next: [7], previous: [], asksQuestion: true },
      { key: 2, namespace: "ns", id: "b", next: [0, 3], previous: [-4, -9], asksQuestion: false },
      { key: 3, namespace: "ns", id: "c", next: [], previous: [2], asksQuestion: false },
    ];
    for (const links of kept) cache.keepLinks(links, "s");
    expect(kept.map((l) => cache.linksOf("ns", l.key))).toEqual(kept);
  });

  it("freezes kept metadata, lists included, so no reader can change what the next one gets", () => {
    const cache = new ReadCache();
    const ref = cache.keepRef(1, "id1", { kind: "turn", tags: ["a"] }, 30);
    expect(() => ((ref.metadata as Record<string, unknown>).kind = "fact")).toThrow(TypeError);
    expect(() => (ref.metadata.tags as string[]).push("b")).toThrow(TypeError);
  });

  it("starts over when full: past its turns for links, past its characters for metadata and texts together; long ones are never kept", () => {
    const cache = new ReadCache(3, 10);
    cache.sync(1, 1);
    for (let key = 1; key <= 4; key++) cache.keepLinks(links(key), "s");
    expect(cache.size.links).toBe(1);
    expect(cache.linksOf("ns", 4)?.key).toBe(4);
    cache.keepRef(1, "id1", {}, 4);
    cache.keepText(1, "four");
    expect(cache.size).toMatchObject({ refs: 1, texts: 1 });
    cache.keepText(2, "four");
    expect(cache.size).toMatchObject({ refs: 0, texts: 1 });
    expect(cache.textOf(2)).toBe("four");
    cache.keepText(5, "x".repeat(5000));
    const long = cache.keepRef(6, "id6", { note: "y" }, 5000);
    expect([cache.textOf(5), cache.refOf(6), Object.isFrozen(long.metadata)]).toEqual([undefined, undefined, false]);
  });
});
