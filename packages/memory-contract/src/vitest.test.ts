// The vitest adapter, imported through the package's public "./vitest" export (built dist), the
// way provider packages use it.
import { describeMemoryProviderContract } from "@hermes/memory-contract/vitest";
import { MinimalProvider } from "./__fixtures__/minimal-provider.js";

describeMemoryProviderContract({
  name: "minimal",
  createProvider: () => new MinimalProvider(),
  capabilities: { tools: true, recall: true, checkpoint: true, search: true, sessionSwitch: true, mirrorsBuiltinWrites: true },
});
