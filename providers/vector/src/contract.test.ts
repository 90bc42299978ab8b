import { createHash } from "node:crypto";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect } from "vitest";
import { describeMemoryProviderContract, type ContractCapabilities } from "@hermes/memory-contract/vitest";
import { VectorMemoryProvider } from "./vector-memory-provider.js";
import { PineconeFake } from "@hermes/pinecone-fake";

const capabilities: ContractCapabilities = {
  tools: true,
  recall: true,
  checkpoint: true,
  search: true,
  sessionSwitch: true,
  mirrorsBuiltinWrites: true,
  userScoping: true,
};
const packageDir = fileURLToPath(new URL("..", import.meta.url));

describeMemoryProviderContract({
  name: "vector",
  createProvider: () => new VectorMemoryProvider({ env: {}, dimensions: 256 }),
  capabilities,
  packageDir,
  // A read-only sidecar is what a read-only or full disk looks like to the local store.
  breakStorage: ({ provider }) => {
    (provider as unknown as { backend: { sidecar: { db: { pragma(s: string): unknown } } } }).backend.sidecar.db.pragma("query_only = ON");
  },
});

let fake: PineconeFake | undefined;
beforeAll(async () => {
  fake = await PineconeFake.start({ dimension: 256, indexName: "contract" });
});
afterAll(async () => {
  await fake?.close();
});

describeMemoryProviderContract({
  name: "vector",
  // Each clause starts against a healthy server; `breakStorage` breaks it for that clause only.
  createProvider: () => {
    fake!.clearFaults();
    return new VectorMemoryProvider({
      env: { PINECONE_API_KEY: "test-key" },
      dimensions: 256,
      store: "pinecone",
      pineconeIndex: "contract",
      pineconeControllerUrl: fake!.url,
      maxRetries: 1,
    });
  },
  capabilities,
  packageDir,
  // Pinecone storage failing = the server answering 500 to everything.
  breakStorage: () => fake!.failNext(500, 1_000_000),
});

let remoteFake: PineconeFake | undefined;
beforeAll(async () => {
  remoteFake = await PineconeFake.start({ dimension: 256, indexName: "contract-remote", metric: "dotproduct" });
});
afterAll(async () => {
  // The run above used the remote layout: its items are records in the per-directory namespaces.
  const namespaces = [...remoteFake!.namespaces.keys()].filter((ns) => ns.startsWith("contract-"));
  await remoteFake?.close();
  expect(namespaces.length).toBeGreaterThan(0);
});

describeMemoryProviderContract({
  name: "vector",
  // The remote layout: everything in Pinecone. Each profile directory gets its own namespace (the
  // same one when a clause reopens that directory), as separate agents sharing one index would.
  createProvider: ({ hermesHome }) => {
    remoteFake!.clearFaults();
    return new VectorMemoryProvider({
      env: { PINECONE_API_KEY: "test-key" },
      dimensions: 256,
      store: "pinecone",
      pineconeLayout: "remote",
      pineconeNamespace: `contract-${createHash("sha256").update(hermesHome).digest("hex").slice(0, 12)}`,
      pineconeIndex: "contract-remote",
      pineconeControllerUrl: remoteFake!.url,
      maxRetries: 1,
    });
  },
  capabilities,
  packageDir,
  breakStorage: () => remoteFake!.failNext(500, 1_000_000),
});
