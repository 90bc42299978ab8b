import { describeMemoryProviderContract } from "@hermes/memory-contract/vitest";
import { describe, expect, it } from "vitest";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { {{className}} } from "./index.js";

// The contract kit: every clause the host relies on, each reported with a troubleshooting hint.
describeMemoryProviderContract({
  name: "{{providerName}}",
  packageDir: fileURLToPath(new URL("..", import.meta.url)),
  createProvider: () => new {{className}}(),
  capabilities: { tools: true, recall: true, checkpoint: false, search: true, sessionSwitch: false, mirrorsBuiltinWrites: false },
});

describe("{{className}}", () => {
  it("remembers a note across instances", async () => {
    const hermesHome = fs.mkdtempSync(path.join(os.tmpdir(), "{{providerName}}-"));
    const first = new {{className}}();
    first.initialize("s1", { hermesHome });
    await first.handleToolCall("{{toolPrefix}}_notes", { action: "add", content: "The staging database is Postgres 16" });
    await first.shutdown();

    const second = new {{className}}();
    second.initialize("s2", { hermesHome });
    expect(second.prefetch("which database runs staging?", { sessionId: "s2" })).toContain("Postgres 16");
    fs.rmSync(hermesHome, { recursive: true, force: true });
  });
});
