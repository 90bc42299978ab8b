import fs from "node:fs";
import { readBoundedFileSync } from "../discovery/bounded-read.js";
import { getHermesHome } from "../profile.js";
import { MAX_ENV_FILE_BYTES, envFilePath, parseEnv } from "./env-file.js";

interface CachedEnvFile {
  mtimeMs: number;
  ctimeMs: number;
  size: number;
  ino: number;
  values: Readonly<Record<string, string>>;
}

// Parsed `.env` files by path; an entry is reused only while the file's mtime, ctime, size and
// inode are unchanged, so a key saved by `memory setup` in this process is seen by the next
// lookup. The mtime alone is not enough: it can be coarse or set back (an editor, `touch -r`), while
// a write always moves the ctime, and a file replaced by rename has another inode.
const cache = new Map<string, CachedEnvFile>();

/**
 * The parsed `$HERMES_HOME/.env` of `hermesHome`, read synchronously because `isAvailable()` is
 * synchronous. `{}` when it does not exist or cannot be read, and also when it is not a regular
 * file (a FIFO, a device, a directory: refused without blocking, never waited on) or is larger
 * than `MAX_ENV_FILE_BYTES` (never read into memory). Never copies anything to `process.env`.
 */
export function readEnvFileSync(hermesHome: string): Readonly<Record<string, string>> {
  const file = envFilePath(hermesHome);
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch {
    cache.delete(file);
    return {};
  }
  const hit = cache.get(file);
  if (hit && hit.mtimeMs === stat.mtimeMs && hit.ctimeMs === stat.ctimeMs && hit.size === stat.size && hit.ino === stat.ino)
    return hit.values;
  const read = readBoundedFileSync(file, MAX_ENV_FILE_BYTES);
  if (!("bytes" in read)) {
    cache.delete(file);
    return {};
  }
  const values = Object.freeze(parseEnv(read.bytes.toString("utf8")));
  cache.set(file, { mtimeMs: stat.mtimeMs, ctimeMs: stat.ctimeMs, size: stat.size, ino: stat.ino, values });
  return values;
}

/**
 * A setting or secret for the active profile: the value in the profile's `$HERMES_HOME/.env`
 * (what `hermes-memory memory setup` saved), else `process.env[name]`, else `undefined`. Blank
 * values count as unset. The profile is the one `runWithProfile` scoped (`getHermesHome()`), so two
 * profiles in one process each see their own `.env`. This is how providers read their keys, both in
 * the synchronous `isAvailable()` and in `initialize()`; `.env` is never copied into `process.env`.
 */
export function getEnv(name: string, hermesHome: string = getHermesHome()): string | undefined {
  const fromFile = readEnvFileSync(hermesHome)[name];
  if (fromFile !== undefined && fromFile.trim() !== "") return fromFile;
  const fromProcess = process.env[name];
  return fromProcess !== undefined && fromProcess.trim() !== "" ? fromProcess : undefined;
}

/**
 * The active profile's environment as providers see it: `process.env` overlaid with the profile's
 * `.env` (which wins). A fresh object on every call; changing it changes nothing.
 */
export function getEnvView(hermesHome: string = getHermesHome()): Record<string, string | undefined> {
  return { ...process.env, ...readEnvFileSync(hermesHome) };
}
