import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { HermesMemoryError } from "@hermes/memory-core";
import { PineconeFake } from "@hermes/pinecone-fake";
import { VectorMemoryProvider, type VectorMemoryProviderOptions } from "./vector-memory-provider.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

function tempHome(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-vector-guards-"));
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function startFake(metric: "cosine" | "dotproduct"): Promise<PineconeFake> {
  const fake = await PineconeFake.start({ dimension: 64, indexName: "mem", metric });
  cleanups.push(() => fake.close());
  return fake;
}

type Mode = { name: string; options(): Promise<VectorMemoryProviderOptions> };
const modes: Mode[] = [
  { name: "local store", options: async () => ({}) },
  {
    name: "pinecone, sidecar layout (loopback fake)",
    options: async () => ({
      store: "pinecone",
      pineconeIndex: "mem",
      pineconeControllerUrl: (await startFake("cosine")).url,
      env: { PINECONE_API_KEY: "test-key" },
      maxRetries: 0,
    }),
  },
  {
    name: "pinecone, remote layout (loopback fake)",
    options: async () => ({
      store: "pinecone",
      pineconeLayout: "remote",
      pineconeIndex: "mem",
      pineconeControllerUrl: (await startFake("dotproduct")).url,
      env: { PINECONE_API_KEY: "test-key" },
      maxRetries: 0,
    }),
  },
];

async function open(mode: Mode): Promise<VectorMemoryProvider> {
  const provider = new VectorMemoryProvider({ env: {}, dimensions: 64, ...(await mode.options()) });
  await provider.initialize("s1", { hermesHome: tempHome(), agentIdentity: "work", userId: "alice" });
  cleanups.push(() => provider.shutdown().catch(() => undefined));
  return provider;
}

/** The INVALID_ARGUMENT message `call` rejects with (fails on anything else). */
async function refusal(call: () => unknown): Promise<string> {
  try {
    await call();
  } catch (error) {
    expect(HermesMemoryError.hasCode(error, "INVALID_ARGUMENT"), String(error)).toBe(true);
    return (error as Error).message;
  }
  throw new Error("expected INVALID_ARGUMENT, nothing was thrown");
}

describe.each(modes)("VectorMemoryProvider scope guards ($name)", (mode) => {
  it("an empty $in or $nin is refused by search, countWhere and forgetWhere, and erases nothing", async () => {
    const p = await open(mode);
    await p.remember({ content: "alpha one", metadata: { team: "infra" } });
    await p.remember({ content: "alpha two", metadata: { team: "web" } });
    await p.flush();
    for (const op of ["$in", "$nin"]) {
      const metadata = { team: { [op]: [] } };
      expect(await refusal(() => p.search("alpha", { metadata }))).toContain(`metadata.team.${op} must be a non-empty list`);
      expect(await refusal(() => p.countWhere({ metadata }))).toContain(op);
      expect(await refusal(() => p.forgetWhere({ metadata }))).toContain(op);
    }
    expect((await p.stats()).items).toBe(2);
  });

  it("a __proto__ metadata field is refused when stored and when filtered on, as in every provider", async () => {
    const p = await open(mode);
    expect(await refusal(() => p.remember({ content: "x", metadata: JSON.parse('{"__proto__": "x"}') }))).toContain("__proto__");
    const id = await p.remember({ content: "kept alpha", metadata: { doc: JSON.parse('{"__proto__": "nested is data"}') } });
    await p.flush();
    expect(await refusal(() => p.update(id, { metadata: JSON.parse('{"__proto__": 1}') }))).toContain("__proto__");
    expect(await refusal(() => p.search("alpha", { metadata: JSON.parse('{"__proto__": "x"}') }))).toContain("__proto__");
    const hit = await p.get(id);
    expect(Object.getOwnPropertyDescriptor(hit!.metadata.doc, "__proto__")?.value).toBe("nested is data");
  });

  it("a scope matching every item is refused with the count and how to confirm; nothing is erased; confirmAll: true erases them", async () => {
    const p = await open(mode);
    await p.remember({ content: "alpha one", metadata: { team: "infra" } });
    await p.remember({ content: "alpha two", metadata: { team: "web" } });
    await p.remember({ content: "alpha three", kind: "turn", sessionId: "s1" });
    await p.flush();
    for (const scope of [
      { metadata: { team: { $nin: ["none"] } } },
      { kind: ["turn", "fact", "checkpoint"] as const },
      { createdAt: { $gte: 0 } },
    ]) {
      const message = await refusal(() => p.forgetWhere(scope as never));
      expect(message).toMatch(/matches all 3 items of the store; nothing was erased/);
      expect(message).toContain("confirmAll: true");
    }
    expect((await p.stats()).items).toBe(3);
    expect((await p.search("alpha", { limit: 5 })).length).toBe(3);
    expect(await p.forgetWhere({ createdAt: { $gte: 0 }, confirmAll: true })).toBe(3);
    expect(await p.search("alpha", { limit: 5 })).toEqual([]);
  });

  it("counts what the erasure would take: a turn's checkpoint copies make a turns-only scope erase everything", async () => {
    const p = await open(mode);
    p.syncTurn("My badge pin is quokkaflume.", "Noted the pin.", { sessionId: "s1" });
    await p.flush();
    await p.onPreCompress([{ role: "user", content: "My badge pin is quokkaflume." }], { requireCheckpoint: true });
    await p.flush();
    expect(await refusal(() => p.forgetWhere({ kind: "turn" }))).toMatch(/matches all 2 items/);
    expect((await p.search("quokkaflume", { limit: 5 })).length).toBe(2);
  });

  it("an ids list is exempt, { confirmAll: true } alone erases everything, {} stays refused, and a partial scope needs no confirmation", async () => {
    const p = await open(mode);
    const ids = [await p.remember({ content: "one" }), await p.remember({ content: "two" })];
    await p.flush();
    expect(await p.forgetWhere({ ids })).toBe(2);
    await p.remember({ content: "three", tags: ["x"] });
    await p.remember({ content: "four" });
    await p.flush();
    expect(await refusal(() => p.forgetWhere({}))).toContain("confirmAll: true");
    expect(await p.forgetWhere({ tags: { any: ["x"] } })).toBe(1);
    expect(await p.forgetWhere({ confirmAll: true })).toBe(1);
    expect((await p.stats()).items).toBe(0);
  });
});
