import { createHash } from "node:crypto";
import type { NewItem } from "./memory-store.js";

/**
 * Content digest of an item. Facts and checkpoints are keyed by what they say (so re-sending them is
 * a no-op). Turns are events: their digest covers session, user, time and text. A turn written live
 * carries no digest: it is computed when needed (export, import) and not stored, which keeps the
 * unique index out of the turn write path. An imported turn carries one and it is stored, so the
 * same turn imported again (also by another process at the same time) is not stored twice.
 */
export function itemDigest(item: Pick<NewItem, "kind" | "content" | "sessionId" | "userId" | "speaker">, createdAt: number): string {
  const hash = createHash("sha256");
  hash
    .update(item.kind)
    .update("\0")
    .update(item.userId ?? "")
    .update("\0");
  if (item.kind === "fact") {
    hash.update(item.content);
  } else if (item.kind === "checkpoint") {
    hash
      .update(item.sessionId ?? "")
      .update("\0")
      .update(item.speaker ?? "")
      .update("\0")
      .update(item.content);
  } else {
    hash
      .update(item.sessionId ?? "")
      .update("\0")
      .update(String(createdAt))
      .update("\0")
      .update(item.content);
  }
  return hash.digest("hex");
}

/**
 * Digest of an imported turn that has no creation time (written by hand): its identity is what the
 * record says (user, session, speaker, content, tags, metadata and expiry, key order not counting)
 * plus `occurrence`, how many records saying exactly the same came before it in the same file.
 * Re-importing the file gives every such turn the same digest again (so it is skipped), while two
 * identical lines of one file stay two turns (someone said "yes" twice).
 */
export function undatedTurnDigest(
  item: Pick<NewItem, "content" | "sessionId" | "userId" | "speaker" | "tags" | "metadata" | "expiresAt">,
  occurrence: number,
): string {
  const said = canonicalJson([
    item.userId ?? null,
    item.sessionId ?? null,
    item.speaker ?? null,
    item.content,
    item.tags ?? [],
    item.metadata ?? {},
    item.expiresAt ?? null,
  ]);
  return createHash("sha256").update("undated turn\0").update(said).update("\0").update(String(occurrence)).digest("hex");
}

/** `value` (JSON data) as JSON text with object keys sorted, so equal data gives equal text. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const object = value as Record<string, unknown>;
    return `{${Object.keys(object)
      .sort()
      .filter((key) => object[key] !== undefined)
      .map((key) => `${JSON.stringify(key)}:${canonicalJson(object[key])}`)
      .join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** Digest a mirrored or remembered fact gets for `content` (used to find it again on remove). */
export function factDigest(content: string, userId?: string): string {
  return itemDigest({ kind: "fact", content, userId }, 0);
}
