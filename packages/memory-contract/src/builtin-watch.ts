import {
  KeyMap,
  KeySet,
  defineProperty,
  deleteProperty,
  getOwnPropertyDescriptor,
  nullObject,
  getPrototypeOf,
  hasOwn,
  isExtensible,
  objectIs,
  ownKeys,
  sliceText,
  toText,
} from "./intrinsics.js";

/**
 * Global bindings of the language and of Node the kit checks: each must keep the value it had when
 * the kit started. Other globals (`fetch`, web APIs, a library's own global) are not checked.
 */
const CHECKED_GLOBALS = [
  "Object",
  "Function",
  "Array",
  "String",
  "Number",
  "Boolean",
  "Symbol",
  "BigInt",
  "Date",
  "RegExp",
  "Error",
  "TypeError",
  "RangeError",
  "SyntaxError",
  "ReferenceError",
  "EvalError",
  "URIError",
  "AggregateError",
  "Promise",
  "Map",
  "Set",
  "WeakMap",
  "WeakSet",
  "WeakRef",
  "FinalizationRegistry",
  "Proxy",
  "Reflect",
  "JSON",
  "Math",
  "ArrayBuffer",
  "SharedArrayBuffer",
  "DataView",
  "Int8Array",
  "Uint8Array",
  "Uint8ClampedArray",
  "Int16Array",
  "Uint16Array",
  "Int32Array",
  "Uint32Array",
  "Float32Array",
  "Float64Array",
  "BigInt64Array",
  "BigUint64Array",
  "Atomics",
  "Intl",
  "parseInt",
  "parseFloat",
  "isNaN",
  "isFinite",
  "encodeURI",
  "encodeURIComponent",
  "decodeURI",
  "decodeURIComponent",
  "NaN",
  "Infinity",
  "undefined",
  "console",
  "queueMicrotask",
  "structuredClone",
  "setTimeout",
  "clearTimeout",
  "setInterval",
  "clearInterval",
  "setImmediate",
  "clearImmediate",
] as const;

/** Constructors whose own properties and whose prototype's own properties are checked. */
const CHECKED_CONSTRUCTORS = [
  "Object",
  "Function",
  "Array",
  "String",
  "Number",
  "Boolean",
  "Symbol",
  "BigInt",
  "Date",
  "RegExp",
  "Error",
  "TypeError",
  "RangeError",
  "SyntaxError",
  "ReferenceError",
  "Promise",
  "Map",
  "Set",
  "WeakMap",
  "WeakSet",
  "ArrayBuffer",
  "DataView",
  "Uint8Array",
  "Float32Array",
] as const;

/**
 * Properties V8 and tooling legitimately change while a process runs (stack trace depth and
 * formatting, set by source-map support and test runners); a change there is not reported.
 */
const IGNORED = new KeySet();
for (const name of ["Error.stackTraceLimit", "Error.prepareStackTrace"]) IGNORED.add(name);

const DESCRIPTOR_FIELDS = ["value", "get", "set", "writable", "enumerable", "configurable"] as const;

interface Watched {
  label: string;
  target: object;
  extensible: boolean;
  keys: PropertyKey[];
  /** `Owner.key` per key, and whether a change there is ignored. */
  labels: string[];
  ignored: boolean[];
  descriptors: PropertyDescriptor[];
  keySet: KeySet;
  /** Own keys of the target present in the baseline (all of them, except on globalThis). */
  ownKeyCount: number;
}

function labelsOf(label: string, keys: readonly PropertyKey[]): { labels: string[]; ignored: boolean[] } {
  const labels: string[] = [];
  const ignored: boolean[] = [];
  for (let i = 0; i < keys.length; i++) {
    labels[i] = keyLabel(label, keys[i] as PropertyKey);
    ignored[i] = IGNORED.has(labels[i] as string);
  }
  return { labels, ignored };
}

/** A descriptor copied into an object without a prototype, so inherited fields never count. */
function descriptorOf(target: object, key: PropertyKey): PropertyDescriptor | undefined {
  const d = getOwnPropertyDescriptor(target, key);
  if (d === undefined) return undefined;
  const copy = nullObject<PropertyDescriptor>();
  for (let i = 0; i < DESCRIPTOR_FIELDS.length; i++) {
    const field = DESCRIPTOR_FIELDS[i] as string;
    if (hasOwn(d, field)) (copy as Record<string, unknown>)[field] = (d as Record<string, unknown>)[field];
  }
  return copy;
}

