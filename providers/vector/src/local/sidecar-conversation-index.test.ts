import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { turnContext } from "@hermes/memory-provider-kit/sqlite";
import { afterEach, describe, expect, it } from "vitest";
import { Sidecar } from "./sidecar.js";
import type { SidecarWrite } from "./sidecar-rows.js";
import { recordDateText } from "./sidecar-schema.js";
import { SIDECAR_V4_SCHEMA_SQL, V4_INDEX_RECORD, V4_INSERT_RECORD } from "../test-support/sidecar-v4-schema.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function tempFile(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-sidecar-cv-"));
  dirs.push(dir);
  return path.join(dir, "sidecar.sqlite");
}

/** Rows as the provider writes them: turns of two sessions interleaved, a fact, a session-less turn, another namespace. */
const ROWS: Array<{ namespace: string } & SidecarWrite> = [
  {
    namespace: "ns",
    id: "a1",
    text: "We adopted a golden retriever puppy last week",
    metadata: { kind: "turn", session_id: "a", created_at: "2023-05-08T13:56:00.000Z" },
    vector: null,
  },
  {
    namespace: "ns",
    id: "b1",
    text: "How was the pottery class?",
    metadata: { kind: "turn", session_id: "b", extra: JSON.stringify({ date: "2:10 pm on 9 June, 2023", speaker: "Mel" }) },
    vector: null,
  },
  {
    namespace: "ns",
    id: "a2",
    text: "What did you name it?",
    metadata: { kind: "turn", session_id: "a", created_at: "2023-05-08T13:57:00.000Z" },
    vector: null,
  },
  {
    namespace: "ns",
    id: "f1",
    text: "Caroline likes hiking",
    metadata: { kind: "fact", session_id: "a" },
    vector: new Float32Array([1, 0]),
  },
  {
    namespace: "ns",
    id: "a3",
    text: "Yes, we called him Biscuit!",
    metadata: { kind: "turn", session_id: "a", created_at: "2023-05-08T13:58:00.000Z" },
    vector: null,
  },
  {
    namespace: "ns",
    id: "b2",
    text: "Great, I made a bowl.",
    metadata: { kind: "turn", session_id: "b", extra: JSON.stringify({ date: "2:10 pm on 9 June, 2023" }) },
    vector: null,
  },
  {
    namespace: "ns",
    id: "x1",
    text: "A turn without a session",
    metadata: { kind: "turn", created_at: "2023-05-09T08:00:00.000Z" },
    vector: null,
  },
  { namespace: "other", id: "a4", text: "Another namespace, same session id", metadata: { kind: "turn", session_id: "a" }, vector: null },
  {
    namespace: "ns",
    id: "a4",
    text: "He chews everything.",
    metadata: { kind: "turn", session_id: "a", created_at: "2023-05-08T13:59:00.000Z" },
    vector: null,
  },
];

/** What every row's context and date columns must hold: previous turns of its namespace and session, insertion order. */
function expectedColumns(): Record<string, { prev1: string; prev2: string; session_date: string }> {
  const out: Record<string, { prev1: string; prev2: string; session_date: string }> = {};
  const tails = new Map<string, string[]>();
  for (const row of ROWS) {
    const session =
      row.metadata.kind === "turn" && typeof row.metadata.session_id === "string"
        ? `${row.namespace}/${row.metadata.session_id}`
        : undefined;
    const previous = session ? (tails.get(session) ?? []) : [];
    out[`${row.namespace}/${row.id}`] = {
      ...(session ? turnContext(previous) : { prev1: "", prev2: "" }),
      session_date: recordDateText(row.metadata),
    };
    if (session) tails.set(session, [row.text, ...previous]);
  }
  return out;
}

function columns(sidecar: Sidecar): Record<string, { prev1: string; prev2: string; session_date: string }> {
  const out: Record<string, { prev1: string; prev2: string; session_date: string }> = {};
  for (const r of sidecar.db.prepare(`SELECT namespace, id, prev1, prev2, session_date FROM records ORDER BY key`).all() as Array<{
    namespace: string;
    id: string;
    prev1: string;
    prev2: string;
    session_date: string;
  }>) {
    out[`${r.namespace}/${r.id}`] = { prev1: r.prev1, prev2: r.prev2, session_date: r.session_date };
  }
  return out;
}

