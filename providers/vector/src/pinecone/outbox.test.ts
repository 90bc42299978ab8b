import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Outbox } from "./outbox.js";

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "vector-outbox-"));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

describe("Outbox", () => {
  it("keeps entries across close and reopen, newest version of an id last, and removes only acknowledged versions", () => {
    const file = path.join(dir, "outbox.sqlite");
    const outbox = Outbox.open(file);
    const [a, b] = outbox.put([
      { id: "x", namespace: "ns", text: "first", metadata: { kind: "fact" } },
      { id: "y", namespace: "ns", text: "other", metadata: {} },
    ]);
    const [a2] = outbox.put([{ id: "x", namespace: "ns", text: "second", metadata: { kind: "fact" } }]);
    expect(a2).toBeGreaterThan(b!);
    outbox.remove([a!]); // the old version of x: already replaced, nothing to remove
    outbox.close();
    outbox.close(); // idempotent

    const again = Outbox.open(file);
    expect(again.list(10).map((e) => [e.id, e.text])).toEqual([
      ["y", "other"],
      ["x", "second"],
    ]);
    again.remove([a2!]);
    expect(again.count()).toBe(1);
    again.close();
    // Closed by its last connection, the file is back in rollback-journal mode (no -wal left).
    const check = new Database(file, { readonly: true });
    expect(check.pragma("journal_mode", { simple: true })).toBe("delete");
    check.close();
  });

  it("opens an outbox written before it had a schema version without losing an entry", () => {
    const file = path.join(dir, "outbox.sqlite");
    const old = new Database(file);
    old.exec(
      `CREATE TABLE outbox (seq INTEGER PRIMARY KEY, namespace TEXT NOT NULL, id TEXT NOT NULL, text TEXT NOT NULL, metadata TEXT NOT NULL, UNIQUE (namespace, id))`,
    );
    old
      .prepare("INSERT INTO outbox (namespace, id, text, metadata) VALUES (?, ?, ?, ?)")
      .run("ns", "kept", "waiting for Pinecone", JSON.stringify({ kind: "turn" }));
    old.close();

    const outbox = Outbox.open(file);
    expect(outbox.list(10)).toEqual([{ seq: 1, id: "kept", namespace: "ns", text: "waiting for Pinecone", metadata: { kind: "turn" } }]);
    outbox.close();
    const check = new Database(file, { readonly: true });
    expect(check.pragma("user_version", { simple: true })).toBe(1);
    check.close();
  });

  it("refuses a file written by a newer release with SCHEMA_TOO_NEW and leaves it untouched", () => {
    const file = path.join(dir, "outbox.sqlite");
    const newer = new Database(file);
    newer.exec("CREATE TABLE future (x)");
    newer.pragma("user_version = 7");
    newer.close();
    const before = fs.readFileSync(file);
    expect(() => Outbox.open(file)).toThrow(expect.objectContaining({ code: "SCHEMA_TOO_NEW" }));
    expect(fs.readFileSync(file).equals(before)).toBe(true);
  });

  it("reports a directory it cannot create as STORAGE_FAILED naming the file and the fix", () => {
    // A regular file where the directory should be: mkdir fails for every user, root included.
    fs.writeFileSync(path.join(dir, "vector"), "");
    const file = path.join(dir, "vector", "outbox.sqlite");
    expect(() => Outbox.open(file)).toThrow(
      expect.objectContaining({
        code: "STORAGE_FAILED",
        message: expect.stringMatching(/vector write outbox.*outbox\.sqlite.*write permission/s),
      }),
    );
  });

  it("reports a file that is not a database as STORAGE_FAILED", () => {
    const file = path.join(dir, "outbox.sqlite");
    fs.writeFileSync(file, "this is not a database ".repeat(100));
    expect(() => Outbox.open(file)).toThrow(expect.objectContaining({ code: "STORAGE_FAILED" }));
  });
});
