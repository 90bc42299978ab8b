import { describeMemoryProviderContract } from "@hermes/memory-contract/vitest";
import { describe, expect, it } from "vitest";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { HermesMemoryError, runWithProfile } from "@hermes/memory-core";
import { MEMORY_TOOL_LIMITS } from "@hermes/memory-provider-kit";
import { API_KEY_ENV, {{className}} } from "./index.js";

// The contract kit: every clause the host relies on, each reported with a troubleshooting hint.
describeMemoryProviderContract({
  name: "{{providerName}}",
  packageDir: fileURLToPath(new URL("..", import.meta.url)),
  createProvider: () => new {{className}}(),
  // userScoping: the notes of several users (ctx.userId) stay apart, in search, recall and the tool.
  capabilities: { tools: true, recall: true, checkpoint: false, search: true, sessionSwitch: false, mirrorsBuiltinWrites: false, userScoping: true },
});

describe("{{className}}", () => {
  it("remembers a note across instances", async () => {
    const hermesHome = fs.mkdtempSync(path.join(os.tmpdir(), "{{providerName}}-"));
    const first = new {{className}}();
    await first.initialize("s1", { hermesHome });
    await first.handleToolCall("{{toolPrefix}}_notes_remember", { content: "The staging database is Postgres 16" });
    await first.shutdown();

    const second = new {{className}}();
    await second.initialize("s2", { hermesHome });
    expect(second.prefetch("which database runs staging?", { sessionId: "s2" })).toContain("Postgres 16");
    fs.rmSync(hermesHome, { recursive: true, force: true });
  });

  it("answers its tools as their schemas say: tags kept, kind honoured, the default limit, forget by id", async () => {
    const hermesHome = fs.mkdtempSync(path.join(os.tmpdir(), "{{providerName}}-"));
    const provider = new {{className}}();
    await provider.initialize("s1", { hermesHome });
    const call = async (tool: string, args: Record<string, unknown>) => JSON.parse(await provider.handleToolCall(`{{toolPrefix}}_notes_${tool}`, args));
    const { id } = await call("remember", { content: "Deploys happen on Friday", tags: ["ops"] });
    provider.syncTurn("When do deploys happen?", "On Friday.", { sessionId: "s1" });
    expect((await call("search", { query: "deploys friday" })).results).toHaveLength(2);
    expect((await call("search", { query: "deploys friday", kind: "fact" })).results).toMatchObject([{ id, kind: "fact", tags: ["ops"] }]);
    for (let i = 0; i < MEMORY_TOOL_LIMITS.search.default + 2; i++) provider.remember({ content: `Friday item ${i}` });
    expect((await call("search", { query: "friday" })).count).toBe(MEMORY_TOOL_LIMITS.search.default);
    expect(await call("forget", { id })).toEqual({ ok: true, id });
    expect(await call("forget", { id })).toEqual({ error: `no note with id ${id}` });
    expect((await call("search", { query: "deploys", kind: "fact" })).results).toEqual([]);
    await provider.shutdown();
    fs.rmSync(hermesHome, { recursive: true, force: true });
  });

  it("reads its key from the profile's .env (where `memory setup` stores it)", async () => {
    const hermesHome = fs.mkdtempSync(path.join(os.tmpdir(), "{{providerName}}-"));
    fs.writeFileSync(path.join(hermesHome, ".env"), `${API_KEY_ENV}=test-key\n`, { mode: 0o600 });
    const provider = new {{className}}();
    await runWithProfile(hermesHome, () => provider.initialize("s1", { hermesHome }));
    expect(runWithProfile(hermesHome, () => provider.getStatusConfig())).toMatchObject({ remote: `key set (${API_KEY_ENV})` });
    fs.rmSync(hermesHome, { recursive: true, force: true });
  });

  it("reads its settings from config.yaml and rejects bad values with INVALID_CONFIG", async () => {
    const hermesHome = fs.mkdtempSync(path.join(os.tmpdir(), "{{providerName}}-"));
    fs.writeFileSync(path.join(hermesHome, "config.yaml"), "memory:\n  {{providerName}}:\n    prefetch_limit: 1\n");
    const provider = new {{className}}();
    await provider.initialize("s1", { hermesHome });
    provider.remember({ content: "alpha one" });
    provider.remember({ content: "alpha two" });
    expect(provider.prefetch("alpha", { sessionId: "s1" }).split("\n- ")).toHaveLength(2);
    fs.writeFileSync(path.join(hermesHome, "config.yaml"), "memory:\n  {{providerName}}:\n    prefetch_limit: 99\n");
    const error = await new {{className}}().initialize("s1", { hermesHome }).catch((e: unknown) => e);
    expect(HermesMemoryError.hasCode(error, "INVALID_CONFIG")).toBe(true);
    expect((error as Error).message).toContain("prefetch_limit must be between 1 and 50");
    // prefetch_max_chars bounds the whole recalled block.
    fs.writeFileSync(path.join(hermesHome, "config.yaml"), "memory:\n  {{providerName}}:\n    prefetch_max_chars: 120\n");
    const small = new {{className}}();
    await small.initialize("s1", { hermesHome });
    for (let i = 0; i < 5; i++) small.remember({ content: `beta ${"word ".repeat(20)}${i}` });
    const block = small.prefetch("beta", { sessionId: "s1" });
    expect(block).toContain("beta");
    expect(block.length).toBeLessThanOrEqual(120);
    await small.shutdown();
    await provider.shutdown();
    fs.rmSync(hermesHome, { recursive: true, force: true });
  });
});
