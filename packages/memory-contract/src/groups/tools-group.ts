import { RESERVED_CORE_TOOL_NAMES, describeError, runWithProfile } from "@hermes/memory-core";
import { fail, pass, skip, type ContractContext } from "../clause-runner.js";
import type { ProviderInstance } from "../provider-harness.js";
import {
  compileParameters,
  createSchemaValidator,
  functionToolProblems,
  invalidArgumentCandidates,
  isErrorString,
  sampleArguments,
  toolLabel,
  unwrapToolSchema,
} from "../tool-schema-checks.js";

interface ToolView {
  name: string;
  parameters: unknown;
}

function toolViews(schemas: unknown[]): ToolView[] {
  return schemas.map((s) => {
    const t = unwrapToolSchema(s) as Record<string, unknown> | null;
    return { name: typeof t?.name === "string" ? t.name : "", parameters: t?.parameters };
  });
}

function preview(value: unknown): string {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text === undefined ? String(value) : text.length > 120 ? `${text.slice(0, 117)}...` : text;
}

/** TOOLS: OpenAI-valid definitions, Ajv-valid schemas, routing and error strings. */
export async function runToolsGroup(ctx: ContractContext): Promise<void> {
  let schemas: unknown[] | undefined;
  let schemaError: string | undefined;
  let instance: ProviderInstance | undefined;
  const readSchemas = async (): Promise<unknown[]> => {
    if (schemas) return schemas;
    if (schemaError) throw new Error(schemaError);
    // Schemas are read at registration, before initialize, like the manager does.
    const probe = await ctx.harness.create("tools-schemas");
    try {
      const value: unknown = runWithProfile(probe.hermesHome, () => probe.provider.getToolSchemas());
      if (!Array.isArray(value)) throw new Error(`getToolSchemas() returned ${typeof value}, expected an array`);
      schemas = value;
      return value;
    } catch (error) {
      schemaError = describeError(error);
      throw error;
    } finally {
      await probe.discard().catch(() => undefined);
    }
  };
  const initialized = async (): Promise<ProviderInstance> => (instance ??= await ctx.harness.openInstance("tools"));

  try {
    await ctx.clause("C-TOOLS-1", async () => {
      const list = await readSchemas();
      if (list.length === 0) return fail("capabilities.tools is declared but getToolSchemas() returned []");
      const problems = list.flatMap((s) => functionToolProblems(s));
      return problems.length > 0 ? fail(problems.join("; ")) : pass(`${list.length} tool(s)`);
    });

    await ctx.clause("C-TOOLS-2", async () => {
      const inst = await initialized();
      const unknownName = "hermes_contract_unknown_tool";
      let result: unknown;
      try {
        result = await inst.call("handleToolCall()", (p) => p.handleToolCall(unknownName, {}, { sessionId: inst.sessionId }));
      } catch (error) {
        return fail(`handleToolCall(${JSON.stringify(unknownName)}) threw: ${describeError(error)}`);
      }
      if (!isErrorString(result))
        return fail(`handleToolCall(${JSON.stringify(unknownName)}) returned ${preview(result)}, expected an error string`);
      return pass();
    });

    await ctx.clause("C-TOOLS-3", async () => {
      const ajv = createSchemaValidator();
      const problems: string[] = [];
      for (const s of await readSchemas()) {
        const t = unwrapToolSchema(s) as Record<string, unknown> | null;
        const compiled = compileParameters(ajv, t?.parameters);
        if (compiled.error) problems.push(`tool ${toolLabel(s)}: ${compiled.error}`);
      }
      return problems.length > 0 ? fail(problems.join("; ")) : pass();
    });

    await ctx.clause("C-TOOLS-4", async () => {
      const reserved = RESERVED_CORE_TOOL_NAMES;
      const seen = new Set<string>();
      const problems: string[] = [];
      for (const { name } of toolViews(await readSchemas())) {
        if (reserved.has(name)) problems.push(`${JSON.stringify(name)} shadows a reserved core tool`);
        if (seen.has(name)) problems.push(`${JSON.stringify(name)} is declared more than once`);
        seen.add(name);
      }
      return problems.length > 0 ? fail(problems.join("; ")) : pass();
    });

    await ctx.clause("C-TOOLS-5", async () => {
      const inst = await initialized();
      const problems: string[] = [];
      const tools = toolViews(await readSchemas()).filter((t) => t.name !== "");
      if (tools.length === 0) return skip("no named tools to call");
      for (const tool of tools) {
        const args = sampleArguments(tool.parameters);
        try {
          const result: unknown = await inst.call(`handleToolCall(${tool.name})`, (p) =>
            p.handleToolCall(tool.name, args, { sessionId: inst.sessionId }),
          );
          if (typeof result !== "string") problems.push(`${tool.name}(${JSON.stringify(args)}) returned ${typeof result}, not a string`);
        } catch (error) {
          problems.push(`${tool.name}(${JSON.stringify(args)}) threw: ${describeError(error)}`);
        }
      }
      return problems.length > 0 ? fail(problems.join("; ")) : pass(`${tools.length} tool(s) called`);
    });

    await ctx.clause("C-TOOLS-6", async () => {
      const inst = await initialized();
      const problems: string[] = [];
      let calls = 0;
      for (const tool of toolViews(await readSchemas()).filter((t) => t.name !== "")) {
        for (const candidate of invalidArgumentCandidates(tool.parameters)) {
          calls += 1;
          try {
            const result: unknown = await inst.call(`handleToolCall(${tool.name})`, (p) =>
              p.handleToolCall(tool.name, candidate.args, { sessionId: inst.sessionId }),
            );
            if (typeof result !== "string") problems.push(`${tool.name} with ${candidate.label} returned ${typeof result}, not a string`);
            else if (candidate.mustError && !isErrorString(result)) {
              problems.push(`${tool.name} with ${candidate.label} returned ${preview(result)}, expected an error string`);
            }
          } catch (error) {
            problems.push(`${tool.name} with ${candidate.label} threw: ${describeError(error)}`);
          }
        }
      }
      if (calls === 0) return skip("no tool declares parameters that can be violated");
      return problems.length > 0 ? fail(problems.join("; ")) : pass(`${calls} invalid call(s)`);
    });
  } finally {
    await instance?.close().catch(() => undefined);
  }
}
