/**
 * Tool arguments aimed at another user's items, generated from a tool's JSON schema for the user
 * boundary clause: parameters that name an item get the other user's item id, parameters that name
 * a user or a session get theirs, other text gets a marker word of their item (or the id itself),
 * and every value stays inside the schema (required keys filled, enums and number bounds kept).
 */

/** Whom and what the arguments point at: one item of the other user. */
export interface BoundaryTarget {
  /** The other user. */
  userId: string;
  /** The session the other user's items were stored in. */
  sessionId: string;
  /** The item's id. */
  itemId: string;
  /** A marker word of the item's text. */
  word: string;
}

/** One argument object for a tool, labelled for reports. */
export interface BoundaryArguments {
  label: string;
  args: Record<string, unknown>;
  /** Some parameter naming an item (an id) holds the target's id. */
  namesItem: boolean;
}

/** What a parameter stands for, read from its name. */
export type ParameterRole = "user" | "session" | "id" | "text";

const ID_NAME = /^(ids?|uuids?|keys?)$|[_-](ids?|uuids?|keys?)$|[a-z0-9](Id|Ids|ID|IDs|Uuid|Key)$/;

/** The role of a parameter named `name`: a user, a session, an item id, or anything else. */
export function parameterRole(name: string): ParameterRole {
  if (/user/i.test(name)) return "user";
  if (/session/i.test(name)) return "session";
  return ID_NAME.test(name) ? "id" : "text";
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The schema a value is generated from: the first alternative of `anyOf` / `oneOf`. */
function resolve(schema: unknown): Record<string, unknown> {
  if (!isPlainObject(schema)) return {};
  for (const key of ["anyOf", "oneOf"] as const) {
    const alternatives = schema[key];
    if (Array.isArray(alternatives) && isPlainObject(alternatives[0])) return { ...schema, ...alternatives[0] };
  }
  return schema;
}

/** The JSON type a value is generated as; text is preferred where the schema allows it (ids are text). */
function typeOf(schema: Record<string, unknown>): string | undefined {
  const type = schema.type;
  if (Array.isArray(type)) return type.includes("string") ? "string" : typeof type[0] === "string" ? type[0] : undefined;
  return typeof type === "string" ? type : undefined;
}

/** True for a parameter whose value is a scalar or a list of scalars (objects are left out when optional). */
function isSimple(schema: unknown): boolean {
  const s = resolve(schema);
  if ("const" in s || Array.isArray(s.enum)) return true;
  const type = typeOf(s);
  if (type === "array") return isSimple(s.items) && typeOf(resolve(s.items)) !== "array";
  return type === "string" || type === "integer" || type === "number" || type === "boolean";
}

interface Fill {
  target: BoundaryTarget;
  /** What text parameters get: the marker word or the item id. */
  text: "word" | "id";
  /** Rotates through enum values. */
  turn: number;
  /** Optional simple parameters are filled too (user parameters only with `withUser`). */
  all: boolean;
  /** Optional user parameters are filled (with the target's user). */
  withUser: boolean;
  namesItem: boolean;
}

function numberIn(schema: Record<string, unknown>, integer: boolean, wanted: number): number {
  const low =
    typeof schema.minimum === "number" ? schema.minimum : typeof schema.exclusiveMinimum === "number" ? schema.exclusiveMinimum + 1 : 1;
  const high =
    typeof schema.maximum === "number"
      ? schema.maximum
      : typeof schema.exclusiveMaximum === "number"
        ? schema.exclusiveMaximum - 1
        : Math.max(low, wanted);
  const value = Math.min(high, Math.max(low, wanted));
  return integer ? Math.ceil(value) : value;
}

function valueFor(name: string, schema: unknown, fill: Fill, depth: number): unknown {
  const s = resolve(schema);
  if ("const" in s) return s.const;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[fill.turn % s.enum.length];
  const role = parameterRole(name);
  const type = typeOf(s);
  switch (type) {
    case "integer":
    case "number": {
      if (role === "id" && /^\d+$/.test(fill.target.itemId)) {
        fill.namesItem = true;
        return Number(fill.target.itemId);
      }
      return numberIn(s, type === "integer", 20);
    }
    case "boolean":
      // Alternates, as a flag may widen or narrow what a tool reaches.
      return fill.turn % 2 === 1;
    case "null":
      return null;
    case "array": {
      const item = valueFor(name.replace(/s$/, ""), s.items, fill, depth + 1);
      const count = typeof s.minItems === "number" && s.minItems > 1 ? s.minItems : 1;
      return Array.from({ length: count }, () => item);
    }
    case "object":
      return depth > 3 ? {} : objectFor(s, fill, depth + 1);
    default:
      if (role === "user") return fill.target.userId;
      if (role === "session") return fill.target.sessionId;
      if (role === "id" || fill.text === "id") {
        if (role === "id") fill.namesItem = true;
        return fill.target.itemId;
      }
      return fill.target.word;
  }
}

function objectFor(schema: Record<string, unknown>, fill: Fill, depth: number): Record<string, unknown> {
  const properties = isPlainObject(schema.properties) ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === "string") : []);
  const out: Record<string, unknown> = {};
  for (const [name, property] of Object.entries(properties)) {
    const user = parameterRole(name) === "user";
    const wanted = required.has(name) || (isSimple(property) && (user ? fill.withUser : fill.all));
    if (wanted) out[name] = valueFor(name, property, fill, depth);
  }
  return out;
}

/**
 * Argument objects for a tool with `parameters`, all aimed at `target`: the required parameters
 * alone (text as the marker word, then as the id), with the user parameters naming the target's
 * user, then with every optional scalar parameter too (the same three ways). Duplicates are
 * dropped. `turn` picks the enum values and flags, so calls for several targets cover several.
 */
export function boundaryArguments(parameters: unknown, target: BoundaryTarget, turn = 0): BoundaryArguments[] {
  const schema = resolve(parameters);
  const variants: Array<Omit<Fill, "target" | "turn" | "namesItem"> & { label: string }> = [
    { label: "required arguments, text as a marker word", text: "word", all: false, withUser: false },
    { label: "required arguments, text as an item id", text: "id", all: false, withUser: false },
    { label: "required arguments naming the other user", text: "word", all: false, withUser: true },
    { label: "all simple arguments, text as a marker word", text: "word", all: true, withUser: false },
    { label: "all simple arguments, text as an item id", text: "id", all: true, withUser: false },
    { label: "all simple arguments naming the other user", text: "word", all: true, withUser: true },
  ];
  const seen = new Set<string>();
  const out: BoundaryArguments[] = [];
  for (const variant of variants) {
    const fill: Fill = { ...variant, target, turn, namesItem: false };
    const args = objectFor(schema, fill, 0);
    const key = JSON.stringify(args);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ label: variant.label, args, namesItem: fill.namesItem });
  }
  return out;
}
