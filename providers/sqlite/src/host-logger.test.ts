import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { openMemory, type Logger } from "@hermes/memory-core";
import { hostProjectWith } from "@hermes/test-support";

const packageDir = path.resolve(fileURLToPath(new URL("..", import.meta.url)));
let root: string | undefined;
afterEach(() => {
  if (root) fs.rmSync(root, { recursive: true, force: true });
  root = undefined;
});

describe("a provider loaded by openMemory()", () => {
  // Needs this package's dist (the root `pnpm test` builds before testing).
  it.skipIf(!fs.existsSync(path.join(packageDir, "dist", "index.js")))(
    "reports to the host's logger (an ignored config.yaml key is warned about)",
    async () => {
      root = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-sqlite-logger-"));
      const { project, home } = hostProjectWith(root, "@hermes/memory-sqlite", packageDir);
      fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  provider: sqlite\n  sqlite:\n    prefetch_limitt: 3\n");
      const warnings: string[] = [];
      const logger: Logger = { debug() {}, info() {}, warn: (m: string) => warnings.push(m), error: (m: string) => warnings.push(m) };
      const manager = await openMemory({ hermesHome: home, cwd: project, sessionId: "s1", strict: true, logger });
      try {
        expect(warnings.join("\n")).toMatch(/prefetch_limitt/);
      } finally {
        await manager.shutdownAll();
      }
    },
  );
});
