import fs from "node:fs";
import path from "node:path";
import { normalizeConfigField, runWithProfile, type ConfigField } from "@hermes/memory-core";
import { fail, pass, type ContractContext } from "../clause-runner.js";
import {
  choiceDefaultProblems,
  configFieldShapeProblems,
  ENV_VAR_PATTERN,
  sampleConfigValues,
  secretEnvVarProblems,
} from "../config-schema-checks.js";
import { distinctiveToken } from "../provider-harness.js";
import { diffSnapshots } from "../sandbox.js";
import { describeSandboxPath, watchWritesOf, writesOutside } from "../write-detection.js";

/** CONFIG: field shapes, secrets with envVar, choices, saveConfig confined to hermesHome. */
export async function runConfigGroup(ctx: ContractContext): Promise<void> {
  let fields: Record<string, unknown>[] | undefined;
  const readFields = async (): Promise<Record<string, unknown>[]> => {
    if (fields) return fields;
    const probe = await ctx.harness.create("config-schema");
    try {
      const value: unknown = runWithProfile(probe.hermesHome, () => probe.provider.getConfigSchema());
      const shape = configFieldShapeProblems(value);
      if (!Array.isArray(value)) throw new Error(shape.join("; "));
      // Read as setup reads it: the original's spellings (env_var, default_from) count as their twins.
      fields = value.filter((f): f is Record<string, unknown> => typeof f === "object" && f !== null).map(canonicalSpelling);
      return fields;
    } finally {
      await probe.discard().catch(() => undefined);
    }
  };

  await ctx.clause("C-CONFIG-1", async () => {
    const probe = await ctx.harness.create("config-shape");
    try {
      const value: unknown = runWithProfile(probe.hermesHome, () => probe.provider.getConfigSchema());
      const problems = configFieldShapeProblems(Array.isArray(value) ? value.map(canonicalSpelling) : value);
      if (Array.isArray(value)) problems.push(...spellingProblems(value));
      return problems.length > 0 ? fail(problems.join("; ")) : pass(`${(value as unknown[]).length} field(s)`);
    } finally {
      await probe.discard().catch(() => undefined);
    }
  });

  await ctx.clause("C-CONFIG-2", async () => {
    const problems = secretEnvVarProblems(await readFields());
    return problems.length > 0 ? fail(problems.join("; ")) : pass();
  });

  await ctx.clause("C-CONFIG-3", async () => {
    const problems = choiceDefaultProblems(await readFields());
    return problems.length > 0 ? fail(problems.join("; ")) : pass();
  });

  await ctx.clause("C-CONFIG-4", async () => {
    const list = await readFields();
    const instance = await ctx.harness.create("config-save");
    const hermesHome = instance.hermesHome;
    // Secrets exist where setup puts them (.env and the environment); saveConfig must not copy them.
    const secrets = new Map<string, string>();
    for (const field of list) {
      if (field.secret === true && typeof field.envVar === "string" && ENV_VAR_PATTERN.test(field.envVar)) {
        secrets.set(field.envVar, distinctiveToken("contract-secret-"));
      }
    }
    const envFile = path.join(hermesHome, ".env");
    if (secrets.size > 0) {
      fs.writeFileSync(envFile, [...secrets].map(([k, v]) => `${k}=${v}\n`).join(""), { mode: 0o600 });
    }
    const savedEnv = new Map([...secrets.keys()].map((k) => [k, process.env[k]]));
    for (const [k, v] of secrets) process.env[k] = v;
    const before = ctx.sandbox.snapshot();
    const watch = watchWritesOf("config-save");
    watch.start();
    try {
      const values = sampleConfigValues(list);
      await instance.call("saveConfig()", (p) => p.saveConfig(values, hermesHome));
    } finally {
      watch.stop();
      for (const [k, v] of savedEnv) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      await instance.discard().catch(() => undefined);
    }
    const changed = diffSnapshots(before, ctx.sandbox.snapshot());
    const outside = writesOutside(ctx.sandbox, hermesHome, changed, watch.written);
    if (outside.length > 0) {
      return fail(
        `saveConfig wrote outside hermesHome: ${outside
          .slice(0, 5)
          .map((p) => describeSandboxPath(ctx.sandbox, p))
          .join(", ")}`,
      );
    }
    for (const file of changed) {
      if (file === envFile) continue;
      let content: string;
      try {
        if (!fs.statSync(file).isFile()) continue;
        content = fs.readFileSync(file, "utf8");
      } catch {
        continue;
      }
      for (const [envVar, value] of secrets) {
        if (content.includes(value)) return fail(`saveConfig wrote the value of secret ${envVar} into ${path.relative(hermesHome, file)}`);
      }
    }
    return pass(changed.length === 0 ? "saveConfig wrote nothing (values go to config.yaml via setup)" : undefined);
  });
}

/** A field in core's canonical spelling; a field core refuses stays as given (`spellingProblems` reports it). */
function canonicalSpelling(field: unknown): Record<string, unknown> {
  if (typeof field !== "object" || field === null || Array.isArray(field)) return field as Record<string, unknown>;
  try {
    return normalizeConfigField(field as ConfigField, "contract") as unknown as Record<string, unknown>;
  } catch {
    return field as Record<string, unknown>;
  }
}

/** What core's setup would refuse in each field (keys it does not read, spellings that disagree). */
function spellingProblems(fields: readonly unknown[]): string[] {
  const problems: string[] = [];
  for (const field of fields) {
    if (typeof field !== "object" || field === null || Array.isArray(field)) continue;
    try {
      normalizeConfigField(field as ConfigField, "contract");
    } catch (error) {
      // Core's message names the provider and how to fix it; the clause names the field only.
      const text = error instanceof Error ? error.message : String(error);
      problems.push(text.replace(/^Memory provider '[^']*' declares /, "").replace(/ Fix its getConfigSchema\(\)[\s\S]*$/, ""));
    }
  }
  return problems;
}
