import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["src/**/*.packed.test.ts"],
    // Two installs compile better-sqlite3 from source (about two minutes each on a small machine).
    testTimeout: 20 * 60_000,
    hookTimeout: 10 * 60_000,
    fileParallelism: false,
  },
});
