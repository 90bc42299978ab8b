import { describe, expect, it } from "vitest";
import { maskSecret } from "./mask-secret.js";

describe("maskSecret", () => {
  it("shows only the last 4 characters", () => {
    expect(maskSecret("sk-1234567890abcd")).toBe("…abcd");
  });
  it("shows nothing of a short secret and nothing for an empty one", () => {
    expect(maskSecret("abcd")).toBe("****");
    expect(maskSecret("")).toBe("");
    expect(maskSecret(undefined)).toBe("");
  });
});
