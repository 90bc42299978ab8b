/**
 * Memory stored before user ids got namespaces of their own: a sidecar (and, in the Pinecone
 * sidecar layout, the index) where `a b` and `a_b` shared the namespace `team:a_b`. The first
 * writable start moves each user's items to the user's namespace (the Pinecone vectors too), so
 * nothing stored becomes unreachable and neither user sees the other's items; items stored without
 * a user follow their namespace's one user, and stay where they are (with a warning) where the
 * namespace held several. A read-only home that cannot be migrated yet keeps users apart as well.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { Logger } from "@hermes/memory-core";
import type { PineconeFake } from "@hermes/pinecone-fake";
import { mountTmpfs } from "@hermes/test-support";
import { runReindex } from "./cli.js";
import { Outbox } from "./pinecone/outbox.js";
import { HashingEmbedder, VectorMemoryProvider, type VectorMemoryProviderOptions } from "./index.js";
import { Sidecar } from "./local/sidecar.js";
import { PineconeVectorStore } from "./pinecone/pinecone-vector-store.js";
import { cleanupsAfterEach, layoutsWithFakes, openSession, type Session } from "./test-support/layouts.js";

const cleanups = cleanupsAfterEach();
// The sidecar layout's index is `before`, the remote layout's `before-remote`.
const [, sidecarLayout, remoteLayout] = layoutsWithFakes("before", 64);
let fake: PineconeFake;
let remoteFake: PineconeFake;
beforeAll(() => {
  fake = sidecarLayout!.fake()!;
  remoteFake = remoteLayout!.fake()!;
});

/** The namespace both users had before (the profile is `team`). */
const SHARED = "team:a_b";
const embedder = new HashingEmbedder({ dimensions: 64 });

interface OldItem {
  id: string;
  text: string;
  user?: string;
  kind?: "turn" | "fact";
}

function recordingLogger(): { logger: Logger; warnings: string[] } {
  const warnings: string[] = [];
  const ignore = (): void => undefined;
  return {
    logger: { debug: ignore, info: ignore, warn: (m: string) => void warnings.push(m), error: (m: string) => void warnings.push(m) },
    warnings,
  };
}

/** What the provider stored for `item` before: its sidecar row (with its vector in the local store) and, for Pinecone, its record. */
async function storeAsBefore(home: string, items: OldItem[], pinecone: PineconeVectorStore | null, namespace = SHARED): Promise<void> {
  const dir = path.join(home, "memory", "vector");
  fs.mkdirSync(dir, { recursive: true });
  const sidecar = Sidecar.open(path.join(dir, "sidecar.sqlite"));
  const vectors = await embedder.embed(items.map((i) => i.text));
  const rows = items.map((item, i) => {
    const kind = item.kind ?? "fact";
    const metadata = {
      kind,
      created_at: new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString(),
      ...(kind === "turn" ? { session_id: `session-of-${item.user}` } : {}),
      ...(item.user !== undefined ? { user_id: item.user } : {}),
    };
    return { id: item.id, text: item.text, metadata, vector: pinecone ? null : vectors[i]! };
  });
  sidecar.upsert(namespace, rows);
  sidecar.setMeta("profile_id", "team");
  sidecar.setMeta(pinecone ? "embedder:pinecone:before" : "embedder:local", `${embedder.id}/${embedder.dimensions}`);
  sidecar.close();
  await pinecone?.upsert(
    rows.map((r, i) => ({ id: r.id, vector: vectors[i]!, metadata: { ...r.metadata, text: r.text } })),
    { namespace },
  );
}

const LAYOUTS = [
  { name: "local", pinecone: false },
  { name: "pinecone sidecar", pinecone: true },
] as const;

