import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { BuiltinMemoryProvider } from "./builtin/builtin-provider.js";
import { MemoryManager } from "./manager.js";
import { RecordingProvider } from "./test-support/recording-provider.js";

const tempDirs: string[] = [];
afterEach(() => {
  for (const dir of tempDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe("MemoryManager with the real built-in provider", () => {
  it("routes the memory tool to builtin and mirrors committed writes (single and batch) to the external provider", async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-mgr-builtin-"));
    tempDirs.push(home);
    const mgr = new MemoryManager({ hermesHome: home });
    const ext = new RecordingProvider("ext");
    mgr.addProvider(ext);
    mgr.addProvider(new BuiltinMemoryProvider());
    await mgr.initializeAll("s1");

    expect(mgr.providers.map((p) => p.name)).toEqual(["builtin", "ext"]);
    expect(mgr.getToolSchemas().map((s) => s.name)).toEqual(["memory"]);

    const added = JSON.parse(await mgr.handleToolCall("memory", { action: "add", target: "user", content: "Prefers tea" }));
    expect(added.success).toBe(true);
    const replaced = JSON.parse(
      await mgr.handleToolCall("memory", { action: "replace", target: "user", old_text: "tea", content: "Prefers green tea" }),
    );
    expect(replaced.success).toBe(true);
    const batch = JSON.parse(
      await mgr.handleToolCall("memory", {
        target: "user",
        operations: [
          { action: "add", content: "Deploys on Fridays" },
          { action: "remove", old_text: "green tea" },
        ],
      }),
    );
    expect(batch.success).toBe(true);
    // A failed write is not mirrored.
    const failed = JSON.parse(await mgr.handleToolCall("memory", { action: "remove", target: "user", old_text: "nothing like this" }));
    expect(failed.success).not.toBe(true);

    const mirrored = ext
      .argsOf("onMemoryWrite")
      .map(([action, target, content, metadata]) => [action, target, content, (metadata as { previousContent?: string }).previousContent]);
    expect(mirrored).toEqual([
      ["add", "user", "Prefers tea", undefined],
      ["replace", "user", "Prefers green tea", "Prefers tea"],
      ["add", "user", "Deploys on Fridays", undefined],
      ["remove", "user", "", "Prefers green tea"],
    ]);
    expect(fs.readFileSync(path.join(home, "memories", "USER.md"), "utf8")).toContain("Deploys on Fridays");
    await mgr.shutdownAll();
  });
});
