import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { HermesMemoryError } from "@hermes/memory-core";
import { SqliteMemoryProvider } from "./sqlite-memory-provider.js";

let home: string;
const open: SqliteMemoryProvider[] = [];

async function makeProvider(): Promise<SqliteMemoryProvider> {
  home = fs.mkdtempSync(path.join(os.tmpdir(), "sqlite-guards-"));
  const provider = new SqliteMemoryProvider({ path: path.join(home, "memory.db") });
  await provider.initialize("s1", { hermesHome: home });
  open.push(provider);
  return provider;
}

afterEach(async () => {
  for (const p of open.splice(0)) await p.shutdown();
  fs.rmSync(home, { recursive: true, force: true });
});

/** The INVALID_ARGUMENT message `fn` throws (fails on anything else). */
/** The message of the `INVALID_ARGUMENT` the promise `run()` returns rejects with. */
async function asyncRefusal(run: () => Promise<unknown>): Promise<string> {
  try {
    await run();
  } catch (error) {
    expect(HermesMemoryError.hasCode(error, "INVALID_ARGUMENT"), String(error)).toBe(true);
    return (error as Error).message;
  }
  throw new Error("expected INVALID_ARGUMENT, nothing was thrown");
}

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(HermesMemoryError.hasCode(error, "INVALID_ARGUMENT"), String(error)).toBe(true);
    return (error as Error).message;
  }
  throw new Error("expected INVALID_ARGUMENT, nothing was thrown");
}

describe("filters that would select nothing or everything by accident", () => {
  it("an empty $in or $nin is refused by search, countWhere and forgetWhere, and erases nothing", async () => {
    const p = await makeProvider();
    p.remember({ content: "alpha one", metadata: { team: "infra" } });
    p.remember({ content: "alpha two", metadata: { team: "web" } });
    p.remember({ content: "alpha three" });
    for (const op of ["$in", "$nin"]) {
      const metadata = { team: { [op]: [] } };
      expect(refusal(() => p.search("alpha", { metadata }))).toContain(`metadata.team.${op} must be a non-empty list`);
      expect(refusal(() => p.countWhere({ metadata }))).toContain(op);
      expect(await asyncRefusal(() => p.forgetWhere({ metadata }))).toContain(op);
      expect(await asyncRefusal(() => p.forgetWhere({ metadata: { $or: [{ team: "none" }, { team: { [op]: [] } }] } }))).toContain(op);
    }
    expect(p.stats().items).toBe(3);
  });

  it("a __proto__ metadata field is refused when stored and when filtered on", async () => {
    const p = await makeProvider();
    expect(refusal(() => p.remember({ content: "x", metadata: JSON.parse('{"__proto__": "x"}') }))).toContain("__proto__");
    const id = p.remember({ content: "kept", metadata: { doc: JSON.parse('{"__proto__": "nested is data"}') } });
    expect(refusal(() => p.update(id, { metadata: JSON.parse('{"__proto__": 1}') }))).toContain("__proto__");
    expect(refusal(() => p.search("kept", { metadata: JSON.parse('{"__proto__": "x"}') }))).toContain("__proto__");
    expect(JSON.stringify(p.get(id)?.metadata)).toBe('{"doc":{"__proto__":"nested is data"}}');
  });
});

describe("an erasure scope that matches every item of the store", () => {
  it("is refused with the count and how to confirm; nothing is erased; confirmAll: true erases them", async () => {
    const p = await makeProvider();
    p.remember({ content: "alpha one", userId: "ann", metadata: { team: "infra" } });
    p.remember({ content: "alpha two", userId: "ann", metadata: { team: "web" } });
    p.syncTurn("a turn of ann", "noted", { sessionId: "s1" });
    await p.flush();
    for (const scope of [
      { metadata: { team: { $nin: ["none"] } } },
      { kind: ["turn", "fact", "checkpoint"] as const },
      { createdAt: { $gte: 0 } },
      { metadata: { x: { $exists: false } } },
    ]) {
      const message = await asyncRefusal(() => p.forgetWhere(scope as never));
      expect(message).toMatch(/matches all 3 items of the store; nothing was erased/);
      expect(message).toContain("confirmAll: true");
    }
    expect(p.stats().items).toBe(3);
    expect(p.countWhere({ createdAt: { $gte: 0 } })).toBe(3);
    expect(await p.forgetWhere({ metadata: { x: { $exists: false } }, confirmAll: true })).toBe(3);
    expect(p.stats().items).toBe(0);
  });

  it("counts what the erasure would take: a turn's checkpoint copies make a turns-only scope erase everything", async () => {
    const p = await makeProvider();
    p.syncTurn("My badge pin is quokkaflume.", "Noted the pin.", { sessionId: "s1" });
    await p.flush();
    await p.onPreCompress([{ role: "user", content: "My badge pin is quokkaflume." }], { requireCheckpoint: true });
    expect(p.stats().items).toBe(2);
    expect(await asyncRefusal(() => p.forgetWhere({ kind: "turn" }))).toMatch(/matches all 2 items/);
    expect(p.stats().items).toBe(2);
  });

  it("is allowed with an ids list (every item named), and { confirmAll: true } alone erases everything while {} stays refused", async () => {
    const p = await makeProvider();
    const ids = [p.remember({ content: "one" }), p.remember({ content: "two" })];
    expect(await p.forgetWhere({ ids })).toBe(2);
    p.remember({ content: "three" });
    expect(await asyncRefusal(() => p.forgetWhere({}))).toContain("confirmAll: true");
    expect(await asyncRefusal(() => p.forgetWhere({ confirmAll: "yes" } as never))).toContain("confirmAll must be true or false");
    expect(await p.forgetWhere({ confirmAll: true })).toBe(1);
    expect(await p.forgetWhere({ confirmAll: true })).toBe(0);
  });

  it("an empty store and a scope matching part of the store are erased without confirmation", async () => {
    const p = await makeProvider();
    expect(await p.forgetWhere({ userId: "nobody" })).toBe(0);
    p.remember({ content: "one", userId: "ann" });
    p.remember({ content: "two", userId: "bob" });
    expect(await p.forgetWhere({ userId: "ann" })).toBe(1);
  });
});
