import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HermesMemoryError } from "@hermes/memory-core";
import { runReindex, type CliIo } from "./cli.js";
import { closeEmbeddingsServers, startEmbeddingsServer } from "./test-support/embeddings-server.js";
import { TINY_DIMS, TINY_TABLE, TINY_VOCAB, writeTinyOnnxModel } from "./test-support/tiny-onnx-model.js";
import { VECTOR_DIR, VectorMemoryProvider, type VectorMemoryProviderOptions } from "./vector-memory-provider.js";

const MARKER = "FORBIDDEN";
let dir: string;
let warnings: string[];
const providers: VectorMemoryProvider[] = [];

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "vector-unembedded-"));
  warnings = [];
});
afterEach(async () => {
  for (const p of providers.splice(0)) await p.shutdown().catch(() => undefined);
  await closeEmbeddingsServers();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** A loopback embeddings server answering HTTP 400 to a request holding a text that `refuses` (the content filter of a real endpoint). */
async function embeddingsServer(refuses: (text: string) => boolean = (t) => t.includes(MARKER)): Promise<string> {
  return (await startEmbeddingsServer(8, (_n, input) => (input.some(refuses) ? 400 : 200))).url;
}

/** A logger keeping the warnings in `warnings`. */
function logger(): NonNullable<VectorMemoryProviderOptions["logger"]> {
  const ignore = (): void => undefined;
  return { debug: ignore, info: ignore, warn: (m: string) => void warnings.push(m), error: ignore };
}

function options(url: string): VectorMemoryProviderOptions {
  return {
    env: {},
    embedder: "openai",
    embeddingsBaseUrl: url,
    embeddingsModel: "test-model",
    dimensions: 8,
    maxRetries: 0,
    logger: logger(),
  };
}

async function start(url: string): Promise<VectorMemoryProvider> {
  const p = new VectorMemoryProvider(options(url));
  providers.push(p);
  await p.initialize("s1", { hermesHome: dir, userId: "alice" });
  return p;
}

/** Stored texts and whether each has a vector, read from the sidecar file. */
function storedRows(): Array<[string, boolean]> {
  const db = new Database(path.join(dir, VECTOR_DIR, "sidecar.sqlite"), { readonly: true });
  try {
    const rows = db.prepare("SELECT text, vector IS NOT NULL AS embedded FROM records ORDER BY text").all() as Array<{
      text: string;
      embedded: number;
    }>;
    return rows.map((r) => [r.text, r.embedded === 1]);
  } finally {
    db.close();
  }
}

function io(): CliIo & { out: string; err: string } {
  const sink = { out: "", err: "", isTTY: false, stdout: (t: string) => void (sink.out += t), stderr: (t: string) => void (sink.err += t) };
  return sink;
}

describe("local store: a text the embedder refuses for its content", () => {
  it("is stored without a vector, found by keyword search, counted and named; the writes behind it are not held", async () => {
    const p = await start(await embeddingsServer());
    const ids = ["alpha fact about apples", `the zebra ${MARKER} fact`, "gamma fact about grapes", "delta fact about dates"].map(
      (content) => p.remember({ content }),
    );
    await p.flush();
    expect(storedRows()).toEqual([
      ["alpha fact about apples", true],
      ["delta fact about dates", true],
      ["gamma fact about grapes", true],
      [`the zebra ${MARKER} fact`, false],
    ]);
    const stats = await p.stats();
    expect(stats).toMatchObject({ items: 4, pendingWrites: 0, indexedVectors: 3, unembeddedItems: 1 });
    const refusedWarnings = warnings.filter((w) => w.includes("stored without a vector"));
    expect(refusedWarnings).toHaveLength(1);
    expect(refusedWarnings[0]).toContain(JSON.stringify(ids[1]));
    expect(refusedWarnings[0]).toMatch(/HTTP 400/);
    // Keyword (hybrid) search finds it; the vector side has nothing for it.
    const hit = (await p.search("zebra", { limit: 4 })).find((h) => h.id === ids[1]);
    expect(hit).toMatchObject({ content: `the zebra ${MARKER} fact` });
    expect((hit!.metadata as { scores: { vector: unknown; bm25: unknown } }).scores).toMatchObject({
      vector: null,
      bm25: expect.any(Number),
    });

    // A later write goes through at once; the refused one is not re-sent or re-reported.
    const later = p.remember({ content: "epsilon fact about elderberries" });
    await p.flush();
    expect(storedRows()).toContainEqual(["epsilon fact about elderberries", true]);
    expect(await p.get(later)).not.toBeNull();
    expect(warnings.filter((w) => w.includes("stored without a vector"))).toHaveLength(1);
    expect(await p.stats()).toMatchObject({ items: 5, pendingWrites: 0, unembeddedItems: 1 });
  });

  it("a write refused alone waits until the embedder took another text, then is stored without a vector", async () => {
    const p = await start(await embeddingsServer());
    p.remember({ content: `a lonely ${MARKER} note` });
    // Nothing embedded yet: the refusal may be a misconfigured embedder, so the write is held.
    await expect(p.flush()).rejects.toThrow(/1 accepted writes are not stored yet/);
    p.remember({ content: "a plain note" });
    await p.flush();
    expect(storedRows()).toEqual([
      [`a lonely ${MARKER} note`, false],
      ["a plain note", true],
    ]);
  });

  it("keeps every write held and flush() rejecting when the embedder refuses every text, until it accepts them", async () => {
    let refuseAll = true;
    const p = await start(await embeddingsServer(() => refuseAll));
    for (const content of ["one fact", "two fact"]) p.remember({ content });
    const error = await p.flush().catch((e: unknown) => e);
    expect(HermesMemoryError.hasCode(error, "STORAGE_FAILED")).toBe(true);
    expect((error as Error).message).toMatch(/2 accepted writes are not stored yet.*HTTP 400/s);
    expect(await p.stats()).toMatchObject({ items: 0, pendingWrites: 2, unembeddedItems: 0 });
    refuseAll = false;
    await p.flush();
    expect(storedRows()).toEqual([
      ["one fact", true],
      ["two fact", true],
    ]);
  });

  it("reindex embeds such items again, leaves them without a vector while still refused, and reports how many", async () => {
    let refused = true;
    const url = await embeddingsServer((t) => refused && t.includes(MARKER));
    const p = await start(url);
    for (const content of ["first kept fact", `second ${MARKER} fact`, "third kept fact"]) p.remember({ content });
    await p.flush();
    await p.shutdown();
    const ctx = { hermesHome: dir, providerName: "vector", providerOptions: options(url) };

    const still = io();
    expect(await runReindex(ctx, {}, still)).toBe(0);
    expect(still.out).toMatch(/Reindexed 2 items in 1 namespaces.*\n1 items were refused for their text and stay without a vector/s);
    expect(storedRows()).toEqual([
      ["first kept fact", true],
      [`second ${MARKER} fact`, false],
      ["third kept fact", true],
    ]);

    refused = false;
    const fixed = io();
    expect(await runReindex(ctx, { json: true }, fixed)).toBe(0);
    expect(JSON.parse(fixed.out)).toMatchObject({ items: 3, namespaces: 1, unembedded: 0 });
    expect(storedRows().every(([, embedded]) => embedded)).toBe(true);
    const q = await start(url);
    expect(await q.stats()).toMatchObject({ indexedVectors: 3, unembeddedItems: 0 });
  });

  it("the same holds for a text the ONNX model turns into NaN (the same text always does)", async () => {
    const table = TINY_TABLE.map((row, i) => (TINY_VOCAB[i] === "cat" ? [NaN, 0, 0, 0] : [...row]));
    const modelDir = writeTinyOnnxModel(path.join(dir, "model"), { table });
    const p = new VectorMemoryProvider({ env: {}, embedder: "onnx", onnxModelDir: modelDir, dimensions: TINY_DIMS, logger: logger() });
    providers.push(p);
    await p.initialize("s1", { hermesHome: dir });
    for (const content of ["the dog", "the cat", "car"]) p.remember({ content });
    await p.flush();
    expect(storedRows()).toEqual([
      ["car", true],
      ["the cat", false],
      ["the dog", true],
    ]);
    expect(await p.stats()).toMatchObject({ unembeddedItems: 1, pendingWrites: 0 });
    expect(warnings.filter((w) => w.includes("stored without a vector"))).toEqual([expect.stringMatching(/NaN or infinite numbers/)]);
  });
});

describe("local store: synchronous writes with a text the embedder refuses", () => {
  it("the remember tool stores it without a vector and says so; the answer is still 'stored'", async () => {
    const p = await start(await embeddingsServer());
    p.remember({ content: "a warm-up fact" });
    await p.flush();
    const out = JSON.parse(await p.handleToolCall("vector_memory_remember", { content: `the yak ${MARKER} fact` })) as {
      id: string;
      status: string;
      warning?: string;
    };
    expect(out).toMatchObject({ status: "stored", warning: expect.stringMatching(/without a vector/) });
    expect(storedRows()).toContainEqual([`the yak ${MARKER} fact`, false]);
    expect((await p.search("yak", { limit: 3 })).map((h) => h.id)).toContain(out.id);
    const plain = JSON.parse(await p.handleToolCall("vector_memory_remember", { content: "an ordinary fact" })) as Record<string, unknown>;
    expect(plain).toEqual({ id: expect.any(String), status: "stored" });
  });

  it("an import stores every item: the refused ones without a vector, the others embedded, none lost", async () => {
    const p = await start(await embeddingsServer());
    const items = ["one", "two", `three ${MARKER}`, "four", "five", `six ${MARKER}`, "seven"].map((word, i) => ({
      id: `fact-imported-${i}`,
      namespace: "ignored",
      content: `imported fact ${word}`,
      metadata: { kind: "fact" },
    }));
    expect(await p.importItems(items)).toBe(7);
    const rows = storedRows();
    expect(rows).toHaveLength(7);
    expect(rows.filter(([, embedded]) => !embedded).map(([text]) => text)).toEqual([
      `imported fact six ${MARKER}`,
      `imported fact three ${MARKER}`,
    ]);
    expect(await p.stats()).toMatchObject({ items: 7, unembeddedItems: 2 });
  });

  it("an import that the embedder refuses entirely, before it embedded anything, fails and stores nothing (a misconfiguration)", async () => {
    const p = await start(await embeddingsServer(() => true));
    const items = [1, 2].map((i) => ({ id: `fact-imported-${i}`, namespace: "ignored", content: `fact ${i}`, metadata: { kind: "fact" } }));
    await expect(p.importItems(items)).rejects.toThrow(/HTTP 400/);
    expect(await p.stats()).toMatchObject({ items: 0 });
  });

  it("a pre-compression checkpoint with a refused message does not fail the compression; every message is kept", async () => {
    const p = await start(await embeddingsServer());
    p.remember({ content: "a warm-up fact" });
    await p.flush();
    await p.onPreCompress(
      [
        { role: "user", content: `my locker code is ${MARKER} 4411` },
        { role: "assistant", content: "Noted the locker code." },
      ],
      { requireCheckpoint: true },
    );
    const rows = storedRows().filter(([text]) => /locker/.test(text));
    expect(rows).toHaveLength(2);
    expect(rows.find(([text]) => text.includes(MARKER))?.[1]).toBe(false);
    expect(rows.find(([text]) => text.includes("Noted"))?.[1]).toBe(true);
  });
});
