/**
 * The filterable fields of a Pinecone record, and `MemoryFilter`s in Pinecone's filter syntax.
 *
 * Both Pinecone layouts (sidecar and remote) write the same record metadata and filter it with
 * the same translation. A record's metadata holds the flat fields `text`, `kind`, `session_id`,
 * `user_id`, `tags` (a list of text), `created_at` (ISO text), `expires_at` (epoch ms, only when
 * the item expires) and the caller's metadata as JSON text in `extra` (read back as given), plus:
 * - `created_ms`: the creation time in epoch ms (Pinecone compares numbers only);
 * - `meta_<field>`: each top-level field of the caller's metadata again, for filtering: text,
 *   finite numbers, booleans and lists of text as they are (Pinecone's metadata types); other
 *   values (objects, lists of numbers or booleans) as their JSON text, which is what a filter then
 *   compares with; `null` fields are left out (a filter treats them as missing).
 */
import type { MetadataNode, ParsedMemoryFilter } from "@hermes/memory-provider-kit";
import type { MetadataFilter, VectorMetadata } from "../metadata-filter.js";
import { userMetadataOf } from "../local/sidecar-schema.js";

/** Prefix of the caller's metadata fields in a Pinecone record. */
export const PINECONE_USER_FIELD_PREFIX = "meta_";

/** A caller's metadata value as a filterable Pinecone field (`undefined` = left out). */
function filterable(value: unknown): string | number | boolean | string[] | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") return Number.isFinite(value) ? value : JSON.stringify(value);
  if (Array.isArray(value) && value.every((v) => typeof v === "string")) return value as string[];
  return JSON.stringify(value);
}

/** The record metadata written to Pinecone: the flat metadata plus `created_ms` and the caller's fields under `meta_`. */
export function pineconeRecordMetadata(metadata: VectorMetadata): VectorMetadata {
  const out: VectorMetadata = {};
  for (const [key, value] of Object.entries(metadata)) if (!key.startsWith(PINECONE_USER_FIELD_PREFIX)) out[key] = value;
  const created = typeof metadata.created_at === "string" ? Date.parse(metadata.created_at) : NaN;
  if (Number.isFinite(created)) out.created_ms = created;
  for (const [field, value] of Object.entries(userMetadataOf(metadata))) {
    const v = filterable(value);
    if (v !== undefined) out[`${PINECONE_USER_FIELD_PREFIX}${field}`] = v;
  }
  return out;
}

/** The Pinecone filter selecting the records whose expiry has passed at `now` (epoch ms). */
export function expiredPineconeFilter(now: number): MetadataFilter {
  return { expires_at: { $lte: now } };
}

function metadataNode(node: MetadataNode): MetadataFilter {
  switch (node.type) {
    case "and":
      return { $and: node.nodes.map(metadataNode) };
    case "or":
      return { $or: node.nodes.map(metadataNode) };
    case "in":
    case "nin":
      return { [`${PINECONE_USER_FIELD_PREFIX}${node.field}`]: { [`$${node.type}`]: [...node.values] } };
    default:
      return { [`${PINECONE_USER_FIELD_PREFIX}${node.field}`]: { [`$${node.type}`]: node.value } };
  }
}

/**
 * `filter` as a Pinecone filter over the fields `pineconeRecordMetadata` writes, leaving out the
 * items expired at `now` (epoch ms; `null` keeps them). `ids` are not translated (Pinecone filters
 * on metadata only), so the result may select more than `filter`: callers check the hits.
 * `withUser: false` leaves `userId` out (the namespace already holds one user's items).
 */
export function toPineconeFilter(
  filter: ParsedMemoryFilter,
  now: number | null,
  options: { withUser?: boolean } = {},
): MetadataFilter | undefined {
  const clauses: MetadataFilter[] = [];
  if (filter.kinds) clauses.push({ kind: { $in: [...filter.kinds] } });
  if (filter.sessionId !== undefined) clauses.push({ session_id: { $eq: filter.sessionId } });
  if (filter.userId !== undefined && options.withUser !== false) clauses.push({ user_id: { $eq: filter.userId } });
  if (filter.tagsAny) clauses.push({ tags: { $in: [...filter.tagsAny] } });
  if (filter.tagsAll) for (const tag of filter.tagsAll) clauses.push({ tags: { $eq: tag } });
  if (filter.createdAt) {
    const range: Record<string, number> = {};
    for (const [op, bound] of Object.entries(filter.createdAt)) if (bound !== undefined) range[`$${op}`] = bound;
    clauses.push({ created_ms: range });
  }
  if (filter.metadata) clauses.push(metadataNode(filter.metadata));
  if (now !== null) clauses.push({ $or: [{ expires_at: { $exists: false } }, { expires_at: { $gt: now } }] });
  if (clauses.length === 0) return undefined;
  return clauses.length === 1 ? clauses[0] : { $and: clauses };
}
