/**
 * Oversized-result spill: text longer than `maxChars` is written to a private file
 * under `$HERMES_HOME/hook_outputs/<session>/` and replaced by a short preview that names the file,
 * so one huge recall result does not inflate every following model call.
 */
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { boundedName, utf8Prefix } from "./bounded-name.js";
import { HermesMemoryError, describeError } from "./errors.js";
import type { Logger } from "./logger.js";
import { silentLogger } from "./logger.js";
import { expandHome, getHermesHome } from "./profile.js";

/** Settings of `hooks.output_spill` in config.yaml (camelCase here; snake_case in the file). */
export interface SpillConfig {
  /** Spill at all. Default `true`. */
  enabled: boolean;
  /** Text longer than this many characters is spilled. Default `10000`. */
  maxChars: number;
  /** Characters of the start kept in the preview (`0` = none). Default `500`. */
  previewHead: number;
  /** Characters of the end kept in the preview (`0` = none). Default `500`. */
  previewTail: number;
  /** Base directory (`~` expanded); `null` = `<HERMES_HOME>/hook_outputs`. */
  directory: string | null;
}

/** The defaults of `hooks.output_spill`. */
export const DEFAULT_SPILL_CONFIG: SpillConfig = Object.freeze({
  enabled: true,
  maxChars: 10_000,
  previewHead: 500,
  previewTail: 500,
  directory: null,
});

/** Name of the marker file that identifies a session directory this module created. */
export const SPILL_MARKER_FILE = ".hermes-managed";
const SPILL_MARKER_CONTENT = "hook_outputs";

function pick(raw: Record<string, unknown>, snake: string, camel: string): unknown {
  return raw[snake] !== undefined ? raw[snake] : raw[camel];
}

/** Python `int(x)` for the values a YAML file can hold; `undefined` when not an integer. */
function toInteger(value: unknown): number | undefined {
  if (typeof value === "number") return Number.isFinite(value) ? Math.trunc(value) : undefined;
  if (typeof value === "string" && /^\s*[+-]?\d+\s*$/.test(value)) return Number.parseInt(value, 10);
  return undefined;
}

/**
 * Coerce a raw `hooks.output_spill` mapping (snake_case keys from config.yaml, or camelCase) into
 * a `SpillConfig`. Never throws: anything unusable falls back to its default — `max_chars` must be
 * a positive integer, previews integers ≥ 0, `directory` a non-blank string (`~` expanded),
 * `enabled` any value (`null`/absent → default; strings `false|0|no|off` → false).
 */
export function normalizeSpillConfig(raw: unknown): SpillConfig {
  const config: SpillConfig = { ...DEFAULT_SPILL_CONFIG };
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return config;
  const source = raw as Record<string, unknown>;

  const enabled = pick(source, "enabled", "enabled");
  if (enabled !== undefined && enabled !== null) {
    config.enabled = typeof enabled === "string" ? !/^\s*(?:false|0|no|off|)\s*$/i.test(enabled) : Boolean(enabled);
  }
  const maxChars = toInteger(pick(source, "max_chars", "maxChars"));
  if (maxChars !== undefined && maxChars > 0) config.maxChars = maxChars;
  const head = toInteger(pick(source, "preview_head", "previewHead"));
  if (head !== undefined && head >= 0) config.previewHead = head;
  const tail = toInteger(pick(source, "preview_tail", "previewTail"));
  if (tail !== undefined && tail >= 0) config.previewTail = tail;
  const directory = pick(source, "directory", "directory");
  if (typeof directory === "string" && directory.trim() !== "") config.directory = expandHome(directory.trim());
  return config;
}

/** Options of `spillIfOversized`. */
export interface SpillOptions {
  /** Session the text belongs to; files go to `<base>/<sanitised session id>/`. */
  sessionId?: string | null;
  /** Label used in the preview header, e.g. `"sqlite memory prefetch"`. Default `"hook"`. */
  source?: string;
  /** Overrides of the spill settings (snake_case or camelCase keys). */
  config?: Partial<SpillConfig>;
  /** Profile home used when `config.directory` is unset. Default: `getHermesHome()`. */
  hermesHome?: string;
  /** Throw instead of returning the "spill write failed" preview. */
  raiseOnFailure?: boolean;
  logger?: Logger;
}

/**
 * Longest session directory name in UTF-8 bytes. A session id is caller input of any length, and
 * file systems refuse names past 255 bytes (some encrypted ones past 143): a longer id gets a
 * readable prefix and a hash of the whole id instead, so every id still has its own directory.
 */
