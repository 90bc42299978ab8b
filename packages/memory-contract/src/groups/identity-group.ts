import { isValidProviderName, runWithProfile, describeError } from "@hermes/memory-core";
import { fail, pass, type ContractContext } from "../clause-runner.js";
import { withNetworkTrap, type NetworkAttempt } from "../network-trap.js";

function isThenable(value: unknown): boolean {
  return typeof value === "object" && value !== null && typeof (value as { then?: unknown }).then === "function";
}

/**
 * Longest `isAvailable()` call that passes C-IDENTITY-2. Checking config, environment variables and
 * installed dependencies takes well under a millisecond to a few; a second leaves room for a slow
 * machine while catching blocking I/O or computation.
 */
export const IS_AVAILABLE_MAX_MS = 1_000;

/** IDENTITY: name, synchronous isAvailable, no network in the start-up methods. */
export async function runIdentityGroup(ctx: ContractContext): Promise<void> {
  const probe = await ctx.harness.create("identity");
  const provider = probe.provider;
  try {
    await ctx.clause("C-IDENTITY-1", async () => {
      const name: unknown = provider.name;
      if (!isValidProviderName(name)) {
        return fail(`provider.name ${JSON.stringify(name)} does not match ^[a-z0-9][a-z0-9._-]{0,63}$ or is the reserved "builtin"`);
      }
      if (name !== ctx.setup.name)
        return fail(`provider.name is ${JSON.stringify(name)} but setup.name is ${JSON.stringify(ctx.setup.name)}`);
      return pass();
    });

    await ctx.clause("C-IDENTITY-2", async () => {
      const started = performance.now();
      const { value, error } = withNetworkTrap(() => runWithProfile(probe.hermesHome, () => provider.isAvailable()));
      const tookMs = performance.now() - started;
      if (error !== undefined) return fail(`isAvailable() threw: ${describeError(error)}`);
      if (isThenable(value)) return fail("isAvailable() returned a Promise; it must be synchronous");
      if (typeof value !== "boolean") return fail(`isAvailable() returned ${typeof value}, expected a boolean`);
      // The host calls it at every start, synchronously: no timeout can bound it.
      if (tookMs > IS_AVAILABLE_MAX_MS) {
        return fail(
          `isAvailable() took ${Math.round(tookMs)} ms (more than ${IS_AVAILABLE_MAX_MS} ms); it blocks every start of the host, and no timeout can bound synchronous work`,
        );
      }
      return pass(`isAvailable() = ${value}`);
    });

    await ctx.clause("C-IDENTITY-3", async () => {
      const attempts: Array<NetworkAttempt & { method: string }> = [];
      const methods: Array<[string, () => unknown]> = [
        ["isAvailable()", () => provider.isAvailable()],
        ["getToolSchemas()", () => provider.getToolSchemas()],
        ["getConfigSchema()", () => provider.getConfigSchema()],
      ];
      for (const [method, call] of methods) {
        const trapped = withNetworkTrap(() => runWithProfile(probe.hermesHome, call));
        for (const a of trapped.attempts) attempts.push({ ...a, method });
      }
      if (attempts.length > 0) {
        return fail(`network access: ${attempts.map((a) => `${a.method} called ${a.api}(${a.target})`).join("; ")}`);
      }
      return pass();
    });
  } finally {
    await probe.discard().catch(() => undefined);
  }
}
