/**
 * Failure class: $HERMES_HOME on a read-only mount. Both providers must still initialise and
 * serve search and prefetch from what is there, and refuse writes with a typed STORAGE_FAILED.
 * Covers a cleanly closed home, a home last closed by an older version (WAL database without its
 * `-shm` file, which SQLite cannot open from a read-only directory) and a home whose writer was
 * killed with SIGKILL (WAL and -shm left behind).
 */
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { afterAll, describe, expect, it } from "vitest";
import { ClassFigures, mountTmpfs, runNode, writeVectorHome } from "./support.js";

// better-sqlite3 is the vector provider's dependency; borrowed from there to edit a file directly.
interface SqliteDb {
  prepare(sql: string): { run(): unknown };
  pragma(sql: string): unknown;
  close(): void;
}
const Database = createRequire(new URL("../../../providers/vector/package.json", import.meta.url))("better-sqlite3") as new (
  file: string,
) => SqliteDb;
const figures = new ClassFigures("readonly-home");
afterAll(() => figures.print());

const probe = mountTmpfs("1m");
const skipReason = "reason" in probe ? probe.reason : "";
if (!("reason" in probe)) {
  try {
    probe.remount("ro");
  } finally {
    probe.unmount();
  }
}

/** Put every SQLite file of the home back in WAL mode, as versions before this one left them. */
function leaveInWalMode(home: string): void {
  for (const file of [path.join(home, "memory", "vector", "sidecar.sqlite"), path.join(home, "memory", "sqlite.db")]) {
    const db = new Database(file);
    db.pragma("journal_mode = WAL");
    db.close();
    expect(fs.existsSync(`${file}-shm`)).toBe(false);
  }
}

async function readOnlyChecks(home: string): Promise<void> {
  for (const script of ["vector-child.mjs", "sqlite-child.mjs"]) {
    const child = runNode(script, ["readonly", home]);
    const end = await child.exited;
    figures.stall(end.ms);
    figures.trials++;
    expect(end.code, `${script}: ${child.stdout} ${child.stderr}`).toBe(0);
    expect(child.stdout).toMatch(/^SEARCH found$/m);
    expect(child.stdout).toMatch(/^PREFETCH found$/m);
    expect(child.stdout).toMatch(/^REMEMBER_FAILED STORAGE_FAILED .*read-only/m);
    expect(child.stdout).not.toMatch(/SHUTDOWN_FAILED/);
  }
}

describe.skipIf(skipReason !== "")(`read-only $HERMES_HOME (${skipReason || "tmpfs remounted ro"})`, () => {
  for (const variant of ["closed cleanly", "closed by an older version (WAL, no -shm)", "writer killed with SIGKILL"] as const) {
    it(`${variant}: search and prefetch work, writes fail with STORAGE_FAILED`, async () => {
      const mount = mountTmpfs("16m");
      if ("reason" in mount) throw new Error(mount.reason);
      try {
        const home = path.join(mount.dir, "home");
        writeVectorHome(home);
        for (const script of ["vector-child.mjs", "sqlite-child.mjs"]) {
          const seed = runNode(script, ["seed", home, "50"]);
          expect((await seed.exited).code, seed.stderr).toBe(0);
        }
        if (variant === "closed by an older version (WAL, no -shm)") leaveInWalMode(home);
        if (variant === "writer killed with SIGKILL") {
          const writer = runNode("vector-child.mjs", ["loop", home]);
          await writer.waitForLine(/^ACK /);
          writer.proc.kill("SIGKILL");
          await writer.exited;
          expect(fs.existsSync(path.join(home, "memory", "vector", "sidecar.sqlite-wal"))).toBe(true);
        }
        mount.remount("ro");
        await readOnlyChecks(home);
      } finally {
        mount.unmount();
      }
    });
  }

  it("a read-only home with no memory yet fails initialise with a clear STORAGE_FAILED", async () => {
    const mount = mountTmpfs("1m");
    if ("reason" in mount) throw new Error(mount.reason);
    try {
      const home = path.join(mount.dir, "home");
      writeVectorHome(home);
      mount.remount("ro");
      const child = runNode("vector-child.mjs", ["readonly", home]);
      const end = await child.exited;
      figures.trials++;
      expect(end.code).not.toBe(0);
      expect(child.stderr).toMatch(/STORAGE_FAILED|read-only|cannot be created/);
      expect(child.stderr).not.toMatch(/free\(\)|Aborted|core dumped/);
    } finally {
      mount.unmount();
    }
  });
});
