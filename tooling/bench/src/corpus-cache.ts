import fs from "node:fs";
import path from "node:path";

/**
 * Returns `file` (a file or a directory) when a completed cache entry exists; otherwise runs `build(tmpFile)` and moves the
 * result into place. A marker file written last means an interrupted build is never reused.
 */
export async function cachedFile(file: string, build: (tmpFile: string) => Promise<void>): Promise<{ file: string; reused: boolean }> {
  const marker = `${file}.complete`;
  if (fs.existsSync(file) && fs.existsSync(marker)) return { file, reused: true };
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.building-${process.pid}`;
  for (const f of [file, marker, ...["-wal", "-shm"].map((s) => file + s)]) fs.rmSync(f, { force: true, recursive: true });
  try {
    await build(tmp);
    for (const suffix of ["", "-wal", "-shm"]) if (fs.existsSync(tmp + suffix)) fs.renameSync(tmp + suffix, file + suffix);
    fs.writeFileSync(marker, new Date().toISOString() + "\n");
  } finally {
    for (const suffix of ["", "-wal", "-shm", "-journal"]) fs.rmSync(tmp + suffix, { force: true, recursive: true });
  }
  return { file, reused: false };
}
