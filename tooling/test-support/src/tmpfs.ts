/**
 * Small file systems for failure tests: a tmpfs mounted on a fresh directory (a full disk, a
 * read-only mount even for root) and filling one up. Mounting needs root on Linux; without it the
 * caller gets the reason, to skip with.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

/** A tmpfs mounted by `mountTmpfs`. */
export interface TmpfsMount {
  /** Where it is mounted. */
  dir: string;
  /** `mount -o remount,<options>`, e.g. `"ro"`; throws when the kernel refuses (files open for writing keep it from going read-only). */
  remount(options: string): void;
  /** Unmount (lazily, so a file a failed test left open never keeps it mounted) and remove the directory. */
  unmount(): void;
}

/**
 * Mount a tmpfs of `size` (e.g. `"4m"`; `options` adds mount options such as `"nr_inodes=64"`) on a
 * new directory; `{ reason }` when this machine does not allow it (not Linux, not root, no mount).
 */
export function mountTmpfs(size: string, options = ""): TmpfsMount | { reason: string } {
  if (process.platform !== "linux") return { reason: "tmpfs mounts need Linux" };
  if (process.getuid?.() !== 0) return { reason: "mounting a tmpfs needs root (CI runs as root)" };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-tmpfs-"));
  const mounted = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${size},mode=0755${options ? `,${options}` : ""}`, "tmpfs", dir], {
    encoding: "utf8",
  });
  if (mounted.status !== 0) {
    fs.rmSync(dir, { recursive: true, force: true });
    return { reason: `mount -t tmpfs is not permitted here: ${(mounted.stderr || mounted.error?.message || "").trim()}` };
  }
  return {
    dir,
    remount(more) {
      const again = spawnSync("mount", ["-o", `remount,${more}`, dir], { encoding: "utf8" });
      if (again.status !== 0) throw new Error(`remount ${more} failed: ${again.stderr}`);
    },
    unmount() {
      spawnSync("umount", ["-l", dir]);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Fill the file system holding `dir` to its last byte (ENOSPC at every write size down to one
 * byte); returns the filler file, whose removal frees the space again.
 */
export function fillDisk(dir: string): string {
  const filler = path.join(dir, "filler");
  const fd = fs.openSync(filler, "w");
  const block = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) fs.writeSync(fd, block);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
  } finally {
    fs.closeSync(fd);
  }
  for (const size of [4096, 512, 1]) {
    try {
      for (;;) fs.appendFileSync(filler, Buffer.alloc(size, 1));
    } catch {
      // Full at this size.
    }
  }
  return filler;
}
