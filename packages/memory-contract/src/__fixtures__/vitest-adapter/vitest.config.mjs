// Config for the nested vitest run in vitest-adapter.test.ts (not part of the workspace projects).
// The cache goes to the caller's temp dir so the run leaves nothing in the source tree.
export default {
  cacheDir: process.env.CONTRACT_ADAPTER_CACHE_DIR ?? "node_modules/.vite",
  test: { include: ["*.fixture.ts"], pool: "forks" },
};
