/**
 * How a namespace is named from the namespace template, the profile and the user id.
 *
 * A namespace that names a user stands for that user alone (a search in it is trusted to hold only
 * their items), so two different user ids must never give one namespace. Pinecone namespaces are
 * kept to letters, digits and `. _ : @ -`, and replacing other characters (say by `_`) would give
 * `a b` and `a_b` one namespace. So:
 * - an id made only of those characters, at most 128 bytes long, is used as it is (existing stores
 *   keep their namespaces);
 * - any other character is written as `~` and two hex digits per UTF-8 byte (`a b` → `a~20b`).
 *   `~` was never kept, so such a name is never one of the first kind, and it reads back to one id;
 * - an id whose name would exceed 128 bytes becomes its first bytes, `~~` (which the escapes never
 *   give) and 32 hex digits of its SHA-256: no name grows with the id, and two long ids share one
 *   only if their hashes do.
 * The profile keeps its old naming (unsafe characters become `_`), shortened the same way only when
 * the namespace would pass Pinecone's limit of 512 UTF-8 bytes.
 */
import { createHash } from "node:crypto";
import { HermesMemoryError } from "@hermes/memory-core";

/** Pinecone's limit on a namespace name, in UTF-8 bytes. */
export const MAX_NAMESPACE_BYTES = 512;
/** Longest name a user id gets inside a namespace, in bytes. */
export const MAX_USER_PART_BYTES = 128;
/** Characters a namespace keeps as they are. */
const KEPT = /^[A-Za-z0-9._:@-]*$/;
const NOT_KEPT = /[^A-Za-z0-9._:@-]/g;
/** Marks a shortened name: `~` followed by something that is not two hex digits. */
const SHORTENED = "~~";
const HASH_HEX = 32;

function sha256Hex(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, HASH_HEX);
}

/** `name` cut to its first bytes plus `~~<hash of original>`, at most `max` bytes; an escape is never cut in two. */
function shortened(name: string, original: string, max: number): string {
  let head = name.slice(0, max - SHORTENED.length - HASH_HEX);
  // Names here are ASCII: characters are bytes. A trailing `~` or `~X` is a cut escape.
  const cut = head.lastIndexOf("~");
  if (cut >= 0 && cut > head.length - 3) head = head.slice(0, cut);
  return `${head}${SHORTENED}${sha256Hex(original)}`;
}

/**
 * The UTF-8 bytes of one character (code point); a lone surrogate, which UTF-8 cannot hold, as the
 * three bytes WTF-8 gives it (never produced for any other character), so it keeps a name of its own.
 */
function bytesOf(char: string): number[] {
  const unit = char.codePointAt(0)!;
  if (unit >= 0xd800 && unit <= 0xdfff) return [0xed, 0xa0 | ((unit >> 6) & 0x1f), 0x80 | (unit & 0x3f)];
  return [...Buffer.from(char, "utf8")];
}

/** The text of `bytes` (UTF-8, with WTF-8's lone surrogates), as `bytesOf` wrote it. */
function textOf(bytes: number[]): string {
  let out = "";
  for (let i = 0; i < bytes.length;) {
    const lead = bytes[i]!;
    const length = lead < 0x80 ? 1 : lead < 0xe0 ? 2 : lead < 0xf0 ? 3 : 4;
    let point = length === 1 ? lead : lead & (0xff >> (length + 1));
    for (let k = 1; k < length; k++) point = (point << 6) | ((bytes[i + k] ?? 0) & 0x3f);
    out += String.fromCodePoint(point);
    i += length;
  }
  return out;
}

/** The name of user `id` inside a namespace (see the module comment): injective, at most 128 bytes. */
export function userNamespacePart(id: string): string {
  let escaped = id;
  if (!KEPT.test(id)) {
    escaped = "";
    for (const char of id)
      escaped += KEPT.test(char)
        ? char
        : bytesOf(char)
            .map((b) => `~${b.toString(16).toUpperCase().padStart(2, "0")}`)
            .join("");
  }
  return escaped.length <= MAX_USER_PART_BYTES ? escaped : shortened(escaped, escaped, MAX_USER_PART_BYTES);
}

/** The user id a name from `userNamespacePart` stands for; null for a shortened name (it cannot be read back). */
export function userOfNamespacePart(part: string): string | null {
  if (part.includes(SHORTENED)) return null;
  if (!part.includes("~")) return part;
  const bytes: number[] = [];
  for (let i = 0; i < part.length; i++) {
    if (part[i] === "~") {
      bytes.push(Number.parseInt(part.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(part.charCodeAt(i));
  }
  return textOf(bytes);
}

/** The profile's name inside a namespace before any shortening: characters a namespace does not keep become `_`. */
export function profileNamespacePart(profile: string): string {
  return profile.replace(NOT_KEPT, "_");
}

/** How the namespace of (`profile`, `user`) was named before user ids were escaped (to find what earlier versions stored). */
export function legacyNamespace(template: string, profile: string, user: string): string {
  return template.replace(/\{profile\}/g, profileNamespacePart(profile)).replace(/\{user\}/g, profileNamespacePart(user));
}

/**
 * The namespace of `template` with `{profile}` → `profilePart` and `{user}` → `userPart` (both
 * already names); the profile is shortened when the whole would pass 512 bytes. Throws
 * `INVALID_CONFIG` when the template itself leaves no room.
 */
export function assembleNamespace(template: string, profilePart: string, userPart: string): string {
  const fill = (profile: string): string => template.replace(/\{profile\}/g, () => profile).replace(/\{user\}/g, () => userPart);
  const whole = fill(profilePart);
  if (Buffer.byteLength(whole) <= MAX_NAMESPACE_BYTES) return whole;
  const profiles = template.split("{profile}").length - 1;
  const room = profiles === 0 ? 0 : Math.floor((MAX_NAMESPACE_BYTES - Buffer.byteLength(fill(""))) / profiles);
  const short = room >= SHORTENED.length + HASH_HEX ? fill(shortened(profilePart, profilePart, room)) : whole;
  if (Buffer.byteLength(short) > MAX_NAMESPACE_BYTES) {
    throw new HermesMemoryError({
      code: "INVALID_CONFIG",
      message: `memory.vector.pinecone_namespace_template ${JSON.stringify(template.slice(0, 80))} makes namespaces longer than Pinecone's ${MAX_NAMESPACE_BYTES} bytes; use a shorter template (the default is {profile}:{user}).`,
    });
  }
  return short;
}

/** Replace `{profile}` and `{user}` in the namespace template (see the module comment for how each is named). */
export function renderNamespace(template: string, profile: string, user: string): string {
  return assembleNamespace(template, profileNamespacePart(profile), userNamespacePart(user));
}
