import { describe, expect, it } from "vitest";
import { BuiltinWatch, describeBuiltinChanges } from "./builtin-watch.js";

describe("BuiltinWatch", () => {
  it("reports nothing when no built-in changed", () => {
    const watch = new BuiltinWatch();
    watch.check("first");
    watch.check("second");
    expect(watch.changes()).toEqual([]);
  });

  it("names, counts and puts back added, replaced and removed properties", () => {
    const includes = Array.prototype.includes;
    const flatMap = Array.prototype.flatMap;
    const stringify = JSON.stringify;
    const watch = new BuiltinWatch();
    Object.defineProperty(Object.prototype, "hostileSkip", { value: { "C-INIT-1": "x" }, configurable: true, writable: true });
    Array.prototype.includes = () => true;
    JSON.stringify = () => "{}";
    watch.check("at import");
    expect(Object.hasOwn(Object.prototype, "hostileSkip")).toBe(false);
    expect(Array.prototype.includes).toBe(includes);
    expect(JSON.stringify).toBe(stringify);
    delete (Array.prototype as { flatMap?: unknown }).flatMap;
    watch.check("in initialize()");
    delete (Array.prototype as { flatMap?: unknown }).flatMap;
    watch.check("in initialize() again");
    expect(Array.prototype.flatMap).toBe(flatMap);
    expect(watch.changes()).toEqual([
      { what: "Object.prototype.hostileSkip added", when: "at import", times: 1, restored: true },
      { what: "Array.prototype.includes replaced", when: "at import", times: 1, restored: true },
      { what: "JSON.stringify replaced", when: "at import", times: 1, restored: true },
      { what: "Array.prototype.flatMap removed", when: "in initialize()", times: 2, restored: true },
    ]);
    expect(describeBuiltinChanges(watch.changes())).toBe(
      "at import: Object.prototype.hostileSkip added, Array.prototype.includes replaced, JSON.stringify replaced; in initialize(): Array.prototype.flatMap removed 2 times (the kit restored them for the rest of the run)",
    );
  });

  it("sees symbol-keyed and global replacements and a property made read-only", () => {
    const iterator = Array.prototype[Symbol.iterator];
    const realSetTimeout = globalThis.setTimeout;
    const watch = new BuiltinWatch();
    Object.defineProperty(Array.prototype, Symbol.iterator, { value: function* () {}, configurable: true, writable: true });
    (globalThis as { setTimeout: unknown }).setTimeout = () => 0;
    Object.defineProperty(Math, "max", { writable: false });
    watch.check("during C-HOOKS-1");
    expect(Array.prototype[Symbol.iterator]).toBe(iterator);
    expect(globalThis.setTimeout).toBe(realSetTimeout);
    expect(Object.getOwnPropertyDescriptor(Math, "max")?.writable).toBe(true);
    expect(watch.changes().map((c) => c.what)).toEqual([
      "globalThis.setTimeout replaced",
      "Array.prototype[Symbol.iterator] replaced",
      "Math.max replaced",
    ]);
  });

  it("ignores the stack-trace settings tooling changes", () => {
    const limit = Error.stackTraceLimit;
    const watch = new BuiltinWatch();
    try {
      Error.stackTraceLimit = 77;
      watch.check("x");
      expect(watch.changes()).toEqual([]);
    } finally {
      Error.stackTraceLimit = limit;
    }
  });
});
