import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HermesMemoryError } from "@hermes/memory-core";
import { PineconeFake } from "@hermes/pinecone-fake";
import type { Embedder } from "./embedders/embedder.js";
import { HashingEmbedder } from "./embedders/hashing-embedder.js";
import { runForget, runReindex, runSearch, runStats, type CliIo } from "./cli.js";
import { VectorMemoryProvider, type VectorMemoryProviderOptions } from "./vector-memory-provider.js";

let fake: PineconeFake;
const homes: string[] = [];
const providers: VectorMemoryProvider[] = [];

beforeEach(async () => {
  fake = await PineconeFake.start({ dimension: 128, indexName: "mem", metric: "dotproduct" });
});
afterEach(async () => {
  for (const p of providers.splice(0)) await p.shutdown().catch(() => undefined);
  await fake.close();
  for (const home of homes.splice(0)) fs.rmSync(home, { recursive: true, force: true });
});

function tempHome(): string {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "vector-remote-"));
  homes.push(home);
  return home;
}

function options(extra: Partial<VectorMemoryProviderOptions> = {}): VectorMemoryProviderOptions {
  return {
    env: { PINECONE_API_KEY: "test-key" },
    dimensions: 128,
    store: "pinecone",
    pineconeLayout: "remote",
    pineconeIndex: "mem",
    pineconeControllerUrl: fake.url,
    maxRetries: 1,
    ...extra,
  };
}

async function start(
  home: string,
  ctx: { agentIdentity?: string; userId?: string } = { agentIdentity: "team", userId: "alice" },
  extra: Partial<VectorMemoryProviderOptions> = {},
): Promise<VectorMemoryProvider> {
  const p = new VectorMemoryProvider(options(extra));
  providers.push(p);
  await p.initialize("s1", { hermesHome: home, ...ctx });
  return p;
}

function io(): CliIo & { out: string; err: string } {
  const sink = { out: "", err: "", isTTY: false, stdout: (t: string) => void (sink.out += t), stderr: (t: string) => void (sink.err += t) };
  return sink;
}

