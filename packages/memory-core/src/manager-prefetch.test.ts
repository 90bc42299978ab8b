import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryManager } from "./manager.js";
import { RecordingProvider, capturingLogger, deferred, waitFor } from "./test-support/recording-provider.js";

const tempDirs: string[] = [];
afterEach(() => {
  for (const dir of tempDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe("external prefetch timeout and in-flight guard", () => {
  it("skips a stuck provider fast, does not re-call it while stuck, and recovers after release", async () => {
    const logger = capturingLogger();
    const mgr = new MemoryManager({ externalPrefetchTimeoutMs: 10, logger, hermesHome: "/tmp/none" });
    const release = deferred<string>();
    let calls = 0;
    mgr.addProvider(new RecordingProvider("builtin", { prefetch: () => "builtin memory" }));
    mgr.addProvider(
      new RecordingProvider("ext", {
        prefetch: () => {
          calls++;
          return calls === 1 ? release.promise : "late external memory";
        },
      }),
    );

    let started = performance.now();
    expect(await mgr.prefetchAll("q1")).toBe("builtin memory");
    expect(performance.now() - started).toBeLessThan(500);
    expect(logger.at("warn")).toContain("Memory provider 'ext' prefetch timed out after 0.01s; skipping it until the stuck call returns");

    started = performance.now();
    expect(await mgr.prefetchAll("q2")).toBe("builtin memory");
    expect(performance.now() - started).toBeLessThan(200);
    expect(calls).toBe(1);
    expect(logger.at("debug")).toContain("Memory provider 'ext' prefetch still running; skipping this turn");

    // The stuck call's late result is dropped; settling releases the guard.
    release.resolve("stale result from q1");
    await waitFor(() => (mgr as unknown as { turns: { inflightPrefetch: Set<unknown> } }).turns.inflightPrefetch.size === 0);
    expect(await mgr.prefetchAll("q3")).toBe("builtin memory\n\nlate external memory");
    expect(calls).toBe(2);
    expect((mgr as unknown as { turns: { inflightPrefetch: Set<unknown> } }).turns.inflightPrefetch.size).toBe(0);
  });

  it("never times out the built-in provider", async () => {
    const mgr = new MemoryManager({ externalPrefetchTimeoutMs: 5, hermesHome: "/tmp/none" });
    mgr.addProvider(
      new RecordingProvider("builtin", {
        prefetch: () => new Promise((resolve) => setTimeout(() => resolve("slow builtin"), 40)),
      }),
    );
    expect(await mgr.prefetchAll("q")).toBe("slow builtin");
  });

  it("a rejecting external prefetch is skipped and releases the guard", async () => {
    const logger = capturingLogger();
    const mgr = new MemoryManager({ logger, hermesHome: "/tmp/none" });
    let calls = 0;
    mgr.addProvider(new RecordingProvider("builtin", { prefetch: () => "b" }));
    mgr.addProvider(
      new RecordingProvider("ext", {
        prefetch: async () => {
          calls++;
          throw new Error("backend down");
        },
      }),
    );
    expect(await mgr.prefetchAll("q")).toBe("b");
    expect(await mgr.prefetchAll("q")).toBe("b");
    expect(calls).toBe(2);
    expect(logger.at("debug")).toContain("Memory provider 'ext' prefetch failed (non-fatal): backend down");
  });
});

describe("prefetch spill", () => {
  it("spills an oversized external result to a file and never spills the built-in result", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-spill-"));
    tempDirs.push(dir);
    const big = "E".repeat(300);
    const bigBuiltin = "B".repeat(300);
    const mgr = new MemoryManager({
      hermesHome: dir,
      spillConfig: { maxChars: 100, previewHead: 10, previewTail: 10 },
    });
    mgr.addProvider(new RecordingProvider("builtin", { prefetch: () => bigBuiltin }));
    mgr.addProvider(new RecordingProvider("ext", { prefetch: () => big }));
    const out = await mgr.prefetchAll("q", { sessionId: "sess-9" });
    const [builtinPart, externalPart] = out.split("\n\n");
    expect(builtinPart).toBe(bigBuiltin);
    expect(externalPart).toContain("[ext memory prefetch output truncated — 300 chars; full content saved to ");
    const saved = /saved to (\S+)\]/.exec(externalPart ?? "")?.[1];
    expect(saved).toBeDefined();
    expect(saved?.startsWith(path.join(dir, "hook_outputs", "sess-9"))).toBe(true);
    expect(fs.readFileSync(saved as string, "utf8")).toBe(`${big}\n`);
  });

  it("spills for a session id longer than a file name may be: the recall names a file holding the whole text", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-spill-"));
    tempDirs.push(dir);
    const big = "E".repeat(300);
    const mgr = new MemoryManager({ hermesHome: dir, spillConfig: { maxChars: 100, previewHead: 10, previewTail: 10 } });
    mgr.addProvider(new RecordingProvider("ext", { prefetch: () => big }));
    for (const sessionId of ["s".repeat(300), "é".repeat(200)]) {
      const out = await mgr.prefetchAll("q", { sessionId });
      expect(out).toContain("full content saved to ");
      const saved = /saved to (\S+)\]/.exec(out)?.[1] as string;
      expect(fs.readFileSync(saved, "utf8")).toBe(`${big}\n`);
      expect(Buffer.byteLength(path.basename(path.dirname(saved)))).toBeLessThanOrEqual(128);
    }
  });

  it("leaves an external result under the cap unchanged", async () => {
    const mgr = new MemoryManager({ hermesHome: "/tmp/none", spillConfig: { maxChars: 1000 } });
    mgr.addProvider(new RecordingProvider("ext", { prefetch: () => "short" }));
    expect(await mgr.prefetchAll("q")).toBe("short");
  });
});
