/**
 * Erasing on a full disk (a small tmpfs; needs root to mount, skipped with the reason otherwise):
 * a typed STORAGE_FAILED saying the disk is full, and the same provider erases once space is back.
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { HermesMemoryError } from "@hermes/memory-core";
import { fillDisk, mountTmpfs } from "@hermes/test-support";
import { VectorMemoryProvider } from "./vector-memory-provider.js";

const mount = mountTmpfs("4m");
const skipReason = "reason" in mount ? mount.reason : "";
const mountDir = "reason" in mount ? "" : mount.dir;

afterAll(() => {
  if (!("reason" in mount)) mount.unmount();
});

async function expectDiskFull(call: Promise<unknown>): Promise<void> {
  const thrown = await call.then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(HermesMemoryError.isInstance(thrown), `expected a HermesMemoryError, got ${String(thrown)}`).toBe(true);
  expect((thrown as HermesMemoryError).code).toBe("STORAGE_FAILED");
  expect((thrown as Error).message).toMatch(/disk is full: free space/);
}

describe.skipIf(skipReason !== "")(`full disk (${skipReason || "tmpfs"})`, () => {
  it("forget and forgetWhere on a full disk reject with STORAGE_FAILED saying so (not a raw SqliteError), and erase once space is freed", async () => {
    const home = path.join(mountDir, "home");
    const provider = new VectorMemoryProvider({ env: {}, dimensions: 64 });
    await provider.initialize("s1", { hermesHome: home });
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) ids.push(provider.remember({ content: `seed fact ${i} zq${i}x ${"w".repeat(2000)}`, kind: "fact" }));
    await provider.flush();
    const filler = fillDisk(mountDir);
    try {
      await expectDiskFull(provider.forget(ids[0]!));
      await expectDiskFull(provider.forgetWhere({ ids: [ids[1]!, ids[2]!] }));
    } finally {
      fs.rmSync(filler);
    }
    expect(await provider.forget(ids[0]!)).toBe(true);
    expect(await provider.forgetWhere({ ids: [ids[1]!, ids[2]!] })).toBe(2);
    await provider.shutdown();
    const reopened = new VectorMemoryProvider({ env: {}, dimensions: 64 });
    await reopened.initialize("s1", { hermesHome: home });
    expect(await reopened.get(ids[0]!)).toBeNull();
    expect(await reopened.get(ids[1]!)).toBeNull();
    expect((await reopened.get(ids[3]!))?.content).toContain("seed fact 3 ");
    expect((await reopened.stats()).items).toBe(37);
    await reopened.shutdown();
  }, 20_000);
});
