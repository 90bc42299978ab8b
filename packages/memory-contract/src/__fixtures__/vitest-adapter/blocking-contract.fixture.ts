// Run by vitest-adapter.test.ts in a nested vitest: the adapter must fail exactly C-HOOKS-1.
import { describeMemoryProviderContract } from "@hermes/memory-contract/vitest";
import { BlockingSyncProvider } from "../broken-providers.js";

describeMemoryProviderContract({
  name: "minimal",
  createProvider: () => new BlockingSyncProvider(),
  capabilities: { tools: true, recall: true, checkpoint: true, search: true, sessionSwitch: true, mirrorsBuiltinWrites: true },
  skip: { "C-LIFECYCLE-3": "not needed for this adapter check" },
});
