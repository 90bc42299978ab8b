/**
 * File names derived from input of any length (a session id, a target's own name plus a suffix)
 * stay within what file systems accept: a name that would be too long becomes a readable start of
 * it and a hash of the whole, the same for the same input and different for different ones.
 */
import { createHash } from "node:crypto";

/** Longest file name, in UTF-8 bytes, that common file systems accept (ext4, XFS, Btrfs, tmpfs, APFS, NTFS). */
export const MAX_FILE_NAME_BYTES = 255;
/** Hex digits of SHA-256 a bounded name ends with (96 bits: no two inputs of one directory share it). */
const HASH_HEX = 24;

/** The longest start of `text` that fits in `maxBytes` of UTF-8, never splitting a character. */
export function utf8Prefix(text: string, maxBytes: number): string {
  let bytes = 0;
  let end = 0;
  for (const char of text) {
    bytes += Buffer.byteLength(char);
    if (bytes > maxBytes) break;
    end += char.length;
  }
  return text.slice(0, end);
}

/**
 * `name` when it fits in `maxBytes` of UTF-8; otherwise its longest start that leaves room for `-`
 * and 24 hex digits of the SHA-256 of `hashed` (default: `name` itself).
 */
export function boundedName(name: string, maxBytes: number, hashed: string = name): string {
  if (Buffer.byteLength(name) <= maxBytes) return name;
  const hash = createHash("sha256").update(hashed).digest("hex").slice(0, HASH_HEX);
  return `${utf8Prefix(name, Math.max(0, maxBytes - HASH_HEX - 1))}-${hash}`;
}

/**
 * The name of a file kept beside `name` (its lock, a marker): `name + suffix` while that fits in
 * `MAX_FILE_NAME_BYTES`, so names other programs derive the same way (the Python agent's
 * `<file>.lock`) stay the same; otherwise `boundedName(name)` shortened to leave room for `suffix`.
 */
export function siblingName(name: string, suffix: string): string {
  return `${boundedName(name, MAX_FILE_NAME_BYTES - Buffer.byteLength(suffix))}${suffix}`;
}
