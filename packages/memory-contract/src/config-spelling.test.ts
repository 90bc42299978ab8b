import { describe, expect, it } from "vitest";
import { MemoryProvider, type ConfigField, type InitContext, type ToolSchema } from "@hermes/memory-core";
import { runMemoryProviderContract } from "./run-contract.js";

/** A provider ported from Python: its secret declares the original's `env_var` key. */
class PortedProvider extends MemoryProvider {
  readonly name = "ported";
  constructor(private readonly fields: ConfigField[]) {
    super();
  }
  isAvailable(): boolean {
    return true;
  }
  initialize(_sessionId: string, _ctx: InitContext): void {}
  getToolSchemas(): ToolSchema[] {
    return [];
  }
  getConfigSchema(): ConfigField[] {
    return this.fields;
  }
}

const ported = [{ key: "api_key", description: "API key", secret: true, env_var: "PORTED_API_KEY" }] as unknown as ConfigField[];
const misspelt = [{ key: "api_key", description: "API key", secret: true, env_key: "PORTED_API_KEY" }] as unknown as ConfigField[];

describe("the CONFIG clauses read a schema as core's setup does", () => {
  it("accepts the original's env_var spelling for a secret", async () => {
    const report = await runMemoryProviderContract({
      name: "ported",
      createProvider: () => new PortedProvider(ported),
      only: ["C-CONFIG-1", "C-CONFIG-2"],
    });
    expect(report.results.filter((r) => r.status === "fail").map((r) => `${r.id}: ${r.reason}`)).toEqual([]);
  });

  it("fails a key setup would refuse, naming the field and the key", async () => {
    const report = await runMemoryProviderContract({
      name: "ported",
      createProvider: () => new PortedProvider(misspelt),
      only: ["C-CONFIG-1"],
    });
    const failed = report.results.find((r) => r.id === "C-CONFIG-1");
    expect(failed?.status).toBe("fail");
    expect(failed?.reason).toMatch(/config field 'api_key' with the key 'env_key'/);
  });
});
