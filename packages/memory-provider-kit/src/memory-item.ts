/**
 * Validation of the `MemoryItem` a caller hands to `remember()`, shared by every provider so that
 * each refuses the same items with the same `INVALID_ARGUMENT` messages, before anything is queued
 * or written: an item accepted here can always be stored (its metadata serialises to JSON), so a
 * malformed item never poisons a write queue of accepted items.
 */
import { HermesMemoryError, describeValue, type MemoryKind } from "@hermes/memory-core";
import { MEMORY_ITEM_KINDS, PROTO_FIELD, PROTO_FIELD_RULE, resolveExpiry, toEpochMs } from "./memory-filter.js";

/** Longest `sessionId` or `userId` accepted (the limit filters apply to the same fields). */
export const MAX_ITEM_ID_LENGTH = 4096;

/**
 * Deepest nesting of objects and lists accepted in `metadata` (SQLite's JSON functions, which
 * filters run over stored metadata, refuse documents nested 1000 levels deep).
 */
export const MAX_METADATA_DEPTH = 64;

/** Whether `value` nests objects or lists deeper than `limit` levels (a value referring to itself does). */
function nestedDeeperThan(value: unknown, limit: number): boolean {
  if (value === null || typeof value !== "object") return false;
  if (limit === 0) return true;
  for (const child of Array.isArray(value) ? value : Object.values(value)) if (nestedDeeperThan(child, limit - 1)) return true;
  return false;
}

/** A `MemoryItem` as `parseMemoryItem` accepted it, with defaults applied. */
export interface ParsedMemoryItem {
  content: string;
  /** `fact` when the caller gave none. */
  kind: MemoryKind;
  /** Absent when not given (or given as "" / null). */
  sessionId?: string;
  userId?: string;
  /** `[]` when not given. */
  tags: string[];
  /** `{}` when not given; always serialisable with `JSON.stringify`. */
  metadata: Record<string, unknown>;
  /** Expiry in epoch milliseconds (from `expiresAt` or `ttlMs`), or `null` for none. */
  expiresAt: number | null;
}

function invalid(what: string, message: string): never {
  throw new HermesMemoryError({ code: "INVALID_ARGUMENT", message: `${what}: ${message}` });
}

/** An optional id field: text of 1 to `MAX_ITEM_ID_LENGTH` characters; "" and null count as absent. */
function optionalId(value: unknown, field: string, what: string): string | undefined {
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value !== "string" || value.length > MAX_ITEM_ID_LENGTH) {
    invalid(what, `${field} must be text of at most ${MAX_ITEM_ID_LENGTH} characters; got ${describeValue(value)}.`);
  }
  return value;
}

/**
 * Check a `remember()` item and apply the defaults. Throws `INVALID_ARGUMENT` (messages start with
 * `what`) when the item is not an object; `content` is not text with a non-blank character;
 * `kind` is not `turn`, `fact` or `checkpoint`; `sessionId` / `userId` are not text; `tags` is
 * not a list of non-empty text; `metadata` is not a plain object, nests more than
 * `MAX_METADATA_DEPTH` levels (a circular reference does) or cannot be serialised to JSON (a
 * BigInt); or the expiry is invalid (`resolveExpiry`).
 * Metadata values JSON cannot hold (functions, `undefined`, symbols) are dropped as
 * `JSON.stringify` drops them; a `Date` becomes its ISO text.
 */
export function parseMemoryItem(item: unknown, what = "remember()", now: number = Date.now()): ParsedMemoryItem {
  if (item === null || typeof item !== "object" || Array.isArray(item)) {
    invalid(what, `needs an item object with non-empty text content; got ${describeValue(item)}.`);
  }
  const it = item as Record<string, unknown>;
  const content = it.content;
  if (typeof content !== "string" || content.trim() === "") {
    invalid(what, `content must be text with at least one non-blank character; got ${describeValue(content)}.`);
  }
  const kind = it.kind === undefined || it.kind === null ? "fact" : it.kind;
  if (typeof kind !== "string" || !MEMORY_ITEM_KINDS.includes(kind as MemoryKind)) {
    invalid(what, `kind must be one of ${MEMORY_ITEM_KINDS.join(", ")}; got ${describeValue(kind)}.`);
  }
  const sessionId = optionalId(it.sessionId, "sessionId", what);
  const userId = optionalId(it.userId, "userId", what);
  let tags: string[] = [];
  if (it.tags !== undefined && it.tags !== null) {
    if (!Array.isArray(it.tags) || !it.tags.every((t) => typeof t === "string" && t !== "")) {
      invalid(what, `tags must be a list of non-empty text; got ${describeValue(it.tags)}.`);
    }
    tags = [...(it.tags as string[])];
  }
  const metadata = parseItemMetadata(it.metadata, what);
  const expiresAt = resolveExpiry(it, now);
  return {
    content,
    kind: kind as MemoryKind,
    ...(sessionId !== undefined ? { sessionId } : {}),
    ...(userId !== undefined ? { userId } : {}),
    tags,
    metadata,
    expiresAt,
  };
}

