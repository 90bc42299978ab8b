import { describe, expect, it } from "vitest";
import { HermesMemoryError, errorDocument } from "@hermes/memory-core";

describe("errorDocument", () => {
  it("carries a typed error's code and message", () => {
    const error = new HermesMemoryError({ code: "STORAGE_FAILED", message: "The disk is full; free space and retry." });
    expect(errorDocument(error)).toEqual({ error: { code: "STORAGE_FAILED", message: "The disk is full; free space and retry." } });
  });

  it("marks anything else as INTERNAL_ERROR, also a value whose properties throw", () => {
    expect(errorDocument(new TypeError("x is undefined"))).toEqual({ error: { code: "INTERNAL_ERROR", message: "x is undefined" } });
    expect(errorDocument("plain text")).toEqual({ error: { code: "INTERNAL_ERROR", message: "plain text" } });
    const hostile = new Proxy(
      {},
      {
        get: () => {
          throw new Error("trap");
        },
        getPrototypeOf: () => {
          throw new Error("trap");
        },
      },
    );
    expect(errorDocument(hostile).error.code).toBe("INTERNAL_ERROR");
  });
});