describe("pinecone_layout: remote", () => {
  it("lets two machines with one namespace share memory and ranking, keeping only the outbox locally", async () => {
    const homeA = tempHome();
    const homeB = tempHome();
    const a = await start(homeA);
    a.remember({ content: "The deploy password rotates every friday", tags: ["ops"] });
    a.syncTurn("where do we deploy", "we deploy to the blue cluster", { sessionId: "s1" });
    await a.flush();
    expect(fake.count("team")).toBe(2);
    expect(fs.readdirSync(path.join(homeA, "memory", "vector")).filter((f) => !f.startsWith("remote-outbox.sqlite"))).toEqual([]);

    const b = await start(homeB);
    const hits = await b.search("deploy password");
    expect(hits[0]).toMatchObject({ content: "The deploy password rotates every friday", userId: "alice", tags: ["ops"] });
    expect((await a.search("deploy password")).map((h) => h.id)).toEqual(hits.map((h) => h.id));
    expect(await b.stats()).toMatchObject({ items: 2, layout: "remote", store: "pinecone", pendingWrites: 0, alpha: 0.5 });
    const meaningOnly = await start(tempHome(), { agentIdentity: "team", userId: "alice" }, { hybrid: false });
    expect(await meaningOnly.stats()).toMatchObject({ items: 2, alpha: 1 });
    expect(await b.prefetch("deploy password", { sessionId: "s1" })).toContain("deploy password rotates");
    // Another user of the same namespace does not see alice's items.
    const c = await start(tempHome(), { agentIdentity: "team", userId: "bob" });
    expect(await c.search("deploy password")).toEqual([]);
  });

  it("writes the same record metadata as the sidecar layout, so one filter translation serves both", async () => {
    const item = {
      content: "quarterly numbers for the red team",
      tags: ["finance", "q3"],
      metadata: { team: "red", size: 3, nested: { a: 1 }, gone: null },
      ttlMs: 60_000,
    };
    const sidecarLayout = await start(tempHome(), { agentIdentity: "team", userId: "alice" }, { pineconeLayout: "sidecar" });
    const sidecarId = sidecarLayout.remember({ ...item, userId: "alice", sessionId: "s1", kind: "fact" });
    await sidecarLayout.flush();
    const remote = await start(tempHome());
    const remoteId = remote.remember({ ...item, userId: "alice", sessionId: "s1", kind: "fact" });
    await remote.flush();
    const a = fake.namespaces.get("team:alice")!.get(sidecarId)!.metadata!;
    const b = fake.namespaces.get("team")!.get(remoteId)!.metadata!;
    const { seq, ...remoteFields } = b;
    expect(typeof seq).toBe("number");
    expect(Object.keys(remoteFields).sort()).toEqual(Object.keys(a).sort());
    for (const key of ["text", "kind", "session_id", "user_id", "tags", "extra", "meta_team", "meta_size", "meta_nested"])
      expect(remoteFields[key]).toEqual(a[key]);
    expect(a.meta_nested).toBe('{"a":1}');
    expect(typeof a.expires_at).toBe("number");
    expect(typeof b.expires_at).toBe("number");
    expect(typeof b.created_ms).toBe("number");
  });

  it("refuses to mix embedders in one namespace: a machine with another embedder gets EMBEDDING_DIMENSION_MISMATCH, nothing is written", async () => {
    const a = await start(tempHome());
    a.remember({ content: "written with the hashing embedder" });
    await a.flush();
    expect(fake.namespaces.get("team.hermes-identity")?.get("identity")?.metadata).toMatchObject({
      embedder: "hashing-v1",
      dimensions: 128,
    });
    const hashing = new HashingEmbedder({ dimensions: 128 });
    const other: Embedder = { id: "other-model", dimensions: 128, embed: (texts) => hashing.embed(texts) };
    const b = await start(tempHome(), { agentIdentity: "team", userId: "alice" }, { embedderInstance: other });
    const error = await b.search("hashing embedder").catch((e: unknown) => e);
    expect(HermesMemoryError.hasCode(error, "EMBEDDING_DIMENSION_MISMATCH")).toBe(true);
    expect((error as Error).message).toMatch(/written with embedder hashing-v1 .* this process uses embedder other-model/);
    b.remember({ content: "must not be mixed in" });
    expect(HermesMemoryError.hasCode(await b.flush().catch((e: unknown) => e), "STORAGE_FAILED")).toBe(true);
    expect(fake.count("team")).toBe(1);
    expect(await b.shutdown().catch((e: unknown) => (e as Error).message)).toMatch(/1 writes not acknowledged/);
  });

  it("refuses to start without a namespace every machine can share, and accepts pinecone_namespace", async () => {
    const p = new VectorMemoryProvider(options());
    providers.push(p);
    const error = await p.initialize("s1", { hermesHome: tempHome() }).catch((e: unknown) => e);
    expect(HermesMemoryError.hasCode(error, "INVALID_CONFIG")).toBe(true);
    expect((error as Error).message).toMatch(/pinecone_namespace/);
    const q = await start(tempHome(), {}, { pineconeNamespace: "shared" });
    q.remember({ content: "hello from the explicit namespace" });
    await q.flush();
    expect(fake.count("shared")).toBe(1);
  });

  it("mirrors built-in writes (replace and remove delete the old fact) and stores checkpoints once", async () => {
    const p = await start(tempHome());
    p.onMemoryWrite("add", "user", "prefers green tea", {});
    await p.flush();
    expect((await p.search("green tea"))[0]?.content).toBe("prefers green tea");
    p.onMemoryWrite("replace", "user", "prefers black coffee", { previousContent: "prefers green tea" });
    await p.flush();
    expect((await p.search("green tea")).map((h) => h.content)).not.toContain("prefers green tea");
    expect((await p.search("black coffee"))[0]?.content).toBe("prefers black coffee");
    p.onMemoryWrite("remove", "user", "prefers black coffee", {});
    await p.flush();
    expect(fake.count("team")).toBe(0);

    const messages = [
      { role: "user" as const, content: "the launch window opens at noon" },
      { role: "assistant" as const, content: "noted: launch window at noon" },
    ];
    await p.onPreCompress(messages, { requireCheckpoint: true });
    await p.onPreCompress(messages, { requireCheckpoint: true });
    expect(fake.count("team")).toBe(2);
    expect((await p.search("launch window", { kind: "checkpoint" })).length).toBe(2);
  });

  it("keeps writes Pinecone did not acknowledge in the outbox and says so at shutdown; the next start sends them", async () => {
    const home = tempHome();
    const p = await start(home);
    fake.failNext(500, 1_000_000);
    p.remember({ content: "written during an outage" });
    const error = await p.shutdown().catch((e: unknown) => e);
    expect(HermesMemoryError.hasCode(error, "STORAGE_FAILED")).toBe(true);
    expect((error as Error).message).toMatch(/1 writes not acknowledged by Pinecone are kept in the outbox/);
    fake.clearFaults();
    const again = await start(home);
    await again.flush();
    expect((await again.search("outage"))[0]?.content).toBe("written during an outage");
  });

  it("CLI stats, search and forget work in the remote layout", async () => {
    const home = tempHome();
    const p = await start(home);
    p.remember({ content: "draft about the roadmap", tags: ["draft"] });
    p.remember({ content: "final roadmap", tags: ["final"] });
    await p.shutdown();
    const ctx = { hermesHome: home, providerName: "vector", providerOptions: options() };
    const statsIo = io();
    expect(await runStats(ctx, { profile: "team", user: "alice", json: true }, statsIo)).toBe(0);
    expect(JSON.parse(statsIo.out)).toMatchObject({ items: 2, layout: "remote" });
    const searchIo = io();
    expect(await runSearch(ctx, "roadmap", { profile: "team", user: "alice", json: true }, searchIo)).toBe(0);
    expect((JSON.parse(searchIo.out) as unknown[]).length).toBe(2);
    const forgetIo = io();
    expect(await runForget(ctx, undefined, { profile: "team", user: "alice", tag: ["draft"], yes: true, json: true }, forgetIo)).toBe(0);
    expect(JSON.parse(forgetIo.out)).toEqual({ erased: 1 });
    expect(fake.count("team")).toBe(1);
  });
});