/**
 * Check an item's `metadata` (`remember` or `update`) and return a JSON copy of it: `{}` for
 * `undefined` / `null`. Throws `INVALID_ARGUMENT` (message starting with `what`) when it is not a
 * plain object, has an own top-level field named `__proto__` (`PROTO_FIELD`: filters address
 * top-level fields, and that name cannot be kept alike in every store; nested values are data and
 * keep it), nests objects or lists more than `MAX_METADATA_DEPTH` levels (a value referring to
 * itself does), or cannot be serialised to JSON (a BigInt).
 */
export function parseItemMetadata(value: unknown, what: string): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value) || value instanceof Date) {
    invalid(what, `metadata must be an object of named values; got ${describeValue(value)}.`);
  }
  if (Object.prototype.hasOwnProperty.call(value, PROTO_FIELD)) invalid(what, PROTO_FIELD_RULE);
  if (nestedDeeperThan(value, MAX_METADATA_DEPTH)) {
    invalid(what, `metadata nests objects or lists more than ${MAX_METADATA_DEPTH} levels deep (or refers to itself); flatten it.`);
  }
  let json: string;
  try {
    json = JSON.stringify(value);
  } catch (error) {
    const reason = error instanceof Error ? error.message.split("\n")[0]! : String(error);
    invalid(what, `metadata must be serialisable as JSON (${reason}); pass plain objects, lists, text, numbers and booleans.`);
  }
  return JSON.parse(json) as Record<string, unknown>;
}

/** `update()` changes as `parseMemoryUpdate` accepted them (absent = unchanged). */
export interface ParsedMemoryUpdate {
  content?: string;
  /** Without duplicates; `[]` removes every tag. */
  tags?: string[];
  /** A JSON copy; replaces the caller metadata. */
  metadata?: Record<string, unknown>;
  /** Epoch milliseconds, or `null` to remove the expiry. */
  expiresAt?: number | null;
}

const UPDATE_KEYS = new Set(["content", "tags", "metadata", "expiresAt"]);

/**
 * Check the changes of an `update()` call: an object with only `content` (text with a non-blank
 * character), `tags` (a list of non-empty text), `metadata` (as `parseItemMetadata`) and
 * `expiresAt` (a time, or `null` to remove the expiry); keys set to `undefined` are ignored.
 * Throws `INVALID_ARGUMENT` with messages starting with `what` otherwise.
 */
export function parseMemoryUpdate(changes: unknown, what = "update()"): ParsedMemoryUpdate {
  if (changes === null || typeof changes !== "object" || Array.isArray(changes)) {
    invalid(what, `changes must be an object with content, tags, metadata or expiresAt; got ${describeValue(changes)}.`);
  }
  const out: ParsedMemoryUpdate = {};
  for (const [key, value] of Object.entries(changes as Record<string, unknown>)) {
    if (value === undefined) continue;
    if (!UPDATE_KEYS.has(key)) invalid(what, `unknown key "${key.slice(0, 40)}"; use content, tags, metadata or expiresAt.`);
    switch (key) {
      case "content":
        if (typeof value !== "string" || value.trim() === "")
          invalid(what, `content must be text with at least one non-blank character; got ${describeValue(value)}.`);
        out.content = value as string;
        break;
      case "tags":
        if (!Array.isArray(value) || !value.every((t) => typeof t === "string" && t !== ""))
          invalid(what, `tags must be a list of non-empty text; got ${describeValue(value)}.`);
        out.tags = [...new Set(value as string[])];
        break;
      case "metadata":
        if (value === null) invalid(what, "metadata must be an object of named values; got null (pass {} to remove every field).");
        out.metadata = parseItemMetadata(value, what);
        break;
      case "expiresAt":
        out.expiresAt = value === null ? null : toEpochMs(value, `${what}: expiresAt`);
        break;
    }
  }
  return out;
}