describe.each(LAYOUTS)("memory stored before user namespaces ($name layout)", ({ pinecone }) => {
  let home: string;
  let options: VectorMemoryProviderOptions;

  /** A home (a fresh temporary one unless `at` is given) holding `items` as the provider stored them before, and an emptied index. */
  async function setUp(items: OldItem[], at?: string): Promise<void> {
    if (at === undefined) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vector-namespace-migration-"));
      cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
      home = dir;
    } else home = at;
    options = pinecone
      ? {
          env: { PINECONE_API_KEY: "test-key" },
          dimensions: 64,
          store: "pinecone",
          pineconeIndex: "before",
          pineconeControllerUrl: fake.url,
          maxRetries: 1,
        }
      : { env: {}, dimensions: 64 };
    const store = pinecone
      ? new PineconeVectorStore({ apiKey: "test-key", indexName: "before", controllerHostUrl: fake.url, dimensions: 64 })
      : null;
    fake.index("before")!.namespaces.clear();
    await storeAsBefore(home, items, store);
  }

  const session = (userId: string, logger?: Logger): Promise<Session> =>
    openSession(cleanups, { ...options, ...(logger ? { logger } : {}) }, home, "team", userId);

  const found = async (s: VectorMemoryProvider, query: string): Promise<string[]> =>
    (JSON.parse(await s.handleToolCall("vector_memory_search", { query, limit: 20 })) as { results: Array<{ id: string }> }).results
      .map((r) => r.id)
      .sort();

  it("moves each user's items (and an unowned item of a namespace that held one user) to that user's namespace", async () => {
    await setUp([
      { id: "turn-1", text: "my pelican lives in the shed", user: "a b", kind: "turn" },
      { id: "fact-1", text: "the pelican eats sardines", user: "a b" },
      { id: "fact-2", text: "the pelican is called Bob" },
    ]);
    const { logger, warnings } = recordingLogger();
    const owner = await session("a b", logger);
    expect(await found(owner, "pelican")).toEqual(["fact-1", "fact-2", "turn-1"]);
    expect(await owner.countWhere({ userId: "a b" })).toBe(3);
    expect(warnings.join("\n")).toMatch(/moved 3 items/);
    await owner.flush();
    await owner.close();

    const other = await session("a_b");
    expect(await found(other, "pelican")).toEqual([]);
    expect(await other.countWhere({ userId: "a_b" })).toBe(0);
    for (const id of ["turn-1", "fact-1", "fact-2"])
      expect(JSON.parse(await other.handleToolCall("vector_memory_forget", { id }))).toHaveProperty("error");
    await other.close();

    if (pinecone) {
      // The vectors moved with their items: none is left in the old namespace, each is in the new one.
      expect(fake.count(SHARED, "before")).toBe(0);
      const moved = [...fake.index("before")!.namespaces.entries()].filter(([ns]) => ns !== SHARED && ns.startsWith("team:"));
      expect(moved.map(([ns, records]) => [ns, [...records.keys()].sort()])).toEqual([["team:a~20b", ["fact-1", "fact-2", "turn-1"]]]);
    }
    // A second start moves nothing again.
    const { logger: again, warnings: none } = recordingLogger();
    const later = await session("a b", again);
    expect(await found(later, "pelican")).toEqual(["fact-1", "fact-2", "turn-1"]);
    expect(none.join("\n")).not.toMatch(/moved/);
    await later.close();
  });

  it("where both users wrote to the shared namespace, each gets their own items; unowned items stay with the namespace's owner, with a warning saying so", async () => {
    await setUp([
      { id: "turn-1", text: "my heron lives in the shed", user: "a b", kind: "turn" },
      { id: "fact-1", text: "the heron eats sardines", user: "a b" },
      { id: "turn-2", text: "my heron lives on the roof", user: "a_b", kind: "turn" },
      { id: "fact-3", text: "the heron is called Alf" },
    ]);
    const { logger, warnings } = recordingLogger();
    const spaced = await session("a b", logger);
    expect(await found(spaced, "heron")).toEqual(["fact-1", "turn-1"]);
    expect(warnings.join("\n")).toMatch(/1 item stored without a user.*team:a_b.*several users/);
    await spaced.flush();
    await spaced.close();
    const underscored = await session("a_b");
    expect(await found(underscored, "heron")).toEqual(["fact-3", "turn-2"]);
    await underscored.close();
    if (pinecone) expect([...fake.index("before")!.namespaces.get(SHARED)!.keys()].sort()).toEqual(["fact-3", "turn-2"]);
  });

  it.skipIf(!pinecone)("sends a write an earlier version left queued for the shared namespace to its user's namespace", async () => {
    await setUp([{ id: "fact-1", text: "the curlew eats worms", user: "a b" }]);
    const outbox = Outbox.open(path.join(home, "memory", "vector", "outbox.sqlite"));
    outbox.put([
      {
        id: "fact-9",
        namespace: SHARED,
        text: "the curlew sings at dawn",
        metadata: { kind: "fact", created_at: new Date().toISOString(), user_id: "a b" },
      },
    ]);
    outbox.close();
    const owner = await session("a b");
    await owner.flush();
    expect(await found(owner, "curlew")).toEqual(["fact-1", "fact-9"]);
    await owner.close();
    expect([...fake.index("before")!.namespaces.get("team:a~20b")!.keys()].sort()).toEqual(["fact-1", "fact-9"]);
    expect(fake.count(SHARED, "before")).toBe(0);
    const other = await session("a_b");
    expect(await found(other, "curlew")).toEqual([]);
    await other.close();
  });

  it.skipIf(!pinecone)("hides vectors that could not move yet from the old namespace, and moves them at a later start", async () => {
    await setUp([
      { id: "fact-1", text: "the gull steals chips", user: "a b" },
      { id: "fact-2", text: "the gull is called Sid" },
    ]);
    fake.failNext(500, 100, "/vectors/fetch");
    const { logger, warnings } = recordingLogger();
    const owner = await session("a b", logger);
    await owner.flush();
    expect(warnings.join("\n")).toMatch(/moving 2 items' vectors to their users' namespaces failed.*next start/);
    await owner.close();
    fake.clearFaults();
    expect(fake.count(SHARED, "before")).toBe(2);
    const other = await session("a_b");
    expect(await found(other, "gull")).toEqual([]);
    for (const id of ["fact-1", "fact-2"])
      expect(JSON.parse(await other.handleToolCall("vector_memory_forget", { id }))).toHaveProperty("error");
    await other.flush();
    await other.close();
    expect(fake.count(SHARED, "before")).toBe(0);
    expect(fake.count("team:a~20b", "before")).toBe(2);
  });

  it.skipIf(process.getuid?.() !== 0)(
    "on a read-only home that could not be migrated yet, no user sees another's items, and a warning says what to do",
    async (ctx) => {
      const mount = mountTmpfs("16m");
      if ("reason" in mount) return ctx.skip(mount.reason);
      cleanups.push(() => mount.unmount());
      await setUp(
        [
          { id: "fact-1", text: "the osprey eats sardines", user: "a b" },
          { id: "fact-2", text: "the osprey nests on the mast", user: "a_b" },
        ],
        path.join(mount.dir, "home"),
      );
      mount.remount("ro");
      const { logger, warnings } = recordingLogger();
      const underscored = await session("a_b", logger);
      expect(await found(underscored, "osprey")).toEqual(["fact-2"]);
      expect(await underscored.countWhere({ userId: "a_b" })).toBe(1);
      expect(warnings.join("\n")).toMatch(/read-only.*namespace/);
      await underscored.close();
    },
  );
});

