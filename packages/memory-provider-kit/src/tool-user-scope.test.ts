import { describe, expect, it } from "vitest";
import { HermesMemoryError } from "@hermes/memory-core";
import { ToolUserScope } from "@hermes/memory-provider-kit";

function refusal(call: () => unknown): unknown {
  try {
    call();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe("ToolUserScope", () => {
  it("limits a session's tool conditions to its user and keeps the other keys", () => {
    const scope = new ToolUserScope("alice");
    expect(scope.userId).toBe("alice");
    expect(scope.within({ limit: 5, kind: "fact" })).toEqual({ limit: 5, kind: "fact", userId: "alice" });
    expect(scope.within({ userId: "alice" })).toEqual({ userId: "alice" });
    expect(scope.item("17")).toEqual({ ids: ["17"], userId: "alice" });
  });

  it("refuses a userId argument for anyone else with the same INVALID_ARGUMENT whoever it names", () => {
    const scope = new ToolUserScope("alice");
    const forBob = refusal(() => scope.within({ userId: "bob" }));
    const forNobody = refusal(() => scope.within({ userId: "never-stored-anything" }));
    expect(HermesMemoryError.hasCode(forBob, "INVALID_ARGUMENT")).toBe(true);
    expect((forBob as Error).message).toBe((forNobody as Error).message);
    expect((forBob as Error).message).not.toContain("bob");
    expect(
      HermesMemoryError.hasCode(
        refusal(() => scope.within({ userId: 42 })),
        "INVALID_ARGUMENT",
      ),
    ).toBe(true);
  });

  it("draws no boundary in a session without a user", () => {
    for (const none of [undefined, "", null, 7]) {
      const scope = new ToolUserScope(none);
      expect(scope.userId).toBeUndefined();
      expect(scope.within({ userId: "bob", limit: 3 })).toEqual({ userId: "bob", limit: 3 });
      expect(scope.item("x")).toEqual({ ids: ["x"] });
    }
  });

  it("never changes the conditions it was given", () => {
    const conditions = { kind: "turn" };
    new ToolUserScope("alice").within(conditions);
    expect(conditions).toEqual({ kind: "turn" });
  });
});
