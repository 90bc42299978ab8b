import { afterEach, describe, expect, it } from "vitest";
import { getClause } from "./clauses.js";
import { staticSkipReason } from "./clause-runner.js";
import { normalizeOptions, normalizeSetup, resolveTimeouts, type MemoryProviderContractSetup } from "./contract-setup.js";

// Fields a hostile provider package could add to Object.prototype to loosen the kit's settings.
const POLLUTION = {
  skip: { "C-INIT-1": "forged" },
  "C-INIT-1": "forged",
  only: ["MANIFEST"],
  timeouts: { callMs: 1 },
  callMs: 1,
  userScoping: true,
  destroyProvider: () => undefined,
};

afterEach(() => {
  for (const key of Object.keys(POLLUTION)) delete (Object.prototype as Record<string, unknown>)[key];
});

function pollute(): void {
  for (const [key, value] of Object.entries(POLLUTION))
    Object.defineProperty(Object.prototype, key, { value, configurable: true, writable: true });
}

const base = (): MemoryProviderContractSetup => ({
  name: "p",
  createProvider: () => {
    throw new Error("not called");
  },
  capabilities: { tools: true, recall: false, checkpoint: false, search: false, sessionSwitch: false, mirrorsBuiltinWrites: false },
});

describe("settings read by own property", () => {
  it("fields added to Object.prototype skip, select or loosen nothing", () => {
    const setup = base();
    pollute();
    expect(staticSkipReason(getClause("C-INIT-1"), setup, {})).toBeUndefined();
    expect(staticSkipReason(getClause("C-ISOLATION-2"), setup, {})).toBe("setup declares capabilities.userScoping: false");
    const normalized = normalizeSetup(setup);
    expect(normalized.skip).toBeUndefined();
    expect(normalized.destroyProvider).toBeUndefined();
    expect(normalizeOptions({}).only).toBeUndefined();
    expect(resolveTimeouts(normalized.timeouts)).toEqual({ syncTurnMs: 10, callMs: 15_000, handleGraceMs: 2_000 });
  });

  it("keeps what the setup itself declares, including methods of a class instance", () => {
    class Setup {
      name = "p";
      capabilities = { ...base().capabilities, userScoping: true };
      skip = { "C-INIT-2": "no fs" };
      timeouts = { callMs: 500 };
      createProvider(): never {
        throw new Error(`not called for ${this.name}`);
      }
    }
    const normalized = normalizeSetup(new Setup() as unknown as MemoryProviderContractSetup);
    expect(Object.getPrototypeOf(normalized)).toBeNull();
    expect(() => normalized.createProvider({ hermesHome: "/x" })).toThrow("not called for p");
    expect({ ...normalized.skip }).toEqual({ "C-INIT-2": "no fs" });
    expect(normalized.capabilities.userScoping).toBe(true);
    expect(resolveTimeouts(normalized.timeouts).callMs).toBe(500);
    expect(staticSkipReason(getClause("C-INIT-2"), normalized, { only: ["INIT"] })).toBe("skipped by setup.skip: no fs");
  });

  it("never skips the whole-run clauses, whatever skip and only say", () => {
    const setup = { ...base(), skip: { "C-LIFECYCLE-4": "hide it", "C-LIFECYCLE-5": "hide it" } };
    expect(staticSkipReason(getClause("C-LIFECYCLE-4"), setup, { only: ["INIT"] })).toBeUndefined();
    expect(staticSkipReason(getClause("C-LIFECYCLE-5"), setup, { only: ["INIT"] })).toBeUndefined();
    expect(staticSkipReason(getClause("C-LIFECYCLE-3"), setup, { only: ["INIT"] })).toBe("not selected by options.only");
  });
});
