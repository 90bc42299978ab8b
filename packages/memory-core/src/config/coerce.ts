import type { ConfigField } from "../provider.js";
import { isTruthyFlag } from "./environment.js";

/** Outcome of `coerceConfigValue`: the typed value, or what is wrong with the input. */
export type CoercedConfigValue = { ok: true; value: unknown } | { ok: false; problem: string };

/** Two scalars are equal when they are identical or print the same (`"5"` equals `5`). */
export function looselyEqual(a: unknown, b: unknown): boolean {
  return a === b || (a !== undefined && a !== null && b !== undefined && b !== null && String(a) === String(b));
}

/**
 * The one coercion and validation of a config value against its field, shared by setup
 * (`applySetup`) and the runtime resolver (`resolveProviderConfig`):
 * - strings are trimmed;
 * - `integer`: an integer number or a string of digits (optional sign), exactly representable
 *   (at most 2^53 - 1 in magnitude);
 * - `number`: a finite number or a string that parses as one;
 * - `boolean`: a boolean or one of true/false/yes/no/on/off/1/0 (any case);
 * - `text` and secrets: converted to a string;
 * - `url`: a string that parses as an absolute `http:` or `https:` URL with a host (kept as written);
 * - numbers must lie within `minimum`..`maximum` when given (the problem names the whole range);
 * - with `choices` (not for secrets) the value must equal one of them — compared as printed, and for
 *   strings ignoring case — and becomes that choice.
 * `problem` is a phrase such as `must be an integer`, to be prefixed with the key and followed by
 * the offending value by the caller.
 */
export function coerceConfigValue(field: ConfigField, value: unknown): CoercedConfigValue {
  let out: unknown = typeof value === "string" ? value.trim() : value;
  if (field.type === "integer") {
    const n = typeof out === "string" && /^[+-]?\d+$/.test(out) ? Number.parseInt(out, 10) : out;
    if (typeof n !== "number" || !Number.isInteger(n)) return { ok: false, problem: "must be an integer" };
    // Past 2^53 a number is not the integer that was written (99999999999999999999999 is stored as 1e+23).
    if (!Number.isSafeInteger(n))
      return { ok: false, problem: `must be an integer between ${Number.MIN_SAFE_INTEGER} and ${Number.MAX_SAFE_INTEGER}` };
    out = n;
  } else if (field.type === "number") {
    const n = typeof out === "string" && out !== "" ? Number(out) : out;
    if (typeof n !== "number" || !Number.isFinite(n)) return { ok: false, problem: "must be a number" };
    out = n;
  } else if (field.type === "boolean") {
    if (typeof out === "string") {
      if (!/^(true|false|yes|no|on|off|1|0)$/i.test(out)) return { ok: false, problem: "must be true or false" };
      out = isTruthyFlag(out);
    } else if (typeof out !== "boolean") return { ok: false, problem: "must be true or false" };
  } else if (field.type === "url" && !field.secret) {
    if (typeof out !== "string" || !isHttpUrl(out))
      return { ok: false, problem: "must be an http:// or https:// URL with a host, e.g. https://api.example.com/v1" };
  } else if (field.type === "text" || field.secret) {
    if (typeof out === "object" && out !== null) return { ok: false, problem: "must be a single value, not a list or mapping" };
    out = String(out);
  } else if (typeof out === "object" && out !== null) {
    return { ok: false, problem: "must be a single value, not a list or mapping" };
  }
  if (typeof out === "number") {
    const min = typeof field.minimum === "number" ? field.minimum : undefined;
    const max = typeof field.maximum === "number" ? field.maximum : undefined;
    if ((min !== undefined && out < min) || (max !== undefined && out > max)) {
      // The whole declared range, so one message says what every accepted value looks like.
      const range =
        min !== undefined && max !== undefined ? `between ${min} and ${max}` : min !== undefined ? `at least ${min}` : `at most ${max}`;
      return { ok: false, problem: `must be ${range}` };
    }
  }
  if (Array.isArray(field.choices) && field.choices.length > 0 && !field.secret) {
    const choices = field.choices as ReadonlyArray<string | number | boolean>;
    const choice =
      choices.find((c) => looselyEqual(c, out)) ??
      (typeof out === "string"
        ? choices.find((c) => typeof c === "string" && c.toLowerCase() === (out as string).toLowerCase())
        : undefined);
    if (choice === undefined) return { ok: false, problem: `must be one of ${choices.map((c) => String(c)).join(", ")}` };
    out = choice;
  }
  return { ok: true, value: out };
}

/** True for an absolute `http:` or `https:` URL naming a host. */
function isHttpUrl(text: string): boolean {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return false;
  }
  return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "";
}

/** Absent: `undefined`, `null` or a string of only whitespace. */
export function isBlank(value: unknown): boolean {
  return value === undefined || value === null || (typeof value === "string" && value.trim() === "");
}

/** True when every `when` entry of the field matches `values` (compared with `looselyEqual`). */
export function fieldApplies(field: ConfigField, values: Record<string, unknown>): boolean {
  if (!field.when || typeof field.when !== "object") return true;
  return Object.entries(field.when).every(([key, expected]) => looselyEqual(values[key], expected));
}

/** The field's default: `defaultFrom.map[values[defaultFrom.field]]` when that entry exists, else `default`. */
export function effectiveDefaultOf(field: ConfigField, values: Record<string, unknown>): unknown {
  const from = field.defaultFrom;
  if (from && typeof from === "object" && typeof from.field === "string" && from.map && typeof from.map === "object") {
    const reference = values[from.field];
    if (!isBlank(reference) && Object.prototype.hasOwnProperty.call(from.map, String(reference))) return from.map[String(reference)];
  }
  return field.default;
}