describe("hermes-memory vector reindex --to remote", () => {
  it("moves the sidecar layout's items into the remote layout, searchable by a fresh process; a re-run stores nothing twice", async () => {
    const home = tempHome();
    const sidecarOptions = options({ pineconeLayout: "sidecar" });
    const old = new VectorMemoryProvider(sidecarOptions);
    await old.initialize("s1", { hermesHome: home, agentIdentity: "team", userId: "alice" });
    old.remember({ content: "the vault code is 4412", tags: ["secret"], metadata: { project: "apollo" } });
    old.remember({ content: "bob's note about the boiler", userId: "bob" });
    old.syncTurn("what is for lunch", "pizza on thursdays", { sessionId: "s1" });
    await old.shutdown();
    const sidecarRecords = fake.count("team:alice") + fake.count("team:bob");
    expect(sidecarRecords).toBe(3);

    const ctx = { hermesHome: home, providerName: "vector", providerOptions: options() };
    const first = io();
    expect(await runReindex(ctx, { to: "remote", profile: "team" }, first)).toBe(0);
    expect(first.out).toMatch(/Moved 3 items into the remote Pinecone layout \(namespace team\)/);
    expect(fake.count("team")).toBe(3);

    // A fresh process on another machine, remote layout only.
    const fresh = await start(tempHome());
    const hits = await fresh.search("vault code", { tags: { any: ["secret"] }, metadata: { project: "apollo" } });
    expect(hits.map((h) => h.content)).toEqual(["the vault code is 4412"]);
    expect((await fresh.search("lunch", { kind: "turn", sessionId: "s1" }))[0]?.content).toMatch(/pizza on thursdays/);
    expect((await fresh.search("boiler", { userId: "bob" }))[0]?.content).toBe("bob's note about the boiler");

    const second = io();
    expect(await runReindex(ctx, { to: "remote", profile: "team", json: true }, second)).toBe(0);
    expect(JSON.parse(second.out)).toMatchObject({ items: 3, namespace: "team", layout: "remote" });
    expect(fake.count("team")).toBe(3);
    // The sidecar layout is untouched.
    expect(fake.count("team:alice") + fake.count("team:bob")).toBe(sidecarRecords);
  });

  it("refuses to guess the shared namespace and an unknown --to", async () => {
    const home = tempHome();
    const ctx = { hermesHome: home, providerName: "vector", providerOptions: options() };
    const noNamespace = io();
    expect(await runReindex(ctx, { to: "remote" }, noNamespace)).toBe(1);
    expect(noNamespace.err).toMatch(/pinecone_namespace or pass --profile/);
    const wrong = io();
    expect(await runReindex(ctx, { to: "cloud", profile: "team" }, wrong)).toBe(1);
    expect(wrong.err).toMatch(/--to accepts only "remote"/);
  });
});
