/**
 * Egress scrub: every value the manager hands to a provider (turns, transcripts, recall queries,
 * mirrored memory writes, tool arguments) passes through `scrubSecrets`, so credentials that the
 * user pasted or a tool printed never land in a provider's store. The rules live in
 * `scrub-rules.ts` (secretlint's recommended set plus our own generic rules).
 */
import { HermesMemoryError } from "./errors.js";
import { learnSecrets } from "./scrub-learned.js";
import { applyRules } from "./scrub-rules.js";

export { REDACTED } from "./scrub-rules.js";

/**
 * Deepest nesting of arrays/objects `scrubSecrets` accepts. Traversal is iterative, so the limit
 * is not about the call stack: a value nested deeper than this is not conversation data, and
 * whatever consumes the scrubbed copy (JSON.stringify, structured clone, a provider) would recurse
 * through it. Deeper values are rejected with `INVALID_ARGUMENT`.
 */
export const MAX_SCRUB_DEPTH = 1000;

/**
 * Redact API keys, tokens, private keys, credential URLs and secret assignments in one string,
 * replacing each secret with `[redacted]`. A value identified as a secret anywhere in the string
 * is redacted at every occurrence, before or after that place ("learning"). Pure and synchronous;
 * never throws. Use `scrubSecrets` for structured values (it learns across the whole value).
 */
