import { fileURLToPath } from "node:url";
import { describeMemoryProviderContract } from "@hermes/memory-contract/vitest";
import { SqliteMemoryProvider } from "./sqlite-memory-provider.js";

describeMemoryProviderContract({
  name: "sqlite",
  createProvider: () => new SqliteMemoryProvider(),
  capabilities: {
    tools: true,
    recall: true,
    checkpoint: true,
    search: true,
    sessionSwitch: true,
    mirrorsBuiltinWrites: true,
    userScoping: true,
  },
  packageDir: fileURLToPath(new URL("..", import.meta.url)),
  // A read-only database is what a read-only or full disk looks like to SQLite.
  breakStorage: ({ provider }) => {
    (provider as SqliteMemoryProvider).memoryStore?.db.pragma("query_only = ON");
  },
});
