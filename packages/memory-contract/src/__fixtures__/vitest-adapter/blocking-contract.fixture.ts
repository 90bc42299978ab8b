// Run by vitest-adapter.test.ts in a nested vitest: the adapter must fail exactly C-HOOKS-1.
import { afterAll, expect, it } from "vitest";
import { describeMemoryProviderContract } from "@hermes/memory-contract/vitest";
import { BlockingSyncProvider } from "../broken-providers.js";

// The test file's own stub on a checked global, installed before the run: the run judges only what
// it does itself, so C-LIFECYCLE-4 passes and the stub stays in place.
const realWarn = console.warn;
const stubWarn = (...args: unknown[]) => realWarn(...args);
console.warn = stubWarn;

describeMemoryProviderContract({
  name: "minimal",
  createProvider: () => new BlockingSyncProvider(),
  capabilities: { tools: true, recall: true, checkpoint: true, search: true, sessionSwitch: true, mirrorsBuiltinWrites: true },
  skip: { "C-LIFECYCLE-3": "not needed for this adapter check" },
});

it("the test file's stub on console.warn survived the contract run", () => {
  expect(console.warn).toBe(stubWarn);
});

afterAll(() => {
  console.warn = realWarn;
});
