/**
 * A hybrid search trusts what its connection kept from earlier searches (keyword hits' ids, the
 * largest key, whether the sidecar holds one namespace only) only while nothing else changed the
 * file: every kind of write through the provider, erasure, and another process's write show in
 * the very next search.
 */
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { seededRandom } from "@hermes/test-support";
import { VectorMemoryProvider } from "../vector-memory-provider.js";
import { Sidecar } from "../local/sidecar.js";
import { runScriptInChild } from "../test-support/run-script.js";

const dirs: string[] = [];
const providers: VectorMemoryProvider[] = [];
const sidecars: Sidecar[] = [];
afterEach(async () => {
  for (const p of providers.splice(0)) await p.shutdown();
  for (const s of sidecars.splice(0)) s.close();
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-kept-search-"));
  dirs.push(dir);
  return dir;
}

async function openProvider(home: string): Promise<VectorMemoryProvider> {
  const provider = new VectorMemoryProvider({ env: {}, hybrid: true });
  providers.push(provider);
  await provider.initialize("s1", { hermesHome: home });
  return provider;
}

function openSidecar(file: string): Sidecar {
  const sidecar = Sidecar.open(file);
  sidecars.push(sidecar);
  return sidecar;
}

describe("hybrid search with kept reads", () => {
  it("returns live items only, with their current content, after every kind of write: remember, update, forget, erasure", async () => {
    const provider = await openProvider(tempDir());
    const next = seededRandom(47);
    // Every item holds the searched words; with more items than the vector side returns, part of
    // the keyword hits are found by the keyword ranking alone (their ids come from what is kept).
    const live = new Map<string, { content: string; session: string }>();
    let n = 0;
    const words = ["harbour", "storm", "gull", "rope", "lantern", "tide", "shell", "anchor"];
    const remember = async (): Promise<string> => {
      const session = next() < 0.5 ? "evening" : "morning";
      const extra = Array.from({ length: 3 }, () => words[Math.floor(next() * words.length)]).join(" ");
      const content = `lighthouse keeper note ${n++} ${extra}`;
      const id = provider.remember({ content, kind: "turn", sessionId: session });
      await provider.flush();
      live.set(id, { content, session });
      return id;
    };
    for (let i = 0; i < 60; i++) await remember();
    const writes: Array<[string, () => Promise<void>]> = [
      ["remember", async () => void (await remember())],
      [
        "update",
        async () => {
          const id = [...live.keys()][Math.floor(next() * live.size)]!;
          const content = `lighthouse keeper note ${n++} rewritten storm storm`;
          expect(await provider.update(id, { content })).toBe(true);
          live.set(id, { ...live.get(id)!, content });
        },
      ],
      [
        "forget",
        async () => {
          const id = [...live.keys()][Math.floor(next() * live.size)]!;
          expect(await provider.forget(id)).toBe(true);
          live.delete(id);
        },
      ],
      [
        "erase one session's items",
        async () => {
          const session = next() < 0.5 ? "evening" : "morning";
          await provider.forgetWhere({ sessionId: session, confirmAll: true });
          for (const [id, item] of live) if (item.session === session) live.delete(id);
          while (live.size < 40) await remember();
        },
      ],
    ];
    for (let step = 0; step < 16; step++) {
      const [what, write] = writes[Math.floor(next() * writes.length)]!;
      await write();
      const query = `lighthouse ${words[step % words.length]} anchor`;
      const hits = await provider.search(query, { limit: 8 });
      expect(hits, `after ${what} (step ${step})`).toHaveLength(8);
      // A kept id, metadata or text of a row that changed would name an item that is gone or show old content.
      for (const hit of hits) expect(live.get(hit.id)?.content, `hit ${hit.id} after ${what} (step ${step})`).toBe(hit.content);
      for (const hit of hits) expect(hit.metadata?.scores, `hit ${hit.id} after ${what} (step ${step})`).toBeDefined();
    }
  });

  it("gives every hit caller metadata of its own: changing one hit's changes no later hit", async () => {
    const provider = await openProvider(tempDir());
    provider.remember({ content: "Caroline painted a sunrise", kind: "turn", sessionId: "s", metadata: { speaker: "Caroline", n: 1 } });
    provider.remember({
      content: "Melanie painted a lake",
      kind: "turn",
      sessionId: "s",
      metadata: { speaker: "Melanie", nested: { list: [1, 2] } },
    });
    await provider.flush();
    const metadataOf = async () => {
      const hits = await provider.search("What did Caroline paint?", { limit: 5 });
      return new Map(hits.map((h) => [h.content, h.metadata!]));
    };
    let previous: Record<string, unknown> | undefined;
    for (let round = 0; round < 3; round++) {
      const metadata = await metadataOf();
      const caroline = metadata.get("Caroline painted a sunrise")!;
      // The hit a caller still holds keeps what the caller made of it.
      if (previous) expect({ speaker: previous.speaker, n: previous.n }).toEqual({ speaker: "changed", n: 2 });
      previous = caroline;
      const melanie = metadata.get("Melanie painted a lake")!;
      expect({ speaker: caroline.speaker, n: caroline.n }).toEqual({ speaker: "Caroline", n: 1 });
      expect({ speaker: melanie.speaker, nested: melanie.nested }).toEqual({ speaker: "Melanie", nested: { list: [1, 2] } });
      caroline.speaker = "changed";
      caroline.n = 2;
      (melanie.nested as { list: number[] }).list.push(3);
      melanie.speaker = "changed";
    }
  });

  it("sees another process's change of a kept row's id, a freed key reused, and new rows in other namespaces", async () => {
    const file = path.join(tempDir(), "sidecar.sqlite");
    const sidecar = openSidecar(file);
    const other = openSidecar(file);
    const row = (id: string, text: string) => ({ id, text, metadata: { kind: "turn", session_id: `session of ${id}` }, vector: null });
    const fillers = ["quiet morning", "bread and tea", "a long walk", "rain again", "the red boat", "late train"];
    sidecar.upsert("a", [...fillers.map((text, i) => row(`f${i}`, text)), row("a1", "harbour lights at dusk"), row("a2", "harbour wall")]);
    const ids = () => sidecar.readingOnce(() => sidecar.keywordRanks("a", "harbour", 10, undefined, null, false).map((h) => h.id)).sort();
    // Read twice: the second search answers from what the first kept.
    expect(ids()).toEqual(["a1", "a2"]);
    expect(ids()).toEqual(["a1", "a2"]);
    const renamed = await runScriptInChild(
      `import Database from ${JSON.stringify(pathToFileURL(createRequire(import.meta.url).resolve("better-sqlite3")).href)};
       const db = new Database(${JSON.stringify(file)});
       db.prepare("UPDATE records SET id = 'a1-renamed' WHERE id = 'a1'").run();
       db.close();
       process.stdout.write("ok");`,
    );
    expect(renamed.out).toBe("ok");
    expect(ids()).toEqual(["a1-renamed", "a2"]);
    // Another connection deletes the newest row and stores another in its place: SQLite gives the
    // new row the freed key, and its own id comes back, not the one kept for that key.
    const newest = sidecar.rowsWhere("a", null).at(-1)!;
    expect(ids()).toContain(newest.id);
    other.delete("a", { ids: [newest.id] });
    other.upsert("a", [row("a9", "harbour ferry")]);
    expect(sidecar.rowsWhere("a", null).find((r) => r.id === "a9")?.key).toBe(newest.key);
    expect(ids()).toEqual(["a1-renamed", "a9"]);
    // Rows this connection inserts into another namespace never come back from a search of "a" (an insert-only write keeps the other kept reads).
    sidecar.upsert("c", [row("c1", "harbour seal")]);
    expect(ids()).toEqual(["a1-renamed", "a9"]);
    expect(sidecar.keywordRanks("c", "harbour", 10, undefined, null, false).map((h) => h.id)).toEqual(["c1"]);
    // Nor rows another connection writes into a third namespace: they are ranked in their own.
    other.upsert("b", [row("b1", "harbour master"), row("b2", "harbour cat")]);
    expect(ids()).toEqual(["a1-renamed", "a9"]);
    expect(sidecar.keywordRanks("b", "harbour", 10, undefined, null, false).map((h) => h.id)).toEqual(expect.arrayContaining(["b1", "b2"]));
  });
});