const MAX_SEGMENT_BYTES = 128;

/**
 * The directory name of a session's spill files: `"no-session"` for a missing id; path separators
 * and `..` become `_` (cannot escape the base). An id of up to 128 UTF-8 bytes keeps its name; a
 * longer one becomes its first 103 bytes, `-` and 24 hex digits of its SHA-256, the same for the
 * same id.
 */
export function sanitizeSessionSegment(sessionId: string | null | undefined): string {
  const raw = sessionId ? String(sessionId) : "no-session";
  const cleaned = raw.replace(/[/\\]/g, "_").replace(/\.\./g, "_").replace(/\0/g, "_");
  if (cleaned === "" || cleaned === ".") return "no-session";
  return boundedName(cleaned, MAX_SEGMENT_BYTES, raw);
}

/** The base directory spill files go to, for a normalised config. */
export function resolveSpillBase(config: Pick<SpillConfig, "directory">, hermesHome?: string): string {
  if (config.directory) return path.resolve(expandHome(config.directory));
  return path.join(hermesHome ?? getHermesHome(), "hook_outputs");
}

function withThousands(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** Code points, like Python's `len()`/slicing, so previews never split a surrogate pair. */
function codePoints(text: string): string[] | null {
  // Fast path: no surrogates means UTF-16 units are code points.
  return /[\uD800-\uDFFF]/.test(text) ? Array.from(text) : null;
}

async function hasValidMarker(dir: string): Promise<boolean> {
  try {
    const markerPath = path.join(dir, SPILL_MARKER_FILE);
    const stat = await fsp.lstat(markerPath);
    if (!stat.isFile()) return false;
    return (await fsp.readFile(markerPath, "utf8")).trim() === SPILL_MARKER_CONTENT;
  } catch {
    return false;
  }
}

/**
 * Make sure `<base>/<segment>` is a real (non-symlink) directory carrying our marker. A new
 * directory is prepared under a temporary name and renamed into place, so a concurrent spill never
 * sees it without its marker; an existing unmarked directory is never adopted.
 */
async function ensureSessionDir(base: string, segment: string): Promise<string> {
  await fsp.mkdir(base, { recursive: true, mode: 0o700 });
  const dir = path.join(base, segment);
  for (let attempt = 0; attempt < 2; attempt++) {
    let stat: fs.Stats | undefined;
    try {
      stat = await fsp.lstat(dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
    if (stat) {
      if (stat.isSymbolicLink() || !stat.isDirectory()) {
        throw new HermesMemoryError({
          code: "STORAGE_FAILED",
          message: `Spill directory ${dir} is not a plain directory (symlink or file); remove it or set hooks.output_spill.directory to another place.`,
        });
      }
      if (!(await hasValidMarker(dir))) {
        throw new HermesMemoryError({
          code: "STORAGE_FAILED",
          message: `Refusing to adopt existing directory ${dir}: it has no ${SPILL_MARKER_FILE} marker, so it was not created by the spill. Move it away or set hooks.output_spill.directory to another place.`,
        });
      }
      return dir;
    }
    const staging = await fsp.mkdtemp(path.join(base, `.spill-${utf8Prefix(segment, 32)}-`));
    try {
      await fsp.chmod(staging, 0o700);
      await fsp.writeFile(path.join(staging, SPILL_MARKER_FILE), `${SPILL_MARKER_CONTENT}\n`, { mode: 0o600, flag: "wx" });
      await fsp.rename(staging, dir);
      return dir;
    } catch (error) {
      await fsp.rm(staging, { recursive: true, force: true }).catch(() => undefined);
      const code = (error as NodeJS.ErrnoException).code;
      // Another writer created it first: loop once and validate theirs.
      if (code !== "EEXIST" && code !== "ENOTEMPTY" && code !== "EISDIR") throw error;
    }
  }
  throw new HermesMemoryError({
    code: "STORAGE_FAILED",
    message: `Could not create spill directory ${dir}; check permissions of ${base}.`,
  });
}

async function writeSpillFile(dir: string, content: string): Promise<string> {
  const file = path.join(dir, `${randomUUID().replace(/-/g, "")}.txt`);
  const flags = fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | (fs.constants.O_NOFOLLOW ?? 0);
  const handle = await fsp.open(file, flags, 0o600);
  try {
    await handle.writeFile(content.endsWith("\n") ? content : `${content}\n`, "utf8");
  } finally {
    await handle.close();
  }
  return file;
}

/**
 * Return `text` unchanged when it fits (or spilling is disabled); otherwise save it to a private
 * file (dir 0700, file 0600) and return a preview:
 * `[<source> output truncated — 10,001 chars; full content saved to <path>]`, then `--- head ---`
 * and the first `previewHead` chars, then `--- tail ---` and the last `previewTail` chars.
 * `null`/`undefined` → `""`; other non-strings are stringified. Never throws unless
 * `raiseOnFailure`: a failed write logs a warning and returns the preview with
 * `full content unavailable — spill write failed`.
 */
export async function spillIfOversized(text: unknown, options: SpillOptions = {}): Promise<string> {
  let value: string;
  if (text === null || text === undefined) return "";
  if (typeof text === "string") value = text;
  else {
    try {
      value = String(text);
    } catch {
      return "";
    }
  }
  if (value === "") return value;
  const config = normalizeSpillConfig(options.config ?? {});
  if (!config.enabled) return value;
  const points = codePoints(value);
  const total = points ? points.length : value.length;
  if (total <= config.maxChars) return value;

  const source = options.source ?? "hook";
  const logger = options.logger ?? silentLogger;
  let header: string;
  try {
    const base = resolveSpillBase(config, options.hermesHome);
    const dir = await ensureSessionDir(base, sanitizeSessionSegment(options.sessionId));
    const file = await writeSpillFile(dir, value);
    header = `[${source} output truncated — ${withThousands(total)} chars; full content saved to ${file}]`;
  } catch (error) {
    logger.warn(`hook output spill failed: ${describeError(error)}`);
    if (options.raiseOnFailure) {
      if (HermesMemoryError.isInstance(error)) throw error;
      throw new HermesMemoryError({
        code: "STORAGE_FAILED",
        message: `hook output spill failed: ${describeError(error)}. Check that the spill directory is writable or set hooks.output_spill.directory.`,
        cause: error,
      });
    }
    header = `[${source} output truncated — ${withThousands(total)} chars; full content unavailable — spill write failed]`;
  }

  const slice = (start: number, end?: number): string => (points ? points.slice(start, end).join("") : value.slice(start, end));
  const lines = [header];
  if (config.previewHead > 0) lines.push("--- head ---", slice(0, config.previewHead));
  if (config.previewTail > 0 && total > config.previewHead) lines.push("--- tail ---", slice(Math.max(0, total - config.previewTail)));
  return lines.join("\n");
}

/** Options of `pruneSpillFiles`. */
export interface PruneSpillOptions {
  /** Delete files whose modification time is older than this. */
  retentionMs?: number;
  /** Keep at most this many (newest) files per session directory. */
  maxFilesPerSession?: number;
}

/**
 * Delete old spill files under `base`. Only session directories that are real directories holding
 * a valid (non-symlink) `.hermes-managed` marker are touched, and only their `*.txt` files, so a
 * misconfigured base can never lose unrelated data. Returns the number of files deleted; never
 * throws for I/O problems inside a directory (that directory is skipped).
 */
export async function pruneSpillFiles(base: string, options: PruneSpillOptions): Promise<number> {
  let sessions: fs.Dirent[];
  try {
    sessions = await fsp.readdir(base, { withFileTypes: true });
  } catch {
    return 0;
  }
  const now = Date.now();
  let deleted = 0;
  for (const session of sessions) {
    if (!session.isDirectory()) continue; // Dirent of a symlink is never a directory.
    const dir = path.join(base, session.name);
    if (!(await hasValidMarker(dir))) continue;
    try {
      const files: Array<{ file: string; mtimeMs: number }> = [];
      for (const entry of await fsp.readdir(dir, { withFileTypes: true })) {
        if (!entry.isFile() || !entry.name.endsWith(".txt")) continue;
        const file = path.join(dir, entry.name);
        const stat = await fsp.lstat(file);
        files.push({ file, mtimeMs: stat.mtimeMs });
      }
      files.sort((a, b) => b.mtimeMs - a.mtimeMs);
      const doomed = new Set<string>();
      if (options.retentionMs !== undefined) {
        for (const f of files) if (now - f.mtimeMs > options.retentionMs) doomed.add(f.file);
      }
      if (options.maxFilesPerSession !== undefined && options.maxFilesPerSession >= 0) {
        const keep = files.filter((f) => !doomed.has(f.file));
        for (const f of keep.slice(options.maxFilesPerSession)) doomed.add(f.file);
      }
      for (const file of doomed) {
        try {
          await fsp.unlink(file);
          deleted++;
        } catch {
          // Already gone or not ours to delete: skip.
        }
      }
    } catch {
      // Unreadable directory: leave it alone.
    }
  }
  return deleted;
}
