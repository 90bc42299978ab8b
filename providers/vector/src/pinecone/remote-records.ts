/**
 * The remote layout's items as Pinecone records: how an item is named (ids by user, session and
 * kind), checked against Pinecone's limits, turned into record metadata, and read back as a hit.
 */
import { createHash } from "node:crypto";
import { HermesMemoryError, describeError, type MemoryHit, type MemoryKind } from "@hermes/memory-core";
import { matchesMemoryFilter, MEMORY_ITEM_KINDS, type ParsedMemoryFilter } from "@hermes/memory-provider-kit";
import { userMetadataOf } from "../local/sidecar-schema.js";
import type { VectorMetadata } from "../metadata-filter.js";
import { pineconeRecordMetadata } from "./pinecone-metadata.js";
import type { RemoteRecord } from "./pinecone-remote-client.js";

/** Options of {@link PineconeRemoteMemory.remember}. */
export interface RememberOptions {
  /** Stable last part of the id (letters, digits, `_`, `-`; up to 128): the same key for the same user and session replaces the item. */
  key?: string;
}

/** The expiry of an item that does not expire, inside this module (the largest time a Date holds; such records have no `expires_at`). */
export const NO_EXPIRY = 8.64e15;
/** Longest text accepted, in UTF-8 bytes (Pinecone holds 40 KB of metadata per record). */
export const MAX_TEXT_BYTES = 30_000;
export const MAX_METADATA_BYTES = 40_960;
export const MAX_LIMIT = 200;
export const KEY_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;
export const CACHE_LIMIT = 5000;
/** Id of the identity record in {@link PineconeRemoteMemory.identityNamespace}. */
export const IDENTITY_ID = "identity";

export function invalid(message: string): never {
  throw new HermesMemoryError({ code: "INVALID_ARGUMENT", message });
}

/** First 16 hex digits of the SHA-256 of `value`, or `-` when absent. */
function token(value: string | undefined): string {
  return value === undefined ? "-" : createHash("sha256").update(value).digest("hex").slice(0, 16);
}

/**
 * The id prefix shared by a user's items (`u<user>.`) or, with `sessionId`, by their items of
 * that session (`u<user>.s<session>.`). `undefined` stands for "no user" / "no session".
 */
export function itemIdPrefix(userId: string | undefined, sessionId?: string | null): string {
  return sessionId === null ? `u${token(userId)}.` : `u${token(userId)}.s${token(sessionId)}.`;
}

/** The kind encoded in an item id, or null for an id of another layout. */
export function kindOfId(id: string): MemoryKind | null {
  const kind = id.split(".")[2];
  return MEMORY_ITEM_KINDS.includes(kind as MemoryKind) ? (kind as MemoryKind) : null;
}

/** What a stored record says about its item. */
export interface ItemView {
  id: string;
  text: string;
  kind: MemoryKind;
  created: number;
  expires: number;
  sessionId?: string;
  userId?: string;
  tags: string[];
  userMetadata: Record<string, unknown>;
}

export function viewOf(id: string, m: VectorMetadata): ItemView {
  const created = typeof m.created_ms === "number" ? m.created_ms : typeof m.created_at === "string" ? Date.parse(m.created_at) : NaN;
  return {
    id,
    text: typeof m.text === "string" ? m.text : "",
    kind: MEMORY_ITEM_KINDS.includes(m.kind as MemoryKind) ? (m.kind as MemoryKind) : "fact",
    created: Number.isFinite(created) ? created : 0,
    expires: typeof m.expires_at === "number" ? m.expires_at : NO_EXPIRY,
    ...(typeof m.session_id === "string" ? { sessionId: m.session_id } : {}),
    ...(typeof m.user_id === "string" ? { userId: m.user_id } : {}),
    tags: Array.isArray(m.tags) ? m.tags : [],
    userMetadata: userMetadataOf(m),
  };
}

export function toHit(view: ItemView, score: number): MemoryHit {
  return {
    id: view.id,
    content: view.text,
    kind: view.kind,
    score,
    ...(view.sessionId !== undefined ? { sessionId: view.sessionId } : {}),
    ...(view.userId !== undefined ? { userId: view.userId } : {}),
    createdAt: new Date(view.created).toISOString(),
    metadata: view.userMetadata,
    ...(view.tags.length > 0 ? { tags: view.tags } : {}),
    ...(view.expires < NO_EXPIRY ? { expiresAt: new Date(view.expires).toISOString() } : {}),
  };
}

export function passes(filter: ParsedMemoryFilter, view: ItemView): boolean {
  return matchesMemoryFilter(filter, {
    id: view.id,
    kind: view.kind,
    sessionId: view.sessionId,
    userId: view.userId,
    tags: view.tags,
    metadata: view.userMetadata,
    createdAt: view.created,
  });
}

/** Flat Pinecone metadata of an item (validated: throws `INVALID_ARGUMENT` on bad input or a record Pinecone would refuse). */
export function buildMetadata(input: {
  text: string;
  kind: MemoryKind;
  created: number;
  expires: number;
  seq: number;
  sessionId?: string;
  userId?: string;
  tags: string[];
  userMetadata: Record<string, unknown>;
}): VectorMetadata {
  const textBytes = Buffer.byteLength(input.text);
  if (textBytes > MAX_TEXT_BYTES) {
    invalid(
      `content is ${textBytes} bytes; the Pinecone remote layout stores at most ${MAX_TEXT_BYTES} bytes of text per item (Pinecone holds 40 KB of metadata per record). Split it into several items.`,
    );
  }
  const flat: VectorMetadata = { text: input.text, kind: input.kind, created_at: new Date(input.created).toISOString(), seq: input.seq };
  if (input.expires < NO_EXPIRY) flat.expires_at = input.expires;
  if (input.sessionId !== undefined) flat.session_id = input.sessionId;
  if (input.userId !== undefined) flat.user_id = input.userId;
  if (input.tags.length > 0) flat.tags = input.tags;
  let json: string;
  try {
    json = JSON.stringify(input.userMetadata);
  } catch (error) {
    invalid(`metadata must be JSON-serialisable: ${describeError(error)}`);
  }
  if (json !== "{}") flat.extra = json;
  const m = pineconeRecordMetadata(flat);
  const bytes = Buffer.byteLength(JSON.stringify(m));
  if (bytes > MAX_METADATA_BYTES) {
    invalid(
      `the item's text and metadata take ${bytes} bytes; Pinecone holds at most ${MAX_METADATA_BYTES} bytes of metadata per record. Shorten the content or the metadata.`,
    );
  }
  return m;
}

export function checkText(value: unknown, what: string): string {
  if (typeof value !== "string" || value.trim() === "") invalid(`${what} must be non-empty text.`);
  return value;
}

/** Pinecone's rule for metadata field names, on metadata `parseMemoryItem` accepted. */
export function checkMetadataFields(value: Record<string, unknown>): Record<string, unknown> {
  for (const field of Object.keys(value)) {
    if (field === "" || field.startsWith("$") || field.length > 256)
      invalid(`metadata field "${field.slice(0, 40)}" must be 1–256 characters without a leading $.`);
  }
  return value as Record<string, unknown>;
}

export interface CachedItem {
  record: RemoteRecord | null; // null = deleted
  at: number;
}

let seqCounter = 0;
/** Order of remembering: epoch ms × 1000 plus a per-process counter from 0 to 999 (orders writes within a millisecond). */
export function nextSeq(now: number): number {
  seqCounter = (seqCounter + 1) % 1000;
  return now * 1000 + seqCounter;
}
