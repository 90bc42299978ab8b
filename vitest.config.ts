import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    projects: ["packages/*", "providers/*", "tooling/repo-checks", "tooling/bench", "tooling/pinecone-fake", "tooling/test-support"],
  },
});
