/**
 * The built-in functions the kit's verdict and output depend on, captured when this module is
 * evaluated. The CLI evaluates it before it imports anything of a provider package, so a package
 * that replaces `JSON.stringify`, `Object.keys`, `process.exit`, a prototype method or the
 * stdout/stderr writers cannot change what the kit decides or prints. Everything here is called
 * through the captured `Reflect.apply`, never through a prototype the package could reach.
 */

export const reflectApply = Reflect.apply;
export const ownKeys = Reflect.ownKeys;
export const getOwnPropertyDescriptor = Reflect.getOwnPropertyDescriptor;
export const defineProperty = Reflect.defineProperty;
export const deleteProperty = Reflect.deleteProperty;
export const isExtensible = Reflect.isExtensible;
export const getPrototypeOf = Reflect.getPrototypeOf;
export const objectIs = Object.is;
export const jsonStringify = JSON.stringify;
export const isArray = Array.isArray;
const toStringValue = String;
const createObject = Object.create;
const setPrototypeOf = Reflect.setPrototypeOf;
const hasOwnProperty = Object.prototype.hasOwnProperty;
const stringSlice = String.prototype.slice;
const NativeSet = Set;
const setAdd = Set.prototype.add;
const setHas = Set.prototype.has;
const NativeMap = Map;
const mapGet = Map.prototype.get;
const mapSet = Map.prototype.set;

const boundExit = process.exit.bind(process);
const boundStdoutWrite = process.stdout.write.bind(process.stdout);
const boundStderrWrite = process.stderr.write.bind(process.stderr);
const boundKill = process.kill.bind(process);
const nativeSetTimeout = setTimeout;
const nativeClearTimeout = clearTimeout;

/** True when `value` has `key` as its own property (never consults a prototype). */
export function hasOwn(value: unknown, key: PropertyKey): boolean {
  if (value === null || (typeof value !== "object" && typeof value !== "function")) return false;
  return reflectApply(hasOwnProperty, value, [key]) as boolean;
}

/**
 * `value[key]` when `key` is an own property of `value`, else undefined. A field a provider
 * package added to `Object.prototype` is therefore never read as a setting or an option.
 */
export function ownValue(value: unknown, key: PropertyKey): unknown {
  return hasOwn(value, key) ? (value as Record<PropertyKey, unknown>)[key] : undefined;
}

const objectPrototype = Object.prototype;

/**
 * `value[key]` looked up on `value` and its prototype chain up to, but never on,
 * `Object.prototype`: a class instance's methods count, a field a provider package added to
 * `Object.prototype` does not. Getters are called with `value` as `this`.
 */
export function settingOf(value: unknown, key: PropertyKey): unknown {
  if (value === null || (typeof value !== "object" && typeof value !== "function")) return undefined;
  let current: object | null = value as object;
  while (current !== null && current !== objectPrototype) {
    const d = getOwnPropertyDescriptor(current, key);
    if (d !== undefined) {
      if (hasOwn(d, "get")) return d.get === undefined ? undefined : reflectApply(d.get, value, []);
      return d.value;
    }
    current = getPrototypeOf(current);
  }
  return undefined;
}

/** A new object without a prototype, so lookups of absent keys find nothing. */
export function nullObject<T extends object>(): T {
  return createObject(null) as T;
}

/** `String(value)` as it was at start-up. */
export function toText(value: unknown): string {
  return toStringValue(value);
}

/** `text.slice(start, end)` as it was at start-up. */
export function sliceText(text: string, start: number, end?: number): string {
  return reflectApply(stringSlice, text, end === undefined ? [start] : [start, end]) as string;
}

/** A set of strings and symbols whose methods a provider package cannot replace. */
export class KeySet {
  private readonly set = new NativeSet<PropertyKey>();

  add(key: PropertyKey): void {
    reflectApply(setAdd, this.set, [key]);
  }

  has(key: PropertyKey): boolean {
    return reflectApply(setHas, this.set, [key]) as boolean;
  }
}

/** A map whose methods a provider package cannot replace. */
export class KeyMap<V> {
  private readonly map = new NativeMap<PropertyKey, V>();

  get(key: PropertyKey): V | undefined {
    return reflectApply(mapGet, this.map, [key]) as V | undefined;
  }

  set(key: PropertyKey, value: V): void {
    reflectApply(mapSet, this.map, [key, value]);
  }
}

/**
 * `value` copied into arrays and objects without a prototype (own enumerable string keys only),
 * so serialising it never calls a `toJSON` a package put on `Object.prototype` or
 * `Array.prototype`, even one it made impossible to remove.
 */
function withoutPrototypes(value: unknown): unknown {
  if (value === null || typeof value !== "object") return value;
  if (isArray(value)) {
    const out: unknown[] = [];
    setPrototypeOf(out, null);
    for (let i = 0; i < value.length; i++) out[i] = withoutPrototypes(value[i]);
    return out;
  }
  const out = nullObject<Record<string, unknown>>();
  const keys = ownKeys(value);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i];
    if (typeof key !== "string") continue;
    const d = getOwnPropertyDescriptor(value, key);
    if (d !== undefined && d.enumerable === true && hasOwn(d, "value")) out[key] = withoutPrototypes(d.value);
  }
  return out;
}

/** `JSON.stringify(value, null, indent)` with the serialiser captured at start-up. */
export function toJson(value: unknown, indent?: number): string {
  return jsonStringify(withoutPrototypes(value), null, indent);
}

/** The real `process.exit`. */
export function exitProcess(code: number): never {
  return boundExit(code);
}

/** The real `process.stdout.write` (the kit's report goes here, a provider's output never does). */
export function writeStdout(text: string): boolean {
  return boundStdoutWrite(text);
}

/** The real `process.stderr.write`. */
export function writeStderr(text: string): boolean {
  return boundStderrWrite(text);
}

/** The real `process.kill`. */
export function killProcess(pid: number, signal: NodeJS.Signals | number): boolean {
  return boundKill(pid, signal);
}

/** The real `setTimeout`, as a promise. */
export function delay(ms: number): Promise<void> {
  return new Promise<void>((resolve) => {
    nativeSetTimeout(resolve, ms);
  });
}

/** The real `setTimeout` / `clearTimeout`. */
export const timers = { setTimeout: nativeSetTimeout, clearTimeout: nativeClearTimeout };