function keyLabel(owner: string, key: PropertyKey): string {
  if (typeof key === "symbol") {
    const text = toText(key); // "Symbol(Symbol.iterator)"
    return `${owner}[${sliceText(text, 7, text.length - 1)}]`;
  }
  return `${owner}.${key}`;
}

function watched(label: string, target: unknown): Watched | undefined {
  if (target === null || (typeof target !== "object" && typeof target !== "function")) return undefined;
  const keys = ownKeys(target);
  const descriptors: PropertyDescriptor[] = [];
  const keySet = new KeySet();
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as PropertyKey;
    descriptors[i] = descriptorOf(target, key) as PropertyDescriptor;
    keySet.add(key);
  }
  return { label, target, extensible: isExtensible(target), keys, ...labelsOf(label, keys), descriptors, keySet, ownKeyCount: keys.length };
}

function takeBaseline(): Watched[] {
  const list: Watched[] = [];
  const add = (label: string, target: unknown): void => {
    const w = watched(label, target);
    if (w) list[list.length] = w;
  };
  // Object.prototype first: once it is restored, no inherited field can affect the rest of a check.
  add("Object.prototype", Object.prototype);
  const g = globalThis as unknown as Record<string, unknown>;
  const globals = watched("globalThis", g);
  if (globals) {
    // Only the checked names of globalThis are compared.
    const keys: PropertyKey[] = [];
    const descriptors: PropertyDescriptor[] = [];
    const keySet = new KeySet();
    for (let i = 0; i < CHECKED_GLOBALS.length; i++) {
      const name = CHECKED_GLOBALS[i] as string;
      keySet.add(name);
      keys[keys.length] = name;
      descriptors[descriptors.length] = descriptorOf(g, name) as PropertyDescriptor;
    }
    list[list.length] = {
      label: "globalThis",
      target: g,
      extensible: globals.extensible,
      keys,
      ...labelsOf("globalThis", keys),
      descriptors,
      keySet,
      ownKeyCount: -1,
    };
  }
  for (let i = 0; i < CHECKED_CONSTRUCTORS.length; i++) {
    const name = CHECKED_CONSTRUCTORS[i] as string;
    const ctor = g[name] as { prototype?: unknown } | undefined;
    add(name, ctor);
    if (ctor && hasOwn(ctor, "prototype") && ctor.prototype !== Object.prototype) add(`${name}.prototype`, ctor.prototype);
  }
  for (const name of ["JSON", "Math", "Reflect", "Atomics", "console"]) add(name, g[name]);
  const typedArray = getPrototypeOf(Uint8Array);
  add("TypedArray", typedArray);
  add("TypedArray.prototype", (typedArray as { prototype?: unknown } | null)?.prototype);
  const arrayIterator = getPrototypeOf([][Symbol.iterator]());
  add("ArrayIterator.prototype", arrayIterator);
  add("Iterator.prototype", arrayIterator ? getPrototypeOf(arrayIterator) : undefined);
  add("StringIterator.prototype", getPrototypeOf(""[Symbol.iterator]()));
  add("MapIterator.prototype", getPrototypeOf(new Map()[Symbol.iterator]()));
  add("SetIterator.prototype", getPrototypeOf(new Set()[Symbol.iterator]()));
  add(
    "AsyncFunction.prototype",
    getPrototypeOf(async () => undefined),
  );
  return list;
}

// Taken when this module is evaluated: the CLI imports it before anything of the package under test.
let BASELINE = takeBaseline();

/**
 * Compare later checks with the built-ins as they are now rather than as they were when the kit
 * loaded. The vitest adapter does this when its run starts: there the test file imported the
 * provider (and may have installed its own spies or fake globals) on its own terms, and the
 * contract judges what the run itself does to them.
 */
export function rebaselineBuiltins(): void {
  BASELINE = takeBaseline();
}

function sameDescriptor(a: PropertyDescriptor, b: PropertyDescriptor): boolean {
  return (
    objectIs(a.value, b.value) &&
    objectIs(a.get, b.get) &&
    objectIs(a.set, b.set) &&
    a.writable === b.writable &&
    a.enumerable === b.enumerable &&
    a.configurable === b.configurable
  );
}

/**
 * Watches the standard prototypes and globals during one contract run: `check()` compares them
 * with how they were when the kit started, records every property added, replaced or removed,
 * and puts back what can be put back, so the rest of the run (and the report) work with the real
 * built-ins again. What cannot be restored (a frozen prototype, a non-configurable property the
 * package defined) is recorded as such.
 */
export class BuiltinWatch {
  private readonly byWhat = new KeyMap<BuiltinChange>();
  private readonly found: BuiltinChange[] = [];

