/**
 * The sidecar layout's writes as they are queued: an item's flat record metadata (kind, times,
 * session, user, tags, the caller's own metadata as JSON in `extra`), built when the write is
 * accepted, and the metadata an `update` leaves.
 */
import type { MemoryItem } from "@hermes/memory-core";
import { resolveExpiry, type ParsedMemoryUpdate } from "@hermes/memory-provider-kit";
import type { VectorMetadata } from "../metadata-filter.js";
import { flattenMetadata } from "../pinecone/pinecone-vector-store.js";
import type { PendingWrite } from "./maintenance.js";

/** Metadata keys the record itself uses: a caller's metadata under these names is not kept in `extra`. */
const RESERVED_KEYS = new Set([
  "text",
  "kind",
  "session_id",
  "user_id",
  "created_at",
  "tags",
  "digest",
  "extra",
  "text_truncated",
  "source",
  "role",
  "expires_at",
  "created_ms",
]);

/** The caller's metadata without the reserved keys. */
function userFields(metadata: Record<string, unknown>): Record<string, unknown> {
  const user: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(metadata)) if (!RESERVED_KEYS.has(k)) user[k] = v;
  return user;
}

/** The write of `item` with this id into `namespace`, created now; `extra` is added to its metadata. */
export function pendingWrite(item: MemoryItem, id: string, namespace: string, extra: VectorMetadata = {}): PendingWrite {
  const kind = item.kind ?? "fact";
  const userId = item.userId;
  const now = Date.now();
  const expiresAt = resolveExpiry(item, now);
  const metadata: Record<string, unknown> = {
    kind,
    created_at: new Date(now).toISOString(),
    ...(expiresAt !== null ? { expires_at: expiresAt } : {}),
    ...(item.sessionId ? { session_id: item.sessionId } : {}),
    ...(userId ? { user_id: userId } : {}),
    ...(item.tags && item.tags.length > 0 ? { tags: item.tags } : {}),
    ...extra,
  };
  const user = userFields(item.metadata ?? {});
  if (Object.keys(user).length > 0) metadata.extra = JSON.stringify(user);
  return { id, namespace, text: item.content, metadata: flattenMetadata(metadata) };
}

/** A stored row's metadata (text left out) after `update` changes: new tags, caller's metadata and expiry replace the old. */
export function updatedMetadata(stored: VectorMetadata, parsed: ParsedMemoryUpdate): VectorMetadata {
  const { text: _text, ...metadata } = stored;
  if (parsed.tags !== undefined) {
    if (parsed.tags.length > 0) metadata.tags = parsed.tags;
    else delete metadata.tags;
  }
  if (parsed.metadata !== undefined) {
    const user = userFields(parsed.metadata);
    if (Object.keys(user).length > 0) metadata.extra = JSON.stringify(user);
    else delete metadata.extra;
  }
  if (parsed.expiresAt === null) delete metadata.expires_at;
  else if (parsed.expiresAt !== undefined) metadata.expires_at = parsed.expiresAt;
  return flattenMetadata(metadata);
}
