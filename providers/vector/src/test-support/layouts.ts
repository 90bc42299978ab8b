/**
 * The three layouts a test runs in (local store, Pinecone sidecar layout, Pinecone remote layout),
 * each against its own Pinecone fake started for the test file, the clean-ups run after each test
 * (last registered first), and sessions and homes that clean up after themselves.
 */
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll } from "vitest";
import { PineconeFake } from "@hermes/pinecone-fake";
import { VectorMemoryProvider, type VectorMemoryProviderOptions } from "../vector-memory-provider.js";

/** One layout: its name and fresh options for a provider in it (the remote layout's get a namespace of their own). */
export interface TestLayout {
  name: "local" | "pinecone sidecar" | "pinecone remote";
  options(): VectorMemoryProviderOptions;
  /** The Pinecone fake the layout writes to (none for the local store). */
  fake(): PineconeFake | undefined;
}

/**
 * Start a cosine fake (index `index`) and a dotproduct fake (index `${index}-remote`) of
 * `dimensions` before the file's tests, close them after, and return the three layouts.
 */
export function layoutsWithFakes(index: string, dimensions: number): TestLayout[] {
  let sidecarFake: PineconeFake;
  let remoteFake: PineconeFake;
  beforeAll(async () => {
    sidecarFake = await PineconeFake.start({ dimension: dimensions, indexName: index });
    remoteFake = await PineconeFake.start({ dimension: dimensions, indexName: `${index}-remote`, metric: "dotproduct" });
  });
  afterAll(async () => {
    await sidecarFake.close();
    await remoteFake.close();
  });
  const pinecone = { env: { PINECONE_API_KEY: "test-key" }, dimensions, store: "pinecone", maxRetries: 1 } as const;
  return [
    { name: "local", options: () => ({ env: {}, dimensions }), fake: () => undefined },
    {
      name: "pinecone sidecar",
      options: () => ({ ...pinecone, pineconeIndex: index, pineconeControllerUrl: sidecarFake.url }),
      fake: () => sidecarFake,
    },
    {
      name: "pinecone remote",
      options: () => ({
        ...pinecone,
        pineconeLayout: "remote",
        pineconeIndex: `${index}-remote`,
        pineconeNamespace: `${index}-${randomUUID()}`,
        pineconeControllerUrl: remoteFake.url,
      }),
      fake: () => remoteFake,
    },
  ];
}

/** Clean-ups registered during a test, run after it, last first. */
export function cleanupsAfterEach(): Array<() => unknown> {
  const cleanups: Array<() => unknown> = [];
  afterEach(async () => {
    for (const fn of cleanups.splice(0).reverse()) await fn();
  });
  return cleanups;
}

/** A temporary `$HERMES_HOME` (its name starts with `prefix`), removed after the test. */
export function tempHome(cleanups: Array<() => unknown>, prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A provider that `close()` shuts down once, whether the test closes it or the clean-ups do. */
export type Session = VectorMemoryProvider & { close(): Promise<void> };

/** A session `session-of-<user>` on `home` for `userId` (none: a session without a user), shut down after the test unless closed before. */
export async function openSession(
  cleanups: Array<() => unknown>,
  options: VectorMemoryProviderOptions,
  home: string,
  agentIdentity: string,
  userId?: string,
): Promise<Session> {
  const provider = new VectorMemoryProvider(options);
  await provider.initialize(`session-of-${userId ?? "nobody"}`, {
    hermesHome: home,
    agentIdentity,
    ...(userId !== undefined ? { userId } : {}),
  });
  let closed = false;
  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    await provider.shutdown();
  };
  cleanups.push(close);
  return Object.assign(provider, { close });
}

/** The answer with every occurrence of `id` replaced, so answers about two ids compare. */
export function withoutId(answer: string, id: string): string {
  return answer.split(id).join("<id>");
}
