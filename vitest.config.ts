import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

/** The repository root (a package's `pnpm test` runs vitest from the package's folder with `--root ../..`). */
const ROOT = path.dirname(fileURLToPath(import.meta.url));

/** Every workspace package with tests, as a project named after its package (`--project @hermes/memory-core`). */
const PROJECT_DIRS = [
  ...["packages", "providers"].flatMap((group) => fs.readdirSync(path.join(ROOT, group)).map((name) => path.join(ROOT, group, name))),
  ...["tooling/repo-checks", "tooling/bench", "tooling/pinecone-fake", "tooling/test-support"].map((dir) => path.join(ROOT, dir)),
].filter((dir) => fs.existsSync(path.join(dir, "package.json")));

export default defineConfig({
  test: {
    // Per-test bound for every project (each one `extends` this config). Many tests start child
    // processes or run a whole contract and take 2–4 s on an idle 2-core machine; vitest's default
    // of 5 s made them fail when the machine was busy. A test that needs longer says so itself.
    testTimeout: 20_000,
    projects: PROJECT_DIRS.map((dir) => ({
      extends: true,
      test: { name: (JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as { name: string }).name, root: dir },
    })),
  },
});