export function redactSecrets(text: string): string {
  if (typeof text !== "string" || text.length === 0) return text;
  // Hot path (every syncAll): one scan for the rules' literal cues; ordinary prose has none of
  // most of them, and only the rules whose cues occur are run. Learning costs nothing until a
  // rule has replaced something.
  const found: string[] = [];
  const out = applyRules(text, found);
  return found.length === 0 ? out : learnSecrets(found)(out);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

function isContainer(value: unknown): value is unknown[] | Record<string, unknown> {
  return Array.isArray(value) || isPlainObject(value);
}

function isScrubbable(text: string): boolean {
  return text.length > 0 && !text.startsWith("data:");
}

/** Own enumerable string keys; `__proto__` from JSON.parse is an ordinary own key here. */
function keysOf(value: unknown[] | Record<string, unknown>): string[] {
  return Object.keys(value);
}

/**
 * Read an own property. `keysOf` lists own keys only, and an own `__proto__` data property (as
 * JSON.parse creates) shadows the inherited accessor, so indexing returns the own value.
 */
function ownValue(value: unknown[] | Record<string, unknown>, key: string): unknown {
  return (value as Record<string, unknown>)[key];
}

function tooDeep(): HermesMemoryError {
  return new HermesMemoryError({
    code: "INVALID_ARGUMENT",
    message: `Value is nested more than ${MAX_SCRUB_DEPTH} levels deep (arrays/objects); refusing to scrub it. Flatten the value or send it as text.`,
  });
}

/**
 * Visit every scrubbable string in plain objects/arrays, iteratively (an explicit stack, so depth
 * never touches the call stack) and cycle-safe. Throws INVALID_ARGUMENT past MAX_SCRUB_DEPTH.
 */
function collectStrings(root: unknown, out: Set<string>): void {
  if (typeof root === "string") {
    if (isScrubbable(root)) out.add(root);
    return;
  }
  if (!isContainer(root)) return;
  const seen = new WeakSet<object>([root]);
  const stack: Array<[unknown[] | Record<string, unknown>, number]> = [[root, 1]];
  while (stack.length > 0) {
    const [container, depth] = stack.pop() as [unknown[] | Record<string, unknown>, number];
    if (depth > MAX_SCRUB_DEPTH) throw tooDeep();
    for (const key of keysOf(container)) {
      const item = ownValue(container, key);
      if (typeof item === "string") {
        if (isScrubbable(item)) out.add(item);
      } else if (isContainer(item) && !seen.has(item)) {
        seen.add(item);
        stack.push([item, depth + 1]);
      }
    }
  }
}

/**
 * A shallow copy of a plain object or array that treats every key as data: properties are defined,
 * never assigned, so an own `__proto__` key stays an own property and the copy keeps the original's
 * prototype (no prototype change, no pollution).
 */
function shallowCopy<C extends unknown[] | Record<string, unknown>>(value: C): C {
  if (Array.isArray(value)) return value.slice() as C;
  return Object.create(Object.getPrototypeOf(value) as object | null, Object.getOwnPropertyDescriptors(value)) as C;
}

function setOwn(target: unknown[] | Record<string, unknown>, key: string, next: unknown): void {
  Object.defineProperty(target, key, { value: next, writable: true, enumerable: true, configurable: true });
}

interface Frame {
  src: unknown[] | Record<string, unknown>;
  keys: string[];
  next: number;
  copy: (unknown[] | Record<string, unknown>) | undefined;
  /** Key of this container in its parent frame. */
  keyInParent: string;
}

/**
 * Rebuild `root` with `map` applied to strings; untouched containers are returned as is, changed
 * ones are shallow copies. Iterative post-order walk; a container met again while it is still
 * being rebuilt (a cycle) is referenced as the original, as a recursive walk would.
 */
function rebuild(root: unknown, map: (s: string) => string): unknown {
  if (typeof root === "string") return isScrubbable(root) ? map(root) : root;
  if (!isContainer(root)) return root;
  const done = new Map<object, unknown>();
  const active = new Set<object>([root]);
  const stack: Frame[] = [{ src: root, keys: keysOf(root), next: 0, copy: undefined, keyInParent: "" }];
  const assign = (frame: Frame, key: string, before: unknown, after: unknown): void => {
    if (after === before) return;
    frame.copy ??= shallowCopy(frame.src);
    setOwn(frame.copy, key, after);
  };
  let result: unknown = root;
  while (stack.length > 0) {
    const frame = stack[stack.length - 1] as Frame;
    if (frame.next < frame.keys.length) {
      const key = frame.keys[frame.next++] as string;
      const item = ownValue(frame.src, key);
      if (typeof item === "string") {
        if (isScrubbable(item)) assign(frame, key, item, map(item));
      } else if (isContainer(item)) {
        if (done.has(item)) assign(frame, key, item, done.get(item));
        else if (!active.has(item)) {
          if (stack.length >= MAX_SCRUB_DEPTH) throw tooDeep();
          active.add(item);
          stack.push({ src: item, keys: keysOf(item), next: 0, copy: undefined, keyInParent: key });
        }
      }
      continue;
    }
    stack.pop();
    active.delete(frame.src);
    const out = frame.copy ?? frame.src;
    done.set(frame.src, out);
    const parent = stack[stack.length - 1];
    if (parent) assign(parent, frame.keyInParent, frame.src, out);
    else result = out;
  }
  return result;
}

/**
 * Return `value` with secrets redacted in every string inside plain objects and arrays. Called by
 * the manager on every hand-off to a provider. Never mutates its input: unchanged values are
 * returned as the SAME object, changed containers are shallow copies; arrays stay arrays of the
 * same length; keys are plain data (an own `__proto__` key from JSON.parse stays an own key and
 * never changes a prototype); class instances, Maps, Buffers etc. pass through untouched; strings
 * starting with `data:` (inline media) and empty strings pass through. Traversal is iterative and
 * cycle-safe; values nested deeper than MAX_SCRUB_DEPTH throw a HermesMemoryError with code
 * INVALID_ARGUMENT (never a RangeError).
 *
 * Every value a rule identified as a secret in some string (and every long token inside it,
 * `[A-Za-z0-9_\-./+]{16,}`) is "learned" and masked at every occurrence in every string of the
 * same value, before or after the place it was found, so a key detected in a tool result is also
 * hidden where the model repeated it bare. Values under 4 characters are not learned; values
 * under 12 are masked only where they stand alone, never inside a longer word.
 */
export function scrubSecrets<T>(value: T): T {
  if (typeof value === "string") return scrubStrings([value], value) as T;
  if (!isContainer(value)) return value;
  const strings = new Set<string>();
  collectStrings(value, strings);
  return scrubStrings([...strings], value) as T;
}

function scrubStrings<T>(strings: string[], value: T): unknown {
  const redacted = new Map<string, string>();
  const found: string[] = [];
  let changed = false;
  for (const original of strings) {
    if (!isScrubbable(original)) continue;
    const out = applyRules(original, found);
    redacted.set(original, out);
    if (out !== original) changed = true;
  }
  const mask = learnSecrets(found);
  const finish = (s: string): string => mask(redacted.get(s) ?? s);
  if (typeof value === "string") return isScrubbable(value) ? finish(value) : value;
  if (!changed) return value;
  return rebuild(value, finish);
}
