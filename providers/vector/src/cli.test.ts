import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Command } from "commander";
import { afterEach, describe, expect, it } from "vitest";
import { registerCli, runExport, runForget, runImport, runPurge, runReindex, runSearch, runStats, type CliIo } from "./cli.js";
import { VectorMemoryProvider } from "./vector-memory-provider.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});
function tempHome(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-vector-cli-"));
  dirs.push(d);
  return d;
}
function capture(): CliIo & { out: string; err: string } {
  const io = { out: "", err: "", isTTY: false, stdout: (t: string) => (io.out += t), stderr: (t: string) => (io.err += t) };
  return io;
}
async function seed(home: string, dimensions = 64): Promise<void> {
  const p = new VectorMemoryProvider({ env: {}, dimensions });
  await p.initialize("s1", { hermesHome: home });
  p.remember({ content: "The server room code is 2468", kind: "fact" });
  p.syncTurn("We discussed the quarterly roadmap", "Yes, Q3 focuses on search", { sessionId: "s1" });
  await p.shutdown();
}

describe("vector CLI actions", () => {
  it("stats and search, as text and --json", async () => {
    const home = tempHome();
    await seed(home);
    const ctx = { hermesHome: home, providerName: "vector", providerOptions: { env: {}, dimensions: 64 } };
    let io = capture();
    expect(await runStats(ctx, {}, io)).toBe(0);
    expect(io.out).toMatch(/items:\s+2 \(turns 1, facts 1, checkpoints 0\)/);
    io = capture();
    await runStats(ctx, { json: true }, io);
    expect(JSON.parse(io.out)).toMatchObject({ items: 2, store: "local" });
    io = capture();
    expect(await runSearch(ctx, "server room code", { json: true, limit: 1 }, io)).toBe(0);
    expect(JSON.parse(io.out)[0].content).toBe("The server room code is 2468");
    io = capture();
    await runSearch(ctx, "roadmap", {}, io);
    expect(io.out).toMatch(/\[turn\]\s+User: We discussed the quarterly roadmap/);
  });

  it("exports, imports into another home and reindexes after a dimension change", async () => {
    const home = tempHome();
    await seed(home);
    const file = path.join(home, "export.jsonl");
    const ctx = { hermesHome: home, providerName: "vector", providerOptions: { env: {}, dimensions: 64 } };
    let io = capture();
    expect(await runExport(ctx, file, {}, io)).toBe(0);
    expect(fs.readFileSync(file, "utf8").trim().split("\n")).toHaveLength(2);

    const other = tempHome();
    const otherCtx = { hermesHome: other, providerName: "vector", providerOptions: { env: {}, dimensions: 64 } };
    io = capture();
    expect(await runImport(otherCtx, file, { json: true }, io)).toBe(0);
    expect(JSON.parse(io.out)).toEqual({ imported: 2 });
    io = capture();
    await runSearch(otherCtx, "server room", { json: true }, io);
    expect(JSON.parse(io.out)[0].content).toContain("2468");

    const bigger = { hermesHome: home, providerName: "vector", providerOptions: { env: {}, dimensions: 96 } };
    io = capture();
    expect(await runSearch(bigger, "server", {}, io)).toBe(1);
    expect(io.err).toMatch(/reindex/);
    io = capture();
    expect(await runReindex(bigger, { json: true }, io)).toBe(0);
    expect(JSON.parse(io.out)).toEqual({ items: 2, namespaces: 1, unembedded: 0, store: "local" });
    io = capture();
    expect(await runSearch(bigger, "server room", { json: true }, io)).toBe(0);
    expect(JSON.parse(io.out)[0].content).toContain("2468");
  });

  it("reports a bad import file as an error, not a crash", async () => {
    const home = tempHome();
    const file = path.join(home, "bad.jsonl");
    fs.writeFileSync(file, "{not json}\n");
    const io = capture();
    expect(await runImport({ hermesHome: home, providerName: "vector", providerOptions: { env: {} } }, file, { json: true }, io)).toBe(1);
    expect(JSON.parse(io.out).error.message).toMatch(/bad.jsonl:1 is not valid JSON/);
  });

  // The caller's metadata becomes a filter column read by SQLite's JSON functions, which refuse a
  // document nested 1000 levels deep: one such item made every metadata-filtered search fail.
  it("refuses an import line whose metadata is nested too deep for SQLite, and metadata filters keep working", async () => {
    const home = tempHome();
    const file = path.join(home, "deep.jsonl");
    let deep = "1";
    for (let i = 0; i < 1500; i++) deep = `{"x":${deep}}`;
    const plain = {
      id: "plain",
      namespace: "x",
      content: "plain zebra note",
      metadata: { kind: "fact", extra: JSON.stringify({ project: "a" }) },
    };
    const nested = { id: "deep", namespace: "x", content: "deeply nested zebra note", metadata: { kind: "fact", extra: `{"d":${deep}}` } };
    fs.writeFileSync(file, `${JSON.stringify(plain)}\n${JSON.stringify(nested)}\n`);
    const io = capture();
    expect(await runImport({ hermesHome: home, providerName: "vector", providerOptions: { env: {} } }, file, { json: true }, io)).toBe(1);
    expect(JSON.parse(io.out).error.message).toMatch(/Import line 2: metadata nests objects or lists more than 64 levels deep/);
    const p = new VectorMemoryProvider({ env: {} });
    await p.initialize("s1", { hermesHome: home });
    try {
      expect((await p.search("zebra", { metadata: { project: "a" } })).map((h) => h.content)).toEqual(["plain zebra note"]);
    } finally {
      await p.shutdown();
    }
  });

  it("registers stats|search|reindex|export|import on a commander command", async () => {
    const home = tempHome();
    await seed(home, 384);
    const program = new Command("hermes-memory").exitOverride();
    const vector = program.command("vector");
    registerCli(vector, { hermesHome: home, providerName: "vector" });
    expect(vector.commands.map((c) => c.name())).toEqual(["stats", "search", "reindex", "export", "import", "forget", "purge", "refused"]);
    const file = path.join(home, "out.jsonl");
    await program.parseAsync(["node", "hermes-memory", "vector", "export", file, "--json"]);
    expect(fs.readFileSync(file, "utf8").trim().split("\n")).toHaveLength(2);
  });

  it("forget: one id at once; a wider scope is counted and erased only when confirmed or with --yes; purge", async () => {
    const home = tempHome();
    const p = new VectorMemoryProvider({ env: {}, dimensions: 64 });
    await p.initialize("s1", { hermesHome: home });
    const single = p.remember({ content: "single item about lighthouses" });
    for (const n of [1, 2, 3]) p.remember({ content: `draft number ${n} about lighthouses`, tags: ["draft"], metadata: { n } });
    p.remember({ content: "expired lighthouse note", expiresAt: Date.now() - 1000 });
    await p.shutdown();
    const ctx = { hermesHome: home, providerName: "vector", providerOptions: { env: {}, dimensions: 64 } };
    const count = async (): Promise<number> => {
      const io = capture();
      await runStats(ctx, { json: true }, io);
      return (JSON.parse(io.out) as { items: number }).items;
    };
    let io = capture();
    expect(await runForget(ctx, single, { json: true }, io)).toBe(0);
    expect(JSON.parse(io.out)).toEqual({ erased: 1 });
    io = capture();
    expect(await runForget(ctx, single, {}, io)).toBe(1);
    expect({ out: io.out, err: io.err }).toEqual({
      out: "",
      err: expect.stringMatching(/^vector: No item with id .*; nothing was erased/),
    });
    io = capture();
    expect(await runForget(ctx, undefined, { tag: ["draft"] }, io)).toBe(1);
    expect(io.err).toMatch(/erase 3 items.*--yes/);
    expect(await count()).toBe(4);
    const asked: string[] = [];
    io = Object.assign(capture(), { confirm: async (q: string) => (asked.push(q), false) });
    expect(await runForget(ctx, undefined, { filter: '{"metadata": {"n": {"$gte": 2}}}' }, io)).toBe(0);
    expect(asked).toEqual(["Erase 2 items from vector memory (every copy, no undo)?"]);
    expect(io.out).toContain("Cancelled");
    expect(await count()).toBe(4);
    io = Object.assign(capture(), { confirm: async () => true });
    expect(await runForget(ctx, undefined, { filter: '{"metadata": {"n": {"$gte": 2}}}', json: true }, io)).toBe(0);
    expect(JSON.parse(io.out)).toEqual({ erased: 2 });
    io = capture();
    expect(await runForget(ctx, undefined, { tag: ["draft"], yes: true }, io)).toBe(0);
    expect(io.out).toBe("Erased 1 items.\n");
    io = capture();
    expect(await runForget(ctx, undefined, { filter: "[1]" }, io)).toBe(1);
    expect(io.err).toMatch(/--filter must be a JSON object/);
    io = capture();
    expect(await runForget(ctx, undefined, {}, io)).toBe(1);
    expect(io.err).toMatch(/needs an id or a scope/);
    io = capture();
    expect(await runPurge(ctx, { json: true }, io)).toBe(0);
    expect(JSON.parse(io.out)).toEqual({ purged: 1 });
    expect(await count()).toBe(0);
  });

  it("forget: a scope matching every item is refused without --all, even with --yes; --all erases them, and alone every item", async () => {
    const home = tempHome();
    const p = new VectorMemoryProvider({ env: {}, dimensions: 64 });
    await p.initialize("s1", { hermesHome: home });
    for (const n of [1, 2]) p.remember({ content: `draft number ${n}`, tags: ["draft"] });
    await p.shutdown();
    const ctx = { hermesHome: home, providerName: "vector", providerOptions: { env: {}, dimensions: 64 } };
    let io = capture();
    expect(await runForget(ctx, undefined, { tag: ["draft"], yes: true }, io)).toBe(1);
    expect(io.err).toMatch(/matches all 2 items of vector memory; nothing was erased\. Add --all/);
    io = capture();
    expect(await runForget(ctx, undefined, { filter: '{"metadata": {"n": {"$nin": []}}}', yes: true }, io)).toBe(1);
    expect(io.err).toMatch(/\$nin must be a non-empty list/);
    io = capture();
    expect(await runForget(ctx, undefined, { tag: ["draft"], all: true, yes: true, json: true }, io)).toBe(0);
    expect(JSON.parse(io.out)).toEqual({ erased: 2 });
    const again = new VectorMemoryProvider({ env: {}, dimensions: 64 });
    await again.initialize("s1", { hermesHome: home });
    again.remember({ content: "one more" });
    await again.shutdown();
    io = capture();
    expect(await runForget(ctx, undefined, { all: true, yes: true, json: true }, io)).toBe(0);
    expect(JSON.parse(io.out)).toEqual({ erased: 1 });
  });
});
