import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { hostProjectWith } from "@hermes/test-support";

const packageDir = path.resolve(fileURLToPath(new URL("..", import.meta.url)));
const built = fs.existsSync(path.join(packageDir, "dist", "index.js"));
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/**
 * A host with `consoleLogger()` whose Pinecone goes away before the session ends: it starts the
 * loopback fake, opens memory through `openMemory()` (the provider found as a package dependency),
 * stores a turn, stops the fake, then ends the session and shuts down.
 */
const HOST = `
import { consoleLogger, openMemory } from "@hermes/memory-core";
import { PineconeFake } from "@hermes/pinecone-fake";
const [home, project] = process.argv.slice(1);
const fake = await PineconeFake.start({ dimension: 64, indexName: "mem" });
const fs = await import("node:fs");
fs.writeFileSync(home + "/config.yaml", [
  "memory:", "  provider: vector", "  vector:", "    dimensions: 64", "    embedder: hashing", "    store: pinecone",
  "    pinecone_index: mem", "    pinecone_host: " + fake.url, "    max_retries: 1", "    request_timeout_ms: 300", "",
].join("\\n"));
fs.writeFileSync(home + "/.env", "PINECONE_API_KEY=test-key\\n");
const memory = await openMemory({ sessionId: "s1", hermesHome: home, cwd: project, logger: consoleLogger(), strict: true });
await fake.close();
memory.syncAll("I keep the canoe behind the boathouse.", "Noted.", { sessionId: "s1" });
await memory.onSessionEnd([{ role: "user", content: "bye" }]);
await memory.shutdownAll();
process.stdout.write("DONE\\n");
`;

function runHost(home: string, project: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--input-type=module", "-e", HOST, home, project], {
      cwd: packageDir,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("a Pinecone outage at session end, logged through consoleLogger", () => {
  // Needs this package's dist (the root `pnpm test` builds before testing).
  it.skipIf(!built)("is one line with the error's code and remedy per warning, without a stack trace", { timeout: 60_000 }, async () => {
    const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "hermes-vector-outage-log-")));
    dirs.push(root);
    const { project, home } = hostProjectWith(root, "@hermes/memory-vector", packageDir);

    const result = await runHost(home, project);
    expect({ code: result.code, stdout: result.stdout }, result.stderr).toEqual({ code: 0, stdout: "DONE\n" });
    const lines = result.stderr.trimEnd().split("\n");
    const sessionEnd = lines.filter((l) => l.includes("on_session_end failed"));
    expect(sessionEnd, result.stderr).toHaveLength(1);
    expect(sessionEnd[0]).toMatch(/^\[hermes-memory\] Memory provider 'vector' on_session_end failed: .*outbox.* \[STORAGE_FAILED\]$/);
    expect(result.stderr).not.toMatch(/^\s+at /m);
    expect(result.stderr).not.toContain("[cause]");
    // Every warning is one line of its own.
    for (const line of lines) expect(line).toMatch(/^\[hermes-memory\] /);
  });
});
