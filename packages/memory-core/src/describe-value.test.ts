import { describe, expect, it } from "vitest";
import { describeValue } from "./index.js";

describe("describeValue", () => {
  it("names every kind of value briefly, never dumping a nested one", () => {
    const cases: Array<[unknown, string]> = [
      [undefined, "missing"],
      [null, "null"],
      ["", "an empty string"],
      ["tea", '"tea"'],
      ['say "hi"\n', '"say \\"hi\\"\\n"'],
      [12.5, "12.5"],
      [Number.NaN, "NaN"],
      [false, "false"],
      [10n, "10"],
      [[1, 2, { secret: "x" }], "a list"],
      [{ secret: "hunter2" }, "an object"],
      [new Date(0), "an object"],
      [() => 1, "a function"],
      [Symbol("s"), "a symbol"],
    ];
    for (const [value, text] of cases) expect(describeValue(value), String(text)).toBe(text);
  });

  it("cuts text at 40 characters and marks the cut", () => {
    expect(describeValue("a".repeat(40))).toBe(JSON.stringify("a".repeat(40)));
    expect(describeValue("b".repeat(41))).toBe(JSON.stringify(`${"b".repeat(40)}…`));
    expect(describeValue("c".repeat(10_000_000)).length).toBeLessThan(50);
  });

  it("never throws, whatever the object does when read", () => {
    const hostile = new Proxy(
      {},
      {
        get: () => {
          throw new Error("read");
        },
        ownKeys: () => {
          throw new Error("keys");
        },
      },
    );
    expect(describeValue(hostile)).toBe("an object");
    const revocable = Proxy.revocable([], {});
    revocable.revoke();
    expect(() => describeValue(revocable.proxy)).not.toThrow();
  });
});
