import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { legacyNamespace, userNamespacePart, userOfNamespacePart } from "./namespace-encoding.js";
import { relocatedNamespace } from "./user-namespaces.js";

describe("user names inside namespaces", () => {
  it("read back to the id they were made from, lone surrogates too; a shortened one reads back to nothing", () => {
    const ids = [
      "a b",
      "a_b",
      "~",
      "a~20b",
      "zoë",
      "\u0000",
      "\uD800",
      "x\uDFFFy",
      "\uD83D\uDE00",
      "日本語のユーザー",
      ...Array.from({ length: 50 }, () => randomUUID().replace(/-/g, "+ /")),
    ];
    for (const id of ids) expect(userOfNamespacePart(userNamespacePart(id)), JSON.stringify(id)).toBe(id);
    expect(userOfNamespacePart(userNamespacePart("é".repeat(100)))).toBeNull();
  });

  it("never cut an escape in two when shortened", () => {
    for (let pad = 0; pad < 4; pad++) {
      const part = userNamespacePart(`${"x".repeat(pad)}${"é".repeat(60)}`);
      expect(part.length).toBeLessThanOrEqual(128);
      expect(part.split("~~")[0]).toMatch(/^x*(~[0-9A-F]{2})*$/);
    }
  });
});

describe("relocatedNamespace", () => {
  it("moves an item of an escaped user from the namespace it shared, keeping the profile part; a kept or current one stays", () => {
    expect(relocatedNamespace("{profile}:{user}", legacyNamespace("{profile}:{user}", "team", "a b"), "a b")).toBe("team:a~20b");
    expect(relocatedNamespace("{profile}:{user}", "x:y:a_b", "a b")).toBe("x:y:a~20b");
    expect(relocatedNamespace("{user}@{profile}/{profile}", "a_b@p/p", "a b")).toBe("a~20b@p/p");
    expect(relocatedNamespace("{profile}:{user}", "team:a_b", "a_b")).toBeNull();
    expect(relocatedNamespace("{profile}:{user}", "team:a~20b", "a b")).toBeNull();
    expect(relocatedNamespace("{profile}:{user}", "team:bob", "a b")).toBeNull();
  });
});
