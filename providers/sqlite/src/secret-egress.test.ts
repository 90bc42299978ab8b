import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryManager } from "@hermes/memory-core";
import { SqliteMemoryProvider } from "./sqlite-memory-provider.js";

const homes: string[] = [];
afterEach(() => {
  for (const home of homes.splice(0)) fs.rmSync(home, { recursive: true, force: true });
});

/** Bytes of the database, its WAL and its shared-memory file as stored on disk. */
function storedBytes(file: string): string {
  return [file, `${file}-wal`, `${file}-shm`]
    .filter((f) => fs.existsSync(f))
    .map((f) => fs.readFileSync(f).toString("latin1"))
    .join("");
}

describe("secrets handed to the provider through the manager", () => {
  it("a value identified as a secret once never reaches sqlite.db, wherever it is repeated", async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), "sqlite-secret-egress-"));
    homes.push(home);
    const file = path.join(home, "memory", "sqlite.db");
    const manager = new MemoryManager({ hermesHome: home });
    manager.addProvider(new SqliteMemoryProvider({ path: file }));
    await manager.initializeAll("s1", { hermesHome: home });
    const secret = "Zq8vLm2nPx4kRt7wQ";
    const result = await manager.handleToolCall("sqlite_memory_remember", {
      content: `note ${secret} for the deploy; api key = 'k3y-v4lu3-9f8e' and k3y-v4lu3-9f8e again. AWS_SECRET_ACCESS_KEY=${secret}`,
    });
    expect(JSON.parse(result)).not.toHaveProperty("error");
    manager.syncAll("my password: hunter22 and hunter22 is it", "I will keep it safe", { sessionId: "s1" });
    await manager.shutdownAll();
    const bytes = storedBytes(file);
    expect(bytes).toContain("for the deploy");
    // The full-text index keeps words lower-cased.
    for (const leaked of [secret, "k3y-v4lu3-9f8e", "hunter22"]) expect(bytes.toLowerCase()).not.toContain(leaked.toLowerCase());
  });
});
