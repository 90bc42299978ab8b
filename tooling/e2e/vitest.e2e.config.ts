import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["src/**/*.e2e.test.ts"],
    testTimeout: 20 * 60_000,
    hookTimeout: 10 * 60_000,
    fileParallelism: false,
  },
});
