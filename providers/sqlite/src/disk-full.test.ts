/**
 * A full disk and files damaged while the provider runs, with real files on a small tmpfs (needs
 * root to mount; skipped with the reason otherwise) and real child processes.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { HermesMemoryError } from "@hermes/memory-core";
import { fillDisk, mountTmpfs } from "@hermes/test-support";
import { SqliteMemoryProvider } from "./sqlite-memory-provider.js";

const mount = mountTmpfs("4m");
const skipReason = "reason" in mount ? mount.reason : "";
const mountDir = "reason" in mount ? "" : mount.dir;

afterAll(() => {
  if (!("reason" in mount)) mount.unmount();
});

function expectDiskFull(fn: () => unknown): void {
  let thrown: unknown;
  try {
    fn();
  } catch (error) {
    thrown = error;
  }
  expect(HermesMemoryError.isInstance(thrown), `expected a HermesMemoryError, got ${String(thrown)}`).toBe(true);
  expect((thrown as HermesMemoryError).code).toBe("STORAGE_FAILED");
  expect((thrown as Error).message).toMatch(/disk is full: free space/);
}

async function expectDiskFullAsync(run: () => Promise<unknown>): Promise<void> {
  let thrown: unknown;
  await run().catch((error: unknown) => (thrown = error));
  expectDiskFull(() => {
    if (thrown !== undefined) throw thrown;
  });
}

describe.skipIf(skipReason !== "")(`full disk (${skipReason || "tmpfs"})`, () => {
  let home = "";
  afterEach(() => {
    fs.rmSync(path.join(mountDir, "filler"), { force: true });
    if (home) fs.rmSync(home, { recursive: true, force: true });
  });

  it("forget, update and forgetWhere on a full disk reject with STORAGE_FAILED saying so (with and without queued turns), and work once space is freed", async () => {
    home = path.join(mountDir, "home");
    const provider = new SqliteMemoryProvider();
    await provider.initialize("s1", { hermesHome: home });
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push(provider.remember({ content: `seed fact ${i} zq${i}x ${"w".repeat(3000)}`, kind: "fact" }));
    await provider.flush();
    const filler = fillDisk(mountDir);
    try {
      // Nothing queued: the delete itself hits the full disk.
      expectDiskFull(() => provider.forget(ids[0]!));
      expectDiskFull(() => provider.update(ids[1]!, { content: `updated ${"u".repeat(8000)}` }));
      // Queued turns that cannot be written come first.
      for (let i = 0; i < 20; i++) provider.syncTurn(`turn ${i} ${"t".repeat(2000)}`, "ok", { sessionId: "s1" });
      expectDiskFull(() => provider.update(ids[1]!, { tags: ["x"] }));
      await expectDiskFullAsync(() => provider.forgetWhere({ ids: [ids[2]!] }));
      expectDiskFull(() => provider.forget(ids[3]!));
    } finally {
      fs.rmSync(filler);
    }
    // Space is back: the same provider (no restart) stores and erases.
    await provider.flush();
    expect(provider.forget(ids[0]!)).toBe(true);
    expect(provider.update(ids[1]!, { content: "updated fact zqupdated" })).toBe(true);
    expect(await provider.forgetWhere({ ids: [ids[2]!] })).toBe(1);
    await provider.shutdown();
    const reopened = new SqliteMemoryProvider();
    await reopened.initialize("s1", { hermesHome: home });
    expect(reopened.get(ids[0]!)).toBeNull();
    expect(reopened.get(ids[1]!)?.content).toBe("updated fact zqupdated");
    expect(reopened.get(ids[3]!)).not.toBeNull();
    expect(reopened.stats().byKind.turn).toBe(20);
    expect(reopened.memoryStore!.doctor().ok).toBe(true);
    await reopened.shutdown();
  }, 20_000);
});

describe("the database file damaged while the provider runs (child process)", () => {
  let dir = "";
  afterEach(() => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it("a truncated database file never kills the process (no SIGBUS through the memory map); every failing call is a typed STORAGE_FAILED", () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "sqlite-truncated-"));
    const provider = fileURLToPath(new URL("./sqlite-memory-provider.ts", import.meta.url));
    const child = path.join(dir, "child.mts");
    fs.writeFileSync(
      child,
      `import fs from "node:fs";
import { SqliteMemoryProvider } from ${JSON.stringify(provider)};
const home = ${JSON.stringify(path.join(dir, "home"))};
const p = new SqliteMemoryProvider();
await p.initialize("s1", { hermesHome: home });
for (let i = 0; i < 300; i++) p.remember({ content: "seed fact " + i + " zq" + i + "x " + "w".repeat(300), kind: "fact" });
await p.flush();
fs.truncateSync(p.memoryStore.file, 8192);
const step = async (name, fn) => {
  try { await fn(); console.log(name + " ok"); } catch (e) { console.log(name + " ERR " + (e.code ?? "-") + " " + e.constructor.name); }
};
await step("search", () => p.search("zq5x"));
await step("get", () => p.get("7"));
await step("list", () => p.list({ limit: 500 }));
await step("prefetch", () => p.prefetch("zq9x", { sessionId: "s1" }));
await step("remember", () => p.remember({ content: "after damage", kind: "fact" }));
await step("flush", () => p.flush());
await step("shutdown", () => p.shutdown());
console.log("END");
`,
    );
    const run = spawnSync(process.execPath, ["--import", "tsx", child], { encoding: "utf8", timeout: 15_000 });
    expect(run.signal, `stdout=${run.stdout} stderr=${run.stderr}`).toBeNull();
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^END$/m);
    // Whatever failed, failed with a typed error.
    for (const line of run.stdout.split("\n").filter((l) => l.includes(" ERR ")))
      expect(line).toMatch(/ ERR STORAGE_FAILED HermesMemoryError$/);
  }, 20_000);

  it("a damaged database is reported as STORAGE_FAILED at the next open, not as a raw SQLite error, and is not modified", async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "sqlite-damaged-"));
    const home = path.join(dir, "home");
    const first = new SqliteMemoryProvider();
    await first.initialize("s1", { hermesHome: home });
    for (let i = 0; i < 300; i++) first.remember({ content: `seed fact ${i} ${"w".repeat(300)}`, kind: "fact" });
    await first.shutdown();
    const file = path.join(home, "memory", "sqlite.db");
    // Cut short: the header and the first two pages are left (what a truncation leaves behind).
    fs.truncateSync(file, 8192);
    const before = fs.readFileSync(file);
    const next = new SqliteMemoryProvider();
    const opened = next.initialize("s1", { hermesHome: home });
    await expect(opened).rejects.toSatisfy((e: unknown) => HermesMemoryError.hasCode(e, "STORAGE_FAILED"));
    await expect(opened).rejects.toThrow(/restore it from a backup|move it away/);
    expect(fs.readFileSync(file).equals(before)).toBe(true);
  });
});
