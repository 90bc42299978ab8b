/** A flat metadata value, as Pinecone accepts it: string, number, boolean or a list of strings. */
export type MetadataValue = string | number | boolean | string[];

/** Flat record metadata shared by every store (Pinecone's metadata model). */
export type VectorMetadata = Record<string, MetadataValue>;

/**
 * A metadata filter in Pinecone's syntax: `{field: value}` (equality), `{field: {$op: value}}` with
 * `$eq $ne $gt $gte $lt $lte $in $nin $exists`, and `$and` / `$or` over lists of filters.
 */
export type MetadataFilter = Record<string, unknown>;

function compare(actual: MetadataValue | undefined, op: string, expected: unknown): boolean {
  switch (op) {
    case "$eq":
      return Array.isArray(actual) ? actual.includes(expected as string) : actual === expected;
    case "$ne":
      return Array.isArray(actual) ? !actual.includes(expected as string) : actual !== expected;
    case "$gt":
      return typeof actual === "number" && typeof expected === "number" && actual > expected;
    case "$gte":
      return typeof actual === "number" && typeof expected === "number" && actual >= expected;
    case "$lt":
      return typeof actual === "number" && typeof expected === "number" && actual < expected;
    case "$lte":
      return typeof actual === "number" && typeof expected === "number" && actual <= expected;
    case "$in": {
      const list = Array.isArray(expected) ? (expected as unknown[]) : [];
      return Array.isArray(actual) ? actual.some((v) => list.includes(v)) : list.includes(actual);
    }
    case "$nin": {
      const list = Array.isArray(expected) ? (expected as unknown[]) : [];
      return Array.isArray(actual) ? !actual.some((v) => list.includes(v)) : !list.includes(actual);
    }
    case "$exists":
      return (actual !== undefined) === Boolean(expected);
    default:
      throw new TypeError(`Unsupported metadata filter operator ${op}`);
  }
}

/**
 * Evaluate a Pinecone-style filter against one record's metadata. Used by the local store and by
 * the read-your-writes cache so both agree with Pinecone on what a filter selects.
 * Throws `TypeError` on an unknown operator (a programming error, not user input).
 */
export function matchesMetadataFilter(metadata: VectorMetadata, filter: MetadataFilter | undefined): boolean {
  if (!filter) return true;
  for (const [key, condition] of Object.entries(filter)) {
    if (key === "$and") {
      if (!(condition as MetadataFilter[]).every((f) => matchesMetadataFilter(metadata, f))) return false;
      continue;
    }
    if (key === "$or") {
      if (!(condition as MetadataFilter[]).some((f) => matchesMetadataFilter(metadata, f))) return false;
      continue;
    }
    const actual = metadata[key];
    if (condition !== null && typeof condition === "object" && !Array.isArray(condition)) {
      for (const [op, expected] of Object.entries(condition as Record<string, unknown>)) {
        if (!compare(actual, op, expected)) return false;
      }
    } else if (!compare(actual, "$eq", condition)) {
      return false;
    }
  }
  return true;
}
