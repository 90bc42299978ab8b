/**
 * Failure class: the disk holding $HERMES_HOME fills up (a small tmpfs, filled to ENOSPC) while
 * a process has accepted thousands of writes. flush() must reject with STORAGE_FAILED saying the
 * disk is full while anything accepted is unstored, keep every accepted item, and store them all
 * once space returns; nothing a resolved flush() acknowledged may be missing after a restart.
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ClassFigures, fillDisk, mountTmpfs, runNode, writeVectorHome } from "./support.js";

const figures = new ClassFigures("disk-full");
afterAll(() => figures.print());

const ITEMS = 3000;
const probe = mountTmpfs("1m");
const skipReason = "reason" in probe ? probe.reason : "";
if (!("reason" in probe)) probe.unmount();

describe.skipIf(skipReason !== "")(`disk full (${skipReason || "tmpfs"})`, () => {
  for (const provider of ["vector", "sqlite"] as const) {
    it(`${provider}: ${ITEMS} accepted writes on a full disk: flush rejects (disk full), then stores all ${ITEMS} once space is freed`, async () => {
      for (let trial = 0; trial < 2; trial++) {
        const mount = mountTmpfs("16m");
        if ("reason" in mount) throw new Error(mount.reason);
        try {
          const home = path.join(mount.dir, "home");
          writeVectorHome(home);
          const script = `${provider}-child.mjs`;
          const child = runNode(script, ["diskfull", home, String(ITEMS)]);
          await child.waitForLine(/^READY$/);
          const filler = fillDisk(mount.dir);
          child.send("GO");
          const failedAt = Date.now();
          const failure = await child.waitForLine(/^FLUSH_FAILED /, 120_000);
          figures.stall(Date.now() - failedAt);
          expect(failure).toMatch(/^FLUSH_FAILED STORAGE_FAILED .*disk is full/);
          if (provider === "vector") expect(failure).toMatch(new RegExp(`${ITEMS} accepted writes are not stored yet`));
          else expect(failure).toMatch(new RegExp(`could not write ${ITEMS} queued item`));
          // Still full: it keeps rejecting, and keeps the items.
          child.send("AGAIN");
          await child.waitForLine(/^WAITING$/);
          expect(child.lines().filter((l) => l.startsWith("FLUSH_FAILED")).length).toBeGreaterThanOrEqual(1);
          fs.rmSync(filler);
          const freedAt = Date.now();
          // Trial 1 also shows a second failure then success; send until acknowledged.
          while (!child.lines().some((l) => l.startsWith("ACK "))) {
            child.send("FREED");
            await Promise.race([child.waitForLine(/^ACK /, 120_000), new Promise((resolve) => setTimeout(resolve, 2_000))]);
          }
          figures.stall(Date.now() - freedAt);
          expect(child.stdout).toMatch(new RegExp(`^ACK ${ITEMS}$`, "m"));
          const end = await child.exited;
          expect(end.code, child.stdout + child.stderr).toBe(0);
          expect(child.stdout).not.toMatch(/SHUTDOWN_FAILED/);

          const check = runNode(script, ["check", home, String(ITEMS)]);
          const done = await check.exited;
          expect(done.code, check.stderr).toBe(0);
          const found = Number(/^FOUND (\d+)\//m.exec(check.stdout)?.[1] ?? "0");
          figures.trials++;
          figures.acknowledgedLost += ITEMS - found;
          expect(check.stdout).toMatch(new RegExp(`^FOUND ${ITEMS}/${ITEMS}.* items=${ITEMS}`, "m"));
        } finally {
          mount.unmount();
        }
      }
    });
  }

  it("vector: the index save on a full disk is a STORAGE_FAILED saying so, leaves no temp file, and the next start rebuilds", async () => {
    const mount = mountTmpfs("16m");
    if ("reason" in mount) throw new Error(mount.reason);
    try {
      const home = path.join(mount.dir, "home");
      writeVectorHome(home);
      const seed = runNode("vector-child.mjs", ["seed", home, "2000"]);
      expect((await seed.exited).code, seed.stderr).toBe(0);
      // Fill, then make the sidecar writable but the index save impossible: a shutdown after a
      // write whose sidecar commit fits but whose index file does not.
      const child = runNode("vector-child.mjs", ["diskfull", home, "1"]);
      await child.waitForLine(/^READY$/);
      fs.rmSync(path.join(home, "memory", "vector", "index.usearch"));
      const filler = fillDisk(mount.dir);
      // Leave room for the sidecar's few pages, not for the index file (~1 MB).
      fs.truncateSync(filler, Math.max(0, fs.statSync(filler).size - 256 * 1024));
      child.send("GO");
      const failure = await child.waitForLine(/^FLUSH_FAILED /, 60_000);
      expect(failure).toMatch(/STORAGE_FAILED .*the disk is full/);
      expect(failure).not.toMatch(/^FLUSH_FAILED - /);
      expect(fs.readdirSync(path.join(home, "memory", "vector")).filter((f) => f.endsWith(".tmp"))).toEqual([]);
      fs.rmSync(filler);
      child.send("FREED");
      await child.waitForLine(/^ACK 1$/, 60_000);
      expect((await child.exited).code).toBe(0);
      const check = runNode("vector-child.mjs", ["check", home, "2000"]);
      expect((await check.exited).code, check.stderr).toBe(0);
      expect(check.stdout).toMatch(/^FOUND 2000\/2000 indexed=2001 items=2001/m);
      figures.trials++;
    } finally {
      mount.unmount();
    }
  });
});
