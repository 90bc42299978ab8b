import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { LinkCache } from "./link-cache.js";
import { Sidecar, type LinkedRef } from "./sidecar.js";

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

/** Park–Miller's minimal standard generator: a fixed sequence, so a failing run can be replayed. */
function random(seed: number): () => number {
  let state = seed;
  return () => (state = (state * 48271) % 2147483647) / 2147483647;
}

type Links = Pick<LinkedRef, "key" | "id" | "next" | "previous" | "asksQuestion" | "sessionTurn">;

function linksOf(refs: Map<string, LinkedRef>): Links[] {
  return [...refs.values()].map(({ key, id, next, previous, asksQuestion, sessionTurn }) => ({ key, id, next, previous, asksQuestion, sessionTurn })).sort((a, b) => a.key - b.key);
}

/**
 * Every row's links as a search reads them (by key, links only: the kept links when there are
 * some), next to the same read from the file (asking for the metadata too always reads the file).
 */
function bothReads(sidecar: Sidecar, namespace: string): { kept: Links[]; stored: Links[] } {
  const rows = sidecar.rowsWhere(namespace, null);
  const ids = rows.map((r) => r.id);
  const keys = rows.map((r) => r.key);
  return {
    kept: linksOf(sidecar.linkedRefs(namespace, ids, ids.length, 0, keys)),
    stored: linksOf(sidecar.linkedRefs(namespace, ids, ids.length, ids.length, keys)),
  };
}

describe("Sidecar.linkedRefs with kept links", () => {
  it("answers as the file does after every kind of write: inserts, replacements, deletions, raw SQL and another connection", () => {
    const file = tempFile();
    const sidecar = openSidecar(file);
    const other = openSidecar(file);
    const next = random(17);
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
      sidecar.db.prepare(`UPDATE records SET metadata = json_set(metadata, '$.session_id', ?) WHERE key = (SELECT max(key) FROM records WHERE namespace = ?)`).run(pick(sessions), pick(namespaces));
    for (let i = 0; i < 12; i++) sidecar.upsert(pick(namespaces), [row(`t${n++}`)]);
    const writes: Array<[string, () => void]> = [
      ["insert", () => sidecar.upsert(pick(namespaces), [row(`t${n++}`), row(`t${n++}`)])],
      ["replace", () => {
        const ns = pick(namespaces);
        const ids = sidecar.rowsWhere(ns, null).map((r) => r.id);
        if (ids.length > 0) sidecar.upsert(ns, [row(pick(ids))]);
      }],
      ["delete", () => {
        const ns = pick(namespaces);
        const ids = sidecar.rowsWhere(ns, null).map((r) => r.id);
        if (ids.length > 2) sidecar.delete(ns, { ids: [pick(ids)] });
      }],
      ["delete keys", () => {
        const keys = sidecar.rowsWhere(null, null).map((r) => r.key);
        if (keys.length > 2) sidecar.deleteKeys([pick(keys)]);
      }],
      ["raw SQL on this connection", () => moveNewest()],
      // The insert must not count the unreported change before it as its own.
      ["raw SQL, then an insert", () => {
        moveNewest();
        sidecar.upsert(pick(namespaces), [row(`t${n++}`)]);
      }],
      ["another connection", () => other.upsert(pick(namespaces), [row(`o${n++}`)])],
    ];
    const seen = new Set<string>();
    for (let step = 0; step < 300; step++) {
      // Every row's links kept first, so the write below has stale links to leave behind.
      for (const ns of namespaces) bothReads(sidecar, ns);
      const [what, write] = pick(writes);
      write();
      seen.add(what);
      for (const ns of namespaces) {
        const { kept, stored } = bothReads(sidecar, ns);
        expect(kept, `after ${what} (step ${step}, namespace ${ns})`).toEqual(stored);
      }
    }
    expect(seen.size).toBe(writes.length);
  });

  it("a turn written in one session leaves the kept links of other sessions in place, and gives its session's turns their new next turn", () => {
    const sidecar = openSidecar(tempFile());
    const turn = (id: string, session: string) => ({ id, text: `text of ${id}`, metadata: { kind: "turn", session_id: session }, vector: null });
    const [a1, a2, b1] = sidecar.upsert("ns", [turn("a1", "a"), turn("a2", "a"), turn("b1", "b")]);
    const read = () => linksOf(sidecar.linkedRefs("ns", ["a1", "a2", "b1"], 3, 0, [a1!, a2!, b1!]));
    expect(read().map((l) => l.next)).toEqual([[a2], [], []]);
    const [a3] = sidecar.upsert("ns", [turn("a3", "a")]);
    expect(read().map((l) => l.next)).toEqual([[a2, a3], [a3], []]);
  });
});

describe("LinkCache", () => {
  const links = (key: number, namespace = "ns") => ({ key, namespace, id: `id${key}`, next: [], previous: [], asksQuestion: false });

  it("keeps links until the data version or the change count moves, and serves them to their namespace only", () => {
    const cache = new LinkCache();
    cache.sync(1, 10);
    cache.set(links(1), "s");
    expect(cache.get("ns", 1)?.id).toBe("id1");
    expect(cache.get("elsewhere", 1)).toBeUndefined();
    cache.sync(1, 10);
    expect(cache.size).toBe(1);
    cache.sync(2, 10);
    expect(cache.size).toBe(0);
    cache.set(links(1), "s");
    cache.sync(2, 11);
    expect(cache.size).toBe(0);
  });

  it("drops only the inserted sessions' links, and counts the insert's changes as seen", () => {
    const cache = new LinkCache();
    cache.sync(1, 10);
    cache.set(links(1), "s");
    cache.set(links(2), "t");
    cache.set(links(3, "other"), "s");
    cache.inserted([["ns", "s"]], 14);
    expect([cache.get("ns", 1), cache.get("ns", 2)?.key, cache.get("other", 3)?.key]).toEqual([undefined, 2, 3]);
    cache.sync(1, 14);
    expect(cache.size).toBe(2);
  });

  it("starts over when full", () => {
    const cache = new LinkCache(3);
    cache.sync(1, 1);
    for (let key = 1; key <= 4; key++) cache.set(links(key), "s");
    expect(cache.size).toBe(1);
    expect(cache.get("ns", 4)?.key).toBe(4);
  });
});