describe("hermes-memory vector reindex --to remote", () => {
  it("gives an item stored without a user the user its namespace stands for, whatever characters (or length) the id has", async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), "vector-namespace-to-remote-"));
    cleanups.push(() => fs.rmSync(home, { recursive: true, force: true }));
    const pinecone = {
      env: { PINECONE_API_KEY: "test-key" },
      dimensions: 64,
      store: "pinecone",
      pineconeControllerUrl: remoteFake.url,
      maxRetries: 1,
    } as const;
    const sidecarOptions = { ...pinecone, pineconeIndex: "before", pineconeControllerUrl: fake.url };
    const long = `Ω${"x".repeat(300)}`;
    for (const [userId, word] of [
      ["a b", "gannet"],
      ["a_b", "puffin"],
      [long, "plover"],
    ] as const) {
      const s = new VectorMemoryProvider(sidecarOptions);
      await s.initialize(`session-of-${word}`, { hermesHome: home, agentIdentity: "team", userId });
      s.remember({ content: `the ${word} nests on the cliff`, kind: "fact" });
      await s.shutdown();
    }
    const io = { out: "", err: "", stdout: (t: string) => void (io.out += t), stderr: (t: string) => void (io.err += t), isTTY: false };
    const code = await runReindex(
      { hermesHome: home, providerName: "vector", providerOptions: { ...pinecone, pineconeIndex: "before-remote" } },
      { to: "remote", profile: "team" },
      io,
    );
    expect(code, io.err).toBe(0);
    const remote = { ...pinecone, pineconeIndex: "before-remote", pineconeLayout: "remote", pineconeNamespace: "team" } as const;
    for (const [userId, own, others] of [
      ["a b", "gannet", ["puffin", "plover"]],
      ["a_b", "puffin", ["gannet", "plover"]],
      [long, "plover", ["gannet", "puffin"]],
    ] as const) {
      const s = new VectorMemoryProvider(remote);
      await s.initialize("later", {
        hermesHome: fs.mkdtempSync(path.join(os.tmpdir(), "vector-remote-reader-")),
        agentIdentity: "team",
        userId,
      });
      cleanups.push(() => s.shutdown());
      expect(await s.prefetch(`where does the ${own} nest?`, { sessionId: "later" })).toContain(own);
      for (const word of others) expect(await s.prefetch(`where does the ${word} nest?`, { sessionId: "later" })).not.toContain(word);
    }
  });
});
