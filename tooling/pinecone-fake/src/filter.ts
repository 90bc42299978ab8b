/**
 * The fake's own evaluator of Pinecone's metadata filter language. It is written independently of
 * the vector provider's filter code on purpose: the fake stands in for the server, so a mistake in
 * the provider's filter must show up as a disagreement with the fake, not be copied into it.
 *
 * Pinecone's rules, as implemented here:
 * - metadata values are strings, numbers, booleans or lists of strings;
 * - the fields of a filter object are ANDed; `$and` / `$or` take a list of filter objects;
 * - a field maps to a bare value (shorthand for `$eq`) or to an object of operators, all of which
 *   must hold: `$eq $ne` (string, number, boolean), `$gt $gte $lt $lte` (numbers only),
 *   `$in $nin` (a list), `$exists` (a boolean);
 * - on a list-valued field, `$eq` / `$in` match when any element matches, `$ne` / `$nin` only when
 *   no element does; range operators never match a list;
 * - a record without the field matches only `$ne`, `$nin` and `$exists: false`;
 * - anything else (an unknown operator, a range bound that is not a number, `$in` without a list)
 *   is a malformed request, answered with HTTP 400: the evaluator throws.
 */

/** One metadata value as Pinecone stores it. */
export type FakeMetadataValue = string | number | boolean | string[];

/** A record's metadata. */
export type FakeMetadata = Record<string, FakeMetadataValue>;

type Scalar = string | number | boolean;

const isScalar = (v: unknown): v is Scalar => typeof v === "string" || typeof v === "number" || typeof v === "boolean";
const isPlainObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

function bad(message: string): never {
  throw new Error(`Invalid filter: ${message}`);
}

function scalarOperand(op: string, operand: unknown): Scalar {
  if (!isScalar(operand)) bad(`${op} expects a string, number or boolean`);
  return operand;
}

function listOperand(op: string, operand: unknown): Scalar[] {
  if (!Array.isArray(operand) || !operand.every(isScalar)) bad(`${op} expects a list of strings, numbers or booleans`);
  return operand;
}

function numberOperand(op: string, operand: unknown): number {
  if (typeof operand !== "number") bad(`${op} expects a number`);
  return operand;
}

/** Whether one field's value satisfies one operator. `value` is undefined when the field is absent. */
function operatorHolds(value: FakeMetadataValue | undefined, op: string, operand: unknown): boolean {
  const elements: Scalar[] = value === undefined ? [] : Array.isArray(value) ? value : [value];
  switch (op) {
    case "$eq": {
      const want = scalarOperand(op, operand);
      return elements.some((e) => e === want);
    }
    case "$ne": {
      const unwanted = scalarOperand(op, operand);
      return !elements.some((e) => e === unwanted);
    }
    case "$in": {
      const list = listOperand(op, operand);
      return elements.some((e) => list.includes(e));
    }
    case "$nin": {
      const list = listOperand(op, operand);
      return !elements.some((e) => list.includes(e));
    }
    case "$gt":
    case "$gte":
    case "$lt":
    case "$lte": {
      const bound = numberOperand(op, operand);
      if (typeof value !== "number") return false;
      if (op === "$gt") return value > bound;
      if (op === "$gte") return value >= bound;
      if (op === "$lt") return value < bound;
      return value <= bound;
    }
    case "$exists":
      if (typeof operand !== "boolean") bad("$exists expects a boolean");
      return (value !== undefined) === operand;
    default:
      return bad(`unknown operator ${op}`);
  }
}

/** Whether a record with `metadata` is selected by `filter` (no filter selects everything). */
export function pineconeFilterMatches(metadata: FakeMetadata, filter: unknown): boolean {
  if (filter === undefined || filter === null) return true;
  if (!isPlainObject(filter)) bad("a filter must be an object");
  return Object.entries(filter).every(([key, condition]) => {
    if (key === "$and" || key === "$or") {
      if (!Array.isArray(condition)) bad(`${key} expects a list of filters`);
      const test = (f: unknown) => pineconeFilterMatches(metadata, f);
      return key === "$and" ? condition.every(test) : condition.some(test);
    }
    if (key.startsWith("$")) bad(`unknown operator ${key} at the top level`);
    const value = metadata[key];
    if (isPlainObject(condition)) return Object.entries(condition).every(([op, operand]) => operatorHolds(value, op, operand));
    return operatorHolds(value, "$eq", condition);
  });
}
