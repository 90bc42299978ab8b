import { describe, expect, it } from "vitest";
import { checkWholeStoreErasure, parseForgetScope } from "./forget-scope.js";
import { refusal } from "./test-support/refusal.js";

describe("parseForgetScope", () => {
  it("parses conditions and ids, and confirmAll apart from them", () => {
    expect(parseForgetScope({ ids: ["a"], userId: "u" })).toEqual({ filter: { ids: ["a"], userId: "u" }, confirmAll: false });
    expect(parseForgetScope({ kind: "turn", confirmAll: true })).toEqual({ filter: { kinds: ["turn"] }, confirmAll: true });
    expect(parseForgetScope({ confirmAll: true })).toEqual({ filter: {}, confirmAll: true });
  });

  it("refuses an empty scope without confirmAll, saying how to erase everything, and a confirmAll that is not a boolean", () => {
    for (const scope of [{}, undefined, null, { confirmAll: false }, { userId: undefined }]) {
      expect(refusal(() => parseForgetScope(scope))).toMatch(/needs at least one condition.*pass \{ confirmAll: true \}/);
    }
    expect(refusal(() => parseForgetScope({ userId: "u", confirmAll: "yes" }, "erasure scope"))).toMatch(
      /^erasure scope: confirmAll must be true or false/,
    );
    expect(refusal(() => parseForgetScope({ metadata: { team: { $nin: [] } }, confirmAll: true }))).toContain(
      "$nin must be a non-empty list",
    );
  });
});

describe("checkWholeStoreErasure", () => {
  const scope = parseForgetScope({ createdAt: { $gte: 0 } });
  it("refuses an unconfirmed scope that would erase every item, naming the count and the confirmation", () => {
    expect(refusal(() => checkWholeStoreErasure(scope, 7, 7))).toBe(
      "forgetWhere: the scope matches all 7 items of the store; nothing was erased. To erase every item, pass confirmAll: true with the scope; to keep some, narrow it (or name the items in ids).",
    );
    expect(refusal(() => checkWholeStoreErasure(scope, 1, 1))).toContain("all 1 item of the store");
  });

  it("lets through a scope that leaves an item, erases nothing, names ids, or is confirmed", () => {
    expect(() => checkWholeStoreErasure(scope, 6, 7)).not.toThrow();
    expect(() => checkWholeStoreErasure(scope, 0, 0)).not.toThrow();
    expect(() => checkWholeStoreErasure(parseForgetScope({ ids: ["a", "b"] }), 2, 2)).not.toThrow();
    expect(() => checkWholeStoreErasure(parseForgetScope({ createdAt: { $gte: 0 }, confirmAll: true }), 7, 7)).not.toThrow();
  });
});
