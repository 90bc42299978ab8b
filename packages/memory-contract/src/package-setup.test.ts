import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { MemoryProvider } from "@hermes/memory-core";
import { MinimalProvider } from "./__fixtures__/minimal-provider.js";
import { createSetupFromPackage, inferCapabilities, resolvePackageDir } from "./package-setup.js";

const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), "__fixtures__");

class BareProvider extends MemoryProvider {
  readonly name = "bare";
  isAvailable(): boolean {
    return true;
  }
  initialize(): void {}
  getToolSchemas() {
    return [];
  }
  getConfigSchema() {
    return [];
  }
}

describe("inferCapabilities", () => {
  it("reads capabilities off the provider", () => {
    expect(inferCapabilities(new MinimalProvider())).toEqual({
      tools: true,
      recall: true,
      checkpoint: true,
      search: true,
      sessionSwitch: true,
      mirrorsBuiltinWrites: true,
      userScoping: false,
    });
    expect(inferCapabilities(new BareProvider())).toEqual({
      tools: false,
      recall: false,
      checkpoint: false,
      search: false,
      sessionSwitch: false,
      mirrorsBuiltinWrites: false,
      userScoping: false,
    });
  });
});

describe("createSetupFromPackage", () => {
  it("builds a setup that loads fresh instances from the package", async () => {
    const prepared = await createSetupFromPackage(path.join(fixtures, "minimal-package"));
    try {
      expect(prepared.setup.name).toBe("minimal");
      expect(prepared.setup.packageDir).toBe(path.join(fixtures, "minimal-package"));
      const a = await prepared.setup.createProvider({ hermesHome: fixtures });
      const b = await prepared.setup.createProvider({ hermesHome: fixtures });
      expect(a.name).toBe("minimal");
      expect(a).not.toBe(b);
    } finally {
      prepared.dispose();
    }
  });

  it("applies contract.skip from the manifest", async () => {
    const prepared = await createSetupFromPackage(path.join(fixtures, "bad-tool-package"));
    prepared.dispose();
    expect(prepared.setup.skip).toEqual({ "C-LIFECYCLE-3": "fixture: handle check covered by the library tests" });
  });

  it("resolves directories and refuses unknown names with a remedy", () => {
    expect(resolvePackageDir(path.join(fixtures, "minimal-package"), "/")).toBe(path.join(fixtures, "minimal-package"));
    expect(resolvePackageDir(undefined, path.join(fixtures, "minimal-package"))).toBe(path.join(fixtures, "minimal-package"));
    expect(() => resolvePackageDir("@nobody/nothing", fixtures)).toThrow(/npm install @nobody\/nothing/);
  });
});