function write(sidecar: Sidecar, rows: typeof ROWS): void {
  for (const { namespace, ...row } of rows) sidecar.upsert(namespace, [row]);
}

describe("recordDateText", () => {
  it("takes the caller's date from the packed metadata, else the created_at day; only turns get one", () => {
    expect(recordDateText(ROWS[1]!.metadata)).toBe("2:10 pm on 9 June, 2023");
    expect(recordDateText(ROWS[0]!.metadata)).toBe("8 May 2023");
    expect(recordDateText(ROWS[3]!.metadata)).toBe("");
    expect(recordDateText({ kind: "turn" })).toBe("");
    expect(recordDateText({ kind: "turn", date: "yesterday", extra: "not json" })).toBe("yesterday");
  });
});

describe("Sidecar conversational index", () => {
  it("indexes a turn with the two previous turns of its namespace and session and its date", () => {
    const sidecar = Sidecar.open(":memory:");
    try {
      write(sidecar, ROWS);
      expect(columns(sidecar)).toEqual(expectedColumns());
      // "Biscuit" answers a question about the puppy's name that only its context holds.
      expect(sidecar.keywordSearch("ns", "puppy name", 5).map((h) => h.id)).toContain("a3");
      // Every dated turn holds "2023"; only session b's date holds "June".
      expect(
        sidecar
          .keywordSearch("ns", "june 2023", 5)
          .map((h) => h.id)
          .slice(0, 2)
          .sort(),
      ).toEqual(["b1", "b2"]);
      sidecar.db.exec(`INSERT INTO records_fts (records_fts, rank) VALUES ('integrity-check', 1)`);
    } finally {
      sidecar.close();
    }
  });

  it("takes context from turns another connection wrote since this one last wrote", () => {
    const file = tempFile();
    const one = Sidecar.open(file);
    const two = Sidecar.open(file);
    try {
      one.upsert("ns", [{ id: "t1", text: "first from one", metadata: { kind: "turn", session_id: "s" }, vector: null }]);
      two.upsert("ns", [{ id: "t2", text: "second from two", metadata: { kind: "turn", session_id: "s" }, vector: null }]);
      one.upsert("ns", [{ id: "t3", text: "third from one", metadata: { kind: "turn", session_id: "s" }, vector: null }]);
      expect(columns(one)["ns/t3"]).toMatchObject({ prev1: "second from two", prev2: "first from one" });
    } finally {
      one.close();
      two.close();
    }
  });

  it("refills the next two turns' context when a turn is deleted, so its text is no longer searchable", () => {
    const sidecar = Sidecar.open(":memory:");
    try {
      write(sidecar, ROWS);
      expect(
        sidecar
          .keywordSearch("ns", "retriever", 5)
          .map((h) => h.id)
          .sort(),
      ).toEqual(["a1", "a2", "a3"]);
      sidecar.delete("ns", { ids: ["a1"] });
      expect(sidecar.keywordSearch("ns", "retriever", 5)).toEqual([]);
      const after = columns(sidecar);
      expect(after["ns/a2"]).toMatchObject({ prev1: "", prev2: "" });
      expect(after["ns/a3"]).toMatchObject({ prev1: "What did you name it?", prev2: "" });
      expect(after["ns/a4"]).toMatchObject({ prev1: "Yes, we called him Biscuit!", prev2: "What did you name it?" });
      // The same session id in another namespace is another conversation: untouched.
      expect(after["other/a4"]).toEqual(expectedColumns()["other/a4"]);
      // The next turn written continues from the remaining turns.
      sidecar.upsert("ns", [{ id: "a5", text: "Good boy.", metadata: { kind: "turn", session_id: "a" }, vector: null }]);
      expect(columns(sidecar)["ns/a5"]).toMatchObject({ prev1: "He chews everything.", prev2: "Yes, we called him Biscuit!" });
      sidecar.db.exec(`INSERT INTO records_fts (records_fts, rank) VALUES ('integrity-check', 1)`);
    } finally {
      sidecar.close();
    }
  });

  it("re-indexes the next two turns' context when a turn's text changes", () => {
    const sidecar = Sidecar.open(":memory:");
    try {
      write(sidecar, ROWS);
      sidecar.upsert("ns", [{ id: "a2", text: "Which name did you pick?", metadata: ROWS[2]!.metadata, vector: null }]);
      const after = columns(sidecar);
      expect(after["ns/a2"]).toEqual(expectedColumns()["ns/a2"]);
      expect(after["ns/a3"]!.prev1).toBe("Which name did you pick?");
      expect(after["ns/a4"]!.prev2).toBe("Which name did you pick?");
      expect(
        sidecar
          .keywordSearch("ns", "pick", 5)
          .map((h) => h.id)
          .sort(),
      ).toEqual(["a2", "a3", "a4"]);
      sidecar.db.exec(`INSERT INTO records_fts (records_fts, rank) VALUES ('integrity-check', 1)`);
    } finally {
      sidecar.close();
    }
  });

  it("gives a turn moved to another session that session's context, and refills both sessions' next turns", () => {
    const sidecar = Sidecar.open(":memory:");
    try {
      write(sidecar, ROWS);
      // a2 moves from session a to session b: between b1 and b2 by key.
      sidecar.upsert("ns", [{ id: "a2", text: "What did you name it?", metadata: { kind: "turn", session_id: "b" }, vector: null }]);
      const after = columns(sidecar);
      expect(after["ns/a2"]).toMatchObject({ prev1: "How was the pottery class?", prev2: "" });
      expect(after["ns/b2"]).toMatchObject({ prev1: "What did you name it?", prev2: "How was the pottery class?" });
      expect(after["ns/a3"]).toMatchObject({ prev1: "We adopted a golden retriever puppy last week", prev2: "" });
      expect(after["ns/a4"]).toMatchObject({
        prev1: "Yes, we called him Biscuit!",
        prev2: "We adopted a golden retriever puppy last week",
      });
      sidecar.db.exec(`INSERT INTO records_fts (records_fts, rank) VALUES ('integrity-check', 1)`);
    } finally {
      sidecar.close();
    }
  });

  it("deletes a whole session or namespace with the index intact", () => {
    const sidecar = Sidecar.open(":memory:");
    try {
      write(sidecar, ROWS);
      sidecar.delete("ns", { filter: { session_id: "a" } });
      expect(sidecar.keywordSearch("ns", "retriever biscuit", 5)).toEqual([]);
      sidecar.delete("other", { all: true });
      expect(sidecar.keywordSearch("other", "namespace", 5)).toEqual([]);
      expect(Object.keys(columns(sidecar)).sort()).toEqual(["ns/b1", "ns/b2", "ns/x1"]);
      sidecar.db.exec(`INSERT INTO records_fts (records_fts, rank) VALUES ('integrity-check', 1)`);
    } finally {
      sidecar.close();
    }
  });

  it("upgrades a version 4 file in place: no row lost, context and dates filled as new writes fill them, FTS rebuilt", () => {
    const file = tempFile();
    const v4 = new Database(file);
    v4.exec(SIDECAR_V4_SCHEMA_SQL);
    const insert = v4.prepare(V4_INSERT_RECORD);
    const index = v4.prepare(V4_INDEX_RECORD);
    for (const row of ROWS) {
      const vector = row.vector ? Buffer.from(row.vector.buffer) : null;
      const { key } = insert.get(row.namespace, row.id, row.text, JSON.stringify(row.metadata), vector) as { key: number };
      index.run(key, row.text);
    }
    v4.prepare(`INSERT INTO meta (key, value) VALUES ('generation', '9')`).run();
    const dump = (db: Database.Database) =>
      db.prepare(`SELECT key, namespace, id, text, metadata, hex(vector) AS vector FROM records ORDER BY key`).all();
    const before = dump(v4);
    v4.close();

    const sidecar = Sidecar.open(file);
    try {
      expect(sidecar.db.pragma("user_version", { simple: true })).toBe(7);
      expect(dump(sidecar.db)).toEqual(before);
      expect(sidecar.generation).toBe(9);
      expect(columns(sidecar)).toEqual(expectedColumns());
      sidecar.db.exec(`INSERT INTO records_fts (records_fts, rank) VALUES ('integrity-check', 1)`);
      expect(sidecar.keywordSearch("ns", "puppy name", 5).map((h) => h.id)).toContain("a3");
      // Every dated turn holds "2023"; only session b's date holds "June".
      expect(
        sidecar
          .keywordSearch("ns", "june 2023", 5)
          .map((h) => h.id)
          .slice(0, 2)
          .sort(),
      ).toEqual(["b1", "b2"]);
      // Writes after the upgrade continue the sessions, and deletes keep context in step.
      sidecar.upsert("ns", [{ id: "a5", text: "Good boy.", metadata: { kind: "turn", session_id: "a" }, vector: null }]);
      expect(columns(sidecar)["ns/a5"]).toMatchObject({ prev1: "He chews everything.", prev2: "Yes, we called him Biscuit!" });
      sidecar.delete("ns", { ids: ["a4"] });
      expect(columns(sidecar)["ns/a5"]).toMatchObject({ prev1: "Yes, we called him Biscuit!", prev2: "What did you name it?" });
    } finally {
      sidecar.close();
    }
  });

  it("upgrades generated v4 rows (long, non-BMP, odd metadata) to exactly what new writes produce", () => {
    let seed = 11;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
    const words = ["hiking", "\u{1F600}", "caf\u00e9", "x".repeat(150), "pottery", "\u4e2d\u6587", "\u{1F9D1}\u200d\u{1F373}"];
    const metadatas: Array<SidecarWrite["metadata"]> = [
      { kind: "turn", session_id: "s1", created_at: "2023-05-08T13:56:00.000Z" },
      { kind: "turn", session_id: "s2", extra: JSON.stringify({ date: "9 June, 2023" }) },
      { kind: "turn", session_id: "", created_at: "2023-05-08T13:56:00.000Z" },
      { kind: "turn", session_id: 7 as unknown as string },
      { kind: "turn", created_at: "not a date" },
      { kind: "fact", session_id: "s1" },
      { kind: "turn", session_id: "s1", extra: "{broken" },
    ];
    const rows: typeof ROWS = Array.from({ length: 300 }, (_, i) => ({
      namespace: pick(["ns", "ns", "other"]),
      id: `r${i}`,
      text: Array.from({ length: 1 + Math.floor(random() * 50) }, () => pick(words)).join(" "),
      metadata: pick(metadatas),
      vector: null,
    }));
    const file = tempFile();
    const v4 = new Database(file);
    v4.exec(SIDECAR_V4_SCHEMA_SQL);
    const insert = v4.prepare(V4_INSERT_RECORD);
    const index = v4.prepare(V4_INDEX_RECORD);
    for (const row of rows) {
      const { key } = insert.get(row.namespace, row.id, row.text, JSON.stringify(row.metadata), null) as { key: number };
      index.run(key, row.text);
    }
    v4.close();
    const migrated = Sidecar.open(file);
    const fresh = Sidecar.open(tempFile());
    try {
      write(fresh, rows);
      expect(columns(migrated)).toEqual(columns(fresh));
      migrated.db.exec(`INSERT INTO records_fts (records_fts, rank) VALUES ('integrity-check', 1)`);
    } finally {
      migrated.close();
      fresh.close();
    }
  });

  it("searches a version 4 file opened read-only as it is, and refuses writes with STORAGE_FAILED", () => {
    const file = tempFile();
    const v4 = new Database(file);
    v4.exec(SIDECAR_V4_SCHEMA_SQL);
    const { key } = v4.prepare(V4_INSERT_RECORD).get("ns", "t", "golden retriever", `{"kind":"turn"}`, null) as { key: number };
    v4.prepare(V4_INDEX_RECORD).run(key, "golden retriever");
    v4.close();
    const ro = Sidecar.open(file, { readOnly: true });
    try {
      expect(ro.keywordSearch("ns", "retriever", 5).map((h) => h.id)).toEqual(["t"]);
      expect(() => ro.upsert("ns", [{ id: "u", text: "x", metadata: {}, vector: null }])).toThrow(
        expect.objectContaining({ code: "STORAGE_FAILED" }),
      );
    } finally {
      ro.close();
    }
  });
});