  /** Compare, restore and record; `when` says what ran before (e.g. `import`, `C-INIT-1`). */
  check(when: string): void {
    for (let w = 0; w < BASELINE.length; w++) {
      const entry = BASELINE[w] as Watched;
      const { target, label } = entry;
      for (let i = 0; i < entry.keys.length; i++) {
        if (entry.ignored[i]) continue;
        const key = entry.keys[i] as PropertyKey;
        const before = entry.descriptors[i];
        // Fast path: the raw descriptor's fields equal the stored ones (its inherited fields can
        // only make this differ, never match wrongly); otherwise compare an exact copy.
        const raw = getOwnPropertyDescriptor(target, key);
        if (before !== undefined && raw !== undefined && sameDescriptor(before, raw)) continue;
        const name = entry.labels[i] as string;
        const now = raw === undefined ? undefined : descriptorOf(target, key);
        if (before === undefined) {
          if (now !== undefined) this.record(`${name} added`, when, deleteProperty(target, key));
          continue;
        }
        if (now === undefined) this.record(`${name} removed`, when, defineProperty(target, key, before));
        else if (!sameDescriptor(before, now)) this.record(`${name} replaced`, when, defineProperty(target, key, before));
      }
      if (entry.extensible && !isExtensible(target)) this.record(`${label} made non-extensible`, when, false);
      if (entry.ownKeyCount < 0) continue; // globalThis: only the checked names
      const keys = ownKeys(target);
      // When every baseline key is present (restored above), the same count means none was added.
      if (keys.length === entry.ownKeyCount && this.unrestored === 0) continue;
      for (let i = 0; i < keys.length; i++) {
        const key = keys[i] as PropertyKey;
        if (entry.keySet.has(key)) continue;
        const name = keyLabel(label, key);
        if (IGNORED.has(name)) continue;
        this.record(`${name} added`, when, deleteProperty(target, key));
      }
    }
  }

  /** Every change seen so far, in the order first seen. */
  changes(): readonly BuiltinChange[] {
    return this.found;
  }

  /** Changes that could not be put back so far (then added keys are always searched for). */
  private unrestored = 0;

  private record(what: string, when: string, restored: boolean): void {
    if (!restored) this.unrestored += 1;
    const known = this.byWhat.get(what);
    if (known) {
      known.times += 1;
      known.restored = known.restored && restored;
      return;
    }
    const change: BuiltinChange = { what, when, times: 1, restored };
    this.byWhat.set(what, change);
    this.found[this.found.length] = change;
  }
}

/** One property of a built-in that was added, replaced or removed. */
export interface BuiltinChange {
  /** e.g. `Object.prototype.skip added`. */
  what: string;
  /** When it was first seen, e.g. `in initialize() during C-INIT-1`. */
  when: string;
  /** How many times it was seen (and put back). */
  times: number;
  /** False when it could not be put back every time. */
  restored: boolean;
}

/**
 * The changes as one sentence, grouped by when they were first seen, naming at most `maxNamed`
 * properties, e.g. `before the run: Object.prototype.skip added, JSON.stringify replaced (restored)`.
 */
export function describeBuiltinChanges(changes: readonly BuiltinChange[], maxNamed = 25): string {
  const groups = new Map<string, string[]>();
  let named = 0;
  for (const c of changes) {
    if (named >= maxNamed) break;
    named += 1;
    const again = c.times > 1 ? ` ${c.times} times` : "";
    const list = groups.get(c.when) ?? [];
    list.push(`${c.what}${again}${c.restored ? "" : " (could not be restored)"}`);
    groups.set(c.when, list);
  }
  const parts = [...groups].map(([when, list]) => `${when}: ${list.join(", ")}`);
  const more = changes.length > named ? `; and ${changes.length - named} more` : "";
  const restored = changes.every((c) => c.restored) ? " (the kit restored them for the rest of the run)" : "";
  return `${parts.join("; ")}${more}${restored}`;
}

/**
 * Check once more against the start-up snapshot, putting back what can be, and return the
 * properties that still differ (a package froze a prototype or defined a non-configurable
 * property). When this is not empty, nothing the kit computed after the package ran is reliable.
 */
export function unrestorableBuiltins(): string[] {
  const watch = new BuiltinWatch();
  watch.check("after the run");
  const changes = watch.changes();
  const out: string[] = [];
  for (let i = 0; i < changes.length; i++) {
    const change = changes[i] as BuiltinChange;
    if (!change.restored) out[out.length] = change.what;
  }
  return out;
}
