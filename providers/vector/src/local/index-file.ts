/**
 * The local store's index file on disk (`index.usearch`): whether it may be loaded (it matches the
 * sidecar's record of the last save byte for byte), its durable save, and the removal of temp
 * files a crashed save left behind.
 */
import fs from "node:fs";
import path from "node:path";
import { describeError } from "@hermes/memory-core";
import type { Usearch } from "../native-modules.js";
import type { Sidecar } from "./sidecar.js";
import { fileSha256, fileSha256InSteps, fsyncPath, fsyncPathInSteps, processAlive, storageWriteError } from "./store-files.js";

/** Sidecar meta keys recording the saved index file (the file is only loaded when both match). */
const INDEX_BYTES_META = "index_bytes";
const INDEX_SHA256_META = "index_sha256";
/** Sidecar meta key: the removed entries (tombstones) the saved file holds. */
const INDEX_FREED_META = "index_freed_slots";

/** The tombstones the saved index file holds, as recorded with it (0 when not recorded). */
export function indexFileFreedSlots(sidecar: Sidecar): number {
  const value = Number(sidecar.getMeta(INDEX_FREED_META) ?? "0");
  return Number.isInteger(value) && value > 0 ? value : 0;
}

/** Temp files of saves interrupted by a crash (`index.usearch.<pid>[.<n>].tmp`); a live process's own are kept. */
export function removeOrphanTempFiles(indexPath: string): void {
  const dir = path.dirname(indexPath);
  const prefix = `${path.basename(indexPath)}.`;
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const m = name.startsWith(prefix) && /^(\d+)(?:\.\d+)?\.tmp$/.exec(name.slice(prefix.length));
    if (!m) continue;
    const pid = Number(m[1]);
    if (pid !== process.pid && processAlive(pid)) continue;
    try {
      fs.rmSync(path.join(dir, name), { force: true });
    } catch {
      // Best effort: a leftover temp file wastes space but is never loaded.
    }
  }
}

/**
 * usearch 2.25 aborts the process (heap corruption) loading a file in which half the entries were
 * removed. A save rebuilds the graph first once tombstones reach a fifth of its slots, and a file
 * recorded with a third or more is rebuilt from the sidecar instead of loaded.
 */
export const COMPACT_TOMBSTONE_SHARE = 0.2;
export const LOAD_TOMBSTONE_SHARE = 1 / 3;

/** Whether `freed` tombstones beside `live` entries reach `share` of the graph's slots. */
export function tombstonesUnsafe(freed: number, live: number, share: number): boolean {
  return freed > 0 && freed >= share * (freed + live);
}

/** Why the recorded file may not be handed to usearch's loader for its tombstones ("" = it may). */
export function tombstoneLoadRefusal(sidecar: Sidecar): string {
  const freed = indexFileFreedSlots(sidecar);
  return tombstonesUnsafe(freed, sidecar.countVectors(), LOAD_TOMBSTONE_SHARE)
    ? `${freed} removed entries, which usearch cannot load safely`
    : "";
}

/** Why the index file may not be loaded ("" = it matches the save the sidecar recorded). */
export function indexFileMismatch(file: string, sidecar: Sidecar): string {
  let size: number;
  try {
    size = fs.statSync(file).size;
  } catch {
    return "missing";
  }
  if (sidecar.getMeta("index_generation") !== String(sidecar.generation)) return "older than the sidecar";
  const bytes = Number(sidecar.getMeta(INDEX_BYTES_META));
  const sha256 = sidecar.getMeta(INDEX_SHA256_META) ?? "";
  if (!Number.isInteger(bytes) || bytes <= 0 || !/^[0-9a-f]{64}$/.test(sha256)) return "no valid checksum record";
  if (size !== bytes) return `length ${size} bytes, ${bytes} recorded`;
  try {
    if (fileSha256(file).sha256 !== sha256) return "checksum mismatch";
  } catch (error) {
    return `unreadable: ${describeError(error)}`;
  }
  return "";
}

/**
 * Write the index file durably and record what was written: save to a temp file, fsync it,
 * rename it over the index, fsync the directory, then store generation, length and SHA-256 in
 * the sidecar. A crash at any point leaves either the old verified file or a mismatch (rebuilt
 * on open). Throws `STORAGE_FAILED` (disk full, read-only) and removes the temp file.
 */
export function saveIndexFile(
  index: Pick<InstanceType<Usearch["Index"]>, "save">,
  indexPath: string,
  sidecar: Sidecar,
  freedSlots = 0,
): void {
  // All of this is synchronous, so no write can land between the save and the generation stamp.
  const generation = String(sidecar.generation);
  const tmp = tempPath(indexPath);
  try {
    index.save(tmp);
    fsyncPath(tmp);
    const { bytes, sha256 } = fileSha256(tmp);
    fs.renameSync(tmp, indexPath);
    fsyncPath(path.dirname(indexPath));
    sidecar.setMetas({
      index_generation: generation,
      [INDEX_BYTES_META]: String(bytes),
      [INDEX_SHA256_META]: sha256,
      [INDEX_FREED_META]: String(freedSlots),
    });
  } catch (error) {
    try {
      fs.rmSync(tmp, { force: true });
    } catch {
      // Removed on the next open at the latest.
    }
    throw storageWriteError(`the vector index ${indexPath}`, error);
  }
}

let saves = 0;

/** A temp file name of this process no other save of it uses at the same time. */
function tempPath(indexPath: string): string {
  return `${indexPath}.${process.pid}.${++saves}.tmp`;
}

/**
 * `saveIndexFile` with only the index's own serialisation on the event loop: the fsync, the
 * checksum and the directory fsync run on the thread pool, so the host's timers and I/O keep
 * running while the disk works. The file records the generation of the moment it was serialised:
 * a write landing meanwhile makes it older than the sidecar (rebuilt on open, never loaded).
 * `current()` is asked before the rename and before the record: a save started later (false)
 * wins, and this one's temp file is dropped instead of replacing a newer file or record.
 * Resolves false when superseded. Throws `STORAGE_FAILED` like `saveIndexFile`.
 */
export async function saveIndexFileInSteps(
  index: Pick<InstanceType<Usearch["Index"]>, "save">,
  indexPath: string,
  sidecar: Sidecar,
  current: () => boolean,
  freedSlots = 0,
): Promise<boolean> {
  const generation = String(sidecar.generation);
  const tmp = tempPath(indexPath);
  try {
    index.save(tmp);
    await fsyncPathInSteps(tmp);
    const { bytes, sha256 } = await fileSha256InSteps(tmp);
    if (!current()) {
      fs.rmSync(tmp, { force: true });
      return false;
    }
    // Synchronous: no other save of this process can rename between the check and the rename.
    fs.renameSync(tmp, indexPath);
    await fsyncPathInSteps(path.dirname(indexPath));
    if (!current()) return false;
    sidecar.setMetas({
      index_generation: generation,
      [INDEX_BYTES_META]: String(bytes),
      [INDEX_SHA256_META]: sha256,
      [INDEX_FREED_META]: String(freedSlots),
    });
    return true;
  } catch (error) {
    try {
      fs.rmSync(tmp, { force: true });
    } catch {
      // Removed on the next open at the latest.
    }
    throw storageWriteError(`the vector index ${indexPath}`, error);
  }
}
