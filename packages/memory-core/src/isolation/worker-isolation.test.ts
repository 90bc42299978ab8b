/**
 * Worker isolation through the built package, as a host uses it: a folder plugin in
 * `$HERMES_HOME/plugins/` runs in a real worker thread behind the `MemoryProvider` interface.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  HermesMemoryError,
  WorkerHostedProvider,
  discoverMemoryProviders,
  isSearchableMemory,
  openMemory,
  startWorkerHostedProvider,
  type Logger,
  type MemoryManager,
} from "@hermes/memory-core";
import { stallMeter } from "@hermes/test-support";
import { makeTempDir } from "../test-support/temp-tree.js";
import { writeIsolationPlugin } from "./test-support/isolation-plugin.js";

const PACKAGE_DIR = path.resolve(import.meta.dirname, "../..");
let tmp: ReturnType<typeof makeTempDir>;
let home: string;
let warnings: string[];
let infos: string[];
const logger: Logger = { debug() {}, info: (m) => infos.push(m), warn: (m) => warnings.push(m), error: (m) => warnings.push(m) };
const open: Array<{ shutdown(): unknown }> = [];

beforeEach(() => {
  tmp = makeTempDir("hermes-isolation-");
  home = path.join(tmp.dir, "home");
  warnings = [];
  infos = [];
  writeIsolationPlugin(home, "probe");
});
afterEach(async () => {
  for (const item of open.splice(0)) await Promise.resolve(item.shutdown()).catch(() => {});
  tmp.cleanup();
});

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function openWorker(extra: Partial<Parameters<typeof openMemory>[0]> = {}): Promise<MemoryManager> {
  const manager = await openMemory({ sessionId: "s1", hermesHome: home, cwd: tmp.dir, provider: "probe", logger, strict: true, ...extra });
  open.push({ shutdown: () => manager.shutdownAll() });
  return manager;
}

function hosted(manager: MemoryManager): WorkerHostedProvider {
  const provider = manager.getProvider("probe");
  expect(provider).toBeInstanceOf(WorkerHostedProvider);
  return provider as WorkerHostedProvider;
}

async function start(options: { hookTimeoutMs?: number } = {}): Promise<WorkerHostedProvider> {
  const provider = await startWorkerHostedProvider("probe", { hermesHome: home, cwd: tmp.dir, logger, ...options });
  open.push(provider);
  await provider.initialize("s1", { hermesHome: home });
  return provider;
}

describe("worker isolation: a provider that blocks cannot freeze the host", () => {
  it("a prefetch busy-waiting 1.5 s leaves the host's timers running, its late result is dropped, and a new worker serves the next call", async () => {
    const manager = await openWorker({ isolation: "worker", externalPrefetchTimeoutMs: 200 });
    const provider = hosted(manager);
    const meter = stallMeter();
    const recalled = await manager.prefetchAll("a slow question");
    await waitFor(() => provider.workerReplacements === 1, 10_000);
    const stalled = meter.stop();
    expect(recalled).not.toContain("LATE RESULT");
    // Inline, the host would stall for the whole 1.5 s busy wait.
    expect(stalled).toBeLessThan(750);
    expect(warnings.join("\n")).toMatch(/'probe': prefetch\(\) did not finish within 0\.2s; a new worker thread replaces it/);
    await provider.ready();
    // The new worker was initialised again with the last initialize() arguments before serving.
    expect(await manager.prefetchAll("hello")).toContain("fast:hello:inits=1");
    expect(provider.recallStatus()).toEqual({ providerLabel: "probe", count: 5 });
  });

  it("control: inline, the same prefetch stalls the host for the whole busy wait (its late result is dropped, but only after the stall)", () => {
    const script = `
import { openMemory } from "@hermes/memory-core";
const manager = await openMemory({ sessionId: "s1", hermesHome: ${JSON.stringify(home)}, cwd: ${JSON.stringify(tmp.dir)}, provider: "probe", strict: true, isolation: "inline", externalPrefetchTimeoutMs: 200 });
let last = performance.now(), longest = 0;
const ticker = setInterval(() => { const now = performance.now(); longest = Math.max(longest, now - last); last = now; }, 5);
const recalled = await manager.prefetchAll("a slow question");
await new Promise((resolve) => setTimeout(resolve, 20));
clearInterval(ticker);
await manager.shutdownAll();
console.log(JSON.stringify({ recalled, longest }));
`;
    const out = JSON.parse(
      execFileSync(process.execPath, ["--input-type=module", "-e", script], { cwd: PACKAGE_DIR, encoding: "utf8" }),
    ) as {
      recalled: string;
      longest: number;
    };
    expect(out.recalled).not.toContain("LATE RESULT");
    expect(out.longest).toBeGreaterThanOrEqual(1400);
  });

  it("a syncTurn blocking synchronously for 400 ms does not delay the host's timers, and every turn arrives", async () => {
    const manager = await openWorker({ isolation: "worker" });
    const meter = stallMeter();
    for (let i = 0; i < 3; i++) manager.syncAll(`block turn ${i}`, "ok", { sessionId: "s1" });
    expect(await manager.flushPending(10_000)).toBe(true);
    const stalled = meter.stop();
    // Inline, each of the three turns would stall the host for its whole 400 ms.
    expect(stalled).toBeLessThan(400);
    expect(JSON.parse(await manager.handleToolCall("probe_info", {}))).toEqual({ mainThread: false, inits: 1, turns: 3 });
  });

  it("a worker that exits or throws asynchronously is replaced; the next call is served by a re-initialised worker", async () => {
    const manager = await openWorker({ isolation: "worker" });
    const provider = hosted(manager);
    const exited = JSON.parse(await manager.handleToolCall("probe_info", { exit: true })) as { error: string };
    expect(exited.error).toMatch(/exited with code 3/);
    expect(JSON.parse(await manager.handleToolCall("probe_info", {}))).toMatchObject({ mainThread: false, inits: 1 });
    await manager.handleToolCall("probe_info", { crashLater: true });
    await waitFor(() => provider.workerReplacements === 2, 10_000);
    expect(warnings.join("\n")).toMatch(/threw asynchronous crash/);
    expect(JSON.parse(await manager.handleToolCall("probe_info", {}))).toMatchObject({ mainThread: false, inits: 1 });
  });
});

describe("worker isolation: the same interface across the thread", () => {
  it("tool calls and SearchableMemory methods round-trip; synchronous members answer from the snapshot", async () => {
    const provider = await start();
    expect(provider.name).toBe("probe");
    expect(infos).toContain("probe registered in a worker thread");
    expect(provider.isAvailable()).toBe(true);
    expect(provider.getToolSchemas().map((t) => t.name)).toEqual(["probe_info"]);
    expect(provider.getConfigSchema()).toEqual([{ key: "level", description: "Level" }]);
    expect(isSearchableMemory(provider)).toBe(true);
    expect(provider.capabilities!()).toEqual({ filters: false, expiry: false, erasure: false, update: false });
    const id = await provider.remember!({ content: "the ferry leaves at nine", kind: "fact" });
    await provider.flush!();
    const hits = await provider.search!("ferry");
    expect(hits.map((h) => h.content)).toEqual(["the ferry leaves at nine"]);
    expect((await provider.get!(id))?.content).toBe("the ferry leaves at nine");
    expect((await provider.stats!()).items).toBe(1);
    expect(JSON.parse(await provider.handleToolCall("probe_info", {}))).toMatchObject({ mainThread: false });
  });

  it("errors keep their code; other errors become PROVIDER_FAILED with the message; unsendable arguments are INVALID_ARGUMENT", async () => {
    const provider = await start();
    await expect(provider.handleToolCall("probe_info", { typed: true })).rejects.toMatchObject({
      code: "STORAGE_FAILED",
      message: "The probe's disk is full; free space.",
    });
    const plain = await provider.handleToolCall("probe_info", { plain: true }).catch((e: unknown) => e);
    expect(HermesMemoryError.hasCode(plain, "PROVIDER_FAILED")).toBe(true);
    expect((plain as Error).message).toMatch(/threw TypeError: boom/);
    await expect(provider.handleToolCall("probe_info", { callback: () => 1 })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    const unsendable = await provider.handleToolCall("probe_info", { unsendable: true }).catch((e: unknown) => e);
    expect(HermesMemoryError.hasCode(unsendable, "PROVIDER_FAILED")).toBe(true);
    expect((unsendable as Error).message).toMatch(/handleToolCall\(\) returned a value that cannot cross the thread/);
    // The worker survived all of it.
    expect(provider.workerReplacements).toBe(0);
    expect(JSON.parse(await provider.handleToolCall("probe_info", {}))).toMatchObject({ mainThread: false });
  });
});

describe("worker isolation: loading", () => {
  it("registrations besides the provider stay in the worker: one warning names them and says how to use them", async () => {
    writeIsolationPlugin(
      home,
      "probe",
      "",
      `ctx.registerHook("on_session_end", () => {}); ctx.registerCommand("probe-stats", () => "", "Stats.");`,
    );
    const manager = await openWorker({ isolation: "worker" });
    const said = warnings.filter((w) => w.includes("register(ctx)"));
    expect(said).toHaveLength(1);
    expect(said[0]).toContain("hook on_session_end, command probe-stats");
    expect(said[0]).toContain("memory.isolation.probe: inline");
    expect(manager.pluginRegistrations().probe ?? { hooks: [] }).toMatchObject({ hooks: [] });
  });

  it("a provider the worker cannot load rejects with the loader's typed error", async () => {
    await expect(startWorkerHostedProvider("nosuch", { hermesHome: home, cwd: tmp.dir, logger })).rejects.toMatchObject({
      code: "PROVIDER_NOT_FOUND",
      message: expect.stringMatching(/Memory provider 'nosuch' not found/),
    });
  });
});

describe("worker isolation: acknowledged writes", () => {
  it("a flush stuck past its bound replaces the worker; acknowledged writes stay, the next flush reports the lost ones (WRITES_LOST)", async () => {
    const provider = await start({ hookTimeoutMs: 400 });
    for (const content of ["one", "two", "three"]) await provider.remember!({ content: `acked ${content}` });
    await provider.flush!();
    await provider.remember!({ content: "unacked four" });
    await provider.remember!({ content: "hang" });
    await expect(provider.flush!()).rejects.toMatchObject({ code: "PROVIDER_TIMEOUT" });
    expect(provider.workerReplacements).toBe(1);
    const lost = await provider.flush!().catch((e: unknown) => e);
    expect(HermesMemoryError.hasCode(lost, "WRITES_LOST")).toBe(true);
    expect((lost as Error).message).toMatch(/2 write\(s\) handed to its worker thread were lost .*flush\(\) did not finish within 0\.4s/);
    await provider.flush!();
    expect((await provider.search!("acked")).map((h) => h.content).sort()).toEqual(["acked one", "acked three", "acked two"]);
    expect(warnings.join("\n")).toMatch(/2 write\(s\) handed to it were not yet acknowledged/);
  });
});

describe("worker isolation: how the mode is chosen", () => {
  /** The mode `openMemory` picks, in a fresh Node process (inline folder plugins import core through its compiled resolve hook). */
  function chosenMode(option?: "inline" | "worker"): { mode: string; warnings: string[] } {
    const script = `
import { openMemory, WorkerHostedProvider } from "@hermes/memory-core";
const warnings = [];
const logger = { debug() {}, info() {}, warn: (m) => warnings.push(m), error: (m) => warnings.push(m) };
const manager = await openMemory({ sessionId: "s1", hermesHome: ${JSON.stringify(home)}, cwd: ${JSON.stringify(tmp.dir)}, provider: "probe", logger, strict: true${option ? `, isolation: "${option}"` : ""} });
const mode = manager.getProvider("probe") instanceof WorkerHostedProvider ? "worker" : "inline";
await manager.shutdownAll();
console.log(JSON.stringify({ mode, warnings }));
`;
    const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], { cwd: PACKAGE_DIR, encoding: "utf8" });
    return JSON.parse(out) as { mode: string; warnings: string[] };
  }

  it("precedence: openMemory option > config.yaml memory.isolation > manifest > inline", () => {
    expect(chosenMode().mode).toBe("inline");
    writeIsolationPlugin(home, "probe", "isolation: worker\n");
    expect(chosenMode().mode).toBe("worker");
    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  isolation:\n    probe: inline\n");
    expect(chosenMode().mode).toBe("inline");
    expect(chosenMode("worker").mode).toBe("worker");
    writeIsolationPlugin(home, "probe");
    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  isolation:\n    probe: worker\n");
    expect(chosenMode().mode).toBe("worker");
    expect(chosenMode("inline").mode).toBe("inline");
  }, 60_000);

  it("an unknown mode in config.yaml is a warning naming the allowed values; the manifest's choice applies", () => {
    fs.writeFileSync(path.join(home, "config.yaml"), "memory:\n  isolation:\n    probe: thread\n");
    const chosen = chosenMode();
    expect(chosen.mode).toBe("inline");
    expect(chosen.warnings.join("\n")).toMatch(/memory\.isolation\.probe must be one of inline, worker \(got "thread"\)/);
  });

  it("a manifest with an unknown isolation value is refused by discovery, saying what is allowed", async () => {
    writeIsolationPlugin(home, "probe", "isolation: threads\n");
    const found = await discoverMemoryProviders({ hermesHome: home, cwd: tmp.dir, packageRoots: [] });
    expect(found.providers).toEqual([]);
    expect(found.problems.map((p) => p.message).join("\n")).toMatch(/'isolation' must be "inline" or "worker", got string "threads"/);
  });
});
