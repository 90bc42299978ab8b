import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["src/**/*.chaos.test.ts"],
    testTimeout: 5 * 60_000,
    hookTimeout: 2 * 60_000,
    // Each file drives real processes, mounts and servers; running them one at a time keeps the
    // timings they measure meaningful on a two-core machine.
    fileParallelism: false,
  },
});
