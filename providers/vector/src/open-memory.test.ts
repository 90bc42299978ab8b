import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { openMemory, type Logger } from "@hermes/memory-core";
import { hostProjectWith } from "@hermes/test-support";

const packageDir = path.resolve(fileURLToPath(new URL("..", import.meta.url)));
const built = fs.existsSync(path.join(packageDir, "dist", "index.js"));
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

describe("discovery and loading through openMemory()", () => {
  // Needs this package's dist (the root `pnpm test` builds before testing).
  it.skipIf(!built)("finds @hermes/memory-vector as a package dependency, loads and initialises it", async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-vector-open-"));
    dirs.push(root);
    const { project, home } = hostProjectWith(root, "@hermes/memory-vector", packageDir);
    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  provider: vector\n  vector:\n    dimensions: 64\n");

    const manager = await openMemory({ hermesHome: home, cwd: project, sessionId: "s1", strict: true });
    try {
      const names = (manager as unknown as { providers: Array<{ name: string }> }).providers.map((p) => p.name);
      expect(names).toContain("vector");
      const tools = JSON.stringify(manager.getToolSchemas());
      expect(tools).toContain("vector_memory_search");
      const stored = JSON.parse(await manager.handleToolCall("vector_memory_remember", { content: "The boat is moored at pier 9" }));
      expect(stored.status).toBe("stored");
      const found = JSON.parse(await manager.handleToolCall("vector_memory_search", { query: "where is the boat" }));
      expect(found.results[0].content).toContain("pier 9");
    } finally {
      await manager.shutdownAll();
    }
    expect(fs.existsSync(path.join(home, "memory", "vector", "sidecar.sqlite"))).toBe(true);
  });

  it.skipIf(!built)("reports to the host's logger (an ignored config.yaml key is warned about)", async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-vector-logger-"));
    dirs.push(root);
    const { project, home } = hostProjectWith(root, "@hermes/memory-vector", packageDir);
    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  provider: vector\n  vector:\n    dimensions: 64\n    hybridd: true\n");
    const warnings: string[] = [];
    const logger: Logger = { debug() {}, info() {}, warn: (m: string) => warnings.push(m), error: (m: string) => warnings.push(m) };
    const manager = await openMemory({ hermesHome: home, cwd: project, sessionId: "s1", strict: true, logger });
    try {
      expect(warnings.join("\n")).toMatch(/hybridd/);
    } finally {
      await manager.shutdownAll();
    }
  });
});
